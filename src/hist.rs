// SPDX-License-Identifier: GPL-2.0-only
//! Percentiles from BPF's log2 histograms (bucket i counts values in [2^i, 2^(i+1)) ns).

/// Upper bound of the bucket holding the `q`-quantile (0 < q <= 1), or `None` if no samples.
/// The upper bound is the honest answer for a tail figure: the true value is at most this.
pub fn percentile_ns(buckets: &[u64], q: f64) -> Option<u64> {
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (i, &n) in buckets.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return Some(if i >= 63 { u64::MAX } else { (2u64 << i) - 1 });
        }
    }
    None
}

/// Element-wise `cur - prev`, saturating: turns cumulative per-CPU counts into this interval's.
pub fn delta(cur: &[u64], prev: &[u64]) -> Vec<u64> {
    cur.iter()
        .zip(prev.iter().chain(std::iter::repeat(&0)))
        .map(|(c, p)| c.saturating_sub(*p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_histogram_has_no_percentile() {
        assert_eq!(percentile_ns(&[0; 32], 0.99), None);
    }

    #[test]
    fn p99_lands_in_the_tail_bucket() {
        let mut b = [0u64; 32];
        b[10] = 990; // ~1 us
        b[20] = 10; // ~1 ms
        assert_eq!(percentile_ns(&b, 0.5), Some((2 << 10) - 1));
        assert_eq!(percentile_ns(&b, 0.99), Some((2 << 10) - 1));
        assert_eq!(percentile_ns(&b, 0.995), Some((2 << 20) - 1));
        assert_eq!(percentile_ns(&b, 1.0), Some((2 << 20) - 1));
    }

    #[test]
    fn delta_saturates_and_pads() {
        assert_eq!(delta(&[5, 3, 9], &[2, 4]), vec![3, 0, 9]);
    }
}
