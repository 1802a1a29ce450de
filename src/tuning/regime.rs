// SPDX-License-Identifier: GPL-2.0-only
//! Workload regime from the idle share: LIGHT (idle > 50 %), MIXED (10-50 %), HEAVY (< 10 %).
//!
//! Two filters keep the regime from chasing noise, because every switch moves the knob baseline:
//! - Schmitt hysteresis: leaving the current regime takes crossing its boundary by
//!   [`HYSTERESIS_PCT`] points, so a signal sitting on 50 % (49, 51, 49, ...) never flips it.
//! - Hold: a different regime must be observed on [`HOLD_TICKS`] consecutive ticks before it is
//!   adopted, so a one-second excursion (a compile step finishing, a burst of wakeups) is ignored.

/// Idle share above which the machine is LIGHT.
pub const LIGHT_IDLE_PCT: f64 = 50.0;
/// Idle share below which the machine is HEAVY.
pub const HEAVY_IDLE_PCT: f64 = 10.0;
/// Points either side of a boundary that a signal must clear to leave the regime it is in.
/// Five points is larger than the second-to-second jitter of the idle-hit share on a steady
/// workload, yet small enough that HEAVY (entered below 5 %) is still reached on a saturated box.
pub const HYSTERESIS_PCT: f64 = 5.0;
/// Consecutive observations a new regime needs before it is adopted.
pub const HOLD_TICKS: u32 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Regime {
    Light = 0,
    Mixed = 1,
    Heavy = 2,
}

impl Regime {
    pub const ALL: [Regime; 3] = [Regime::Light, Regime::Mixed, Regime::Heavy];

    pub fn label(self) -> &'static str {
        match self {
            Regime::Light => "LIGHT",
            Regime::Mixed => "MIXED",
            Regime::Heavy => "HEAVY",
        }
    }

    /// The regime `idle_pct` belongs to with no hysteresis (the published boundaries).
    pub fn of_idle(idle_pct: f64) -> Regime {
        if idle_pct > LIGHT_IDLE_PCT {
            Regime::Light
        } else if idle_pct < HEAVY_IDLE_PCT {
            Regime::Heavy
        } else {
            Regime::Mixed
        }
    }

    /// The regime `idle_pct` reads as while the machine is in `self`: each boundary is pushed
    /// outward by [`HYSTERESIS_PCT`] on the side of the current regime.
    pub fn observe(self, idle_pct: f64) -> Regime {
        let (light_above, heavy_below) = match self {
            Regime::Light => (
                LIGHT_IDLE_PCT - HYSTERESIS_PCT,
                HEAVY_IDLE_PCT - HYSTERESIS_PCT,
            ),
            Regime::Mixed => (
                LIGHT_IDLE_PCT + HYSTERESIS_PCT,
                HEAVY_IDLE_PCT - HYSTERESIS_PCT,
            ),
            Regime::Heavy => (
                LIGHT_IDLE_PCT + HYSTERESIS_PCT,
                HEAVY_IDLE_PCT + HYSTERESIS_PCT,
            ),
        };
        if idle_pct > light_above {
            Regime::Light
        } else if idle_pct < heavy_below {
            Regime::Heavy
        } else {
            Regime::Mixed
        }
    }
}

/// Schmitt-filtered, hold-confirmed regime state, fed once per tick.
#[derive(Clone, Debug)]
pub struct RegimeDetector {
    current: Regime,
    candidate: Regime,
    streak: u32,
}

impl Default for RegimeDetector {
    /// MIXED: the middle regime is one step from either extreme, so the first real reading
    /// needs at most one switch.
    fn default() -> Self {
        RegimeDetector::new(Regime::Mixed)
    }
}

impl RegimeDetector {
    pub fn new(initial: Regime) -> Self {
        RegimeDetector {
            current: initial,
            candidate: initial,
            streak: 0,
        }
    }

    pub fn current(&self) -> Regime {
        self.current
    }

