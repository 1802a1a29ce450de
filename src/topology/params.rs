// SPDX-License-Identifier: GPL-2.0-only
//! The tau law ([`tau_ns_from_lambda2`]), the CoDel equilibrium and the one
//! table of tau-scaled K constants ([`derive_params`]) that turns tau into
//! every timing knob the BPF side reads ([`TauParams::bpf`]).

use std::fmt;

use crate::bpf_intf::{MAX_AFFINITY_CANDIDATES, TopoParams};

/// tau = TAU_SCALE_NS / lambda_2; see "Tau calibration" in the `topology`
/// module docs.
pub const TAU_SCALE_NS: f64 = 48_000_000.0;
/// Tau of a single online CPU: there is nothing to mix, so it gets the
/// tightest "thin machine" timing rather than a division by zero.
pub const TAU_MIN_NS: u64 = 100_000;
/// Tau of a disconnected graph (lambda_2 = 0, mixing never completes); also
/// bounds pathological lambda_2 -> 0 so tau stays a sane u64.
pub const TAU_MAX_NS: u64 = 1_000_000_000;
/// CoDel equilibrium bounds: below 200 us the target is under one wakeup's
/// cost; above 8 ms it exceeds a frame budget's useful share.
pub const CODEL_EQ_MIN_NS: u64 = 200_000;
pub const CODEL_EQ_MAX_NS: u64 = 8_000_000;

// The tau-scaled parameter table. Each K is calibrated on the tau axis so that
// tau = 2 ms / 40 ms / 5 ms reproduce the published 2C / 12C / 32C columns.

const US: u64 = 1_000;
pub(super) const MS: u64 = 1_000_000;

/// A rational K so the table is exact integer arithmetic, like the BPF side.
#[derive(Clone, Copy)]
struct Ratio {
    num: u64,
    den: u64,
}

impl Ratio {
    const fn new(num: u64, den: u64) -> Self {
        Self { num, den }
    }

    fn of(self, tau_ns: u64) -> u64 {
        let v = u128::from(tau_ns) * u128::from(self.num) / u128::from(self.den);
        u64::try_from(v).unwrap_or(u64::MAX)
    }
}

/// Sojourn interval = tau: a stall must outlast one topology mixing time to be
/// a stall (2C 2 ms, 32C 5 ms, 12C clamps at 12 ms).
const K_SOJOURN: Ratio = Ratio::new(1, 1);
const SOJOURN_MIN_NS: u64 = 2 * MS;
const SOJOURN_MAX_NS: u64 = 12 * MS;

/// Overflow rescue = 0.8 tau: rescue slightly before a full mixing time; 0.8
/// is the largest K that keeps the 32C column at its 4 ms floor.
const K_OVERFLOW: Ratio = Ratio::new(4, 5);
const OVERFLOW_MIN_NS: u64 = 4 * MS;
const OVERFLOW_MAX_NS: u64 = 10 * MS;

/// Starvation rescue is a cardinality bound, not a tau one: 25 ms per CPU
/// while few CPUs share the load, 500 ms split over groups of four CPUs once
/// many can absorb it.
const STARVATION_PER_CPU_NS: u64 = 25 * MS;
const STARVATION_BUDGET_NS: u64 = 500 * MS;
const STARVATION_GROUP: u32 = 4;
const STARVATION_MIN_NS: u64 = 20 * MS;
const STARVATION_MAX_NS: u64 = 500 * MS;

/// CoDel target floor = 0.0175 tau (12C at tau 40 ms -> 700 us).
const K_CODEL_FLOOR: Ratio = Ratio::new(7, 400);
const CODEL_FLOOR_MIN_NS: u64 = 200 * US;
const CODEL_FLOOR_MAX_NS: u64 = 800 * US;

/// CoDel target ceiling = tau / 20 (12C at tau 40 ms -> 2 ms).
const K_CODEL_MAX: Ratio = Ratio::new(1, 20);
const CODEL_MAX_MIN_NS: u64 = MS;
const CODEL_MAX_MAX_NS: u64 = 8 * MS;

/// Vtime ceiling = 3 tau: three mixing times of accumulated credit.
const K_VTIME_CEILING: Ratio = Ratio::new(3, 1);
const VTIME_CEILING_MIN_NS: u64 = 16 * MS;
const VTIME_CEILING_MAX_NS: u64 = 160 * MS;

/// Lag cap = tau: a task may be back-dated by at most one mixing time.
const K_LAG_CAP: Ratio = Ratio::new(1, 1);
const LAG_CAP_MIN_NS: u64 = 8 * MS;
const LAG_CAP_MAX_NS: u64 = 80 * MS;

/// Longrun threshold = 50 tau (~2 s at the 12C tau 40 ms reference point).
const K_LONGRUN: Ratio = Ratio::new(50, 1);
const LONGRUN_MIN_NS: u64 = 500 * MS;
const LONGRUN_MAX_NS: u64 = 4_000 * MS;

