// SPDX-License-Identifier: GPL-2.0-only
//! What the stats server publishes: one flat record per control-loop tick. Counters are cumulative
//! since the BPF program was loaded (a hotplug reload starts them again at zero); a reader takes
//! differences between samples, as the `-v` line does between ticks.

use crate::bpf_intf::{NR_TIERS, Tier, TopoParams, TuningKnobs};
use crate::codel::{self, Oscillator};
use crate::hist;
use crate::telemetry::Snapshot;
use crate::tuning::{Expert, Mode, NR_EXPERTS};
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Marks a field whose value only ever grows while one BPF instance runs; the monitor prints its
/// rate per second next to it. A `_`-prefixed stat attribute is scx_stats' user extension.
pub const COUNTER_ATTR: &str = "_counter";

/// Marks a dict whose entries the monitor prints largest value first rather than by key.
pub const RANKED_ATTR: &str = "_ranked";

/// Regime value while no adaptive control loop runs (`--no-adaptive`).
pub const NO_REGIME: &str = "-";

/// Writes a scx_stats struct from one entry a field: `name: Type = "description";`, with
/// `, _counter` before the `;` for a [counter](COUNTER_ATTR); every field is `pub`. The entries
/// are the `#[stat(desc = ...)]` attributes they stand for, without the four lines rustfmt gives
/// each one. Types are matched as identifiers (`u64`, `BTreeMap<String, u64>`), not as a `ty`
/// fragment: the Stats derive cannot read a type a macro hands over as one opaque group.
macro_rules! stats_struct {
    (
        $(#[$($attr:tt)*])*
        pub struct $name:ident {
            $($field:ident: $ty:ident $(<$($arg:ident),+>)? = $desc:literal $(, $flag:ident)?;)*
        }
    ) => {
        $(#[$($attr)*])*
        pub struct $name {
            $(#[stat(desc = $desc $(, $flag)?)] pub $field: $ty $(<$($arg),+>)?,)*
        }
    };
}

stats_struct! {
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
    #[stat(top, desc = "scx_pandemonium scheduler statistics, one sample per second")]
    pub struct PandemoniumMetrics {
        at_ms: u64 = "CLOCK_MONOTONIC time the sample was taken, ms (rates use its differences)";
        adaptive: u64 = "1 when the adaptive control loop runs, 0 in --no-adaptive (BPF-only) mode";
        mode: String = "mode in force (--mode, or --autopower's pick): auto, gaming, lowlatency, \
                        powersave or server";
        regime: String =
            "load regime LIGHT / MIXED / HEAVY (+LONGRUN); '-' without the adaptive loop";
        longrun: u64 = "1 while batch work has queued past the longrun threshold (BPF's flag)";

        nr_dispatches: u64 = "dispatch() calls: a CPU looking for its next task", _counter;
        nr_idle_hits: u64 = "wakeups sent to an idle CPU by select_cpu's fast path", _counter;
        nr_shared: u64 = "insertions into the shared node / batch overflow queues", _counter;
        nr_pcpu: u64 = "insertions into a per-CPU queue", _counter;
        nr_spills: u64 =
            "placements sent to a near peer CPU because the own queue was full", _counter;
        nr_packed: u64 =
            "powersave: wakeups queued behind their busy CPU's runner instead of waking an idle \
             core",
            _counter;
        nr_preempt: u64 =
            "tick preemptions of BATCH tasks in favour of waiting interactive work", _counter;
        nr_keep_running: u64 =
            "times the previous task kept its CPU: nothing else queued, or only BATCH work",
            _counter;
        nr_hard_kicks: u64 = "preempting CPU kicks", _counter;
        nr_soft_kicks: u64 = "kicks of an idle CPU found for an enqueued task", _counter;
        nr_enq_wakeup: u64 = "enqueues of waking tasks", _counter;
        nr_enq_requeue: u64 = "re-enqueues of tasks that used up their slice", _counter;
        nr_steals: u64 =
            "dispatches that took a task from a nearby CPU's queue (by R_eff)", _counter;
        nr_overflow_rescue: u64 =
            "overflow rescues: aged shared-queue work served first (also for CoDel stalls)",
            _counter;
        nr_starvation_rescue: u64 =
            "starvation rescues: work waiting past the hard starvation bound served first",
            _counter;
        nr_wait_rescue: u64 =
            "tasks run because they had waited the wait bound (1 s), whatever their vtime",
            _counter;
        nr_bw_throttled: u64 =
            "tasks held back because their cgroup had run its cpu.max quota for the period",
            _counter;
        nr_offline_drain: u64 = "tasks drained from the queue of a CPU going offline", _counter;
        nr_rank_offline_skips: u64 = "affinity rank walks that skipped an offline CPU", _counter;
        nr_pinned: u64 = "tasks pinned to one CPU, sent to its local queue", _counter;
        nr_offline_placements: u64 =
            "placements that targeted an offline CPU (must stay 0)", _counter;
        nr_offline_keeps: u64 =
            "slices renewed for a kthread still running on a CPU going offline", _counter;
        nr_offline_kicks: u64 =
            "CPUs going offline kicked because work waited in their local queue", _counter;
        nr_stranded_rescues: u64 =
            "CPU queues left unserved for 250 ms moved to the CPU's local queue", _counter;
        nr_yield_kept: u64 =
            "sched_yield() calls that kept the CPU: nothing queued here to yield to", _counter;
        nr_yield_handoffs: u64 =
            "sched_yield() calls that gave the CPU up and queued the caller behind the work \
             waiting here",
            _counter;
        nr_coop_dispatches: u64 =
            "--coop: dispatches that ran a cooperative group's thread from its node's queue",
            _counter;
        nr_coop_rotations: u64 =
            "--coop: times another group took a node's CPUs (the quantum ended or the holder \
             had nothing queued)",
            _counter;
        nr_coop_fillers: u64 =
            "--coop: another group's threads run a preemption threshold on a CPU the quantum's \
             holder left (its threads all ran elsewhere or waited)",
            _counter;
        nr_coop_yield_handoffs: u64 =
            "--coop: sched_yield() calls that gave the CPU to a queued thread of the same group",
            _counter;
        nr_coop_mate_preempts: u64 =
            "--coop: preemptions of a group's thread by a thread of its own group (must stay 0)",
            _counter;
        nr_coop_grants: u64 =
            "--coop-learn: processes of a learned name that showed cooperation and joined the \
             groups",
            _counter;
        l2_hit: BTreeMap<String, u64> =
            "dispatches that stayed on the task's L2 cache domain, by tier", _counter;
        l2_miss: BTreeMap<String, u64> =
            "dispatches that left the task's L2 cache domain, by tier", _counter;
        wake_lat_sum_ns: u64 = "sum of wakeup latencies (runnable to running), ns", _counter;
        wake_lat_cnt: u64 = "wakeup latencies measured", _counter;
        wake_lat_max_ns: u64 = "largest wakeup latency since load, ns";
        wake_p99_ns: BTreeMap<String, u64> =
            "P99 wakeup latency of the last second by tier, ns (log2 bucket upper bound; \
             a tier without wakeups is absent)";

        cgroup_cpu_pct: BTreeMap<String, f64> =
            "the 5 cgroups that used the most CPU since the previous sample: path (id:N when it \
             cannot be resolved) -> percent of all online CPUs' time; a group counts only its \
             own tasks, not its children's, and tasks of the root cgroup are not counted",
            _ranked;

        mwu_weights: BTreeMap<String, f64> =
            "MWU expert weights (sum 1); empty without the adaptive loop";

        // One line each for --help-stats; each knob's meaning, unit, range and writer are
        // documented once, at its field of struct tuning_knobs in src/bpf/intf.h.
        knob_slice_ns: u64 = "knob: slice cap of INTERACTIVE and LAT_CRITICAL tasks, ns";
        knob_preempt_thresh_ns: u64 =
            "knob: how long interactive work waits before a BATCH task is preempted, ns";
        knob_lag_scale: u64 =
            "knob: multiple of the lag cap a waking task may bank as vtime credit";
        knob_batch_slice_ns: u64 = "knob: BATCH time slice, ns";
        knob_burst_slice_ns: u64 = "knob: interactive slice cap while longrun is on, ns";
        knob_lat_cri_thresh_high: u64 = "knob: behaviour score from which a task is LAT_CRITICAL";
        knob_lat_cri_thresh_low: u64 = "knob: behaviour score from which a task is INTERACTIVE";
        knob_affinity_mode: u64 = "knob: L2 placement 0 off / 1 weak / 2 strong";
        knob_pack: u64 = "knob: 1 when wakeups pack onto busy CPUs (powersave)";
        topology_tau_ns: u64 = "topology mixing time tau, ns (from topology detection)";

        codel_target_ns: u64 = "CoDel stall target now (oscillator position x), ns";
        codel_velocity_ns: i64 =
            "CoDel target velocity, ns per tick (negative: tightening after rescues)";
        codel_eq_ns: u64 = "CoDel equilibrium c_eq the target returns to, ns";
        codel_floor_ns: u64 = "CoDel target floor, ns";
        codel_max_ns: u64 = "CoDel target ceiling, ns";
        nr_codel_stalls: u64 = "CoDel intervals that ended stalled, all CPUs", _counter;
    }
}

/// One tick's inputs to [`PandemoniumMetrics::of`].
pub struct Sample<'a> {
    pub at_ms: u64,
    pub prev: &'a Snapshot,
    pub cur: &'a Snapshot,
    pub knobs: TuningKnobs,
    pub topo: TopoParams,
    /// The topology's mixing time the parameters were derived from.
    pub tau_ns: u64,
    pub longrun: bool,
    pub mode: Mode,
    /// The regime label and MWU weights; `None` without the adaptive loop.
    pub adaptive: Option<(String, [f64; NR_EXPERTS])>,
    /// The top cgroups by CPU share since the previous sample (see [`crate::cgroup_stats`]).
    pub cgroup_cpu_pct: BTreeMap<String, f64>,
}

fn by_tier<T>(f: impl Fn(usize) -> Option<T>) -> BTreeMap<String, T> {
    (0..NR_TIERS)
        .filter_map(|t| Some((Tier::ALL[t].name().to_string(), f(t)?)))
        .collect()
}

impl PandemoniumMetrics {
    pub fn of(s: &Sample) -> PandemoniumMetrics {
        let (st, k) = (&s.cur.stats, &s.knobs);
        let Oscillator { x, v } = s.cur.codel;
        let (regime, weights) = match &s.adaptive {
            Some((r, w)) => (
                r.clone(),
                Expert::ALL
                    .iter()
                    .zip(w)
                    .map(|(e, w)| (e.name().to_string(), *w))
                    .collect(),
            ),
            None => (NO_REGIME.to_string(), BTreeMap::new()),
        };
        let p99 = |t: usize| {
            let d = hist::delta(&s.cur.hist.wake_lat[t], &s.prev.hist.wake_lat[t]);
            hist::percentile_ns(&d, 0.99)
        };
        PandemoniumMetrics {
            at_ms: s.at_ms,
            adaptive: s.adaptive.is_some() as u64,
            mode: s.mode.name().to_string(),
            regime,
            longrun: s.longrun as u64,
            nr_dispatches: st.nr_dispatches,
            nr_idle_hits: st.nr_idle_hits,
            nr_shared: st.nr_shared,
            nr_pcpu: st.nr_pcpu,
            nr_spills: st.nr_spills,
            nr_packed: st.nr_packed,
            nr_preempt: st.nr_preempt,
            nr_keep_running: st.nr_keep_running,
            nr_hard_kicks: st.nr_hard_kicks,
            nr_soft_kicks: st.nr_soft_kicks,
            nr_enq_wakeup: st.nr_enq_wakeup,
            nr_enq_requeue: st.nr_enq_requeue,
            nr_steals: st.nr_steals,
            nr_overflow_rescue: st.nr_overflow_rescue,
            nr_starvation_rescue: st.nr_starvation_rescue,
            nr_wait_rescue: st.nr_wait_rescue,
            nr_bw_throttled: st.nr_bw_throttled,
            nr_offline_drain: st.nr_offline_drain,
            nr_rank_offline_skips: st.nr_rank_offline_skips,
            nr_pinned: st.nr_pinned,
            nr_offline_placements: st.nr_offline_placements,
            nr_offline_keeps: st.nr_offline_keeps,
            nr_offline_kicks: st.nr_offline_kicks,
            nr_stranded_rescues: st.nr_stranded_rescues,
            nr_yield_kept: st.nr_yield_kept,
            nr_yield_handoffs: st.nr_yield_handoffs,
            nr_coop_dispatches: st.nr_coop_dispatches,
            nr_coop_rotations: st.nr_coop_rotations,
            nr_coop_fillers: st.nr_coop_fillers,
            nr_coop_yield_handoffs: st.nr_coop_yield_handoffs,
            nr_coop_mate_preempts: st.nr_coop_mate_preempts,
            nr_coop_grants: st.nr_coop_grants,
            l2_hit: by_tier(|t| Some(st.l2_hit[t])),
            l2_miss: by_tier(|t| Some(st.l2_miss[t])),
            wake_lat_sum_ns: st.wake_lat_sum_ns,
            wake_lat_cnt: st.wake_lat_cnt,
            wake_lat_max_ns: st.wake_lat_max_ns,
            wake_p99_ns: by_tier(p99),
            cgroup_cpu_pct: s.cgroup_cpu_pct.clone(),
            mwu_weights: weights,
            knob_slice_ns: k.slice_ns,
            knob_preempt_thresh_ns: k.preempt_thresh_ns,
            knob_lag_scale: k.lag_scale,
            knob_batch_slice_ns: k.batch_slice_ns,
            knob_burst_slice_ns: k.burst_slice_ns,
            knob_lat_cri_thresh_high: k.lat_cri_thresh_high,
            knob_lat_cri_thresh_low: k.lat_cri_thresh_low,
            knob_affinity_mode: k.affinity_mode,
            knob_pack: k.pack,
            topology_tau_ns: s.tau_ns,
            codel_target_ns: codel::target(x, &s.topo),
            codel_velocity_ns: v,
            codel_eq_ns: codel::equilibrium(&s.topo) as u64,
            codel_floor_ns: s.topo.codel_target_floor_ns,
            codel_max_ns: s.topo.codel_target_max_ns,
            nr_codel_stalls: s.cur.nr_codel_stalls,
        }
    }
}
