// SPDX-License-Identifier: GPL-2.0-only
//! SplitMix64: tiny, allocation-free and deterministic, so a seeded probe run sleeps the same
//! sequence of intervals under every scheduler it is compared across.

pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi` (`lo <= hi`). Multiply-high instead of `%`: no bias worth naming
    /// and no division on the probe's hot path.
    pub(crate) fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        let span = (hi - lo) as u128 + 1;
        lo + ((self.next_u64() as u128 * span) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_in_range() {
        let (mut a, mut b) = (SplitMix64::new(42), SplitMix64::new(42));
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
