// SPDX-License-Identifier: GPL-2.0-only
//! The four loss pathways: the evidence that some experts were wrong this second, and how much
//! each expert is charged for it. Each pathway is gated so that its look-alike does not fire it.

use super::experts::{Expert, NR_EXPERTS};
use super::signals::{Signals, TickInput};
use super::sleep::{IO_HIGH_FROM_PCT, IO_LOW_BELOW_PCT, IoBucket, IoBucketTracker};

/// P99 spike: ticks above the ceiling needed to confirm, and the share of the ceiling the signal
/// must fall under to clear a confirmed spike (between the two, the gate keeps its state).
pub const SPIKE_CONFIRM_TICKS: u32 = 2;
pub const SPIKE_EXIT_SHARE: f64 = 0.8;

/// Fork storm: wakeups per second per CPU that open the gate, and the share of that rate it must
/// fall under to close. Per CPU, because each CPU absorbs a roughly fixed wakeup rate before
/// wakers start queueing; a cardinality, so not tau-scaled.
pub const STORM_WAKES_PER_CPU: u64 = 1_000;
pub const STORM_EXIT_SHARE: f64 = 0.7;

/// Largest loss one pathway charges per unit of its charge table.
const MAX_MAGNITUDE: f64 = 3.0;

/// Which pathways charged losses this tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fired {
    pub p99_spike: bool,
    pub rescue_delta: bool,
    pub io_transition: bool,
    pub fork_storm: bool,
}

impl Fired {
    pub fn any(&self) -> bool {
        self.p99_spike || self.rescue_delta || self.io_transition || self.fork_storm
    }
}

/// What a pathway charges each expert per unit of its magnitude, experts in [`Expert::ALL`] order
/// as in the knob table [`SCALE`](super::experts::SCALE):
/// LATENCY, BALANCED, THROUGHPUT, IO_HEAVY, FORK_STORM, SATURATED.
type Charges = [f64; NR_EXPERTS];

/// Latency too high: charge the experts that loosen latency, hardest the ones that loosen most.
const SPIKE_CHARGES: Charges = [0.0, 0.3, 1.0, 0.4, 0.2, 0.8];

/// Rescues started: overflow queues aged past their threshold. The loosening experts pay in full.
/// LATENCY pays 0.4x: its tighter slices and lower thresholds crowd out batch work too, but BPF's
/// oscillator is already tightening the CoDel target on the same rescues, and a full charge would
/// make the two controllers compound. FORK_STORM goes free only while the storm gate is latched
/// ([`RESCUE_STORM_CHARGES`]).
const RESCUE_CHARGES: Charges = [0.4, 0.3, 1.0, 0.6, 0.4, 1.0];
/// Rescues while a storm floods the queues: FORK_STORM's compressed slices are what drains them.
/// Without a storm it pays as LATENCY does: its raised classifier thresholds keep more wakers in
/// the queues that aged, and going free it took nearly the whole blend at every rescue edge (busy
/// loops or a build starting, with no storm in sight), which then held, say, a pipe benchmark
/// started beside them to its thresholds and halved batch slice until the next event.
const RESCUE_STORM_CHARGES: Charges = [0.4, 0.3, 1.0, 0.6, 0.0, 1.0];

/// Fork storm: charge the experts that keep slices and rescue delays long. LATENCY is not
/// charged: its factors point the same way as FORK_STORM's, and charging it would hand the blend
/// to experts whose knobs BPF cannot use to drain a storm.
const STORM_CHARGES: Charges = [0.0, 0.3, 1.0, 0.5, 0.0, 0.8];

/// Sleeping turned I/O-heavy: everyone but IO_HEAVY priced the old pattern.
const IO_HIGH_CHARGES: Charges = [0.2, 0.3, 1.0, 0.0, 0.6, 0.6];

