// SPDX-License-Identifier: GPL-2.0-only
//! A sysfs file that exists but holds garbage is an error naming the path and
//! the content; a negative id means "unknown", not garbage.

use crate::topology::fixtures::*;

#[test]
fn negative_package_id_is_unknown_not_an_error() {
    let fx = sysfs_8c();
    for cpu in 0..8 {
        fx.put(
            &format!("devices/system/cpu/cpu{cpu}/topology/physical_package_id"),
            "-1\n",
        );
    }
    let t = fx.detect().unwrap();
    assert!(t.package_of.values().all(|&p| p == 0));
    assert!(t.warnings.iter().any(|w| w.contains("physical_package_id")));
}

#[test]
fn garbage_ids_name_file_and_content() {
    for (file, content) in [
        ("topology/core_id", "abc\n"),
        ("topology/physical_package_id", "1.5\n"),
        ("topology/cluster_id", "\n"),
        ("cache/index2/level", "two\n"),
    ] {
        let fx = sysfs_8c();
        fx.put(&format!("devices/system/cpu/cpu3/{file}"), content);
        let e = err_text(fx.detect());
        assert!(e.contains(&format!("cpu3/{file}")), "{file}: {e}");
        assert!(e.contains(&format!("{content:?}")), "{file}: {e}");
    }
}

#[test]
fn garbage_cpu_lists_name_file_and_content() {
    for file in [
        "cpu1/topology/thread_siblings_list",
        "cpu1/cache/index2/shared_cpu_list",
        "cpu1/cache/index3/shared_cpu_list",
    ] {
        let fx = sysfs_8c();
        fx.put(&format!("devices/system/cpu/{file}"), "0-,3\n");
        let e = err_text(fx.detect());
        assert!(e.contains(file) && e.contains("0-,3"), "{file}: {e}");
    }
}

#[test]
fn unknown_cache_type_is_an_error() {
    let fx = sysfs_8c();
    fx.put("devices/system/cpu/cpu0/cache/index2/type", "Sideways\n");
    let e = err_text(fx.detect());
    assert!(e.contains("index2/type") && e.contains("Sideways"), "{e}");
}
