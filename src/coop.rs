// SPDX-License-Identifier: GPL-2.0-only
//! `--coop COMM`: the processes whose name (the comm of the thread group's leader) the
//! administrator gives run as cooperative groups (src/bpf/coop.bpf.h, README "Cooperative
//! groups"). The names go into BPF's `coop_comms` map; with none, the feature is compiled out of
//! the verified programs (rodata `coop_on_ro`).

use crate::bpf_intf::COOP_QUANTUM_NS;
use crate::compositor;

/// `coop_comms`'s `max_entries` in src/bpf/state.bpf.h (compositor.rs's test holds the two
/// together).
pub const MAP_ENTRIES: usize = 256;

/// clap value parser: a name the kernel can report as a comm.
pub fn parse_name(name: &str) -> Result<String, String> {
    compositor::check_comm("--coop", name).map(|()| name.to_string())
}

/// The names, each once, in the order given.
pub fn unique(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// Refuses more names than BPF's map holds, before anything loads.
pub fn check_fits(names: &[String]) -> Result<(), String> {
    let n = unique(names).len();
    if n > MAP_ENTRIES {
        return Err(format!(
            "{n} different --coop names, more than the {MAP_ENTRIES} the BPF map holds"
        ));
    }
    Ok(())
}

/// The startup log's line with --coop-learn.
pub const LEARN_LINE: &str = "cooperative groups by behaviour (--coop-learn): a process whose \
    CPU-bound threads wake each other or yield, or run at once without sleeping, while crowded \
    teaches its name to the procdb; a process of a learned name runs as a group once it shows \
    that behaviour itself";

/// The startup log's line, None without --coop.
pub fn startup_line(names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    Some(format!(
        "cooperative groups (--coop): {}; each process runs its threads together for {} ms at a \
         time, and they never preempt each other",
        unique(names).join(", "),
        COOP_QUANTUM_NS / 1_000_000
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_as_comms() {
        assert_eq!(parse_name("coopbench").unwrap(), "coopbench");
        assert!(parse_name("abcdefghijklmno").is_ok());
        let err = parse_name("abcdefghijklmnop").unwrap_err();
        assert!(
            err.starts_with("--coop name") && err.contains("16 bytes"),
            "{err}"
        );
        assert!(parse_name("").unwrap_err().contains("empty"));
        assert!(parse_name("/usr/bin/python3").is_err());
    }

    #[test]
    fn a_name_given_twice_takes_one_entry() {
        let names = ["a".to_string(), "b".into(), "a".into()];
        assert_eq!(unique(&names), ["a", "b"]);
        let full: Vec<String> = (0..MAP_ENTRIES).map(|i| format!("p{i}")).collect();
        let mut twice = full.clone();
        twice.push("p0".into());
        assert!(check_fits(&twice).is_ok());
        twice.push("one-more".into());
        assert!(check_fits(&twice).unwrap_err().contains("257 different"));
    }

    #[test]
    fn the_startup_line_names_the_groups_and_the_quantum() {
        assert_eq!(startup_line(&[]), None);
        let line = startup_line(&["omp".into(), "omp".into(), "blas".into()]).unwrap();
        assert!(
            line.contains("omp, blas;") && line.contains("20 ms"),
            "{line}"
        );
    }
}