/// Sleeping stopped being I/O-like: IO_HEAVY's shorter slices now only cost throughput.
const IO_LOW_CHARGES: Charges = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// Back to the middle bucket: a small charge to the expert specialised for the bucket just left.
const IO_MID_CHARGE: f64 = 0.3;

fn charge(losses: &mut [f64; NR_EXPERTS], table: &Charges, magnitude: f64) {
    for (loss, c) in losses.iter_mut().zip(table) {
        *loss += c * magnitude;
    }
}

/// P99 gate: a Schmitt trigger (enter above the ceiling, leave below [`SPIKE_EXIT_SHARE`] of it)
/// whose entry needs [`SPIKE_CONFIRM_TICKS`] ticks above the ceiling.
#[derive(Clone, Debug, Default)]
struct SpikeGate {
    above: u32,
    latched: bool,
}

impl SpikeGate {
    /// Returns the overage magnitude when a confirmed spike is above the ceiling this tick.
    fn update(&mut self, latency_ns: Option<u64>, ceiling_ns: u64) -> Option<f64> {
        let lat = latency_ns? as f64;
        let ceiling = ceiling_ns.max(1) as f64;
        if lat > ceiling {
            self.above = self.above.saturating_add(1);
            if self.above >= SPIKE_CONFIRM_TICKS {
                self.latched = true;
            }
        } else if lat < ceiling * SPIKE_EXIT_SHARE {
            self.above = 0;
            self.latched = false;
        }
        (self.latched && lat > ceiling).then(|| (lat / ceiling - 1.0).clamp(0.25, MAX_MAGNITUDE))
    }
}

/// Fork-storm gate: Schmitt on the wakeup rate, and only charged while rescues confirm that the
/// wakeups are actually backing up the queues.
#[derive(Clone, Debug, Default)]
struct StormGate {
    latched: bool,
}

impl StormGate {
    fn update(&mut self, wakeups_per_s: u64, nr_cpus: u32, rescues: u64) -> Option<f64> {
        let enter = STORM_WAKES_PER_CPU.saturating_mul(u64::from(nr_cpus.max(1))) as f64;
        let exit = enter * STORM_EXIT_SHARE;
        let rate = wakeups_per_s as f64;
        if rate > enter {
            self.latched = true;
        } else if rate < exit {
            self.latched = false;
        }
        // Overage is measured from the exit rate so a latched storm dipping into the band still
        // charges a little; at the entry rate it is already 0.43.
        (self.latched && rescues > 0).then(|| (rate / exit - 1.0).clamp(0.0, MAX_MAGNITUDE))
    }
}

/// All pathway state carried between ticks.
#[derive(Clone, Debug, Default)]
pub struct Pathways {
    spike: SpikeGate,
    prev_rescues: u64,
    io: IoBucketTracker,
    storm: StormGate,
}

impl Pathways {
    pub fn io_bucket(&self) -> Option<IoBucket> {
        self.io.current()
    }

