// SPDX-License-Identifier: GPL-2.0-only
//! Hybrid CPUs (big.LITTLE, Intel's P- and E-cores): which online CPUs are the biggest and which
//! the smallest. BPF runs LAT_CRITICAL and INTERACTIVE work on the biggest idle CPU it finds and
//! BATCH work on the smallest, which keeps the big cores free for the next interactive wakeup.
//!
//! Two sources, in order: `cpuN/cpu_capacity` (arm64, riscv: the kernel's relative capacity,
//! 1024 for the biggest) and the hybrid PMUs' CPU lists `devices/cpu_core/cpus` (big) and
//! `devices/cpu_atom/cpus` (little) that Intel hybrid parts expose, since x86 has no
//! `cpu_capacity` file.

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
}

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
        let size_of = capacity_of
            .iter()
            .map(|(&cpu, &c)| {
                let size = match tier(c) {
                    0 => CpuSize::Big,
                    t if t == tops.len() - 1 => CpuSize::Little,
                    _ => CpuSize::Mid,
                };
                (cpu, size)
            })
            .collect();
        CpuSizes {
            size_of,
            source: SizeSource::Capacity(capacity_of),
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

/// One line for the startup log: the CPUs of each size and where that came from.
impl fmt::Display for CpuSizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.is_hybrid() {
            return write!(f, "cpu sizes: uniform");
        }
        write!(f, "cpu sizes: hybrid")?;
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
            if let SizeSource::Capacity(caps) = &self.source {
                let (lo, hi) = cpus.iter().fold((u32::MAX, 0), |(lo, hi), c| {
                    (lo.min(caps[c]), hi.max(caps[c]))
                });
                match lo == hi {
                    true => write!(f, " (capacity {hi})")?,
                    false => write!(f, " (capacity {lo}-{hi})")?,
                }
            }
        }
        match self.source {
            SizeSource::CoreType => write!(f, " (from devices/cpu_core and cpu_atom)"),
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

    #[test]
    fn sizes_match_bpfs_enum() {
        assert_eq!(CpuSize::Big as u8, crate::bpf_intf::CPU_SIZE_BIG);
        assert_eq!(CpuSize::Mid as u8, crate::bpf_intf::CPU_SIZE_MID);
        assert_eq!(CpuSize::Little as u8, crate::bpf_intf::CPU_SIZE_LITTLE);
    }
}
