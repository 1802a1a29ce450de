// SPDX-License-Identifier: GPL-2.0-only
//! Rust mirror of src/bpf/intf.h. Every item is checked at compile time against bindgen's reading
//! of the header, so the two sides cannot drift apart silently.

#[allow(dead_code, non_camel_case_types, non_upper_case_globals, clippy::all)]
mod c {
    include!(concat!(env!("OUT_DIR"), "/bpf_intf_gen.rs"));
}

use std::mem::{align_of, offset_of, size_of};

macro_rules! assert_same_layout {
    ($rust:ty, $c:ty, [$($field:ident),* $(,)?]) => {
        const _: () = assert!(size_of::<$rust>() == size_of::<$c>());
        $(const _: () = assert!(offset_of!($rust, $field) == offset_of!($c, $field));)*
    };
}

pub const MAX_CPUS: usize = 1024;
pub const MAX_AFFINITY_CANDIDATES: usize = MAX_CPUS >> 3;
pub const MAX_NODES: usize = 64;
pub const COMM_LEN: usize = 16;
pub const NR_LAT_BUCKETS: usize = 32;
pub const NR_SLEEP_BUCKETS: usize = 32;
pub const AFFINITY_SENTINEL: u32 = u32::MAX;
pub const NODE_DSQ_BASE: u64 = 1 << 16;
pub const BATCH_DSQ_BASE: u64 = 1 << 17;
/// The CoDel oscillator's fixed constants (`enum codel_consts`); see src/codel.rs.
pub const CODEL_MAX_IMPULSES: u64 = 16;
pub const CODEL_KICK_SHIFT: u32 = 3;
pub const CODEL_VCAP_SHIFT: u32 = 2;
/// `enum cpu_size`: a CPU's size on a hybrid machine (see `topology::CpuSize`).
pub const CPU_SIZE_BIG: u8 = 0;
pub const CPU_SIZE_MID: u8 = 1;
pub const CPU_SIZE_LITTLE: u8 = 2;

/// Behavioral tiers, in the order BPF indexes its per-tier arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Tier {
    Batch = 0,
    Interactive = 1,
    LatCritical = 2,
}
pub const NR_TIERS: usize = 3;

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
    Off = 0,
    Weak = 1,
    Strong = 2,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TuningKnobs {
    pub slice_ns: u64,
    pub preempt_thresh_ns: u64,
    pub lag_scale: u64,
    pub batch_slice_ns: u64,
    pub burst_slice_ns: u64,
    pub lat_cri_thresh_high: u64,
    pub lat_cri_thresh_low: u64,
    pub affinity_mode: u64,
}

