// SPDX-License-Identifier: GPL-2.0-only
//! The verifier layer's record: each BPF program's verified instruction count per kernel series
//! (tests/fixtures/verifier_insns.json, built into the gate binary, which runs in the VM without
//! the source tree), and the check that no program grew past its figure by more than the
//! record's tolerance. The count comes only from a kernel with sched_ext that loaded the
//! programs (`bpf_prog_info.verified_insns`), so only the gate can take it.

use serde::Deserialize;
use std::collections::BTreeMap;

pub const RECORD_PATH: &str = "tests/fixtures/verifier_insns.json";
const RECORD: &str = include_str!("../fixtures/verifier_insns.json");

/// Per kernel series, per program name (as the kernel keeps it: 15 bytes), the counts of the
/// programs of that name, largest first.
type Counts = BTreeMap<String, Vec<u32>>;

#[derive(Deserialize)]
struct Record {
    tolerance_pct: u32,
    kernels: BTreeMap<String, Counts>,
}

fn record() -> Record {
    serde_json::from_str(RECORD).unwrap_or_else(|e| panic!("{RECORD_PATH}: {e}"))
}

/// "6.18" of "6.18.15+deb13-cloud-amd64": verifier counts move with the kernel's verifier, not
/// with its stable updates.
pub fn series(release: &str) -> String {
    release
        .trim()
        .splitn(3, '.')
        .take(2)
        .collect::<Vec<_>>()
        .join(".")
}

/// What the comparison found: every line for the log, and those of the programs that grew.
pub struct Verdict {
    pub lines: Vec<String>,
    pub grown: Vec<String>,
    pub tolerance_pct: u32,
}

fn group(loaded: &[(String, u32)]) -> Counts {
    let mut counts = Counts::new();
    for (name, n) in loaded {
        counts.entry(name.clone()).or_default().push(*n);
    }
    for v in counts.values_mut() {
        v.sort_unstable_by(|a, b| b.cmp(a));
    }
    counts
}

/// Compares what the kernel `release` verified (`loaded`: name, verified insns) with the record.
/// Programs that share a name are compared largest to largest. A program the record lacks, or
/// one it lists that did not load, is said but is no growth; the layer checks separately that
/// the ops it needs are loaded.
pub fn compare(release: &str, loaded: &[(String, u32)]) -> Verdict {
    compare_with(&record(), release, loaded)
}

