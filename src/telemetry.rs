// SPDX-License-Identifier: GPL-2.0-only
//! The per-second `-v` line (format documented under "Monitoring" in README.md). Fields whose
//! feature is not built yet print `-` rather than a made-up number.

use crate::bpf_intf::{Hist, NR_TIERS, Stats};
use crate::codel::Oscillator;
use crate::hist;

/// Counters and histograms as read at one instant (cumulative since load), and the CoDel
/// oscillator's state at that instant.
#[derive(Clone, Copy, Default)]
pub struct Snapshot {
    pub stats: Stats,
    pub hist: Hist,
    pub codel: Oscillator,
    pub nr_codel_stalls: u64,
}

/// What the daemon knows beyond BPF's counters; `None` = feature not built.
#[derive(Default)]
pub struct Extra {
    pub procdb: Option<(usize, usize)>,
    pub sleep_io_pct: Option<u64>,
    /// The batch DSQ's age and the overflow-rescue age that serves it, ns.
    pub sojourn_ns: Option<(u64, u64)>,
    pub regime: Option<String>,
    /// The CoDel stall target in force (x, or c_eq before the first step), ns.
    pub codel_target_ns: Option<u64>,
}

fn us(ns: u64) -> String {
    format!("{}us", ns / 1000)
}

fn pct(num: u64, den: u64) -> String {
    (num * 100)
        .checked_div(den)
        .map_or("-".into(), |v| format!("{v}%"))
}

/// Formats one line from two snapshots `secs` apart.
pub fn line(prev: &Snapshot, cur: &Snapshot, secs: f64, extra: &Extra) -> String {
    let d = |c: u64, p: u64| c.wrapping_sub(p);
    let (s, p) = (&cur.stats, &prev.stats);
    let per_s = |v: u64| ((v as f64) / secs.max(1e-3)).round() as u64;

    let wakes = d(s.nr_enq_wakeup, p.nr_enq_wakeup) + d(s.nr_idle_hits, p.nr_idle_hits);
    let lat_n = d(s.wake_lat_cnt, p.wake_lat_cnt);
    let lat_avg = d(s.wake_lat_sum_ns, p.wake_lat_sum_ns)
        .checked_div(lat_n)
        .map_or("-".into(), us);
    let mut all = vec![0u64; cur.hist.wake_lat[0].len()];
    for t in 0..NR_TIERS {
        for (a, v) in all
            .iter_mut()
            .zip(hist::delta(&cur.hist.wake_lat[t], &prev.hist.wake_lat[t]))
        {
            *a += v;
        }
    }
    let p99 = hist::percentile_ns(&all, 0.99).map_or("-".into(), us);
    let l2 = |t: usize| {
        pct(
            d(s.l2_hit[t], p.l2_hit[t]),
            d(s.l2_hit[t], p.l2_hit[t]) + d(s.l2_miss[t], p.l2_miss[t]),
        )
    };
    let procdb = extra.procdb.map_or("-".into(), |(n, c)| format!("{n}/{c}"));
    let sleep = extra.sleep_io_pct.map_or("-".into(), |v| format!("{v}%"));
    let sjrn = extra.sojourn_ns.map_or("-".into(), |(c, t)| {
        format!("{}ms/{}ms", c / 1_000_000, t / 1_000_000)
    });
    let regime = extra.regime.clone().unwrap_or_else(|| "-".into());
    let codel = extra.codel_target_ns.map_or("-".into(), us);

    format!(
        "d/s: {}  idle: {} shared: {}  preempt: {}  keep: {}  kick: H={} S={} enq: W={} R={} \
         wake: {} p99: {} L2: B={} I={} LC={} procdb: {} sleep: io={} sjrn: {} codel: {} rescue: {} [{}]",
        per_s(d(s.nr_dispatches, p.nr_dispatches)),
        pct(d(s.nr_idle_hits, p.nr_idle_hits), wakes),
        d(s.nr_shared, p.nr_shared),
        d(s.nr_preempt, p.nr_preempt),
        d(s.nr_keep_running, p.nr_keep_running),
        d(s.nr_hard_kicks, p.nr_hard_kicks),
        d(s.nr_soft_kicks, p.nr_soft_kicks),
        d(s.nr_enq_wakeup, p.nr_enq_wakeup),
        d(s.nr_enq_requeue, p.nr_enq_requeue),
        lat_avg,
        p99,
        l2(0),
        l2(1),
        l2(2),
        procdb,
        sleep,
        sjrn,
        codel,
        d(s.nr_overflow_rescue, p.nr_overflow_rescue)
            + d(s.nr_starvation_rescue, p.nr_starvation_rescue),
        regime,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_reports_rates_and_dashes_for_unbuilt_features() {
        let prev = Snapshot::default();
        let mut cur = Snapshot::default();
        cur.stats.nr_dispatches = 2000;
        cur.stats.nr_idle_hits = 25;
        cur.stats.nr_enq_wakeup = 75;
        cur.stats.wake_lat_sum_ns = 4_000 * 10;
        cur.stats.wake_lat_cnt = 10;
        cur.hist.wake_lat[1][12] = 10;
        let l = line(&prev, &cur, 2.0, &Extra::default());
        assert!(l.starts_with("d/s: 1000 "), "{l}");
        assert!(l.contains("idle: 25%"), "{l}");
        assert!(l.contains("wake: 4us p99: 8us"), "{l}");
        assert!(
            l.contains("procdb: - sleep: io=- sjrn: - codel: - rescue: 0 [-]"),
            "{l}"
        );
    }

    #[test]
    fn extra_fields_are_printed_when_known() {
        let e = Extra {
            procdb: Some((42, 5)),
            sleep_io_pct: Some(87),
            sojourn_ns: Some((3_000_000, 5_000_000)),
            regime: Some("MIXED".into()),
            codel_target_ns: Some(850_000),
        };
        let l = line(&Snapshot::default(), &Snapshot::default(), 1.0, &e);
        assert!(
            l.contains("procdb: 42/5 sleep: io=87% sjrn: 3ms/5ms codel: 850us rescue: 0 [MIXED]"),
            "{l}"
        );
    }
}
