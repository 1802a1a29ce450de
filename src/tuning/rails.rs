// SPDX-License-Identifier: GPL-2.0-only
//! Safety rails: the last step before knobs leave the loop. Whatever the blend, the sleep
//! adjustment or a future table change produce, BPF only ever sees values inside these bounds.

use crate::bpf_intf::TuningKnobs;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// `[min, max]` of one knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rail {
    pub min: u64,
    pub max: u64,
}

impl Rail {
    const fn new(min: u64, max: u64) -> Rail {
        Rail { min, max }
    }

    pub fn clamp(self, v: u64) -> u64 {
        v.clamp(self.min, self.max)
    }

    pub fn contains(self, v: u64) -> bool {
        (self.min..=self.max).contains(&v)
    }
}

/// Interactive slice: BPF's 50 us slice floor is for one task's short burst; a cap below 250 us
/// would make every interactive slice a context switch. Above 8 ms it is a batch slice.
pub const SLICE: Rail = Rail::new(250 * US, 8 * MS);
/// Tick preemption of BATCH: under 100 us it fires on every tick; over 8 ms, half a frame.
pub const PREEMPT: Rail = Rail::new(100 * US, 8 * MS);
/// Multiplier of the tau-derived lag cap: 0 would disable sleep credit, 16 lets a sleeper jump
/// more than a second of queue on large tau.
pub const LAG_SCALE: Rail = Rail::new(1, 16);
/// Batch slice: 2 ms still amortises a switch and a cache refill; 80 ms is the longest any
/// interactive task should wait behind one batch task on a saturated CPU.
pub const BATCH_SLICE: Rail = Rail::new(2 * MS, 80 * MS);
/// Longrun slice for interactive tiers; it is a tighter cap than `slice_ns` by design.
pub const BURST_SLICE: Rail = Rail::new(100 * US, 4 * MS);
/// Classifier score thresholds (BPF's score is wakeups x switches per ~1 ms of runtime).
pub const LAT_CRI_HIGH: Rail = Rail::new(8, 256);
pub const LAT_CRI_LOW: Rail = Rail::new(1, 64);

/// Clamps every adaptive knob to its rail and restores the cross-knob invariants BPF relies on:
/// - `lat_cri_thresh_low < lat_cri_thresh_high`, or the INTERACTIVE tier would be empty and the
///   classifier would jump straight from BATCH to LAT_CRITICAL;
/// - `burst_slice_ns <= slice_ns`, since the longrun slice exists to be the tighter of the two.
///
/// `affinity_mode` is forced into the enum's range.
pub fn enforce(mut k: TuningKnobs) -> TuningKnobs {
    k.slice_ns = SLICE.clamp(k.slice_ns);
    k.preempt_thresh_ns = PREEMPT.clamp(k.preempt_thresh_ns);
    k.lag_scale = LAG_SCALE.clamp(k.lag_scale);
    k.batch_slice_ns = BATCH_SLICE.clamp(k.batch_slice_ns);
    k.burst_slice_ns = BURST_SLICE.clamp(k.burst_slice_ns).min(k.slice_ns);
    k.lat_cri_thresh_high = LAT_CRI_HIGH.clamp(k.lat_cri_thresh_high);
    k.lat_cri_thresh_low = LAT_CRI_LOW
        .clamp(k.lat_cri_thresh_low)
        .min(k.lat_cri_thresh_high - 1);
    k.affinity_mode = k.affinity_mode.min(2);
    k
}

/// True when `k` satisfies everything [`enforce`] guarantees.
pub fn within(k: &TuningKnobs) -> bool {
    SLICE.contains(k.slice_ns)
        && PREEMPT.contains(k.preempt_thresh_ns)
        && LAG_SCALE.contains(k.lag_scale)
        && BATCH_SLICE.contains(k.batch_slice_ns)
        && BURST_SLICE.contains(k.burst_slice_ns)
        && k.burst_slice_ns <= k.slice_ns
        && LAT_CRI_HIGH.contains(k.lat_cri_thresh_high)
        && LAT_CRI_LOW.contains(k.lat_cri_thresh_low)
        && k.lat_cri_thresh_low < k.lat_cri_thresh_high
        && k.affinity_mode <= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_inside_the_rails() {
        assert!(within(&TuningKnobs::defaults()));
        assert_eq!(enforce(TuningKnobs::defaults()), TuningKnobs::defaults());
    }

    #[test]
    fn extremes_are_pulled_in_and_invariants_restored() {
        let lo = TuningKnobs::default();
        let hi = TuningKnobs {
            slice_ns: u64::MAX,
            preempt_thresh_ns: u64::MAX,
            lag_scale: u64::MAX,
            batch_slice_ns: u64::MAX,
            burst_slice_ns: u64::MAX,
            lat_cri_thresh_high: u64::MAX,
            lat_cri_thresh_low: u64::MAX,
            affinity_mode: u64::MAX,
        };
        for k in [lo, hi] {
            let e = enforce(k);
            assert!(within(&e), "{e:?}");
        }
        let tangled = TuningKnobs {
            lat_cri_thresh_high: 10,
            lat_cri_thresh_low: 40,
            slice_ns: MS,
            burst_slice_ns: 3 * MS,
            ..TuningKnobs::defaults()
        };
        let e = enforce(tangled);
        assert_eq!((e.lat_cri_thresh_low, e.lat_cri_thresh_high), (9, 10));
        assert_eq!(e.burst_slice_ns, MS);
    }
}
