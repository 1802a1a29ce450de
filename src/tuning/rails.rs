// SPDX-License-Identifier: GPL-2.0-only
//! Safety rails: the last step before knobs leave the loop. Whatever the blend, the sleep
//! adjustment or a future table change produce, BPF only ever sees values inside these bounds.

use crate::bpf_intf::{AffinityMode, TuningKnobs, knob_limits as lim};
use crate::tuning::experts::{Knob, NR_KNOBS};

/// `[min, max]` of one knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rail {
    pub min: u64,
    pub max: u64,
}

impl Rail {
    pub const fn new(min: u64, max: u64) -> Rail {
        Rail { min, max }
    }

    pub fn clamp(self, v: u64) -> u64 {
        v.clamp(self.min, self.max)
    }

    pub fn contains(self, v: u64) -> bool {
        (self.min..=self.max).contains(&v)
    }
}

// Every bound is intf.h's `enum knob_limits`, which BPF clamps to as well: the daemon never
// writes what BPF would change, and a value written past the daemon still cannot leave them.

/// Interactive slice: BPF's 250 us slice floor is for one task's short burst; a cap below 250 us
/// would make every interactive slice a context switch. Above 8 ms it is a batch slice.
pub const SLICE: Rail = Rail::new(lim::KNOB_SLICE_MIN_NS, lim::KNOB_SLICE_MAX_NS);
/// Tick preemption of BATCH: under 100 us it fires on every tick; over 8 ms, half a frame.
pub const PREEMPT: Rail = Rail::new(lim::KNOB_PREEMPT_MIN_NS, lim::KNOB_PREEMPT_MAX_NS);
/// Multiplier of the tau-derived lag cap: 0 would disable sleep credit, 16 lets a sleeper jump
/// more than a second of queue on large tau.
pub const LAG_SCALE: Rail = Rail::new(lim::KNOB_LAG_SCALE_MIN, lim::KNOB_LAG_SCALE_MAX);
/// Batch slice: 2 ms still amortises a switch and a cache refill; 80 ms is the longest any
/// interactive task should wait behind one batch task on a saturated CPU.
pub const BATCH_SLICE: Rail = Rail::new(lim::KNOB_BATCH_SLICE_MIN_NS, lim::KNOB_BATCH_SLICE_MAX_NS);
/// Longrun slice for interactive tiers; it is a tighter cap than `slice_ns` by design.
pub const BURST_SLICE: Rail = Rail::new(lim::KNOB_BURST_SLICE_MIN_NS, lim::KNOB_BURST_SLICE_MAX_NS);
/// Classifier score thresholds (BPF's score is wakeups x switches per ~1 ms of runtime).
pub const LAT_CRI_HIGH: Rail = Rail::new(lim::KNOB_LAT_CRI_HIGH_MIN, lim::KNOB_LAT_CRI_HIGH_MAX);
pub const LAT_CRI_LOW: Rail = Rail::new(lim::KNOB_LAT_CRI_LOW_MIN, lim::KNOB_LAT_CRI_LOW_MAX);

/// A rail for each continuous knob, in [`Knob::ALL`] order, and the affinity mode when it is
/// fixed rather than voted. [`RAILS`] is what BPF tolerates; a mode narrows it to what it
/// promises (see `super::mode`), so the loop can tune inside a mode but never out of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rails {
    pub knob: [Rail; NR_KNOBS],
    pub affinity: Option<AffinityMode>,
}

/// The widest rails, [`enforce`]'s: every mode's rails lie inside them.
pub const RAILS: Rails = Rails {
    knob: [
        SLICE,
        PREEMPT,
        LAG_SCALE,
        BATCH_SLICE,
        BURST_SLICE,
        LAT_CRI_HIGH,
        LAT_CRI_LOW,
    ],
    affinity: None,
};

impl Rails {
    pub fn rail(&self, knob: Knob) -> Rail {
        self.knob[knob as usize]
    }

    /// The same rails with `knob` narrowed to `[min, max]` (a const table entry's building block).
    pub const fn narrow(mut self, knob: Knob, min: u64, max: u64) -> Rails {
        self.knob[knob as usize] = Rail::new(min, max);
        self
    }

