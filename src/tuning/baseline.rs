// SPDX-License-Identifier: GPL-2.0-only
//! The knob baseline of each regime, before the experts scale it.
//!
//! Timing knobs are capped by the topology's mixing time tau, because tau is how long the
//! machine needs to move work to where it can run: a slice or a preemption delay that is long
//! next to tau keeps a task on the wrong CPU for longer than the topology needs to fix the
//! placement. Each cap is a fixed fraction of tau inside a safety clamp (the fractions put the
//! caps just above the regime values on the 12-CPU reference machine, tau ~40 ms, so there the
//! caps change nothing and on faster-mixing machines they tighten). Counts (lag_scale, the
//! classifier thresholds) are not times and are not scaled. With tau = 0 (topology not yet
//! detected) nothing is scaled and the unscaled regime values apply.

use crate::bpf_intf::{AffinityMode, TuningKnobs};
use crate::tuning::regime::Regime;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// A fraction of tau clamped to a safety window.
struct TauCap {
    num: u64,
    den: u64,
    min: u64,
    max: u64,
}

impl TauCap {
    fn of(&self, tau_ns: u64) -> u64 {
        let v = u128::from(tau_ns) * u128::from(self.num) / u128::from(self.den);
        u64::try_from(v)
            .unwrap_or(u64::MAX)
            .clamp(self.min, self.max)
    }
}

/// Interactive slice <= tau / 6 (6.7 ms at tau 40 ms).
const SLICE_CAP: TauCap = TauCap {
    num: 1,
    den: 6,
    min: 500 * US,
    max: 8 * MS,
};
/// Batch preemption delay <= tau / 12, half the slice cap so a waiting interactive task is
/// served within one of its own slices (3.3 ms at tau 40 ms).
const PREEMPT_CAP: TauCap = TauCap {
    num: 1,
    den: 12,
    min: 250 * US,
    max: 4 * MS,
};
/// MIXED batch slice <= 1.5 tau. Only MIXED has batch and interactive work contending for the
/// same CPUs; LIGHT has idle CPUs for wakers and HEAVY wants the throughput.
const MIXED_BATCH_CAP: TauCap = TauCap {
    num: 3,
    den: 2,
    min: 10 * MS,
    max: 80 * MS,
};

/// Unscaled regime values. LIGHT: idle CPUs absorb wakers, so slices can be longer and L2
/// placement only weak. MIXED: interactive and batch share CPUs, so the tight 1 ms slice and
/// strong L2 placement keep pipe partners cache-hot. HEAVY: every CPU is busy, so interactive
/// work waits exactly as long as the interactive slice and the preemption delay let it; they
/// stay MIXED's (wider ones gave cyclictest beside busy loops a worse P99 than --no-adaptive's
/// fixed knobs). With no idle siblings to find, strong L2 search is wasted work.
pub fn regime_knobs(r: Regime) -> TuningKnobs {
    let d = TuningKnobs::defaults();
    match r {
        Regime::Light => TuningKnobs {
            slice_ns: 2 * MS,
            preempt_thresh_ns: MS,
            affinity_mode: AffinityMode::Weak as u64,
            ..d
        },
        Regime::Mixed => TuningKnobs {
            slice_ns: MS,
            preempt_thresh_ns: MS,
            affinity_mode: AffinityMode::Strong as u64,
            ..d
        },
        Regime::Heavy => TuningKnobs {
            slice_ns: MS,
            preempt_thresh_ns: MS,
            affinity_mode: AffinityMode::Weak as u64,
            ..d
        },
    }
}

/// The baseline the experts scale this tick: [`regime_knobs`] with tau caps applied.
pub fn scaled_regime_knobs(r: Regime, tau_ns: u64) -> TuningKnobs {
    let mut k = regime_knobs(r);
    if tau_ns == 0 {
        return k;
    }
    k.slice_ns = k.slice_ns.min(SLICE_CAP.of(tau_ns));
    k.preempt_thresh_ns = k.preempt_thresh_ns.min(PREEMPT_CAP.of(tau_ns));
    if r == Regime::Mixed {
        k.batch_slice_ns = k.batch_slice_ns.min(MIXED_BATCH_CAP.of(tau_ns));
    }
    k
}

/// P99 wakeup latency the regime tolerates. LIGHT has idle CPUs, so anything past 3 ms is a
/// scheduling fault; MIXED keeps well inside a 16.6 ms frame; HEAVY accepts a saturated queue.
pub fn p99_ceiling_ns(r: Regime) -> u64 {
    match r {
        Regime::Light => 3 * MS,
        Regime::Mixed => 5 * MS,
        Regime::Heavy => 10 * MS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_per_regime_matches_the_design() {
        let a = |r| scaled_regime_knobs(r, 40 * MS).affinity_mode;
        assert_eq!(a(Regime::Light), AffinityMode::Weak as u64);
        assert_eq!(a(Regime::Mixed), AffinityMode::Strong as u64);
        assert_eq!(a(Regime::Heavy), AffinityMode::Weak as u64);
    }

    #[test]
    fn reference_tau_leaves_regime_values() {
        for r in Regime::ALL {
            let (raw, s) = (regime_knobs(r), scaled_regime_knobs(r, 40 * MS));
            assert_eq!(s.slice_ns, raw.slice_ns, "{r:?}");
            assert_eq!(s.preempt_thresh_ns, raw.preempt_thresh_ns, "{r:?}");
            assert_eq!(s.batch_slice_ns, raw.batch_slice_ns, "{r:?}");
        }
    }

    #[test]
    fn fast_mixing_topology_tightens_timing_knobs() {
        let s = scaled_regime_knobs(Regime::Heavy, 2 * MS);
        assert_eq!(s.slice_ns, 500 * US);
        assert_eq!(s.preempt_thresh_ns, 250 * US);
        assert_eq!(
            scaled_regime_knobs(Regime::Mixed, 2 * MS).batch_slice_ns,
            10 * MS
        );
        assert_eq!(
            scaled_regime_knobs(Regime::Light, 2 * MS).batch_slice_ns,
            20 * MS
        );
    }

    #[test]
    fn unknown_topology_is_unscaled() {
        for r in Regime::ALL {
            assert_eq!(scaled_regime_knobs(r, 0), regime_knobs(r));
        }
    }
}
