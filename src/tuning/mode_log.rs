// SPDX-License-Identifier: GPL-2.0-only
//! The startup log's account of a mode: the knobs it wrote, and in adaptive mode what the loop
//! may do with them. A user who picked a mode through scx_loader sees nothing else of it.

use super::experts::Knob;
use super::mode::Mode;
use super::rails::RAILS;
use crate::bpf_intf::{AffinityMode, TuningKnobs};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

fn label(knob: Knob) -> String {
    let n = knob.name();
    n.strip_suffix("_ns").unwrap_or(n).replace('_', " ")
}

fn value(knob: Knob, v: u64) -> String {
    if !knob.name().ends_with("_ns") {
        v.to_string()
    } else if v >= MS {
        format!("{:.3} ms", v as f64 / MS as f64)
    } else {
        format!("{:.1} us", v as f64 / US as f64)
    }
}

fn affinity(v: u64) -> &'static str {
    match v {
        x if x == AffinityMode::Off as u64 => "off",
        x if x == AffinityMode::Strong as u64 => "strong",
        _ => "weak",
    }
}

/// "slice 2.000 ms, preempt thresh 500.0 us, ..., affinity mode weak".
pub fn knobs_line(k: &TuningKnobs) -> String {
    let mut parts: Vec<String> = Knob::ALL
        .iter()
        .map(|&knob| format!("{} {}", label(knob), value(knob, knob.get(k))))
        .collect();
    parts.push(format!("affinity mode {}", affinity(k.affinity_mode)));
    parts.join(", ")
}

/// The lines to log at startup, each starting "mode NAME".
pub fn startup_lines(mode: Mode, adaptive: bool) -> Vec<String> {
    let p = mode.preset();
    let knobs = knobs_line(&mode.knobs());
    let mut lines = vec![if adaptive {
        format!("mode {mode}: knobs until the adaptive loop's first tick: {knobs}")
    } else {
        format!("mode {mode}: fixed knobs (BPF-only): {knobs}")
    }];
    if adaptive {
        let scaled: Vec<String> = Knob::ALL
            .iter()
            .filter(|&&k| !p.scale[k as usize].is_one())
            .map(|&k| format!("{} {}", label(k), p.scale[k as usize]))
            .collect();
        let mut rails: Vec<String> = Knob::ALL
            .iter()
            .filter(|&&k| p.rails.rail(k) != RAILS.rail(k))
            .map(|&k| {
                let (r, wide) = (p.rails.rail(k), RAILS.rail(k));
                let (lo, hi) = (value(k, r.min), value(k, r.max));
                match (r.min == wide.min, r.max == wide.max) {
                    (true, _) => format!("{} <= {hi}", label(k)),
                    (_, true) => format!("{} >= {lo}", label(k)),
                    _ => format!("{} {lo} to {hi}", label(k)),
                }
            })
            .collect();
        if let Some(a) = p.rails.affinity {
            rails.push(format!("affinity mode {}", affinity(a as u64)));
        }
        let mut does = Vec::new();
        if !scaled.is_empty() {
            does.push(format!(
                "scales each regime's baseline by {}",
                scaled.join(", ")
            ));
        }
        if !rails.is_empty() {
            does.push(format!("keeps {}", rails.join(", ")));
        }
        if does.is_empty() {
            does.push("tunes the regime baselines as they are, within the standard rails".into());
        }
        lines.push(format!(
            "mode {mode}: the adaptive loop {}",
            does.join("; ")
        ));
    }
    if !p.compositors.is_empty() {
        lines.push(format!(
            "mode {mode}: also compositors (LAT_CRITICAL while interactive): {}",
            p.compositors.join(", ")
        ));
    }
    if p.pack {
        lines.push(format!(
            "mode {mode}: a waking task (compositors and games aside) queues behind its busy \
             CPU's non-BATCH runner before it wakes an idle core"
        ));
    }
    if p.boost_games {
        lines.push(format!(
            "mode {mode}: every thread of a game Steam launched (below Steam's `reaper \
             SteamLaunch AppId=N`, or with {} in its environment) is LAT_CRITICAL",
            crate::games::ids::GAME_ENV
                .iter()
                .map(|k| String::from_utf8_lossy(k))
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    }
    lines
}
