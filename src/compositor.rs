// SPDX-License-Identifier: GPL-2.0-only
//! Compositor names: processes that are always classified LAT_CRITICAL, matched by the kernel's
//! `comm` (at most 15 bytes plus the terminating NUL).

use crate::bpf_intf::{COMM_LEN, CommKey};

/// `compositor_map`'s `max_entries` in src/bpf/state.bpf.h (a test holds the two together).
pub const MAP_ENTRIES: usize = 256;

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
    check_comm("compositor", name)
}

/// [`validate`] for any option that names processes; `what` starts the messages.
pub fn check_comm(what: &str, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("{what} name is empty"));
    }
    if name.len() > COMM_LEN - 1 {
        return Err(format!(
            "{what} name {name:?} is {} bytes; the kernel truncates process names (comm) to {} \
             bytes, so it could never match. Use the name `ps -o comm=` shows",
            name.len(),
            COMM_LEN - 1
        ));
    }
    if name.bytes().any(|b| b == 0 || b == b'/') {
        return Err(format!(
            "{what} name {name:?} contains '/' or NUL; give the process name, not a path"
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

/// Every name BPF's map gets under a mode whose own names are `mode_names`: the defaults, the
/// mode's, the user's, each once.
pub fn names_for(mode_names: &[&str], user: &[String]) -> Vec<String> {
    let extra: Vec<String> = (mode_names.iter().map(|n| n.to_string()))
        .chain(user.iter().cloned())
        .collect();
    all_names(&extra)
}

/// Refuses a list that would overflow BPF's map, before anything loads: the load would fail
/// only after the BPF program was verified, with a map error that does not say which option.
pub fn check_fits(mode_names: &[&str], user: &[String]) -> Result<(), String> {
    let n = names_for(mode_names, user).len();
    if n > MAP_ENTRIES {
        let fixed = names_for(mode_names, &[]).len();
        return Err(format!(
            "{} --compositor names: with the {fixed} built-in ones that is {n}, more than the \
             {MAP_ENTRIES} the BPF map holds; give at most {}",
            user.len(),
            MAP_ENTRIES - fixed
        ));
    }
    Ok(())
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

    #[test]
    fn the_map_sizes_are_the_bpf_programs() {
        use crate::bpf_skel::BpfSkelBuilder;
        use libbpf_rs::skel::SkelBuilder;
        let mut obj = std::mem::MaybeUninit::uninit();
        let skel = BpfSkelBuilder::default()
            .open(&mut obj)
            .expect("opening the BPF object (no load)");
        assert_eq!(skel.maps.compositor_map.max_entries() as usize, MAP_ENTRIES);
        assert_eq!(
            skel.maps.coop_comms.max_entries() as usize,
            crate::coop::MAP_ENTRIES
        );
    }

    #[test]
    fn a_list_that_fills_the_map_exactly_fits_and_one_more_does_not() {
        let fixed = names_for(&["wineserver"], &[]).len();
        let user: Vec<String> = (0..MAP_ENTRIES - fixed).map(|i| format!("c{i}")).collect();
        assert!(check_fits(&["wineserver"], &user).is_ok());
        // A name given twice, or one already built in, takes no second entry.
        let mut dup = user.clone();
        dup.extend(["c0".to_string(), "sway".to_string()]);
        assert!(check_fits(&["wineserver"], &dup).is_ok());
        let mut over = user.clone();
        over.push("one-more".into());
        let msg = check_fits(&["wineserver"], &over).unwrap_err();
        assert!(msg.contains("more than the 256"), "{msg}");
        assert!(
            msg.contains(&format!("give at most {}", MAP_ENTRIES - fixed)),
            "{msg}"
        );
        assert!(
            check_fits(&[], &over).is_ok(),
            "without the mode's name it fits"
        );
    }
}