/// Declares [`TopoParams`] from one field list: the struct, its layout check against
/// `struct topo_params` and [`TopoParams::fields`] (what the startup table and the tests iterate)
/// all come from it, so a field is named once on the Rust side.
macro_rules! topo_params {
    ($($field:ident: $ty:ty),* $(,)?) => {
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct TopoParams {
            $(pub $field: $ty,)*
        }

        impl TopoParams {
            pub const NR_FIELDS: usize = [$(stringify!($field)),*].len();

            /// Every field as (name, value), in declaration order.
            pub fn fields(&self) -> [(&'static str, u64); Self::NR_FIELDS] {
                [$((stringify!($field), u64::from(self.$field))),*]
            }
        }

        assert_same_layout!(TopoParams, c::topo_params, [$($field),*]);
    };
}

topo_params! {
    sojourn_interval_ns: u64,
    overflow_rescue_ns: u64,
    starvation_rescue_ns: u64,
    codel_target_floor_ns: u64,
    codel_target_max_ns: u64,
    codel_eq_ns: u64,
    vtime_ceiling_ns: u64,
    lag_cap_ns: u64,
    longrun_thresh_ns: u64,
    spill_search_budget: u32,
    affinity_search_budget: u32,
    pcpu_dsq_depth: u32,
    longrun_preempt_shift: u32,
    damping_shift: u32,
    spring_shift: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub nr_dispatches: u64,
    pub nr_idle_hits: u64,
    pub nr_shared: u64,
    pub nr_pcpu: u64,
    pub nr_spills: u64,
    pub nr_preempt: u64,
    pub nr_keep_running: u64,
    pub nr_hard_kicks: u64,
    pub nr_soft_kicks: u64,
    pub nr_enq_wakeup: u64,
    pub nr_enq_requeue: u64,
    pub nr_steals: u64,
    pub nr_overflow_rescue: u64,
    pub nr_starvation_rescue: u64,
    pub nr_offline_drain: u64,
    pub nr_rank_offline_skips: u64,
    pub nr_pinned: u64,
    pub nr_offline_placements: u64,
    pub l2_hit: [u64; NR_TIERS],
    pub l2_miss: [u64; NR_TIERS],
    pub wake_lat_sum_ns: u64,
    pub wake_lat_cnt: u64,
    pub wake_lat_max_ns: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hist {
    pub wake_lat: [[u64; NR_LAT_BUCKETS]; NR_TIERS],
    pub sleep: [u64; NR_SLEEP_BUCKETS],
}

impl Default for Hist {
    fn default() -> Self {
        Hist {
            wake_lat: [[0; NR_LAT_BUCKETS]; NR_TIERS],
            sleep: [0; NR_SLEEP_BUCKETS],
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AffinityRow {
    pub cpus: [u32; MAX_AFFINITY_CANDIDATES],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CommKey {
    pub comm: [u8; COMM_LEN],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskClassEntry {
    pub tier: u8,
    pub confident: u8,
    pub _pad0: u16,
    pub samples: u32,
    pub avg_runtime_ns: u64,
}

/// Plain-old-data values that are copied byte for byte into and out of BPF maps.
///
/// # Safety
/// Implementors must be `repr(C)`, contain no padding that BPF could leave uninitialised in a way
/// that matters, and be valid for every bit pattern.
pub unsafe trait Pod: Copy + Default {
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: Pod types are repr(C) plain data; viewing them as bytes is sound.
        unsafe { std::slice::from_raw_parts((self as *const Self).cast(), size_of::<Self>()) }
    }

    /// Reads a value from a map buffer; `None` when the size does not match.
    fn from_bytes(bytes: &[u8]) -> Option<Self> {
        (bytes.len() == size_of::<Self>())
            // SAFETY: length checked; every bit pattern is valid for Pod types.
            .then(|| unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) })
    }
}

unsafe impl Pod for TuningKnobs {}
unsafe impl Pod for TopoParams {}
unsafe impl Pod for Stats {}
const _: () = assert!(size_of::<Stats>().is_multiple_of(8) && align_of::<Stats>() == 8);
unsafe impl Pod for Hist {}
unsafe impl Pod for CommKey {}
unsafe impl Pod for TaskClassEntry {}
unsafe impl Pod for u32 {}
unsafe impl Pod for u8 {}

impl Default for AffinityRow {
    fn default() -> Self {
        AffinityRow {
            cpus: [AFFINITY_SENTINEL; MAX_AFFINITY_CANDIDATES],
        }
    }
}
unsafe impl Pod for AffinityRow {}

const _: () = assert!(MAX_CPUS == c::pandemonium_consts_MAX_CPUS as usize);
const _: () =
    assert!(MAX_AFFINITY_CANDIDATES == c::pandemonium_consts_MAX_AFFINITY_CANDIDATES as usize);
const _: () = assert!(MAX_NODES == c::pandemonium_consts_MAX_NODES as usize);
const _: () = assert!(COMM_LEN == c::pandemonium_consts_COMM_LEN as usize);
const _: () = assert!(NR_LAT_BUCKETS == c::pandemonium_consts_NR_LAT_BUCKETS as usize);
const _: () = assert!(NR_SLEEP_BUCKETS == c::pandemonium_consts_NR_SLEEP_BUCKETS as usize);
const _: () = assert!(AFFINITY_SENTINEL as u64 == c::pandemonium_consts_AFFINITY_SENTINEL as u64);
const _: () = assert!(NODE_DSQ_BASE == c::pandemonium_dsq_NODE_DSQ_BASE as u64);
const _: () = assert!(BATCH_DSQ_BASE == c::pandemonium_dsq_BATCH_DSQ_BASE as u64);
const _: () = assert!(NR_TIERS == c::pandemonium_tier_NR_TIERS as usize);
const _: () = assert!(CODEL_MAX_IMPULSES == c::codel_consts_CODEL_MAX_IMPULSES as u64);
const _: () = assert!(CODEL_KICK_SHIFT == c::codel_consts_CODEL_KICK_SHIFT);
const _: () = assert!(CODEL_VCAP_SHIFT == c::codel_consts_CODEL_VCAP_SHIFT);
const _: () = assert!(CPU_SIZE_BIG as u32 == c::cpu_size_CPU_SIZE_BIG);
const _: () = assert!(CPU_SIZE_MID as u32 == c::cpu_size_CPU_SIZE_MID);
const _: () = assert!(CPU_SIZE_LITTLE as u32 == c::cpu_size_CPU_SIZE_LITTLE);
const _: () = assert!(Tier::Batch as u32 == c::pandemonium_tier_TIER_BATCH);
const _: () = assert!(Tier::Interactive as u32 == c::pandemonium_tier_TIER_INTERACTIVE);
const _: () = assert!(Tier::LatCritical as u32 == c::pandemonium_tier_TIER_LAT_CRITICAL);
const _: () = assert!(AffinityMode::Off as u64 == c::affinity_mode_AFFINITY_OFF as u64);
const _: () = assert!(AffinityMode::Weak as u64 == c::affinity_mode_AFFINITY_WEAK as u64);
const _: () = assert!(AffinityMode::Strong as u64 == c::affinity_mode_AFFINITY_STRONG as u64);

assert_same_layout!(
    TuningKnobs,
    c::tuning_knobs,
    [
        slice_ns,
        preempt_thresh_ns,
        lag_scale,
        batch_slice_ns,
        burst_slice_ns,
        lat_cri_thresh_high,
        lat_cri_thresh_low,
        affinity_mode,
    ]
);
assert_same_layout!(
    Stats,
    c::pandemonium_stats,
    [
        nr_dispatches,
        nr_idle_hits,
        nr_shared,
        nr_pcpu,
        nr_spills,
        nr_preempt,
        nr_keep_running,
        nr_hard_kicks,
        nr_soft_kicks,
        nr_enq_wakeup,
        nr_enq_requeue,
        nr_steals,
        nr_overflow_rescue,
        nr_starvation_rescue,
        nr_offline_drain,
        nr_rank_offline_skips,
        nr_pinned,
        nr_offline_placements,
        l2_hit,
        l2_miss,
        wake_lat_sum_ns,
        wake_lat_cnt,
        wake_lat_max_ns,
    ]
);
assert_same_layout!(Hist, c::pandemonium_hist, [wake_lat, sleep]);
assert_same_layout!(AffinityRow, c::affinity_row, [cpus]);
assert_same_layout!(CommKey, c::comm_key, [comm]);
assert_same_layout!(
    TaskClassEntry,
    c::task_class_entry,
    [tier, confident, samples, avg_runtime_ns]
);

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
        }
    }
}

impl Stats {
    /// Adds `o` counter by counter (per-CPU map values are summed this way); the latency maximum
    /// is the one field that takes the max instead.
    pub fn accumulate(&mut self, o: &Stats) {
        const WORDS: usize = size_of::<Stats>() / 8;
        let max = self.wake_lat_max_ns.max(o.wake_lat_max_ns);
        // SAFETY: Stats is repr(C) and made only of u64 fields and u64 arrays (checked against
        // the C struct above), so it is exactly WORDS properly aligned u64s with no padding.
        let (a, b) = unsafe {
            (
                &mut *(self as *mut Stats).cast::<[u64; WORDS]>(),
                &*(o as *const Stats).cast::<[u64; WORDS]>(),
            )
        };
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
        assert_eq!(f.len(), 15);
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
        let back = TuningKnobs::from_bytes(k.as_bytes()).unwrap();
        assert_eq!(k, back);
        assert!(TuningKnobs::from_bytes(&k.as_bytes()[1..]).is_none());
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
