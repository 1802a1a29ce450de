// SPDX-License-Identifier: GPL-2.0-only
//! The six experts: each is a set of scale factors over the eight continuous knobs and a ballot
//! for each of the two discrete ones. The weights the MWU learns decide how they are combined.
//!
//! Continuous knobs use the weighted *geometric* mean of the factors: the knobs are durations and
//! ratios, where halving and doubling are opposite moves of the same size. With an arithmetic
//! mean, an expert at 0.5x and one at 2x at equal weight give 1.25x, a built-in drift toward
//! looser knobs; the geometric mean gives 1.0x. It also stays between the smallest and largest
//! factor, so the blend can never leave the range the table spans.
//!
//! Every column of the table multiplies to exactly 1, so at the equilibrium (uniform weights) the
//! blend reproduces the regime baseline: the loop only moves a knob when some expert has gained
//! weight from evidence.

use crate::bpf_intf::{AffinityMode, TuningKnobs};

pub const NR_EXPERTS: usize = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Expert {
    Latency = 0,
    Balanced = 1,
    Throughput = 2,
    IoHeavy = 3,
    ForkStorm = 4,
    Saturated = 5,
}

impl Expert {
    pub const ALL: [Expert; NR_EXPERTS] = [
        Expert::Latency,
        Expert::Balanced,
        Expert::Throughput,
        Expert::IoHeavy,
        Expert::ForkStorm,
        Expert::Saturated,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Expert::Latency => "LATENCY",
            Expert::Balanced => "BALANCED",
            Expert::Throughput => "THROUGHPUT",
            Expert::IoHeavy => "IO_HEAVY",
            Expert::ForkStorm => "FORK_STORM",
            Expert::Saturated => "SATURATED",
        }
    }
}

/// The eight knobs blended from scale factors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Knob {
    Slice = 0,
    Preempt = 1,
    LagScale = 2,
    BatchSlice = 3,
    BurstSlice = 4,
    LatCriHigh = 5,
    LatCriLow = 6,
}
pub const NR_KNOBS: usize = 7;

impl Knob {
    pub const ALL: [Knob; NR_KNOBS] = [
        Knob::Slice,
        Knob::Preempt,
        Knob::LagScale,
        Knob::BatchSlice,
        Knob::BurstSlice,
        Knob::LatCriHigh,
        Knob::LatCriLow,
    ];

    /// The field's name in `struct tuning_knobs`.
    pub fn name(self) -> &'static str {
        match self {
            Knob::Slice => "slice_ns",
            Knob::Preempt => "preempt_thresh_ns",
            Knob::LagScale => "lag_scale",
            Knob::BatchSlice => "batch_slice_ns",
            Knob::BurstSlice => "burst_slice_ns",
            Knob::LatCriHigh => "lat_cri_thresh_high",
            Knob::LatCriLow => "lat_cri_thresh_low",
        }
    }

    fn field(self, k: &mut TuningKnobs) -> &mut u64 {
        match self {
            Knob::Slice => &mut k.slice_ns,
            Knob::Preempt => &mut k.preempt_thresh_ns,
            Knob::LagScale => &mut k.lag_scale,
            Knob::BatchSlice => &mut k.batch_slice_ns,
            Knob::BurstSlice => &mut k.burst_slice_ns,
            Knob::LatCriHigh => &mut k.lat_cri_thresh_high,
            Knob::LatCriLow => &mut k.lat_cri_thresh_low,
        }
    }

    pub fn get(self, k: &TuningKnobs) -> u64 {
        let mut copy = *k;
        *self.field(&mut copy)
    }

    pub fn set(self, k: &mut TuningKnobs, v: u64) {
        *self.field(k) = v;
    }
}

