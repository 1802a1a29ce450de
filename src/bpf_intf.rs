// SPDX-License-Identifier: GPL-2.0-only
//! The Rust side of src/bpf/intf.h. build.rs has bindgen generate it (scx_cargo's
//! `BpfBuilder::enable_intf`, as the scx schedulers do); this module includes that output and
//! gives its items the names the daemon uses. No struct or value is restated: a field added to
//! intf.h appears here by itself, and bindgen's own compile-time assertions check that the host
//! lays every struct out as the BPF target does.

#[allow(
    dead_code,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    clippy::all
)]
mod c {
    include!(concat!(env!("OUT_DIR"), "/bpf_intf.rs"));
}

use std::hash::{Hash, Hasher};
use std::mem::{align_of, size_of};

pub type TuningKnobs = c::tuning_knobs;
pub type TopoParams = c::topo_params;
pub type Stats = c::pandemonium_stats;
pub type Hist = c::pandemonium_hist;
pub type AffinityRow = c::affinity_row;
pub type CommKey = c::comm_key;
pub type TaskClassEntry = c::task_class_entry;
pub type CgCtx = c::cg_ctx;
pub type CoopProc = c::coop_proc;
pub type LongestWait = c::longest_wait;

pub const MAX_CPUS: usize = c::pandemonium_consts_MAX_CPUS as usize;
pub const MAX_AFFINITY_CANDIDATES: usize = c::pandemonium_consts_MAX_AFFINITY_CANDIDATES as usize;
pub const MAX_NODES: usize = c::pandemonium_consts_MAX_NODES as usize;
pub const COMM_LEN: usize = c::pandemonium_consts_COMM_LEN as usize;
pub const NR_LAT_BUCKETS: usize = c::pandemonium_consts_NR_LAT_BUCKETS as usize;
pub const NR_SLEEP_BUCKETS: usize = c::pandemonium_consts_NR_SLEEP_BUCKETS as usize;
pub const AFFINITY_SENTINEL: u32 = c::pandemonium_consts_AFFINITY_SENTINEL;
pub const NODE_DSQ_BASE: u64 = c::pandemonium_dsq_NODE_DSQ_BASE as u64;
pub const BATCH_DSQ_BASE: u64 = c::pandemonium_dsq_BATCH_DSQ_BASE as u64;
/// --coop: how long a cooperative group holds its node's CPUs (src/bpf/coop.bpf.h), ns.
pub const COOP_QUANTUM_NS: u64 = c::coop_consts_COOP_QUANTUM_NS as u64;
/// An autogroup's pseudo-group key in `cg_ctxs` has this bit set (src/bpf/autogroup.bpf.h).
pub const AUTOGROUP_KEY_SHIFT: u32 = c::autogroup_consts_AUTOGROUP_KEY_SHIFT;
/// `coop_comms` values: a `--coop` name, and a name the procdb learned (src/coop_learn.rs).
pub const COOP_FORCED: u8 = c::coop_consts_COOP_FORCED as u8;
pub const COOP_LEARNED: u8 = c::coop_consts_COOP_LEARNED as u8;
/// `--coop-learn`: co-running threads sleep at most once per this many runs cut short
/// (src/bpf/coop_learn.bpf.h, src/coop_learn.rs).
pub const COOP_SLEEP_RATIO: u32 = c::coop_consts_COOP_SLEEP_RATIO;
/// The CoDel oscillator's fixed constants (`enum codel_consts`); see src/codel.rs.
pub const CODEL_MAX_IMPULSES: u64 = c::codel_consts_CODEL_MAX_IMPULSES as u64;
pub const CODEL_KICK_SHIFT: u32 = c::codel_consts_CODEL_KICK_SHIFT;
pub const CODEL_VCAP_SHIFT: u32 = c::codel_consts_CODEL_VCAP_SHIFT;
/// `enum cpu_size`: a CPU's size on a hybrid machine (see `topology::CpuSize`).
pub const CPU_SIZE_BIG: u8 = c::cpu_size_CPU_SIZE_BIG as u8;
pub const CPU_SIZE_MID: u8 = c::cpu_size_CPU_SIZE_MID as u8;
pub const CPU_SIZE_LITTLE: u8 = c::cpu_size_CPU_SIZE_LITTLE as u8;
pub const NR_TIERS: usize = c::pandemonium_tier_NR_TIERS as usize;

/// `enum knob_limits`: the range BPF clamps each knob to (src/tuning/rails.rs uses them as its
/// widest rails).
pub mod knob_limits {
    use super::c;