    pub const fn fix_affinity(mut self, mode: AffinityMode) -> Rails {
        self.affinity = Some(mode);
        self
    }

    /// Clamps every knob to its rail and restores the cross-knob invariants BPF relies on:
    /// - `lat_cri_thresh_low < lat_cri_thresh_high`, or the INTERACTIVE tier would be empty and
    ///   the classifier would jump straight from BATCH to LAT_CRITICAL;
    /// - `burst_slice_ns <= slice_ns`, since the longrun slice exists to be the tighter of the
    ///   two.
    ///
    /// `affinity_mode` is the fixed one, or forced into the enum's range; `pack` is 0 or 1.
    pub fn enforce(&self, k: TuningKnobs) -> TuningKnobs {
        let mut out = k;
        for knob in Knob::ALL {
            knob.set(&mut out, self.rail(knob).clamp(knob.get(&k)));
        }
        out.burst_slice_ns = out.burst_slice_ns.min(out.slice_ns);
        out.lat_cri_thresh_low = out.lat_cri_thresh_low.min(out.lat_cri_thresh_high - 1);
        out.affinity_mode = match self.affinity {
            Some(m) => m as u64,
            None => k.affinity_mode.min(AffinityMode::Strong as u64),
        };
        out.pack = k.pack.min(1);
        out
    }

    /// True when `k` satisfies everything [`Rails::enforce`] guarantees.
    pub fn within(&self, k: &TuningKnobs) -> bool {
        Knob::ALL
            .iter()
            .all(|&knob| self.rail(knob).contains(knob.get(k)))
            && k.burst_slice_ns <= k.slice_ns
            && k.lat_cri_thresh_low < k.lat_cri_thresh_high
            && match self.affinity {
                Some(m) => k.affinity_mode == m as u64,
                None => k.affinity_mode <= AffinityMode::Strong as u64,
            }
            && k.pack <= 1
    }

    /// True when these rails are a narrowing of `outer` that [`Rails::enforce`] can always
    /// satisfy: each rail non-empty and inside its outer one, and the invariants' adjustments
    /// (burst down to the slice, the low threshold below the high one) never leave a rail.
    pub fn is_narrowing_of(&self, outer: &Rails) -> bool {
        let r = |k| self.rail(k);
        Knob::ALL.iter().all(|&k| {
            let (i, o) = (r(k), outer.rail(k));
            i.min <= i.max && o.min <= i.min && i.max <= o.max
        }) && r(Knob::BurstSlice).min <= r(Knob::Slice).min
            && r(Knob::LatCriLow).min < r(Knob::LatCriHigh).min
            && (outer.affinity.is_none() || outer.affinity == self.affinity)
    }
}

/// [`RAILS`]`.enforce(k)`.
pub fn enforce(k: TuningKnobs) -> TuningKnobs {
    RAILS.enforce(k)
}

/// [`RAILS`]`.within(k)`.
pub fn within(k: &TuningKnobs) -> bool {
    RAILS.within(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

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
            pack: u64::MAX,
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

    #[test]
    fn narrowed_rails_clamp_tighter_and_a_fixed_affinity_wins() {
        assert!(RAILS.is_narrowing_of(&RAILS));
        let tight = RAILS
            .narrow(Knob::BatchSlice, 20 * MS, 80 * MS)
            .fix_affinity(AffinityMode::Strong);
        assert!(tight.is_narrowing_of(&RAILS) && !RAILS.is_narrowing_of(&tight));
        let k = TuningKnobs {
            batch_slice_ns: 5 * MS,
            affinity_mode: AffinityMode::Off as u64,
            ..TuningKnobs::defaults()
        };
        let e = tight.enforce(k);
        assert_eq!(e.batch_slice_ns, 20 * MS);
        assert_eq!(e.affinity_mode, AffinityMode::Strong as u64);
        assert!(tight.within(&e) && !tight.within(&k) && within(&k));
        // A narrowing the invariants would break is not one.
        let broken = RAILS.narrow(Knob::BurstSlice, 2 * MS, 4 * MS);
        assert!(!broken.is_narrowing_of(&RAILS));
        assert!(
            !RAILS
                .narrow(Knob::Slice, 2 * MS, MS)
                .is_narrowing_of(&RAILS)
        );
    }
}