/// `SCALE[knob][expert]`, experts in [`Expert::ALL`] order:
/// LATENCY, BALANCED, THROUGHPUT, IO_HEAVY, FORK_STORM, SATURATED.
///
/// - LATENCY: short slices and preemption delays, more sleep credit (lag_scale up), lower
///   classifier thresholds so more wakers reach the fast tiers.
/// - BALANCED: the baseline (all 1.0); the anchor the weights relax back to.
/// - THROUGHPUT: long slices, late preemption, less sleep credit, stingier classification.
/// - IO_HEAVY: I/O-bound wakers are latency-sensitive but sleep a lot: mildly shorter slices and
///   preemption, more sleep credit, lower thresholds.
/// - FORK_STORM: compresses exactly what BPF consumes while a storm floods the queues: burst
///   slice, preemption delay and batch slice; raises the classifier thresholds so a swarm of
///   short-lived wakers does not all land in LAT_CRITICAL.
/// - SATURATED: every CPU busy; longer slices and burst slices cut switch overhead, later
///   preemption stops churning a queue that is full anyway.
pub const SCALE: [[f64; NR_EXPERTS]; NR_KNOBS] = [
    [0.5, 1.0, 1.6, 0.8, 1.0, 1.5625], // slice_ns
    [0.5, 1.0, 1.6, 0.8, 0.625, 2.5],  // preempt_thresh_ns
    [1.6, 1.0, 0.625, 1.25, 0.8, 1.0], // lag_scale
    [0.625, 1.0, 2.0, 0.8, 0.5, 2.0],  // batch_slice_ns
    [0.625, 1.0, 1.6, 1.0, 0.5, 2.0],  // burst_slice_ns
    [0.8, 1.0, 1.25, 0.8, 1.25, 1.0],  // lat_cri_thresh_high
    [0.625, 1.0, 1.6, 0.8, 1.25, 1.0], // lat_cri_thresh_low
];

/// An affinity ballot: a fixed mode, or "whatever the regime baseline says".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AffinityVote {
    Baseline,
    Fixed(AffinityMode),
}

/// Affinity ballots. LATENCY wants pipe partners on a shared L2 (STRONG); FORK_STORM's 1:N
/// wakeups gain nothing from L2 search and need spreading (OFF); SATURATED has no idle sibling
/// to find (WEAK). The other three defer to the regime, so at equilibrium the regime's own mode
/// (LIGHT weak, MIXED strong, HEAVY weak) carries a 4/6 majority.
pub const AFFINITY_VOTES: [AffinityVote; NR_EXPERTS] = [
    AffinityVote::Fixed(AffinityMode::Strong),
    AffinityVote::Baseline,
    AffinityVote::Baseline,
    AffinityVote::Baseline,
    AffinityVote::Fixed(AffinityMode::Off),
    AffinityVote::Fixed(AffinityMode::Weak),
];

/// Sleep-adjust ballots (the second discrete knob, see `super::TickOutput::sleep_adjust`).
/// The sleep histogram cannot tell an I/O wait from batch workers' own hand-offs (a build's
/// pipes, a thread pool's futexes). THROUGHPUT and FORK_STORM are trusted exactly when those
/// hand-offs dominate, and FORK_STORM already shortens batch slices itself, so they vote no.
/// SATURATED votes yes: with every CPU busy, a woken I/O task can only run once a batch slice
/// ends. 4/6 yes at equilibrium.
pub const SLEEP_ADJUST_VOTES: [bool; NR_EXPERTS] = [true, true, false, true, false, true];

/// Weighted geometric mean of one knob's factors.
pub fn blended_factor(knob: Knob, w: &[f64; NR_EXPERTS]) -> f64 {
    let log: f64 = SCALE[knob as usize]
        .iter()
        .zip(w)
        .map(|(s, wi)| wi * s.ln())
        .sum();
    log.exp()
}

/// Scales `base` by the blended factor and rounds; at least 1 so no knob blends to "off".
pub fn blend(base: u64, knob: Knob, w: &[f64; NR_EXPERTS]) -> u64 {
    let v = (base as f64 * blended_factor(knob, w)).round();
    if v >= u64::MAX as f64 {
        u64::MAX
    } else {
        (v as u64).max(1)
    }
}

/// Weighted majority over affinity modes. A tie goes to the regime baseline, then to WEAK, the
/// mode BPF-only mode runs with.
pub fn vote_affinity(w: &[f64; NR_EXPERTS], baseline: AffinityMode) -> AffinityMode {
    let resolve = |v: AffinityVote| match v {
        AffinityVote::Baseline => baseline,
        AffinityVote::Fixed(m) => m,
    };
    let total = |m: AffinityMode| -> f64 {
        AFFINITY_VOTES
            .iter()
            .zip(w)
            .filter(|(v, _)| resolve(**v) == m)
            .map(|(_, wi)| wi)
            .sum()
    };
    let order = [
        baseline,
        AffinityMode::Weak,
        AffinityMode::Strong,
        AffinityMode::Off,
    ];
    let mut best = (baseline, total(baseline));
    for m in order {
        let t = total(m);
        if t > best.1 {
            best = (m, t);
        }
    }
    best.0
}