    pub const KNOB_SLICE_MIN_NS: u64 = c::knob_limits_KNOB_SLICE_MIN_NS as u64;
    pub const KNOB_SLICE_MAX_NS: u64 = c::knob_limits_KNOB_SLICE_MAX_NS as u64;
    pub const KNOB_PREEMPT_MIN_NS: u64 = c::knob_limits_KNOB_PREEMPT_MIN_NS as u64;
    pub const KNOB_PREEMPT_MAX_NS: u64 = c::knob_limits_KNOB_PREEMPT_MAX_NS as u64;
    pub const KNOB_LAG_SCALE_MIN: u64 = c::knob_limits_KNOB_LAG_SCALE_MIN as u64;
    pub const KNOB_LAG_SCALE_MAX: u64 = c::knob_limits_KNOB_LAG_SCALE_MAX as u64;
    pub const KNOB_BATCH_SLICE_MIN_NS: u64 = c::knob_limits_KNOB_BATCH_SLICE_MIN_NS as u64;
    pub const KNOB_BATCH_SLICE_MAX_NS: u64 = c::knob_limits_KNOB_BATCH_SLICE_MAX_NS as u64;
    pub const KNOB_BURST_SLICE_MIN_NS: u64 = c::knob_limits_KNOB_BURST_SLICE_MIN_NS as u64;
    pub const KNOB_BURST_SLICE_MAX_NS: u64 = c::knob_limits_KNOB_BURST_SLICE_MAX_NS as u64;
    pub const KNOB_LAT_CRI_HIGH_MIN: u64 = c::knob_limits_KNOB_LAT_CRI_HIGH_MIN as u64;
    pub const KNOB_LAT_CRI_HIGH_MAX: u64 = c::knob_limits_KNOB_LAT_CRI_HIGH_MAX as u64;
    pub const KNOB_LAT_CRI_LOW_MIN: u64 = c::knob_limits_KNOB_LAT_CRI_LOW_MIN as u64;
    pub const KNOB_LAT_CRI_LOW_MAX: u64 = c::knob_limits_KNOB_LAT_CRI_LOW_MAX as u64;
}

/// Behavioral tiers, in the order BPF indexes its per-tier arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Tier {
    Batch = c::pandemonium_tier_TIER_BATCH as u8,
    Interactive = c::pandemonium_tier_TIER_INTERACTIVE as u8,
    LatCritical = c::pandemonium_tier_TIER_LAT_CRITICAL as u8,
}

impl Tier {
    pub const ALL: [Tier; NR_TIERS] = [Tier::Batch, Tier::Interactive, Tier::LatCritical];

    pub fn from_u8(v: u8) -> Option<Tier> {
        Self::ALL.get(v as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Tier::Batch => "BATCH",
            Tier::Interactive => "INTERACTIVE",
            Tier::LatCritical => "LAT_CRITICAL",
        }
    }
}

/// L2 placement strength (knob `affinity_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum AffinityMode {
    Off = c::affinity_mode_AFFINITY_OFF as u64,
    Weak = c::affinity_mode_AFFINITY_WEAK as u64,
    Strong = c::affinity_mode_AFFINITY_STRONG as u64,
}

/// The traits bindgen does not derive but map I/O, tests and the daemon's own types need.
/// Equality compares bytes, which is exact for structs without padding.
macro_rules! plain_data {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: intf.h's structs are repr(C) fixed-width integers and arrays of them with no
        // implicit padding (the header's rule), so every bit pattern is a valid value, zero
        // included, and all of their bytes are initialised.
        unsafe impl bytemuck::Zeroable for $t {}
        unsafe impl bytemuck::Pod for $t {}

        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                bytemuck::bytes_of(self) == bytemuck::bytes_of(other)
            }
        }
        impl Eq for $t {}
    )*};
}
plain_data!(
    TuningKnobs,
    TopoParams,
    Stats,
    Hist,
    AffinityRow,
    CommKey,
    TaskClassEntry,
    CgCtx,
    CoopProc,
    LongestWait,
);

/// All zeros, except [`AffinityRow`] below.
macro_rules! zero_default {
    ($($t:ty),* $(,)?) => {$(
        impl Default for $t {
            fn default() -> Self {
                bytemuck::Zeroable::zeroed()
            }
        }
    )*};
}
zero_default!(
    TuningKnobs,
    TopoParams,
    Stats,
    Hist,
    CommKey,
    TaskClassEntry,
    CgCtx,
    CoopProc,
    LongestWait
);

/// An empty rank row: no candidate in any slot.
impl Default for AffinityRow {
    fn default() -> Self {
        AffinityRow {
            cpus: [AFFINITY_SENTINEL; MAX_AFFINITY_CANDIDATES],
        }
    }
}

/// Compositor and procdb keys live in hash maps.
impl Hash for CommKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.comm.hash(state);
    }
}

impl TuningKnobs {
    /// The defaults BPF-only mode runs with, and the adaptive loop's starting point.
    pub const fn defaults() -> TuningKnobs {
        const MS: u64 = 1_000_000;
        TuningKnobs {
            slice_ns: MS,
            preempt_thresh_ns: MS,
            lag_scale: 4,
            batch_slice_ns: 20 * MS,
            burst_slice_ns: MS,
            lat_cri_thresh_high: 32,
            lat_cri_thresh_low: 8,
            affinity_mode: AffinityMode::Weak as u64,
            pack: 0,
        }
    }
}