    /// Feeds one tick's idle share (0..=100) and returns the regime in force afterwards.
    /// A non-finite reading carries no evidence and leaves all state as it was.
    pub fn update(&mut self, idle_pct: f64) -> Regime {
        if !idle_pct.is_finite() {
            return self.current;
        }
        let seen = self.current.observe(idle_pct.clamp(0.0, 100.0));
        if seen == self.current {
            self.streak = 0;
        } else if seen == self.candidate && self.streak > 0 {
            self.streak += 1;
        } else {
            self.candidate = seen;
            self.streak = 1;
        }
        if self.streak >= HOLD_TICKS {
            self.current = seen;
            self.streak = 0;
        }
        self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(d: &mut RegimeDetector, idle: &[f64]) -> Vec<Regime> {
        idle.iter().map(|&i| d.update(i)).collect()
    }

    #[test]
    fn raw_boundaries_match_the_design() {
        assert_eq!(Regime::of_idle(80.0), Regime::Light);
        assert_eq!(Regime::of_idle(50.0), Regime::Mixed);
        assert_eq!(Regime::of_idle(10.0), Regime::Mixed);
        assert_eq!(Regime::of_idle(9.9), Regime::Heavy);
    }

    #[test]
    fn switch_happens_only_after_the_hold() {
        let mut d = RegimeDetector::new(Regime::Mixed);
        assert_eq!(d.update(90.0), Regime::Mixed, "one tick is not enough");
        assert_eq!(
            d.update(90.0),
            Regime::Light,
            "second consecutive tick switches"
        );
        let mut d = RegimeDetector::new(Regime::Light);
        assert_eq!(run(&mut d, &[1.0, 1.0]), [Regime::Light, Regime::Heavy]);
    }

    #[test]
    fn a_one_tick_excursion_is_ignored() {
        let mut d = RegimeDetector::new(Regime::Mixed);
        let got = run(&mut d, &[90.0, 30.0, 90.0, 30.0, 2.0, 30.0, 2.0, 30.0]);
        assert!(got.iter().all(|&r| r == Regime::Mixed), "{got:?}");
    }

    #[test]
    fn hysteresis_prevents_flapping_on_a_boundary() {
        for start in [Regime::Light, Regime::Mixed] {
            let mut d = RegimeDetector::new(start);
            let got = run(
                &mut d,
                &[49.0, 51.0, 49.0, 51.0, 49.0, 51.0, 51.0, 49.0, 49.0],
            );
            assert!(got.iter().all(|&r| r == start), "{start:?}: {got:?}");
        }
        for start in [Regime::Mixed, Regime::Heavy] {
            let mut d = RegimeDetector::new(start);
            let got = run(&mut d, &[9.0, 11.0, 9.0, 9.0, 11.0, 11.0, 8.0, 12.0]);
            assert!(got.iter().all(|&r| r == start), "{start:?}: {got:?}");
        }
    }

    #[test]
    fn leaving_a_regime_needs_the_band_cleared_on_the_far_side() {
        let mut d = RegimeDetector::new(Regime::Light);
        assert_eq!(run(&mut d, &[46.0, 46.0, 46.0]), [Regime::Light; 3]);
        assert_eq!(run(&mut d, &[44.0, 44.0]), [Regime::Light, Regime::Mixed]);
        assert_eq!(run(&mut d, &[54.0, 54.0, 54.0]), [Regime::Mixed; 3]);
        assert_eq!(run(&mut d, &[56.0, 56.0]), [Regime::Mixed, Regime::Light]);
    }

    #[test]
    fn alternating_distinct_candidates_restart_the_hold() {
        let mut d = RegimeDetector::new(Regime::Mixed);
        assert_eq!(run(&mut d, &[90.0, 1.0, 90.0, 1.0]), [Regime::Mixed; 4]);
        assert_eq!(d.update(1.0), Regime::Heavy);
    }

    #[test]
    fn a_jump_across_mixed_goes_straight_to_the_far_regime() {
        let mut d = RegimeDetector::new(Regime::Heavy);
        assert_eq!(run(&mut d, &[95.0, 95.0]), [Regime::Heavy, Regime::Light]);
    }

    #[test]
    fn non_finite_readings_are_no_evidence() {
        let mut d = RegimeDetector::new(Regime::Mixed);
        d.update(90.0);
        d.update(f64::NAN);
        assert_eq!(
            d.update(90.0),
            Regime::Light,
            "NaN neither confirmed nor reset the hold"
        );
        assert_eq!(d.update(f64::INFINITY), Regime::Light);
    }
}
