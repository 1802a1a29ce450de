// SPDX-License-Identifier: GPL-2.0-only
//! One tick's input, and the figures the loop derives from it before deciding anything.

use crate::bpf_intf::{Hist, NR_LAT_BUCKETS, NR_SLEEP_BUCKETS, NR_TIERS, Stats, Tier};
use crate::hist;

use super::sleep;

/// Below this many samples a tier's P99 is its maximum, one unlucky wakeup; such a tier is left
/// out of the latency signal rather than allowed to trip the spike pathway on its own.
pub const MIN_P99_SAMPLES: u64 = 20;

/// What BPF reported over the last second. Histograms are this second's deltas, not totals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TickInput {
    pub wake_lat: [[u64; NR_LAT_BUCKETS]; NR_TIERS],
    pub sleep: [u64; NR_SLEEP_BUCKETS],
    /// Share of wakeups that found an idle CPU, 0..=100.
    pub idle_pct: f64,
    /// Overflow plus starvation rescues this second.
    pub rescues: u64,
    pub wakeups_per_s: u64,
    /// BPF's longrun mode (batch work queued past the longrun threshold).
    pub longrun: bool,
    pub nr_cpus: u32,
    /// Topology mixing time; 0 while topology is unknown (timing knobs are then left unscaled).
    pub tau_ns: u64,
}

impl Default for TickInput {
    fn default() -> Self {
        TickInput {
            wake_lat: [[0; NR_LAT_BUCKETS]; NR_TIERS],
            sleep: [0; NR_SLEEP_BUCKETS],
            idle_pct: 100.0,
            rescues: 0,
            wakeups_per_s: 0,
            longrun: false,
            nr_cpus: 1,
            tau_ns: 0,
        }
    }
}

/// Per-tick context that does not come from the stats and histogram maps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickContext {
    pub longrun: bool,
    pub nr_cpus: u32,
    pub tau_ns: u64,
}

impl TickInput {
    /// Builds a tick from two cumulative reads `secs` apart (the scheduler's `read_stats` and
    /// `read_hist`). The idle share is the same idle-hit ratio the `-v` line prints; a second
    /// with no wakeups at all counts as fully idle, since nothing waited for a CPU.
    pub fn from_counters(
        prev: (&Stats, &Hist),
        cur: (&Stats, &Hist),
        secs: f64,
        ctx: TickContext,
    ) -> TickInput {
        let (ps, ph) = prev;
        let (cs, ch) = cur;
        // Saturating: counters restart at zero when BPF is reloaded (hotplug), and a stale `prev`
        // must read as a quiet second, not as 2^64 events.
        let d = |c: u64, p: u64| c.saturating_sub(p);
        let hits = d(cs.nr_idle_hits, ps.nr_idle_hits);
        let wakes = hits.saturating_add(d(cs.nr_enq_wakeup, ps.nr_enq_wakeup));
        let idle_pct = if wakes == 0 {
            100.0
        } else {
            hits as f64 * 100.0 / wakes as f64
        };
        let mut wake_lat = [[0; NR_LAT_BUCKETS]; NR_TIERS];
        for (t, row) in wake_lat.iter_mut().enumerate() {
            delta_into(row, &ch.wake_lat[t], &ph.wake_lat[t]);
        }
        let mut sleep = [0; NR_SLEEP_BUCKETS];
        delta_into(&mut sleep, &ch.sleep, &ph.sleep);
        TickInput {
            wake_lat,
            sleep,
            idle_pct,
            rescues: d(cs.nr_overflow_rescue, ps.nr_overflow_rescue)
                .saturating_add(d(cs.nr_starvation_rescue, ps.nr_starvation_rescue)),
            wakeups_per_s: (wakes as f64 / secs.max(1e-3)).round() as u64,
            longrun: ctx.longrun,
            nr_cpus: ctx.nr_cpus,
            tau_ns: ctx.tau_ns,
        }
    }
}

fn delta_into(out: &mut [u64], cur: &[u64], prev: &[u64]) {
    for (o, v) in out.iter_mut().zip(hist::delta(cur, prev)) {
        *o = v;
    }
}

