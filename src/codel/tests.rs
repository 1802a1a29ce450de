// SPDX-License-Identifier: GPL-2.0-only
//! The oscillator's promises, checked on every row of the tau table a machine can produce: one
//! excursion per impulse, no overshoot past c_eq, back at c_eq within the time the linearised
//! step predicts, exactly at rest when quiet, and never outside [floor, max].

use super::*;
use crate::prng::XorShift64;
use crate::topology::{CODEL_EQ_MAX_NS, CODEL_EQ_MIN_NS, TAU_MAX_NS, TAU_MIN_NS, derive_params};

const MS: u64 = 1_000_000;
/// Taus from the thinnest to a disconnected machine, through the 2C / 32C / 12C reference points.
const TAUS: [u64; 8] = [
    TAU_MIN_NS,
    2 * MS,
    5 * MS,
    8 * MS,
    16 * MS,
    40 * MS,
    100 * MS,
    TAU_MAX_NS,
];

/// Every (tau row, equilibrium) pair: equilibria at the floor, inside, and at the ceiling.
fn cases() -> Vec<TopoParams> {
    let mut out = Vec::new();
    for tau in TAUS {
        let tp = derive_params(tau, 8, 8).bpf;
        for eq in [
            CODEL_EQ_MIN_NS,
            (tp.codel_target_floor_ns + tp.codel_target_max_ns) / 2,
            tp.codel_target_max_ns - 1,
            CODEL_EQ_MAX_NS,
        ] {
            out.push(TopoParams {
                codel_eq_ns: eq,
                ..tp
            });
        }
    }
    out
}

/// Targets after one step with `impulses`, then `ticks` quiet steps, starting at rest at c_eq.
fn trajectory(impulses: u64, ticks: usize, tp: &TopoParams) -> Vec<i64> {
    let mut o = Oscillator {
        x: equilibrium(tp),
        v: 0,
    };
    o.step(impulses, tp);
    let mut xs = vec![o.x];
    for _ in 0..ticks {
        o.step(0, tp);
        xs.push(o.x);
    }
    xs
}

/// Ticks the quiet oscillator needs to decay from the whole [floor, max] range to the rest band,
/// from the slow eigenvalue of its linearised step (x' = x + v', v' = (v - 2^-S x)(1 - 2^-D)),
/// times 4 for the velocity cap, the floor clamp and the near-double root's t * lambda^t term.
fn expected_return_ticks(tp: &TopoParams) -> usize {
    let a = (-(tp.spring_shift as f64)).exp2();
    let b = 1.0 - (-(tp.damping_shift as f64)).exp2();
    let (m00, m01, m10, m11) = (1.0 - a * b, b, -a * b, b);
    let (tr, det) = (m00 + m11, m00 * m11 - m01 * m10);
    let disc = tr * tr - 4.0 * det;
    assert!(disc >= 0.0, "complex eigenvalues: the step would ring");
    let slow = (tr + disc.sqrt()) / 2.0;
    let range = (tp.codel_target_max_ns - tp.codel_target_floor_ns) as f64;
    let band = (tp.spring_shift as f64).exp2();
    (4.0 * (range / band).ln().max(1.0) / -slow.ln()).ceil() as usize
}

#[test]
fn one_excursion_no_overshoot_and_timely_return() {
    for tp in cases() {
        let eq = equilibrium(&tp);
        let limit = expected_return_ticks(&tp);
        for impulses in [1, 2, 5, CODEL_MAX_IMPULSES] {
            let xs = trajectory(impulses, 2 * limit, &tp);
            let what = format!(
                "eq {eq} floor {} impulses {impulses}",
                tp.codel_target_floor_ns
            );
            assert!(xs.iter().all(|&x| x <= eq), "overshoot past c_eq: {what}");
            let low = xs.iter().enumerate().min_by_key(|&(_, x)| *x).unwrap().0;
            assert!(
                xs[..=low].windows(2).all(|w| w[1] <= w[0]),
                "not one excursion on the way down: {what}"
            );
            assert!(
                xs[low..].windows(2).all(|w| w[1] >= w[0]),
                "not one excursion on the way back: {what}"
            );
            let back = xs.iter().position(|&x| x == eq).expect("never returned");
            if eq > tp.codel_target_floor_ns as i64 {
                assert!(back > 0, "an impulse did not move the target: {what}");
            }
            assert!(back <= limit, "back after {back} ticks > {limit}: {what}");
        }
    }
}

