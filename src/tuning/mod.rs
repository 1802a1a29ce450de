// SPDX-License-Identifier: GPL-2.0-only
//! The adaptive control loop's decisions, as pure state machines: no BPF access, no clock, no
//! threads. The daemon builds a [`TickInput`] from BPF's maps once a second, calls
//! [`Tuner::tick`], and writes [`TickOutput::knobs`] back.
//!
//! One tick:
//! 1. derive P99 per tier, the latency signal and the I/O-like sleep share ([`Signals`]);
//! 2. update the regime (Schmitt + 2-tick hold) and take its tau-scaled baseline, shaped by the
//!    mode ([`Mode`]);
//! 3. score the four loss pathways and update the expert weights (or relax them when healthy);
//! 4. blend the eight continuous knobs, vote the two discrete ones;
//! 5. sleep-adjust the batch slice, apply the longrun override, clamp to the mode's rails.

mod baseline;
mod experts;
pub mod mode;
pub mod mode_log;
mod mwu;
mod pathways;
mod rails;
pub mod regime;
mod signals;
mod sleep;
#[cfg(test)]
mod tests;

pub use baseline::{p99_ceiling_ns, regime_knobs, scaled_regime_knobs};
pub use experts::{
    AFFINITY_VOTES, AffinityVote, Expert, Knob, NR_EXPERTS, NR_KNOBS, SCALE, SLEEP_ADJUST_VOTES,
};
pub use mode::Mode;
pub use mwu::{ETA, HEALTHY_CEILING_SHARE, RELAX_HOLD, RELAX_RATE, WEIGHT_FLOOR};
pub use pathways::{Fired, STORM_WAKES_PER_CPU};
pub use rails::{RAILS, Rail, Rails};
pub use signals::{MIN_P99_SAMPLES, Signals, TickContext, TickInput, latency_signal};
pub use sleep::{IO_LIKE_BELOW_BUCKET, IoBucket, batch_slice_factor, io_share_pct};

/// The rails, by knob, for callers that report or test them.
pub mod rail {
    pub use super::rails::{
        BATCH_SLICE, BURST_SLICE, LAG_SCALE, LAT_CRI_HIGH, LAT_CRI_LOW, PREEMPT, SLICE, enforce,
        within,
    };
}

use crate::bpf_intf::{AffinityMode, NR_TIERS, TuningKnobs};
use regime::{Regime, RegimeDetector};

/// Everything one tick decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TickOutput {
    /// What to write to BPF's knobs map, whole.
    pub knobs: TuningKnobs,
    pub regime: Regime,
    pub regime_changed: bool,
    pub p99_ns: [Option<u64>; NR_TIERS],
    pub latency_ns: Option<u64>,
    pub io_pct: Option<f64>,
    /// Second discrete knob: whether the sleep histogram was allowed to shorten the batch slice.
    /// It has no BPF field; it acts through `batch_slice_ns`.
    pub sleep_adjust: bool,
    pub fired: Fired,
    pub weights: [f64; NR_EXPERTS],
}

/// The control loop's state between ticks.
#[derive(Clone, Debug, Default)]
pub struct Tuner {
    mode: Mode,
    regime: RegimeDetector,
    weights: mwu::Weights,
    pathways: pathways::Pathways,
}

impl Tuner {
    pub fn new() -> Tuner {
        Tuner::default()
    }

    pub fn with_mode(mode: Mode) -> Tuner {
        Tuner {
            mode,
            ..Tuner::default()
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// `--autopower`'s switch: the next tick shapes and rails the knobs by `mode`. What the loop
    /// learned (regime, weights) stays: it describes the load, not the mode.
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    pub fn regime(&self) -> Regime {
        self.regime.current()
    }

    pub fn weights(&self) -> &[f64; NR_EXPERTS] {
        self.weights.get()
    }

    /// The I/O-share bucket in force, `None` until something has slept.
    pub fn io_bucket(&self) -> Option<IoBucket> {
        self.pathways.io_bucket()
    }

    /// Runs one tick.
    pub fn tick(&mut self, input: &TickInput) -> TickOutput {
        let sig = Signals::of(input);
        let before = self.regime.current();
        let regime = self.regime.update(input.idle_pct);
        let base = self.mode.baseline(regime, input.tau_ns);
        let ceiling = p99_ceiling_ns(regime);

        let (losses, fired) = self.pathways.evaluate(input, &sig, ceiling);
        if fired.any() {
            self.weights.apply_losses(&losses);
        }
        let calm = sig
            .latency_ns
            .is_none_or(|l| (l as f64) < ceiling as f64 * HEALTHY_CEILING_SHARE);
        self.weights.note_tick(calm && !fired.any());

        let w = *self.weights.get();
        let mut k = blend_all(&base, &w);
        let sleep_adjust = experts::vote_sleep_adjust(&w);
        if sleep_adjust {
            let f = batch_slice_factor(sig.io_pct);
            k.batch_slice_ns = (k.batch_slice_ns as f64 * f).round() as u64;
        }
        if input.longrun {
            // Longrun means batch work has been queued for seconds: shortening its slice further
            // only adds switches to the tasks already starving, and L2 search for them is wasted.
            // A mode that fixes affinity (powersave packs work) keeps it: its rails come last.
            k.affinity_mode = AffinityMode::Weak as u64;
            k.batch_slice_ns = base.batch_slice_ns;
        }

        TickOutput {
            knobs: self.mode.rails().enforce(k),
            regime,
            regime_changed: regime != before,
            p99_ns: sig.p99_ns,
            latency_ns: sig.latency_ns,
            io_pct: sig.io_pct,
            sleep_adjust,
            fired,
            weights: w,
        }
    }
}

/// The eight continuous knobs blended from `base`, affinity voted.
fn blend_all(base: &TuningKnobs, w: &[f64; NR_EXPERTS]) -> TuningKnobs {
    let b = |v: u64, knob: Knob| experts::blend(v, knob, w);
    let baseline_affinity = match base.affinity_mode {
        0 => AffinityMode::Off,
        2 => AffinityMode::Strong,
        _ => AffinityMode::Weak,
    };
    TuningKnobs {
        slice_ns: b(base.slice_ns, Knob::Slice),
        preempt_thresh_ns: b(base.preempt_thresh_ns, Knob::Preempt),
        lag_scale: b(base.lag_scale, Knob::LagScale),
        batch_slice_ns: b(base.batch_slice_ns, Knob::BatchSlice),
        burst_slice_ns: b(base.burst_slice_ns, Knob::BurstSlice),
        lat_cri_thresh_high: b(base.lat_cri_thresh_high, Knob::LatCriHigh),
        lat_cri_thresh_low: b(base.lat_cri_thresh_low, Knob::LatCriLow),
        affinity_mode: experts::vote_affinity(w, baseline_affinity) as u64,
        pack: base.pack,
    }
}
