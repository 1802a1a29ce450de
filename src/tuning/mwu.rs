// SPDX-License-Identifier: GPL-2.0-only
//! Multiplicative weight updates over the experts: w_i <- w_i * exp(-ETA * loss_i), renormalised,
//! floored, and relaxed back toward the uniform equilibrium once the system is healthy.

use super::experts::NR_EXPERTS;

/// Learning rate. Large on purpose: a loss of 0.25 already cuts an expert's weight by e^-2, so one
/// confirmed event visibly moves the knobs within the same second.
pub const ETA: f64 = 8.0;
/// No weight goes below this, so an expert that was wrong for a while can still win back the
/// blend when the workload changes (a zero weight could never grow again).
pub const WEIGHT_FLOOR: f64 = 1e-6;
/// Share of the distance to equilibrium closed on each relaxing tick.
pub const RELAX_RATE: f64 = 0.8;
/// Consecutive healthy ticks before relaxation starts.
pub const RELAX_HOLD: u32 = 2;
/// A tick is healthy when the latency signal is below this share of the regime's P99 ceiling.
pub const HEALTHY_CEILING_SHARE: f64 = 0.7;

pub const EQUILIBRIUM: [f64; NR_EXPERTS] = [1.0 / NR_EXPERTS as f64; NR_EXPERTS];

#[derive(Clone, Debug, PartialEq)]
pub struct Weights {
    w: [f64; NR_EXPERTS],
    healthy_streak: u32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            w: EQUILIBRIUM,
            healthy_streak: 0,
        }
    }
}

impl Weights {
    pub fn get(&self) -> &[f64; NR_EXPERTS] {
        &self.w
    }

    /// Charges one tick's losses. Non-finite or negative losses are treated as 0.
    pub fn apply_losses(&mut self, losses: &[f64; NR_EXPERTS]) {
        let l = losses.map(|v| if v.is_finite() { v.max(0.0) } else { 0.0 });
        // Subtracting the smallest loss changes nothing after normalisation but keeps the
        // exponent <= 0 for the least-penalised expert, so nothing underflows to zero together.
        let min = l.iter().copied().fold(f64::INFINITY, f64::min);
        for (w, li) in self.w.iter_mut().zip(l) {
            *w *= (-ETA * (li - min)).exp();
        }
        self.normalize();
        self.healthy_streak = 0;
    }

    /// Counts a tick; relaxes toward equilibrium once [`RELAX_HOLD`] healthy ticks in a row have
    /// been seen. An unhealthy tick restarts the count.
    pub fn note_tick(&mut self, healthy: bool) {
        if !healthy {
            self.healthy_streak = 0;
            return;
        }
        self.healthy_streak = self.healthy_streak.saturating_add(1);
        if self.healthy_streak >= RELAX_HOLD {
            for (w, eq) in self.w.iter_mut().zip(EQUILIBRIUM) {
                *w += RELAX_RATE * (eq - *w);
            }
            self.normalize();
        }
    }

    /// Sum to 1 with every weight at least [`WEIGHT_FLOOR`]. The floor is an affine squeeze
    /// (floor + (1 - n * floor) * w) rather than clip-and-renormalise, which could push a weight
    /// that was just above the floor back under it.
    fn normalize(&mut self) {
        let sum: f64 = self.w.iter().sum();
        if !sum.is_finite() || sum <= 0.0 {
            self.w = EQUILIBRIUM;
            return;
        }
        for w in &mut self.w {
            *w /= sum;
        }
        if self.w.iter().any(|&w| w < WEIGHT_FLOOR) {
            let keep = 1.0 - NR_EXPERTS as f64 * WEIGHT_FLOOR;
            for w in &mut self.w {
                *w = WEIGHT_FLOOR + keep * *w;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(w: &Weights) -> f64 {
        w.get().iter().sum()
    }

    #[test]
    fn a_loss_moves_weight_away_from_the_penalised_expert() {
        let mut w = Weights::default();
        w.apply_losses(&[1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert!(w.get()[0] < 1e-3);
        assert!((sum(&w) - 1.0).abs() < 1e-12);
        assert!(w.get()[1] > EQUILIBRIUM[1]);
    }

    #[test]
    fn floor_holds_under_repeated_heavy_losses() {
        let mut w = Weights::default();
        for _ in 0..1000 {
            w.apply_losses(&[3.0, 3.0, 0.0, 3.0, 3.0, 3.0]);
            assert!(w.get().iter().all(|&x| x >= WEIGHT_FLOOR), "{:?}", w.get());
            assert!((sum(&w) - 1.0).abs() < 1e-9);
        }
        w.apply_losses(&[f64::NAN, f64::INFINITY, -5.0, 0.0, 0.0, 0.0]);
        assert!((sum(&w) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn relaxation_starts_on_the_second_healthy_tick() {
        let mut w = Weights::default();
        w.apply_losses(&[0.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        let skewed = w.get()[0];
        w.note_tick(true);
        assert_eq!(w.get()[0], skewed, "first healthy tick holds");
        w.note_tick(true);
        let expect = skewed + RELAX_RATE * (EQUILIBRIUM[0] - skewed);
        assert!((w.get()[0] - expect).abs() < 1e-9);
        w.note_tick(false);
        let held = w.get()[0];
        w.note_tick(true);
        assert_eq!(w.get()[0], held, "an unhealthy tick restarts the hold");
        for _ in 0..40 {
            w.note_tick(true);
        }
        for (a, b) in w.get().iter().zip(EQUILIBRIUM) {
            assert!((a - b).abs() < 1e-9);
        }
    }
}
