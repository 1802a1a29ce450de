// SPDX-License-Identifier: GPL-2.0-only
//! A sysfs tree scx_utils refuses stops the live reader with scx_utils' reason, although our own
//! sysfs reader would read it with its fallbacks: the scheduler detects topology only through
//! scx_utils (#17). Its own binary, because scx_utils reads `SCX_SYSFS_PREFIX` once per process.

use std::fs;

use scx_pandemonium::topology::{Live, SysfsTree, TopologySource};

#[test]
fn a_tree_scx_utils_refuses_is_an_error_not_a_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let sys = dir.path().join("sys");
    let cpu = sys.join("devices/system/cpu");
    // Two CPUs with no topology/ directory: the sysfs reader's documented fallback (each its
    // own core in package 0); scx_utils needs core_id, physical_package_id and cluster_id.
    for n in 0..2 {
        fs::create_dir_all(cpu.join(format!("cpu{n}"))).unwrap();
    }
    for f in ["online", "possible"] {
        fs::write(cpu.join(f), "0-1\n").unwrap();
    }

    let ours = SysfsTree(&sys)
        .topology()
        .expect("the sysfs reader takes its fallbacks");
    assert!(
        ours.warnings
            .iter()
            .any(|w| w.contains("no topology/ directory")),
        "{:?}",
        ours.warnings
    );

    // SAFETY: this test binary has this one test; nothing else reads the environment.
    unsafe { std::env::set_var("SCX_SYSFS_PREFIX", dir.path()) };
    let err = format!("{:#}", Live.topology().unwrap_err());
    assert!(
        err.contains("scx_utils could not read the CPU topology under"),
        "{err}"
    );
    assert!(err.contains(&sys.display().to_string()), "{err}");
}
