// SPDX-License-Identifier: GPL-2.0-only
//! The stats layer's per-cgroup check: a group of busy loops must be listed in `cgroup_cpu_pct`
//! with about the share of the machine its cpu.stat says it used, phase by phase.

use super::cgroup::Group;
use scx_pandemonium::stats::monotonic_ms;
use std::collections::BTreeMap;

/// One `--monitor` block: field name -> the rest of its line.
pub type Block = BTreeMap<String, String>;

/// The reported mean share may differ from cpu.stat's by this fraction of it. Only samples whose
/// whole interval lies in the phase are used, so what is left is sampling noise: a task's CPU
/// time reaches BPF's counter when it stops running, up to a slice after it ran.
pub const SHARE_TOL: f64 = 0.25;

/// A moment of the run: CLOCK_MONOTONIC ms (the clock of the samples' `at_ms`) and the group's
/// cpu.stat usage then.
pub struct Mark {
    ms: u64,
    usage_ns: u64,
}

impl Mark {
    pub fn now(g: &Group) -> Mark {
        Mark {
            ms: monotonic_ms(),
            usage_ns: g.usage_ns(),
        }
    }
}

/// `cgroup_cpu_pct`'s printed value (`path=pct` words, largest first; `-` when empty).
pub fn parse(value: &str) -> Vec<(String, f64)> {
    value
        .split_whitespace()
        .filter_map(|w| {
            let (path, pct) = w.rsplit_once('=')?;
            Some((path.to_string(), pct.parse().ok()?))
        })
        .collect()
}

fn at_ms(b: &Block) -> u64 {
    b["at_ms"]
        .parse()
        .unwrap_or_else(|_| panic!("at_ms is not a number: {b:?}"))
}

/// Every listed block is well formed: at most 5 groups, largest first, shares in range.
pub fn check_shape(blocks: &[Block]) {
    for b in blocks {
        let line = &b["cgroup_cpu_pct"];
        let listed = parse(line);
        assert!(listed.len() <= 5, "more than 5 groups listed: {line}");
        assert!(
            listed.windows(2).all(|w| w[0].1 >= w[1].1),
            "not largest first: {line}"
        );
        for (p, pct) in &listed {
            // A sample can run a little past a nominal second's capacity.
            assert!((0.0..=110.0).contains(pct), "{p} at {pct} %: {line}");
        }
    }
}

/// Between `from` and `to`: `path` must be listed in every sample whose interval lies wholly in
/// the phase (at least 2), with a mean share within [`SHARE_TOL`] of cpu.stat's over the phase on
/// `ncpus` CPUs. Prints the figures; returns what failed.
pub fn check_phase(
    blocks: &[Block],
    path: &str,
    ncpus: usize,
    phase: &str,
    from: &Mark,
    to: &Mark,
) -> Result<(), String> {
    let inside: Vec<&Block> = blocks
        .windows(2)
        .filter(|w| at_ms(&w[0]) >= from.ms && at_ms(&w[1]) <= to.ms)
        .map(|w| &w[1])
        .collect();
    let mine: Vec<Option<f64>> = inside
        .iter()
        .map(|b| {
            parse(&b["cgroup_cpu_pct"])
                .into_iter()
                .find_map(|(p, pct)| (p == path).then_some(pct))
        })
        .collect();
    let measured = (to.usage_ns - from.usage_ns) as f64 * 100.0
        / ((to.ms - from.ms) as f64 * 1e6 * ncpus as f64);
    let listed: Vec<f64> = mine.iter().flatten().copied().collect();
    let shown: Vec<String> = mine
        .iter()
        .map(|m| m.map_or("absent".into(), |v| format!("{v:.1}")))
        .collect();
    let mean = listed.iter().sum::<f64>() / listed.len().max(1) as f64;
    eprintln!(
        "gate stats: {path} {phase}: cgroup_cpu_pct per sample [{}], mean {mean:.1} %, \
         cpu.stat {measured:.1} % (ratio {:.2}, allowed {:.2}..{:.2})",
        shown.join(", "),
        mean / measured,
        1.0 - SHARE_TOL,
        1.0 + SHARE_TOL
    );
    if inside.len() < 2 {
        return Err(format!(
            "{phase}: {} samples inside the phase",
            inside.len()
        ));
    }
    if listed.len() < mine.len() {
        return Err(format!("{phase}: {path} missing from a sample: {shown:?}"));
    }
    if (mean - measured).abs() > SHARE_TOL * measured {
        return Err(format!(
            "{phase}: {path} reported {mean:.1} % against cpu.stat's {measured:.1} %"
        ));
    }
    Ok(())
}