fn compare_with(record: &Record, release: &str, loaded: &[(String, u32)]) -> Verdict {
    let series = series(release);
    let now = group(loaded);
    let mut v = Verdict {
        lines: vec![],
        grown: vec![],
        tolerance_pct: record.tolerance_pct,
    };
    let for_the_record = format!(
        "for the record ({RECORD_PATH}): \"{series}\": {}",
        serde_json::to_string(&now).unwrap()
    );
    let Some(was) = record.kernels.get(&series) else {
        v.lines.push(format!(
            "no record for kernel {series} in {RECORD_PATH}: figures not compared"
        ));
        v.lines.push(for_the_record);
        return v;
    };
    let none = Vec::new();
    let names: std::collections::BTreeSet<_> = was.keys().chain(now.keys()).collect();
    for name in names {
        let (before, after) = (
            was.get(name).unwrap_or(&none),
            now.get(name).unwrap_or(&none),
        );
        for i in 0..before.len().max(after.len()) {
            let line = match (before.get(i), after.get(i)) {
                (Some(&r), Some(&n)) => {
                    let pct = (f64::from(n) - f64::from(r)) * 100.0 / f64::from(r.max(1));
                    let line = format!("{name} {n} verified insns, record {r} ({pct:+.1} %)");
                    if u64::from(n) * 100 > u64::from(r) * u64::from(100 + record.tolerance_pct) {
                        v.grown.push(line.clone());
                    }
                    line
                }
                (None, Some(&n)) => format!("{name} {n} verified insns, not in the record"),
                (Some(&r), None) => format!("{name} record {r}, no such program loaded"),
                (None, None) => unreachable!(),
            };
            v.lines.push(line);
        }
    }
    v.lines.push(for_the_record);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(progs: &[(&str, u32)]) -> Vec<(String, u32)> {
        progs.iter().map(|(n, c)| (n.to_string(), *c)).collect()
    }

    #[test]
    fn the_record_parses_and_names_the_ops_the_layer_needs() {
        let r = record();
        assert!(r.tolerance_pct > 0);
        let k = &r.kernels[&series("6.18.15+deb13-cloud-amd64")];
        for op in [
            "pandemonium_sel",
            "pandemonium_enq",
            "pandemonium_dis",
            "pandemonium_tic",
        ] {
            assert!(k.contains_key(op), "{op}");
        }
        for counts in k.values() {
            assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{counts:?}");
        }
    }

    #[test]
    fn growth_past_the_tolerance_fails_and_within_it_passes() {
        let base = record().kernels["6.18"].clone();
        let all = |bump: fn(u32) -> u32| -> Vec<(String, u32)> {
            base.iter()
                .flat_map(|(n, v)| v.iter().map(move |c| (n.clone(), bump(*c))))
                .collect()
        };
        let same = compare("6.18.15", &all(|c| c));
        assert!(same.grown.is_empty(), "{:?}", same.lines);
        let (last, compared) = same.lines.split_last().unwrap();
        assert!(last.starts_with("for the record"), "{last}");
        assert!(
            compared.iter().all(|l| l.contains("(+0.0 %)")),
            "{compared:?}"
        );
        let within = compare("6.18.99", &all(|c| c + c / 10));
        assert!(within.grown.is_empty(), "{:?}", within.lines);
        // Derived from the record, so refreshing the record does not break the test.
        let recorded = base["pandemonium_dis"][0];
        let bumped = recorded * 13 / 10;
        let mut grown = all(|c| c);
        for p in &mut grown {
            if p.0 == "pandemonium_dis" && p.1 == recorded {
                p.1 = bumped;
            }
        }
        let v = compare("6.18.15", &grown);
        assert_eq!(v.grown.len(), 1, "{:?}", v.lines);
        assert!(
            v.grown[0].contains(&format!("pandemonium_dis {bumped} ")),
            "{:?}",
            v.grown
        );
        assert!(
            v.grown[0].contains(&format!("record {recorded} (+30.0 %)")),
            "{:?}",
            v.grown
        );
        assert!(v.lines.iter().any(|l| l.starts_with("for the record")));
    }

    #[test]
    fn programs_sharing_a_name_are_compared_largest_to_largest() {
        // A record of its own: the fixture's figures move with every deliberate change.
        let record = Record {
            tolerance_pct: 20,
            kernels: [(
                "6.18".to_string(),
                [("pandemonium_run".to_string(), vec![862, 283])].into(),
            )]
            .into(),
        };
        // Listed smaller first, each within 20 % of its own figure: no growth, where pairing
        // them in the order listed would have read 840 against 283.
        let v = compare_with(
            &record,
            "6.18.15",
            &loaded(&[("pandemonium_run", 290), ("pandemonium_run", 840)]),
        );
        assert!(v.grown.is_empty(), "{:?}", v.lines);
        let v = compare_with(
            &record,
            "6.18.15",
            &loaded(&[("pandemonium_run", 283), ("pandemonium_run", 1100)]),
        );
        assert_eq!(v.grown.len(), 1, "{:?}", v.lines);
        assert!(v.grown[0].contains("pandemonium_run 1100"), "{:?}", v.grown);
    }

    #[test]
    fn an_unrecorded_kernel_or_program_is_said_not_failed() {
        let v = compare(
            "7.3.4+deb13-cloud-amd64",
            &loaded(&[("pandemonium_sel", 99_999)]),
        );
        assert!(v.grown.is_empty());
        assert!(
            v.lines[0].contains("no record for kernel 7.3"),
            "{:?}",
            v.lines
        );
        assert!(
            v.lines[1].contains(r#""7.3": {"pandemonium_sel":[99999]}"#),
            "{:?}",
            v.lines
        );
        let v = compare("6.18.15", &loaded(&[("pandemonium_new", 5)]));
        assert!(v.grown.is_empty());
        assert!(
            v.lines
                .iter()
                .any(|l| l.contains("pandemonium_new 5 verified insns, not in"))
        );
        assert!(v.lines.iter().any(|l| l.contains("no such program loaded")));
    }
}