/// Names [`TopoParams`]' fields for the startup table and its tests: the one Rust list of them.
/// fields() destructures without `..`, so the compiler rejects this list when intf.h gains or
/// loses a field.
macro_rules! topo_params_fields {
    ($($field:ident),* $(,)?) => {
        impl TopoParams {
            pub const NR_FIELDS: usize = [$(stringify!($field)),*].len();

            /// Every field as (name, value), in declaration order.
            pub fn fields(&self) -> [(&'static str, u64); Self::NR_FIELDS] {
                let TopoParams { $($field),*, _pad0: _ } = *self;
                [$((stringify!($field), u64::from($field))),*]
            }
        }
    };
}
topo_params_fields!(
    sojourn_interval_ns,
    overflow_rescue_ns,
    starvation_rescue_ns,
    codel_target_floor_ns,
    codel_target_max_ns,
    codel_eq_ns,
    vtime_ceiling_ns,
    lag_cap_ns,
    longrun_thresh_ns,
    spill_search_budget,
    affinity_search_budget,
    pcpu_dsq_depth,
    longrun_preempt_shift,
    damping_shift,
    spring_shift,
    wake_wide_factor,
);

// Stats::accumulate views the counters as u64 words; bindgen cannot say a struct is all u64s.
const _: () = assert!(size_of::<Stats>().is_multiple_of(8) && align_of::<Stats>() == 8);

impl Stats {
    /// Adds `o` counter by counter (per-CPU map values are summed this way); the latency maximum
    /// is the one field that takes the max instead.
    pub fn accumulate(&mut self, o: &Stats) {
        let max = self.wake_lat_max_ns.max(o.wake_lat_max_ns);
        // Slices, not arrays: bytemuck implements Pod for arrays of a few lengths only.
        let a: &mut [u64] = bytemuck::cast_slice_mut(std::slice::from_mut(self));
        let b: &[u64] = bytemuck::cast_slice(std::slice::from_ref(o));
        for (x, y) in a.iter_mut().zip(b) {
            *x = x.wrapping_add(*y);
        }
        self.wake_lat_max_ns = max;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knob_defaults_match_the_design_card() {
        let k = TuningKnobs::defaults();
        assert_eq!(k.slice_ns, 1_000_000);
        assert_eq!(k.preempt_thresh_ns, 1_000_000);
        assert_eq!(k.lag_scale, 4);
        assert_eq!(k.batch_slice_ns, 20_000_000);
        assert_eq!(k.burst_slice_ns, 1_000_000);
        assert_eq!((k.lat_cri_thresh_high, k.lat_cri_thresh_low), (32, 8));
        assert_eq!(k.affinity_mode, AffinityMode::Weak as u64);
    }

    #[test]
    fn topo_params_fields_pair_each_name_with_its_value() {
        let p = TopoParams {
            codel_eq_ns: 6,
            damping_shift: 14,
            ..Default::default()
        };
        let f = p.fields();
        assert_eq!(f.len(), 16);
        assert_eq!(f[0].0, "sojourn_interval_ns");
        assert!(f.contains(&("codel_eq_ns", 6)) && f.contains(&("damping_shift", 14)));
        assert_eq!(f.iter().filter(|(_, v)| *v != 0).count(), 2);
        let mut names: Vec<_> = f.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TopoParams::NR_FIELDS);
    }

    #[test]
    fn pod_round_trip_and_size_check() {
        let k = TuningKnobs::defaults();
        let back: TuningKnobs = bytemuck::try_pod_read_unaligned(bytemuck::bytes_of(&k)).unwrap();
        assert_eq!(k, back);
        assert!(
            bytemuck::try_pod_read_unaligned::<TuningKnobs>(&bytemuck::bytes_of(&k)[1..]).is_err()
        );
        assert_eq!(AffinityRow::default().cpus[0], AFFINITY_SENTINEL);
    }

    #[test]
    fn stats_accumulate_sums_and_keeps_max() {
        let mut a = Stats {
            nr_dispatches: 3,
            wake_lat_max_ns: 10,
            ..Default::default()
        };
        let b = Stats {
            nr_dispatches: 4,
            wake_lat_max_ns: 7,
            l2_hit: [1, 2, 3],
            ..Default::default()
        };
        a.accumulate(&b);
        assert_eq!(a.nr_dispatches, 7);
        assert_eq!(a.wake_lat_max_ns, 10);
        assert_eq!(a.l2_hit, [1, 2, 3]);
    }

    #[test]
    fn tier_indices_round_trip() {
        for t in Tier::ALL {
            assert_eq!(Tier::from_u8(t as u8), Some(t));
        }
        assert_eq!(Tier::from_u8(3), None);
    }
}