#[test]
fn quiet_oscillator_rests_exactly_at_equilibrium() {
    for tp in cases() {
        let eq = equilibrium(&tp);
        // Uninitialised (x = 0) starts at c_eq and stays there.
        let mut o = Oscillator::default();
        for _ in 0..10_000 {
            o.step(0, &tp);
            assert_eq!(o, Oscillator { x: eq, v: 0 });
        }
        // A small displacement on either side, inside the shifts' dead band, settles exactly.
        for dx in [-1, 1, 7, -7, (1 << tp.spring_shift) - 1] {
            let mut o = Oscillator { x: eq + dx, v: 0 };
            for _ in 0..expected_return_ticks(&tp) {
                o.step(0, &tp);
            }
            let (floor, max) = (
                tp.codel_target_floor_ns as i64,
                tp.codel_target_max_ns as i64,
            );
            assert_eq!(o.v, 0, "dx {dx}");
            assert!(
                o.x == eq || !(floor..=max).contains(&(eq + dx)),
                "dx {dx}: {o:?}"
            );
        }
    }
}

#[test]
fn target_stays_within_floor_and_max_under_any_rescue_pattern() {
    // A fixed, reproducible rescue pattern.
    let mut rng = XorShift64(0x00c0_de15);
    let mut below = |n: u64| rng.below(n);
    for tp in cases() {
        let (floor, max) = (
            tp.codel_target_floor_ns as i64,
            tp.codel_target_max_ns as i64,
        );
        let vcap = (max - floor) >> CODEL_VCAP_SHIFT;
        let mut o = Oscillator::default();
        let mut hit_floor = false;
        for _ in 0..5_000 {
            let burst = below(10) >= 7;
            o.step(if burst { below(101) } else { 0 }, &tp);
            assert!(
                (floor..=max).contains(&o.x),
                "{o:?} outside [{floor}, {max}]"
            );
            assert!(o.v.abs() <= vcap, "{o:?} faster than {vcap}");
            hit_floor |= o.x == floor;
        }
        assert!(hit_floor, "bursts never drove the target to its floor");
    }
}

/// A burst that pins the target at its floor must not leave velocity pointing into the floor:
/// the first quiet tick already moves it back up (before, a saturated velocity kept it pinned for
/// hundreds of ticks, seconds on a real machine).
#[test]
fn target_leaves_the_floor_on_the_first_quiet_tick() {
    for tp in cases() {
        let (floor, eq) = (tp.codel_target_floor_ns as i64, equilibrium(&tp));
        if eq == floor {
            continue;
        }
        let mut o = Oscillator::default();
        let mut steps = 0;
        while o.x != floor {
            o.step(CODEL_MAX_IMPULSES, &tp);
            steps += 1;
            assert!(
                steps < 100,
                "16 rescues a tick never reached the floor: {o:?}"
            );
        }
        assert!(o.v >= 0, "velocity into the floor: {o:?}");
        o.step(0, &tp);
        assert!(o.x > floor, "still pinned after the rescues stopped: {o:?}");
    }
}

#[test]
fn impulses_beyond_the_cap_kick_no_harder() {
    for tp in cases() {
        let cap = trajectory(CODEL_MAX_IMPULSES, 50, &tp);
        assert_eq!(cap, trajectory(CODEL_MAX_IMPULSES * 10, 50, &tp));
        let one = trajectory(1, 0, &tp)[0];
        let eq = equilibrium(&tp);
        assert!(one < eq || eq == tp.codel_target_floor_ns as i64);
    }
}

#[test]
fn equilibrium_falls_back_to_the_middle_and_is_clamped() {
    let tp = derive_params(8 * MS, 8, 8).bpf;
    let (floor, max) = (tp.codel_target_floor_ns, tp.codel_target_max_ns);
    let with = |eq| TopoParams {
        codel_eq_ns: eq,
        ..tp
    };
    assert_eq!(equilibrium(&with(0)), ((floor + max) / 2) as i64);
    assert_eq!(equilibrium(&with(1)), floor as i64);
    assert_eq!(equilibrium(&with(u32::MAX as u64)), max as i64);
    assert_eq!(target(0, &with(0)), (floor + max) / 2);
    assert_eq!(target(123_456, &with(0)), 123_456);
}

/// The step as it was before codel_shr(): arithmetic shifts round negative values toward -inf.
/// Kept to show what the rest test catches: this variant settles above c_eq and stays there.
#[test]
fn floor_rounding_shifts_would_rest_above_equilibrium() {
    let tp = derive_params(40 * MS, 8, 8).bpf;
    let tp = TopoParams {
        codel_eq_ns: (tp.codel_target_floor_ns + tp.codel_target_max_ns) / 2,
        ..tp
    };
    let eq = equilibrium(&tp);
    let (floor, max) = (
        tp.codel_target_floor_ns as i64,
        tp.codel_target_max_ns as i64,
    );
    let (mut x, mut v) = (eq, 0i64);
    for t in 0..20_000 {
        v -= if t == 0 { eq >> CODEL_KICK_SHIFT } else { 0 };
        v -= (x - eq) >> tp.spring_shift;
        v -= v >> tp.damping_shift;
        x = (x + v).clamp(floor, max);
    }
    assert!(x > eq, "the old arithmetic settled at {x}, c_eq {eq}");
}
