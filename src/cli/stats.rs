// SPDX-License-Identifier: GPL-2.0-only
//! Exact order statistics over a sorted sample buffer. The probe keeps every sample, so there is
//! no reason to accept a histogram's bucket error in the tail we care about.

/// Nearest-rank percentile of an ascending slice: the smallest sample such that at least a
/// fraction `q` of all samples are at or below it. `None` for an empty slice.
///
/// `q` is rounded to parts per million and the rank computed in integers: `0.999 * 1000` is
/// `999.0000000000001` in floating point, which would push P99.9 of 1000 samples to the max.
pub fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    let n = sorted.len() as u128;
    if n == 0 {
        return None;
    }
    let ppm = (q.clamp(0.0, 1.0) * 1e6).round() as u128;
    let rank = (ppm * n).div_ceil(1_000_000).clamp(1, n);
    Some(sorted[(rank - 1) as usize])
}

/// `n` as a share of `of`, 0 when `of` is 0 (a report of an empty run says 0, never NaN).
pub fn ratio(n: u64, of: u64) -> f64 {
    if of == 0 { 0.0 } else { n as f64 / of as f64 }
}

/// The figures every latency report carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub count: u64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
}

impl Summary {
    /// Summarises an ascending slice; all zero when empty.
    pub fn of_sorted(sorted: &[u64]) -> Summary {
        let (Some(&min_ns), Some(&max_ns)) = (sorted.first(), sorted.last()) else {
            return Summary::default();
        };
        let sum: u128 = sorted.iter().map(|&v| v as u128).sum();
        let p = |q| percentile(sorted, q).unwrap_or(0);
        Summary {
            count: sorted.len() as u64,
            min_ns,
            p50_ns: p(0.50),
            p99_ns: p(0.99),
            p999_ns: p(0.999),
            max_ns,
            mean_ns: (sum / sorted.len() as u128) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_has_no_percentile() {
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(Summary::of_sorted(&[]), Summary::default());
    }

    #[test]
    fn nearest_rank_on_one_to_hundred() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.50), Some(50));
        assert_eq!(percentile(&v, 0.99), Some(99));
        assert_eq!(percentile(&v, 0.999), Some(100));
        assert_eq!(percentile(&v, 1.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&v, 0.011), Some(2));
    }

    #[test]
    fn p999_of_a_thousand_is_not_the_max() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&v, 0.999), Some(999));
        assert_eq!(percentile(&v, 0.99), Some(990));
    }

    #[test]
    fn small_and_odd_arrays() {
        assert_eq!(percentile(&[7], 0.5), Some(7));
        assert_eq!(percentile(&[7], 0.999), Some(7));
        assert_eq!(percentile(&[1, 2, 3], 0.5), Some(2));
        assert_eq!(percentile(&[1, 2, 3, 4], 0.5), Some(2));
        assert_eq!(percentile(&[10, 20, 30, 40, 1000], 0.99), Some(1000));
    }

    #[test]
    fn summary_of_known_array() {
        let mut v: Vec<u64> = vec![5; 998];
        v.extend([100, 1_000]);
        let s = Summary::of_sorted(&v);
        assert_eq!(s.count, 1000);
        assert_eq!((s.min_ns, s.p50_ns, s.p99_ns), (5, 5, 5));
        assert_eq!((s.p999_ns, s.max_ns), (100, 1000));
        assert_eq!(s.mean_ns, (998 * 5 + 1100) / 1000);
    }
}