/// Weighted majority over the sleep-adjust ballots; a tie keeps the adjustment on.
pub fn vote_sleep_adjust(w: &[f64; NR_EXPERTS]) -> bool {
    let yes: f64 = SLEEP_ADJUST_VOTES
        .iter()
        .zip(w)
        .filter(|(v, _)| **v)
        .map(|(_, wi)| wi)
        .sum();
    let no: f64 = w.iter().sum::<f64>() - yes;
    yes >= no
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIFORM: [f64; NR_EXPERTS] = [1.0 / NR_EXPERTS as f64; NR_EXPERTS];

    fn only(e: Expert) -> [f64; NR_EXPERTS] {
        let mut w = [0.0; NR_EXPERTS];
        w[e as usize] = 1.0;
        w
    }

    #[test]
    fn every_column_multiplies_to_one() {
        for k in Knob::ALL {
            let p: f64 = SCALE[k as usize].iter().product();
            assert!((p - 1.0).abs() < 1e-12, "{k:?}: {p}");
            assert!((blended_factor(k, &UNIFORM) - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn balanced_is_the_identity() {
        for k in Knob::ALL {
            assert_eq!(SCALE[k as usize][Expert::Balanced as usize], 1.0);
        }
    }

    #[test]
    fn fork_storm_compresses_what_bpf_consumes() {
        for k in [Knob::BurstSlice, Knob::Preempt, Knob::BatchSlice] {
            assert!(SCALE[k as usize][Expert::ForkStorm as usize] < 1.0, "{k:?}");
        }
    }

    #[test]
    fn geometric_blend_cancels_opposite_moves_and_stays_in_range() {
        // slice: LATENCY 0.5x and THROUGHPUT 1.6x; half and half is sqrt(0.8).
        let mut w = [0.0; NR_EXPERTS];
        w[Expert::Latency as usize] = 0.5;
        w[Expert::Throughput as usize] = 0.5;
        assert!((blended_factor(Knob::Slice, &w) - 0.8f64.sqrt()).abs() < 1e-12);
        assert_eq!(
            blend(1_000_000, Knob::Slice, &only(Expert::Latency)),
            500_000
        );
        assert_eq!(blend(1, Knob::Slice, &only(Expert::Latency)), 1, "never 0");
    }

    #[test]
    fn equilibrium_votes_return_the_regime_mode() {
        for m in [AffinityMode::Weak, AffinityMode::Strong, AffinityMode::Off] {
            assert_eq!(vote_affinity(&UNIFORM, m), m);
        }
        assert!(vote_sleep_adjust(&UNIFORM));
    }

    #[test]
    fn a_dominant_expert_carries_the_vote() {
        let base = AffinityMode::Strong;
        assert_eq!(
            vote_affinity(&only(Expert::ForkStorm), base),
            AffinityMode::Off
        );
        assert_eq!(
            vote_affinity(&only(Expert::Saturated), base),
            AffinityMode::Weak
        );
        assert_eq!(
            vote_affinity(&only(Expert::Latency), AffinityMode::Weak),
            AffinityMode::Strong
        );
        assert!(!vote_sleep_adjust(&only(Expert::Throughput)));
        assert!(vote_sleep_adjust(&only(Expert::IoHeavy)));
    }

    #[test]
    fn ties_go_to_the_baseline() {
        let mut w = [0.0; NR_EXPERTS];
        w[Expert::Latency as usize] = 0.5; // STRONG
        w[Expert::Saturated as usize] = 0.5; // WEAK
        assert_eq!(
            vote_affinity(&w, AffinityMode::Strong),
            AffinityMode::Strong
        );
        assert_eq!(vote_affinity(&w, AffinityMode::Weak), AffinityMode::Weak);
        assert_eq!(vote_affinity(&w, AffinityMode::Off), AffinityMode::Weak);
    }
}
