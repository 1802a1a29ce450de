// SPDX-License-Identifier: GPL-2.0-only
//! Compositor names: processes that are always classified LAT_CRITICAL, matched by the kernel's
//! `comm` (at most 15 bytes plus the terminating NUL).

use crate::bpf_intf::{COMM_LEN, CommKey};

/// Display servers and compositors a desktop or game session is built around.
pub const DEFAULT_COMPOSITORS: &[&str] = &[
    "kwin_wayland",
    "kwin_x11",
    "gnome-shell",
    "mutter",
    "sway",
    "Hyprland",
    "weston",
    "gamescope",
    "gamescope-wl",
    "Xorg",
    "Xwayland",
    "labwc",
    "wayfire",
    "river",
    "niri",
    "cosmic-comp",
    "picom",
    "mangowc",
];

/// Rejects what the kernel could never report as a `comm`, with the reason.
pub fn validate(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("compositor name is empty".into());
    }
    if name.len() > COMM_LEN - 1 {
        return Err(format!(
            "compositor name {name:?} is {} bytes; the kernel truncates process names (comm) to {} \
             bytes, so it could never match. Use the name `ps -o comm=` shows",
            name.len(),
            COMM_LEN - 1
        ));
    }
    if name.bytes().any(|b| b == 0 || b == b'/') {
        return Err(format!(
            "compositor name {name:?} contains '/' or NUL; give the process name, not a path"
        ));
    }
    Ok(())
}

/// clap value parser: validates and keeps the name.
pub fn parse_name(name: &str) -> Result<String, String> {
    validate(name).map(|()| name.to_string())
}

pub fn comm_key(name: &str) -> CommKey {
    let mut key = CommKey::default();
    let n = name.len().min(COMM_LEN - 1);
    key.comm[..n].copy_from_slice(&name.as_bytes()[..n]);
    key
}

/// Defaults plus the user's names, without duplicates, defaults first.
pub fn all_names(extra: &[String]) -> Vec<String> {
    let mut out: Vec<String> = DEFAULT_COMPOSITORS.iter().map(|s| s.to_string()).collect();
    for e in extra {
        if !out.contains(e) {
            out.push(e.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_all_valid_comm_names() {
        for n in DEFAULT_COMPOSITORS {
            validate(n).unwrap();
        }
    }

    #[test]
    fn fifteen_bytes_pass_sixteen_fail() {
        assert!(validate("abcdefghijklmno").is_ok());
        let err = validate("abcdefghijklmnop").unwrap_err();
        assert!(err.contains("16 bytes") && err.contains("15"), "{err}");
    }

    #[test]
    fn empty_paths_and_nul_are_rejected() {
        assert!(validate("").is_err());
        assert!(validate("/usr/bin/sway").is_err());
        assert!(validate("a\0b").is_err());
    }

    #[test]
    fn multibyte_names_count_bytes_not_chars() {
        // 8 chars, 16 bytes: the kernel counts bytes.
        assert!(validate("éééééééé").is_err());
    }

    #[test]
    fn comm_key_is_nul_padded() {
        let k = comm_key("sway");
        assert_eq!(&k.comm[..5], b"sway\0");
        assert!(k.comm[4..].iter().all(|&b| b == 0));
    }

    #[test]
    fn all_names_deduplicates() {
        let names = all_names(&["sway".into(), "mywm".into()]);
        assert_eq!(names.iter().filter(|n| *n == "sway").count(), 1);
        assert_eq!(names.last().unwrap(), "mywm");
    }
}