/// Spill budget = 80 ms / tau: a faster-mixing machine has more near peers
/// worth trying (the published 32C column: tau 5 ms -> 16).
const K_SPILL_NS: u64 = 80 * MS;
const SPILL_MIN: u32 = 6;
/// Affinity budget = 40 ms / tau, half the spill budget because its idle
/// predicate costs more (32C -> 8).
const K_AFFINITY_NS: u64 = 40 * MS;
const AFFINITY_MIN: u32 = 3;

/// Per-CPU DSQ depth is 2 only when both rules allow it (else 1):
/// - tau rule: slow-mixing topologies (tau >= 6 ms) can afford a second
///   queued task per CPU;
/// - cardinality rule, the BPF placement's "1 slot below 4 CPUs": with 2-3
///   CPUs a waiter parked behind a busy CPU has almost no peer to be spilled
///   to or stolen by, so it belongs in the node DSQ that every CPU serves.
///
/// The tau rule alone is not enough: two CPUs on separate cores (a 2-vCPU
/// VM, lambda_2 = 2) get tau 24 ms, which would hand them depth 2. Together the
/// rules reproduce the published table 2C:1, 4C:2, 8C:2, 12C:2, 32C:1 on the
/// reference machines.
const PCPU_DEPTH2_TAU_NS: u64 = 6 * MS;
const PCPU_DEPTH2_MIN_CPUS: u32 = 4;
/// Fast-mixing (thin) topologies protect batch work 4x longer in longrun.
const LONGRUN_PREEMPT_TAU_NS: u64 = 4 * MS;
const LONGRUN_PREEMPT_SHIFT_THIN: u32 = 2;

/// D = floor(log2(tau / 1 ms)) clamped to [1, 6]: 2 ms -> 1, 8-15 ms -> 3,
/// 32-63 ms -> 5, matching the 2C / 8C / 12C reference points.
const DAMPING_UNIT_NS: u64 = MS;
const DAMPING_SHIFT_MIN: u32 = 1;
const DAMPING_SHIFT_MAX: u32 = 6;

/// tau from the Fiedler value: TAU_SCALE_NS / lambda_2, clamped to
/// [TAU_MIN_NS, TAU_MAX_NS]. A single CPU gets TAU_MIN_NS; a disconnected
/// graph (lambda_2 = 0) gets TAU_MAX_NS.
pub fn tau_ns_from_lambda2(lambda2: f64, nr_vertices: usize) -> u64 {
    if nr_vertices < 2 {
        return TAU_MIN_NS;
    }
    if !lambda2.is_finite() || lambda2 <= 0.0 {
        return TAU_MAX_NS;
    }
    let tau = (TAU_SCALE_NS / lambda2).round();
    if tau >= TAU_MAX_NS as f64 {
        TAU_MAX_NS
    } else {
        (tau as u64).max(TAU_MIN_NS)
    }
}

/// CoDel equilibrium: mean R_eff x 2m x tau, clamped to
/// [CODEL_EQ_MIN_NS, CODEL_EQ_MAX_NS].
pub fn codel_equilibrium_ns(mean_reff: f64, two_m: f64, tau_ns: u64) -> u64 {
    let raw = mean_reff * two_m * tau_ns as f64;
    if !raw.is_finite() || raw >= CODEL_EQ_MAX_NS as f64 {
        CODEL_EQ_MAX_NS
    } else {
        (raw.max(0.0) as u64).max(CODEL_EQ_MIN_NS)
    }
}

/// Tau, the CPU counts it was derived for, and every timing knob the BPF
/// side derives from the topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TauParams {
    pub tau_ns: u64,
    pub nr_cpus: u32,
    pub nr_cpu_ids: u32,
    /// The BPF `topo_params` map value, as written. Its `codel_eq_ns` is
    /// filled by [`TopologyModel`](super::TopologyModel); 0 ("unset": BPF
    /// takes the middle of [floor, max]) when produced by [`derive_params`]
    /// alone, which has no graph.
    pub bpf: TopoParams,
}