    /// Scores one tick. Always advances every gate, so edge detection stays current even on
    /// ticks where another pathway dominates.
    pub fn evaluate(
        &mut self,
        input: &TickInput,
        sig: &Signals,
        ceiling_ns: u64,
    ) -> ([f64; NR_EXPERTS], Fired) {
        let mut losses = [0.0; NR_EXPERTS];
        let mut fired = Fired::default();

        if let Some(v) = self.spike.update(sig.latency_ns, ceiling_ns) {
            charge(&mut losses, &SPIKE_CHARGES, v);
            fired.p99_spike = true;
        }

        let storm = self
            .storm
            .update(input.wakeups_per_s, input.nr_cpus, input.rescues);

        if self.prev_rescues == 0 && input.rescues > 0 {
            // 1 rescue -> 1.0, 16 -> 2.0, 256+ -> 3.0: a burst of rescues is worse than one, but
            // counts run into the thousands and must not swamp the other pathways.
            let v = (1.0 + (input.rescues as f64).log2() / 4.0).min(MAX_MAGNITUDE);
            let table = if self.storm.latched {
                &RESCUE_STORM_CHARGES
            } else {
                &RESCUE_CHARGES
            };
            charge(&mut losses, table, v);
            fired.rescue_delta = true;
        }
        self.prev_rescues = input.rescues;

        if let Some((from, to)) = self.io.update(sig.io_pct) {
            let io = sig.io_pct.unwrap_or(0.0);
            match to {
                IoBucket::High => {
                    let v = ((io - IO_HIGH_FROM_PCT) / (100.0 - IO_HIGH_FROM_PCT)).clamp(0.25, 1.0);
                    charge(&mut losses, &IO_HIGH_CHARGES, v);
                }
                IoBucket::Low => {
                    let v = ((IO_LOW_BELOW_PCT - io) / IO_LOW_BELOW_PCT).clamp(0.25, 1.0);
                    charge(&mut losses, &IO_LOW_CHARGES, v);
                }
                IoBucket::Mid => {
                    let left = if from == IoBucket::High {
                        Expert::IoHeavy
                    } else {
                        Expert::Throughput
                    };
                    losses[left as usize] += IO_MID_CHARGE;
                }
            }
            fired.io_transition = true;
        }

        if let Some(v) = storm {
            charge(&mut losses, &STORM_CHARGES, v);
            fired.fork_storm = true;
        }

        (losses, fired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CEIL: u64 = 5_000_000;

    fn spike_seq(lat: &[u64]) -> Vec<bool> {
        let mut g = SpikeGate::default();
        lat.iter()
            .map(|&l| g.update(Some(l), CEIL).is_some())
            .collect()
    }

    #[test]
    fn a_single_tick_spike_is_not_confirmed() {
        assert_eq!(spike_seq(&[1, 9_000_000, 1, 1]), [false; 4]);
        assert_eq!(
            spike_seq(&[9_000_000, 1_000_000, 9_000_000, 1_000_000, 9_000_000]),
            [false; 5],
            "spikes separated by healthy ticks never confirm"
        );
    }

    #[test]
    fn two_consecutive_spikes_confirm_and_the_band_holds_the_latch() {
        assert_eq!(
            spike_seq(&[
                9_000_000, 9_000_000, 4_500_000, 9_000_000, 3_000_000, 9_000_000
            ]),
            [false, true, false, true, false, false]
        );
        // Above, in the band, above: the band does not erase the first tick's evidence.
        assert_eq!(
            spike_seq(&[9_000_000, 4_500_000, 9_000_000]),
            [false, false, true]
        );
    }

    #[test]
    fn no_samples_is_no_evidence() {
        let mut g = SpikeGate::default();
        assert!(g.update(Some(9_000_000), CEIL).is_none());
        assert!(g.update(None, CEIL).is_none());
        assert!(g.update(Some(9_000_000), CEIL).is_some());
    }

    #[test]
    fn storm_needs_rate_and_pressure() {
        let mut g = StormGate::default();
        assert!(g.update(50_000, 4, 0).is_none(), "rate alone");
        assert!(g.update(50_000, 4, 3).is_some(), "rate plus rescues");
        assert!(g.update(3_500, 4, 3).is_some(), "latched in the band");
        assert!(g.update(2_000, 4, 3).is_none(), "below exit clears");
        assert!(g.update(3_500, 4, 3).is_none(), "band does not re-open");
        assert!(g.update(500, 1, 9).is_none(), "pressure without rate");
    }

    #[test]
    fn storm_loss_grows_with_the_overage() {
        let mut g = StormGate::default();
        let small = g.update(4_500, 4, 1).unwrap();
        let big = g.update(20_000, 4, 1).unwrap();
        assert!(big > small && small > 0.0, "{small} {big}");
        assert_eq!(g.update(u64::MAX, 4, 1), Some(MAX_MAGNITUDE));
    }
}
