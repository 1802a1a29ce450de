// SPDX-License-Identifier: GPL-2.0-only
//! The crate's one PRNG: Marsaglia's xorshift64 (shifts 13, 7, 17). Seeded and deterministic, so
//! the topology's Lanczos start vector, and with it every derived number, never depends on a
//! global RNG, every randomised test replays exactly, and a seeded probe run (pandemonium-tools)
//! sleeps the same sequence of intervals under every scheduler it is compared across. Not for
//! anything that must be unpredictable.

/// The state; seed it with any nonzero value (zero is xorshift's fixed point).
pub struct XorShift64(pub u64);

/// The 64-bit golden ratio, odd: multiplying by it permutes `u64`.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

impl XorShift64 {
    /// From any seed, 0 included, for seeds a user types: `seed + 1` times an odd constant, so a
    /// small seed starts from a state spread over all 64 bits (xorshift's first outputs from a
    /// small state are small too). Every seed has its own stream except `u64::MAX`, the one that
    /// lands on zero, which replays seed 0.
    pub fn seeded(seed: u64) -> XorShift64 {
        match seed.wrapping_add(1).wrapping_mul(GOLDEN) {
            0 => XorShift64(GOLDEN),
            state => XorShift64(state),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// In `0..n` (0 when `n` is 0); the modulo bias is irrelevant to tests.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in `lo..=hi` (`lo <= hi`). Multiply-high instead of `%`: no bias worth naming
    /// and no division on the probe's hot path.
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        let span = (hi - lo) as u128 + 1;
        lo + ((self.next_u64() as u128 * span) >> 64) as u64
    }

    /// True `pct` times in 100, on average.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }

    /// Uniform in (0, 1], from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_from_its_seed_and_never_reaches_zero() {
        let (mut a, mut b) = (XorShift64(42), XorShift64(42));
        for _ in 0..10_000 {
            let x = a.next_u64();
            assert_eq!(x, b.next_u64());
            assert_ne!(x, 0);
        }
        // Marsaglia's first outputs for seed 1 with shifts 13, 7, 17.
        let mut r = XorShift64(1);
        assert_eq!(r.next_u64(), 1_082_269_761);
    }

    #[test]
    fn ranges_hold() {
        let mut r = XorShift64(7);
        for _ in 0..10_000 {
            assert!(r.below(10) < 10);
            let u = r.unit();
            assert!(u > 0.0 && u <= 1.0);
        }
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn every_typed_seed_starts_off_zero_and_apart() {
        for seed in [0, 1, 2, u64::MAX] {
            assert_ne!(XorShift64::seeded(seed).next_u64(), 0, "seed {seed}");
        }
        assert_eq!(XorShift64::seeded(u64::MAX).0, XorShift64::seeded(0).0);
        let first = |seed| XorShift64::seeded(seed).next_u64();
        assert!(first(0) != first(1) && first(1) != first(2));
        // A small seed is spread: its first draw is not stuck at the bottom of a range.
        assert!(first(1) > u64::MAX / 1024);
    }

    #[test]
    fn deterministic_and_in_range() {
        let (mut a, mut b) = (XorShift64::seeded(42), XorShift64::seeded(42));
        let mut seen_lo = false;
        let mut seen_hi = false;
        for _ in 0..10_000 {
            let x = a.range_inclusive(1000, 1004);
            assert_eq!(x, b.range_inclusive(1000, 1004));
            assert!((1000..=1004).contains(&x));
            seen_lo |= x == 1000;
            seen_hi |= x == 1004;
        }
        assert!(seen_lo && seen_hi);
        assert_eq!(a.range_inclusive(7, 7), 7);
        // The full range has a span of 2^64: it must not overflow.
        let _ = a.range_inclusive(0, u64::MAX);
    }
}