/// Derives every timing knob from `tau_ns` (cardinalities from the CPU
/// counts).
///
/// Fed tau = 2 / 40 / 5 ms this reproduces the published 2C / 12C / 32C
/// columns except where the design's own formulas forbid it:
/// - starvation rescue at 32C is 62.5 ms (the formula's 500 ms / (32 / 4)),
///   not the published 21 ms;
/// - spill / affinity budgets on machines with fewer than 7 / 4 CPU ids are
///   capped at `nr_cpu_ids - 1` (the upper bound wins over the 6 / 3 floor:
///   there are no more peers to try), so 2C gets 1 / 1, not 6 / 3.
///
/// The published 4C and 8C columns are not consistent with any single tau
/// (e.g. 8C: sojourn 8 ms implies tau 8 ms, lag 18 ms implies 18 ms); the
/// table lands between them.
///
/// `pcpu_dsq_depth` is the one knob that also depends on `nr_cpus` (online
/// CPUs): 1 below 4 CPUs whatever tau is (see `PCPU_DEPTH2_TAU_NS`).
pub fn derive_params(tau_ns: u64, nr_cpus: u32, nr_cpu_ids: u32) -> TauParams {
    let tau = tau_ns.max(1);
    let clamp = |k: Ratio, lo: u64, hi: u64| k.of(tau).clamp(lo, hi);

    let by_count = STARVATION_PER_CPU_NS.saturating_mul(u64::from(nr_cpus));
    let by_width = STARVATION_BUDGET_NS / u64::from((nr_cpus / STARVATION_GROUP).max(1));
    let starvation = by_count
        .min(by_width)
        .clamp(STARVATION_MIN_NS, STARVATION_MAX_NS);

    let budget_cap = nr_cpu_ids
        .saturating_sub(1)
        .min(MAX_AFFINITY_CANDIDATES as u32);
    // Upper bound applied last: never search more peers than exist.
    let budget = |k_ns: u64, lo: u32| {
        let raw = u32::try_from(k_ns / tau).unwrap_or(u32::MAX);
        raw.max(lo).min(budget_cap)
    };

    let damping_units = tau / DAMPING_UNIT_NS;
    let damping_shift = if damping_units == 0 {
        0
    } else {
        damping_units.ilog2()
    }
    .clamp(DAMPING_SHIFT_MIN, DAMPING_SHIFT_MAX);

    // Every field named with no `..` fill, so a field added to
    // `struct topo_params` in intf.h breaks this build until it is derived here.
    let bpf = TopoParams {
        sojourn_interval_ns: clamp(K_SOJOURN, SOJOURN_MIN_NS, SOJOURN_MAX_NS),
        overflow_rescue_ns: clamp(K_OVERFLOW, OVERFLOW_MIN_NS, OVERFLOW_MAX_NS),
        starvation_rescue_ns: starvation,
        codel_target_floor_ns: clamp(K_CODEL_FLOOR, CODEL_FLOOR_MIN_NS, CODEL_FLOOR_MAX_NS),
        codel_target_max_ns: clamp(K_CODEL_MAX, CODEL_MAX_MIN_NS, CODEL_MAX_MAX_NS),
        codel_eq_ns: 0,
        vtime_ceiling_ns: clamp(K_VTIME_CEILING, VTIME_CEILING_MIN_NS, VTIME_CEILING_MAX_NS),
        lag_cap_ns: clamp(K_LAG_CAP, LAG_CAP_MIN_NS, LAG_CAP_MAX_NS),
        longrun_thresh_ns: clamp(K_LONGRUN, LONGRUN_MIN_NS, LONGRUN_MAX_NS),
        spill_search_budget: budget(K_SPILL_NS, SPILL_MIN),
        affinity_search_budget: budget(K_AFFINITY_NS, AFFINITY_MIN),
        // Both rules, see PCPU_DEPTH2_TAU_NS: cardinality (BPF placement,
        // "1 slot below 4 CPUs") and tau (slow mixing affords a 2nd slot).
        pcpu_dsq_depth: if nr_cpus >= PCPU_DEPTH2_MIN_CPUS && tau >= PCPU_DEPTH2_TAU_NS {
            2
        } else {
            1
        },
        longrun_preempt_shift: if tau < LONGRUN_PREEMPT_TAU_NS {
            LONGRUN_PREEMPT_SHIFT_THIN
        } else {
            0
        },
        damping_shift,
        // The whole machine until the model counts its largest LLC.
        wake_wide_factor: nr_cpus.max(1),
        // Critical damping of x += v; v -= v >> D; v -= x >> S: the decay
        // 2*gamma ~ 2^-D with gamma = omega0 gives omega0^2 ~ 2^-(2D+2).
        spring_shift: 2 * damping_shift + 2,
        _pad0: 0,
    };
    TauParams {
        tau_ns,
        nr_cpus,
        nr_cpu_ids,
        bpf,
    }
}

fn fmt_ns(ns: u64) -> String {
    if ns >= MS {
        format!("{:.3} ms", ns as f64 / MS as f64)
    } else {
        format!("{:.1} us", ns as f64 / US as f64)
    }
}

/// The startup table's label of a `topo_params` field: its name without the
/// unit suffix, in words (`codel_target_floor_ns` -> "codel target floor").
fn label(field: &str) -> String {
    field.strip_suffix("_ns").unwrap_or(field).replace('_', " ")
}

impl fmt::Display for TauParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut row = |name: &str, value: String| writeln!(f, "  {name:<24}{value:>12}");
        row("tau", fmt_ns(self.tau_ns))?;
        for (field, v) in self.bpf.fields() {
            let value = match field {
                "codel_eq_ns" if v == 0 => "unset".to_string(),
                _ if field.ends_with("_ns") => fmt_ns(v),
                _ => v.to_string(),
            };
            row(&label(field), value)?;
        }
        row(
            "cpus online / ids",
            format!("{} / {}", self.nr_cpus, self.nr_cpu_ids),
        )
    }
}

#[cfg(test)]
#[path = "tests/params.rs"]
mod tests;