/// Figures derived from one [`TickInput`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Signals {
    /// P99 wakeup latency per tier (indexed by `Tier as usize`), `None` without samples.
    pub p99_ns: [Option<u64>; NR_TIERS],
    /// The latency the loop is judged by; see [`latency_signal`].
    pub latency_ns: Option<u64>,
    /// Share of sleeps that look like I/O waits, see [`sleep::io_share_pct`].
    pub io_pct: Option<f64>,
}

impl Signals {
    pub fn of(input: &TickInput) -> Signals {
        let p99_ns = input.wake_lat.map(|row| hist::percentile_ns(&row, 0.99));
        Signals {
            p99_ns,
            latency_ns: latency_signal(&input.wake_lat),
            io_pct: sleep::io_share_pct(&input.sleep),
        }
    }
}

/// Worst P99 over the INTERACTIVE and LAT_CRITICAL tiers that have at least
/// [`MIN_P99_SAMPLES`] wakeups. BATCH is left out on purpose: under load the scheduler makes
/// batch work wait so that interactive work does not, and judging the loop by batch latency would
/// punish exactly the trade it exists to make (batch starvation is the rescue pathway's job).
pub fn latency_signal(wake_lat: &[[u64; NR_LAT_BUCKETS]; NR_TIERS]) -> Option<u64> {
    [Tier::Interactive, Tier::LatCritical]
        .iter()
        .map(|&t| &wake_lat[t as usize])
        .filter(|row| row.iter().sum::<u64>() >= MIN_P99_SAMPLES)
        .filter_map(|row| hist::percentile_ns(row, 0.99))
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_signal_ignores_batch_and_thin_tiers() {
        let mut h = [[0u64; NR_LAT_BUCKETS]; NR_TIERS];
        h[Tier::Batch as usize][25] = 1000;
        assert_eq!(latency_signal(&h), None);
        h[Tier::LatCritical as usize][24] = 5;
        assert_eq!(latency_signal(&h), None, "5 samples are not a P99");
        h[Tier::Interactive as usize][12] = 100;
        assert_eq!(latency_signal(&h), Some((2 << 12) - 1));
        h[Tier::LatCritical as usize][14] = 95;
        assert_eq!(latency_signal(&h), Some((2 << 24) - 1), "worst tier wins");
    }

    #[test]
    fn from_counters_takes_deltas_and_the_idle_hit_share() {
        let mut ps = Stats::default();
        let mut cs = Stats::default();
        let mut ph = Hist::default();
        let mut ch = Hist::default();
        ps.nr_idle_hits = 100;
        cs.nr_idle_hits = 130;
        ps.nr_enq_wakeup = 50;
        cs.nr_enq_wakeup = 120;
        cs.nr_overflow_rescue = 3;
        cs.nr_starvation_rescue = 1;
        ph.wake_lat[1][10] = 5;
        ch.wake_lat[1][10] = 9;
        ch.sleep[3] = 7;
        let ctx = TickContext {
            longrun: true,
            nr_cpus: 4,
            tau_ns: 8_000_000,
        };
        let t = TickInput::from_counters((&ps, &ph), (&cs, &ch), 2.0, ctx);
        assert!((t.idle_pct - 30.0).abs() < 1e-9);
        assert_eq!(t.wakeups_per_s, 50);
        assert_eq!(t.rescues, 4);
        assert_eq!(t.wake_lat[1][10], 4);
        assert_eq!(t.sleep[3], 7);
        assert!(t.longrun);
        assert_eq!((t.nr_cpus, t.tau_ns), (4, 8_000_000));
    }

    #[test]
    fn counters_that_restarted_read_as_a_quiet_second() {
        let ps = Stats {
            nr_enq_wakeup: 1_000_000,
            nr_overflow_rescue: 50,
            ..Default::default()
        };
        let cs = Stats {
            nr_enq_wakeup: 10,
            ..Default::default()
        };
        let h = Hist::default();
        let t = TickInput::from_counters((&ps, &h), (&cs, &h), 1.0, TickContext::default());
        assert_eq!((t.rescues, t.wakeups_per_s), (0, 0));
    }

    #[test]
    fn a_second_without_wakeups_is_idle() {
        let z = (&Stats::default(), &Hist::default());
        let t = TickInput::from_counters(z, z, 1.0, TickContext::default());
        assert_eq!(t.idle_pct, 100.0);
    }
}
