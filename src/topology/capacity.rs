// SPDX-License-Identifier: GPL-2.0-only
//! Hybrid CPUs (big.LITTLE, Intel's P- and E-cores): which online CPUs are the biggest and which
//! the smallest. BPF runs LAT_CRITICAL and INTERACTIVE work on the biggest idle CPU it finds and
//! BATCH work on the smallest, which keeps the big cores free for the next interactive wakeup.
//!
//! Three sources, in order: `cpuN/cpu_capacity` (arm64, riscv: the kernel's relative capacity,
//! 1024 for the biggest), the hybrid PMUs' CPU lists `devices/cpu_core/cpus` (big) and
//! `devices/cpu_atom/cpus` (little) that Intel hybrid parts expose, and the CPPC highest perf
//! of each CPU (`cpufreq/amd_pstate_highest_perf`, else `acpi_cppc/highest_perf`), the only
//! place AMD's hybrid parts (Zen5 + Zen5c "Strix Point", Zen4 + Zen4c "Phoenix 2") show their
//! smaller cores: they have no PMU lists, and x86 kernels that expose `cpu_capacity` report
//! 1024 on every CPU of them.
//!
//! The CPPC numbers need their own tiering ([`CpuSizes::from_highest_perf`]): on parts with
//! AMD's preferred cores the firmware encodes each core's rank in its highest perf (166-255,
//! drivers/cpufreq/amd-pstate.h), so one core kind of a symmetric desktop spreads over up to
//! 1.5x in steps of ~3 %. Seen in the wild: 166-216 on a 12-core Ryzen (acpi_cppc, LKML "Re:
//! [GIT PULL] Scheduler changes for v6.8", Qais Yousef, 2024-01-13), 166-236 on a 9950X3D
//! (`amd_pstate_prefcore_ranking`, CachyOS/CachyOS-Settings#86). scx_utils' rule (the highest
//! at least 1.3x the lowest) would call both of those hybrid, which is why the live reader does
//! not take its `core_type`.

use std::collections::BTreeMap;
use std::fmt;

use super::cpulist::format_cpu_list;

/// BPF's `enum cpu_size` (src/bpf/intf.h): the values are written into its rodata as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum CpuSize {
    Big = 0,
    Mid = 1,
    Little = 2,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub enum SizeSource {
    /// Every CPU alike, or nothing says otherwise.
    #[default]
    Uniform,
    /// `cpu_capacity` per online CPU.
    Capacity(BTreeMap<u32, u32>),
    /// Intel's `cpu_core` / `cpu_atom` lists.
    CoreType,
    /// CPPC highest perf per online CPU, from `file` under `cpuN/` (one of
    /// [`HIGHEST_PERF_FILES`]).
    CppcHighestPerf {
        file: &'static str,
        perf: BTreeMap<u32, u32>,
    },
}

/// Where the CPPC highest perf is read, in order. amd-pstate's own file first: since Linux 6.13
/// (commit 50a062a76200, "Store the boost numerator as highest perf again") it holds the boost
/// numerator, the same on every core of one kind (166, or 196 on some Zen4 parts) and on a
/// hybrid part 196 for the full cores and each small core's own highest perf. `acpi_cppc` holds
/// the raw register: the preferred-core rank on full cores, a real perf on small ones.
/// `cpuinfo_max_freq` is left out: with amd-pstate it is computed from the same numerator, with
/// acpi-cpufreq it is _PSS's P0, a base clock that hides the boost gap between core kinds.
pub const HIGHEST_PERF_FILES: [&str; 2] =
    ["cpufreq/amd_pstate_highest_perf", "acpi_cppc/highest_perf"];

/// Two core kinds are a jump of at least 13/10 between consecutive highest perfs. scx_utils
/// calls a machine big.LITTLE at the same 1.3x (between its highest and lowest); AMD's small
/// cores sit well past it: 196 against 132 (1.48x) in the amd-pstate patches that introduced
/// the core types (Perry Yuan, "cpufreq: amd-pstate: implement heterogeneous core topology for
/// highest performance initialization", v2, 2024-05), 5.1 against 3.3 GHz (1.55x) on a Ryzen AI 9
/// HX 370. Favoured-core ranks step by ~5 in 166-255, a few percent.
pub const KIND_GAP_NUM: u32 = 13;
pub const KIND_GAP_DEN: u32 = 10;

