// SPDX-License-Identifier: GPL-2.0-only
//! `--version`: the version string every scx scheduler prints (scx_utils' `full_version`), then
//! our git hash, target, and how the BPF object was built.

use std::sync::LazyLock;

static LONG_VERSION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} (git {})\ntarget: {}\nBPF: {}, -std=gnu23; vmlinux.h: {}",
        scx_utils::build_id::full_version(env!("CARGO_PKG_VERSION")),
        env!("PANDEMONIUM_GIT_HASH"),
        env!("PANDEMONIUM_TARGET"),
        env!("PANDEMONIUM_BPF_CLANG"),
        env!("PANDEMONIUM_VMLINUX_ORIGIN"),
    )
});

/// The `--version` text. Built at run time because `full_version` is not a `const fn`; clap
/// takes only a `&'static str`, which the static provides.
pub fn long_version() -> &'static str {
    &LONG_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_with_the_scx_version_and_keeps_our_fields() {
        let v = long_version();
        let base = scx_utils::build_id::full_version(env!("CARGO_PKG_VERSION"));
        assert!(v.starts_with(&format!("{base} (git ")), "{v}");
        let lines: Vec<&str> = v.lines().collect();
        assert_eq!(lines.len(), 3, "{v}");
        assert!(lines[1].starts_with("target: "), "{v}");
        assert!(lines[2].starts_with("BPF: "), "{v}");
    }
}
