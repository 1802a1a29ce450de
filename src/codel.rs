// SPDX-License-Identifier: GPL-2.0-only
//! A Rust twin of the CoDel target oscillator in src/bpf/codel.bpf.h: the same integer step with
//! the same constants (from src/bpf/intf.h through [`crate::bpf_intf`]) and the same shifts (from
//! the topology's tau table), so its dynamics can be tested on the host. The daemon also uses
//! [`equilibrium`] and [`target`] to report the oscillator's state as BPF would read it.

use crate::bpf_intf::{CODEL_KICK_SHIFT, CODEL_MAX_IMPULSES, CODEL_VCAP_SHIFT, TopoParams};

/// The oscillator's state: target `x` (ns, 0 = not yet initialised) and velocity `v` (ns/tick).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Oscillator {
    pub x: i64,
    pub v: i64,
}

/// c_eq: the topology's equilibrium, or the middle of [floor, max] while it is unset; clamped.
pub fn equilibrium(tp: &TopoParams) -> i64 {
    let (floor, max) = bounds(tp);
    let eq = if tp.codel_eq_ns != 0 {
        tp.codel_eq_ns as i64
    } else {
        (floor + max) / 2
    };
    eq.clamp(floor, max.max(floor))
}

/// The target the stall test uses: x once initialised, else c_eq.
pub fn target(x: i64, tp: &TopoParams) -> u64 {
    if x > 0 {
        x as u64
    } else {
        equilibrium(tp) as u64
    }
}

fn bounds(tp: &TopoParams) -> (i64, i64) {
    (
        tp.codel_target_floor_ns as i64,
        tp.codel_target_max_ns as i64,
    )
}

/// `v >> n` rounded toward zero, as codel_shr() in BPF.
fn shr(v: i64, n: u32) -> i64 {
    if v < 0 { -((-v) >> n) } else { v >> n }
}

impl Oscillator {
    /// One step on CPU 0's tick with `impulses` rescues since the last one (codel_step()).
    pub fn step(&mut self, impulses: u64, tp: &TopoParams) {
        let (floor, max) = bounds(tp);
        let eq = equilibrium(tp);
        let (spring, damping) = (tp.spring_shift & 63, tp.damping_shift & 63);
        let vcap = (max - floor) >> CODEL_VCAP_SHIFT;
        let impulses = impulses.min(CODEL_MAX_IMPULSES) as i64;
        let mut x = if self.x != 0 { self.x } else { eq };
        let mut v = self.v;

        v -= impulses * (eq >> CODEL_KICK_SHIFT);
        v -= shr(x - eq, spring);
        v -= shr(v, damping);
        // BPF's clamp_s64 tests the low bound first; with vcap >= 0 the order does not matter.
        v = v.clamp(-vcap, vcap);
        x = (x + v).clamp(floor, max);
        if (x == floor && v < 0) || (x == max && v > 0) {
            v = 0;
        }
        if impulses == 0 && (x - eq).abs() < (1 << spring) && v.abs() < (1 << damping) {
            (x, v) = (eq, 0);
        }
        *self = Oscillator { x, v };
    }
}

#[cfg(test)]
mod tests;