/// Preferred-core ranks never go below this (CPPC_HIGHEST_PERF_PREFCORE in
/// arch/x86/kernel/acpi/cppc.c): a CPU at or above it may only be ranked lower, not smaller.
/// Every tier under the top one must sit below it, which keeps a firmware that ranks with a
/// few far-apart values from making a symmetric part hybrid.
pub const PREFCORE_RANK_FLOOR: u32 = 166;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuSizes {
    /// Per online CPU; empty on a symmetric machine, where every CPU counts as big.
    pub size_of: BTreeMap<u32, CpuSize>,
    pub source: SizeSource,
}

/// A capacity at least this fraction of its tier's largest belongs to that tier: cores of one
/// kind differ by a few percent (favoured cores, binning), big and little ones by a third or more.
pub const SAME_TIER_FRAC: f64 = 0.9;

impl CpuSizes {
    pub fn is_hybrid(&self) -> bool {
        !self.size_of.is_empty()
    }

    pub fn size(&self, cpu: u32) -> CpuSize {
        self.size_of.get(&cpu).copied().unwrap_or(CpuSize::Big)
    }

    /// Tiers from the capacities of the online CPUs: the top tier is big, the bottom one
    /// little, any between them mid. One tier is a symmetric machine.
    pub fn from_capacities(capacity_of: BTreeMap<u32, u32>) -> CpuSizes {
        let mut caps: Vec<u32> = capacity_of.values().copied().collect();
        caps.sort_unstable_by(|a, b| b.cmp(a));
        caps.dedup();
        let mut tops: Vec<u32> = vec![];
        for c in caps {
            match tops.last() {
                Some(&top) if f64::from(c) >= SAME_TIER_FRAC * f64::from(top) => {}
                _ => tops.push(c),
            }
        }
        if tops.len() < 2 {
            return CpuSizes::default();
        }
        let tier = |c: u32| tops.iter().rposition(|&top| c <= top).unwrap_or(0);
        CpuSizes {
            size_of: sizes_by_tier(&capacity_of, tier, tops.len()),
            source: SizeSource::Capacity(capacity_of),
        }
    }

    /// Tiers from the CPPC highest perf of the online CPUs, read from `file`: a new tier starts
    /// at a jump of [`KIND_GAP_NUM`]/[`KIND_GAP_DEN`] or more between consecutive values, so a
    /// core kind's favoured-core ranks, however far they spread in small steps, stay one tier.
    /// Symmetric unless every tier below the top one is under [`PREFCORE_RANK_FLOOR`].
    pub fn from_highest_perf(file: &'static str, perf_of: BTreeMap<u32, u32>) -> CpuSizes {
        let mut perfs: Vec<u32> = perf_of.values().copied().collect();
        perfs.sort_unstable_by(|a, b| b.cmp(a));
        perfs.dedup();
        // The lowest value of each tier, top tier first.
        let mut lows: Vec<u32> = vec![];
        for p in perfs {
            match lows.last_mut() {
                Some(low)
                    if u64::from(*low) * u64::from(KIND_GAP_DEN)
                        < u64::from(p) * u64::from(KIND_GAP_NUM) =>
                {
                    *low = p
                }
                _ => lows.push(p),
            }
        }
        let tier = |p: u32| lows.iter().position(|&low| p >= low).unwrap_or(0);
        let ranked_below_top = perf_of
            .values()
            .any(|&p| p >= PREFCORE_RANK_FLOOR && tier(p) > 0);
        if lows.len() < 2 || ranked_below_top {
            return CpuSizes::default();
        }
        CpuSizes {
            size_of: sizes_by_tier(&perf_of, tier, lows.len()),
            source: SizeSource::CppcHighestPerf {
                file,
                perf: perf_of,
            },
        }
    }

    /// From Intel's hybrid PMU lists; a symmetric result unless both kinds have online CPUs.
    pub fn from_core_types(online: &[u32], core: &[u32], atom: &[u32]) -> CpuSizes {
        let on = |list: &[u32]| list.iter().any(|c| online.binary_search(c).is_ok());
        if !on(core) || !on(atom) {
            return CpuSizes::default();
        }
        let size_of = online
            .iter()
            .map(|&cpu| {
                let little = atom.contains(&cpu) && !core.contains(&cpu);
                (
                    cpu,
                    if little {
                        CpuSize::Little
                    } else {
                        CpuSize::Big
                    },
                )
            })
            .collect();
        CpuSizes {
            size_of,
            source: SizeSource::CoreType,
        }
    }

