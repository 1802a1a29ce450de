// SPDX-License-Identifier: GPL-2.0-only
//! Is this binary running out of a source checkout of this project? Only there do hints like
//! `./pandemonium.py vm` make sense; an installed binary must not send its user to a script they
//! do not have.

use std::fs;
use std::path::{Path, PathBuf};

/// The package name in Cargo.toml that marks our checkout (the scx monorepo and the published
/// scx_pandemonium crate have other layouts, and no pandemonium.py).
const PACKAGE: &str = "scx_pandemonium";

/// The checkout `exe` was built in: the nearest ancestor directory holding pandemonium.py and a
/// Cargo.toml whose package is scx_pandemonium. Covers target/release/ and target/debug/deps/.
pub fn containing(exe: &Path) -> Option<PathBuf> {
    exe.ancestors()
        .skip(1)
        .find(|dir| is_checkout(dir))
        .map(Path::to_path_buf)
}

/// The checkout of the running executable, if it is in one.
pub fn of_current_exe() -> Option<PathBuf> {
    containing(&std::env::current_exe().ok()?)
}

fn is_checkout(dir: &Path) -> bool {
    dir.join("pandemonium.py").is_file()
        && fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|t| names_package(&t, PACKAGE))
}

/// Whether a Cargo.toml's [package] section has `name = "<name>"`. A line scan is enough for
/// the one manifest we look for, and keeps a TOML parser out of the binary.
fn names_package(manifest: &str, name: &str) -> bool {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "name"
        {
            return value.trim().trim_matches('"') == name;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "[package]\nname = \"scx_pandemonium\"\nversion = \"0.1.0\"\n\n\
                            [[bin]]\nname = \"scx_pandemonium\"\n";

    fn tree(manifest: Option<&str>, script: bool) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("target/release")).unwrap();
        if let Some(m) = manifest {
            fs::write(d.path().join("Cargo.toml"), m).unwrap();
        }
        if script {
            fs::write(d.path().join("pandemonium.py"), "#!/usr/bin/env python3\n").unwrap();
        }
        d
    }

    #[test]
    fn a_build_in_the_checkout_is_found() {
        let d = tree(Some(MANIFEST), true);
        let exe = d.path().join("target/release/scx_pandemonium");
        assert_eq!(containing(&exe).as_deref(), Some(d.path()));
        let test_exe = d
            .path()
            .join("target/release/deps/scx_pandemonium-0123abcd");
        assert_eq!(containing(&test_exe).as_deref(), Some(d.path()));
    }

    #[test]
    fn an_installed_binary_is_not_in_a_checkout() {
        assert_eq!(
            containing(Path::new("/usr/local/bin/scx_pandemonium")),
            None
        );
        assert_eq!(containing(Path::new("/usr/bin/scx_pandemonium")), None);
    }

    #[test]
    fn both_markers_are_needed() {
        let exe = "target/release/scx_pandemonium";
        let no_script = tree(Some(MANIFEST), false);
        assert_eq!(containing(&no_script.path().join(exe)), None);
        let no_manifest = tree(None, true);
        assert_eq!(containing(&no_manifest.path().join(exe)), None);
    }

    #[test]
    fn another_package_is_not_ours() {
        // The scx monorepo's workspace root, or any project that happens to have the script.
        let d = tree(Some("[workspace]\nmembers = [\"scheds/rust/*\"]\n"), true);
        assert_eq!(
            containing(&d.path().join("target/release/scx_pandemonium")),
            None
        );
        let d = tree(Some("[package]\nname = \"scx_bpfland\"\n"), true);
        assert_eq!(
            containing(&d.path().join("target/release/scx_pandemonium")),
            None
        );
    }

    #[test]
    fn only_the_package_sections_name_counts() {
        assert!(names_package(MANIFEST, "scx_pandemonium"));
        let bin_first = "[[bin]]\nname = \"scx_pandemonium\"\n[package]\nname = \"other\"\n";
        assert!(!names_package(bin_first, "scx_pandemonium"));
        assert!(names_package("[package]\n  name=\"x\"\n", "x"));
    }
}