    fn cpus_of(&self, size: CpuSize) -> Vec<u32> {
        self.size_of
            .iter()
            .filter(|&(_, &s)| s == size)
            .map(|(&c, _)| c)
            .collect()
    }
}

/// Tier 0 of `nr_tiers` is big, the last one little, any between them mid.
fn sizes_by_tier(
    value_of: &BTreeMap<u32, u32>,
    tier: impl Fn(u32) -> usize,
    nr_tiers: usize,
) -> BTreeMap<u32, CpuSize> {
    value_of
        .iter()
        .map(|(&cpu, &v)| {
            let size = match tier(v) {
                0 => CpuSize::Big,
                t if t == nr_tiers - 1 => CpuSize::Little,
                _ => CpuSize::Mid,
            };
            (cpu, size)
        })
        .collect()
}

/// One line for the startup log: the CPUs of each size and where that came from.
impl fmt::Display for CpuSizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.is_hybrid() {
            return write!(f, "cpu sizes: uniform");
        }
        write!(f, "cpu sizes: hybrid")?;
        let per_cpu = match &self.source {
            SizeSource::Capacity(caps) => Some(("capacity", caps)),
            SizeSource::CppcHighestPerf { perf, .. } => Some(("highest perf", perf)),
            _ => None,
        };
        for (size, name) in [
            (CpuSize::Big, "big"),
            (CpuSize::Mid, "mid"),
            (CpuSize::Little, "little"),
        ] {
            let cpus = self.cpus_of(size);
            if cpus.is_empty() {
                continue;
            }
            write!(f, ", {name} {}", format_cpu_list(&cpus))?;
            if let Some((label, value_of)) = per_cpu {
                let (lo, hi) = cpus.iter().fold((u32::MAX, 0), |(lo, hi), c| {
                    (lo.min(value_of[c]), hi.max(value_of[c]))
                });
                match lo == hi {
                    true => write!(f, " ({label} {hi})")?,
                    false => write!(f, " ({label} {lo}-{hi})")?,
                }
            }
        }
        match &self.source {
            SizeSource::CoreType => write!(f, " (from devices/cpu_core and cpu_atom)"),
            SizeSource::CppcHighestPerf { file, .. } => write!(f, " (from {file})"),
            _ => write!(f, " (from cpu_capacity)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(pairs: &[(u32, u32)]) -> BTreeMap<u32, u32> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn two_tiers_are_big_and_little() {
        let s = CpuSizes::from_capacities(caps(&[(0, 1024), (1, 1024), (2, 446), (3, 446)]));
        assert!(s.is_hybrid());
        assert_eq!(s.size(0), CpuSize::Big);
        assert_eq!(s.size(1), CpuSize::Big);
        assert_eq!(s.size(2), CpuSize::Little);
        assert_eq!(s.size(3), CpuSize::Little);
        assert_eq!(
            s.to_string(),
            "cpu sizes: hybrid, big 0-1 (capacity 1024), little 2-3 (capacity 446) \
             (from cpu_capacity)"
        );
    }

    #[test]
    fn three_tiers_have_a_middle_and_binning_stays_in_its_tier() {
        // A phone-style 1+3+4 part whose prime core and big cores differ by under 10 %.
        let s = CpuSizes::from_capacities(caps(&[
            (0, 160),
            (1, 160),
            (2, 160),
            (3, 160),
            (4, 700),
            (5, 690),
            (6, 690),
            (7, 1024),
            (8, 980),
        ]));
        for cpu in 0..4 {
            assert_eq!(s.size(cpu), CpuSize::Little, "cpu {cpu}");
        }
        for cpu in 4..7 {
            assert_eq!(s.size(cpu), CpuSize::Mid, "cpu {cpu}");
        }
        assert_eq!(s.size(7), CpuSize::Big);
        assert_eq!(s.size(8), CpuSize::Big);
        assert!(s.to_string().contains("big 7-8 (capacity 980-1024)"), "{s}");
    }

    #[test]
    fn equal_or_nearly_equal_capacities_are_a_symmetric_machine() {
        for c in [
            caps(&[(0, 1024), (1, 1024)]),
            caps(&[(0, 1024), (1, 1000), (2, 950)]),
            caps(&[(0, 1024)]),
            caps(&[]),
        ] {
            let s = CpuSizes::from_capacities(c);
            assert!(!s.is_hybrid(), "{s:?}");
            assert_eq!(s.size(0), CpuSize::Big);
            assert_eq!(s.to_string(), "cpu sizes: uniform");
        }
    }

    #[test]
    fn intel_core_types_make_p_cores_big_and_e_cores_little() {
        let online: Vec<u32> = (0..8).collect();
        let s = CpuSizes::from_core_types(&online, &[0, 1, 2, 3], &[4, 5, 6, 7]);
        assert!(s.is_hybrid());
        assert_eq!(s.size(3), CpuSize::Big);
        assert_eq!(s.size(4), CpuSize::Little);
        assert_eq!(
            s.to_string(),
            "cpu sizes: hybrid, big 0-3, little 4-7 (from devices/cpu_core and cpu_atom)"
        );
        // E-cores all offline: nothing to choose between.
        let s = CpuSizes::from_core_types(&[0, 1, 2, 3], &[0, 1, 2, 3], &[4, 5, 6, 7]);
        assert!(!s.is_hybrid());
    }

    const AMD_PSTATE: &str = HIGHEST_PERF_FILES[0];

    #[test]
    fn highest_perf_ranks_spread_within_a_tier_and_small_cores_fall_below_the_gap() {
        // Full cores ranked 196-236 in steps of 5 (1.2x end to end), small ones at 120-132.
        let mut perf: Vec<(u32, u32)> = (0..9).map(|c| (c, 196 + 5 * c)).collect();
        perf.extend((9..13).map(|c| (c, 120 + 4 * (c - 9))));
        let s = CpuSizes::from_highest_perf(AMD_PSTATE, caps(&perf));
        for cpu in 0..9 {
            assert_eq!(s.size(cpu), CpuSize::Big, "cpu {cpu}");
        }
        for cpu in 9..13 {
            assert_eq!(s.size(cpu), CpuSize::Little, "cpu {cpu}");
        }
        assert_eq!(
            s.to_string(),
            "cpu sizes: hybrid, big 0-8 (highest perf 196-236), little 9-12 (highest perf \
             120-132) (from cpufreq/amd_pstate_highest_perf)"
        );
    }

    #[test]
    fn a_gap_under_the_kind_gap_or_above_the_rank_floor_is_no_second_kind() {
        for perf in [
            // Ranks 166-236 in steps of 5: 1.42x end to end, never 1.3x in one step.
            (0..15).map(|c| (c, 166 + 5 * c)).collect::<Vec<_>>(),
            // Two ranks far apart are still ranks: both at or above 166.
            vec![(0, 255), (1, 255), (2, 166), (3, 166)],
            // Below the floor, a 1.25x step is binning, not a second kind.
            vec![(0, 150), (1, 150), (2, 120), (3, 120)],
            vec![(0, 166), (1, 166)],
            vec![],
        ] {
            let s = CpuSizes::from_highest_perf(AMD_PSTATE, caps(&perf));
            assert!(!s.is_hybrid(), "{perf:?}: {s}");
            assert_eq!(s.source, SizeSource::Uniform);
        }
    }

    #[test]
    fn three_kinds_of_highest_perf_have_a_middle() {
        // A made-up part with three core kinds, each step between them past the 1.3x gap.
        let s = CpuSizes::from_highest_perf(
            AMD_PSTATE,
            caps(&[(0, 196), (1, 201), (2, 137), (3, 137), (4, 94), (5, 94)]),
        );
        let sizes: Vec<CpuSize> = (0..6).map(|c| s.size(c)).collect();
        use CpuSize::*;
        assert_eq!(sizes, [Big, Big, Mid, Mid, Little, Little]);
    }

    #[test]
    fn sizes_match_bpfs_enum() {
        assert_eq!(CpuSize::Big as u8, crate::bpf_intf::CPU_SIZE_BIG);
        assert_eq!(CpuSize::Mid as u8, crate::bpf_intf::CPU_SIZE_MID);
        assert_eq!(CpuSize::Little as u8, crate::bpf_intf::CPU_SIZE_LITTLE);
    }
}
