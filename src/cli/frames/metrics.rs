// SPDX-License-Identifier: GPL-2.0-only
//! Frame-time statistics as gamers compare schedulers: MangoHud's frame-time view. Pure
//! functions over the recorded present stamps, so the host's unit tests pin every definition.
//!
//! MangoHud has two "1 % low" figures, and both are here:
//! - its HUD (`fps_metrics=0.01`, src/fps_metrics.h): the frame times sorted slowest first, the
//!   one at index `0.01 * n - 1`, as a frame rate; that is, the frame rate of the 1st percentile
//!   of frame rate, a nearest-rank P99 of frame time. This is the tools' `fps_1pct_low`, the
//!   benchmark's headline figure.
//! - its log summary (`1% Min FPS`, src/logging.cpp writeSummary): the arithmetic mean of the
//!   frame rates of the slowest `ceil(0.01 * n)` frames: at or below the first whenever
//!   `0.01 * n` is whole, as it averages the frames slower than that one. This is
//!   `fps_1pct_min_avg`.

use crate::cli::stats::Summary;
use serde::Serialize;

/// Frames per second of one frame time (a zero frame time, two presents in one nanosecond,
/// reads as one nanosecond).
pub fn fps_of(frame_ns: u64) -> f64 {
    1e9 / frame_ns.max(1) as f64
}

/// Frame times: the intervals between consecutive presents (ascending stamps).
pub fn frame_times(presents: &[u64]) -> Vec<u64> {
    presents
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect()
}

/// `floor(q * n)` in exact arithmetic, `q` rounded to parts per million as `stats::percentile`
/// rounds it (MangoHud computes it in 32-bit floats, which may land one frame either side).
fn slowest_count(q: f64, n: usize) -> usize {
    let ppm = (q.clamp(0.0, 1.0) * 1e6).round() as u128;
    (ppm * n as u128 / 1_000_000) as usize
}

/// MangoHud's HUD percentile frame rate: the `floor(q * n)`-th slowest frame (1-based) of
/// ascending `sorted` frame times, as frames per second. With fewer than `1 / q` frames, where
/// MangoHud shows nothing, the slowest frame. `None` without frames.
pub fn percentile_fps(sorted: &[u64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let k = slowest_count(q, n).max(1);
    Some(fps_of(sorted[n - k]))
}

/// MangoHud's log-summary "min" frame rate: the arithmetic mean of the frame rates of the
/// slowest `ceil(q * n)` frames of ascending `sorted` frame times (at least one). `None` without
/// frames.
pub fn min_avg_fps(sorted: &[u64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let ppm = (q.clamp(0.0, 1.0) * 1e6).round() as u128;
    let k = ((ppm * n as u128).div_ceil(1_000_000) as usize).clamp(1, n);
    let sum: f64 = sorted[n - k..].iter().map(|&ft| fps_of(ft)).sum();
    Some(sum / k as f64)
}

/// The longest frame time still within budget: the frame period plus `tolerance_pct` percent
/// of it, rounded to the nanosecond.
pub fn budget_ns(period_ns: u64, tolerance_pct: f64) -> u64 {
    (period_ns as f64 * (1.0 + tolerance_pct / 100.0)).round() as u64
}

/// Rounds a rate for the report (0.01 fps: a frame time is whole nanoseconds, so 144 fps would
/// read back as 143.99999).
fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// The figures of one run's frame times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct FrameStats {
    /// Frame times measured (presents minus one).
    pub frames: u64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
    /// MangoHud's AVG: frames over the time they took (1 / mean frame time).
    pub fps_avg: f64,
    /// MangoHud's HUD "1%" (see the module docs).
    pub fps_1pct_low: f64,
    /// MangoHud's HUD "0.1%".
    pub fps_01pct_low: f64,
    /// MangoHud's log summary "1% Min FPS" (see the module docs).
    pub fps_1pct_min_avg: f64,
    /// A frame over budget took longer than this.
    pub budget_ns: u64,
    pub over_budget: u64,
    /// `over_budget` per frame (0 without frames).
    pub over_budget_ratio: f64,
}

impl FrameStats {
    /// The figures of ascending frame times against `budget_ns`; all zero without frames.
    pub fn of_sorted(sorted: &[u64], budget_ns: u64) -> FrameStats {
        let s = Summary::of_sorted(sorted);
        if s.count == 0 {
            return FrameStats {
                budget_ns,
                ..FrameStats::default()
            };
        }
        let over = (sorted.len() - sorted.partition_point(|&ft| ft <= budget_ns)) as u64;
        let fps = |v: Option<f64>| round2(v.unwrap_or(0.0));
        FrameStats {
            frames: s.count,
            min_ns: s.min_ns,
            p50_ns: s.p50_ns,
            p99_ns: s.p99_ns,
            p999_ns: s.p999_ns,
            max_ns: s.max_ns,
            mean_ns: s.mean_ns,
            fps_avg: round2(fps_of(s.mean_ns)),
            fps_1pct_low: fps(percentile_fps(sorted, 0.01)),
            fps_01pct_low: fps(percentile_fps(sorted, 0.001)),
            fps_1pct_min_avg: fps(min_avg_fps(sorted, 0.01)),
            budget_ns,
            over_budget: over,
            over_budget_ratio: over as f64 / s.count as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn frame_times_are_present_to_present() {
        assert_eq!(frame_times(&[]), Vec::<u64>::new());
        assert_eq!(frame_times(&[5]), Vec::<u64>::new());
        assert_eq!(frame_times(&[10, 17, 30, 30]), vec![7, 13, 0]);
    }

    #[test]
    fn the_hud_one_percent_is_the_floor_q_n_th_slowest_frame() {
        // 1000 frames of 1..=1000 ms: MangoHud's index 0.01 * 1000 - 1 = 9 of the slowest-first
        // list is the 10th slowest, 991 ms.
        let v: Vec<u64> = (1..=1000).map(|i| i * MS).collect();
        assert_eq!(percentile_fps(&v, 0.01), Some(1e9 / (991 * MS) as f64));
        // 0.1 %: index 0, the slowest.
        assert_eq!(percentile_fps(&v, 0.001), Some(1e9 / (1000 * MS) as f64));
        // 250 frames: floor(2.5) = 2nd slowest.
        let v: Vec<u64> = (1..=250).map(|i| i * MS).collect();
        assert_eq!(percentile_fps(&v, 0.01), Some(1e9 / (249 * MS) as f64));
        // Fewer than 100 frames: the slowest one.
        assert_eq!(percentile_fps(&[MS, 2 * MS, 4 * MS], 0.01), Some(250.0));
        assert_eq!(percentile_fps(&[], 0.01), None);
    }

    #[test]
    fn the_summary_min_is_the_mean_rate_of_the_slowest_ceil_q_n() {
        // 150 frames: ceil(1.5) = the 2 slowest, 10 ms and 20 ms: (100 + 50) / 2 fps.
        let mut v = vec![5 * MS; 148];
        v.extend([10 * MS, 20 * MS]);
        assert_eq!(min_avg_fps(&v, 0.01), Some(75.0));
        // The HUD figure of the same frames is the 1st slowest (floor(1.5)): 50 fps.
        assert_eq!(percentile_fps(&v, 0.01), Some(50.0));
        assert_eq!(min_avg_fps(&[4 * MS], 0.01), Some(250.0));
        assert_eq!(min_avg_fps(&[], 0.01), None);
    }

    #[test]
    fn budget_and_over_budget() {
        let period = 6_944_444; // 144 Hz
        assert_eq!(budget_ns(period, 10.0), 7_638_888);
        assert_eq!(budget_ns(period, 0.0), period);
        let budget = budget_ns(period, 10.0);
        // A frame exactly at the budget is within it.
        let mut v = vec![period; 97];
        v.extend([budget, budget + 1, 20 * MS]);
        v.sort_unstable();
        let s = FrameStats::of_sorted(&v, budget);
        assert_eq!((s.frames, s.over_budget), (100, 2));
        assert_eq!(s.over_budget_ratio, 0.02);
        assert_eq!(s.p50_ns, period);
        assert_eq!(s.p99_ns, budget + 1);
        assert_eq!(s.max_ns, 20 * MS);
        // floor(0.01 * 100) = 1: the slowest, 20 ms.
        assert_eq!(s.fps_1pct_low, 50.0);
        assert_eq!(s.fps_01pct_low, 50.0);
        assert_eq!(s.fps_1pct_min_avg, 50.0);
        assert!((s.fps_avg - 1e9 / s.mean_ns as f64).abs() < 0.01);
    }

    #[test]
    fn on_time_frames_read_back_as_the_frame_rate() {
        let v = vec![6_944_444; 1000];
        let s = FrameStats::of_sorted(&v, budget_ns(6_944_444, 10.0));
        assert_eq!(
            (s.fps_avg, s.fps_1pct_low, s.fps_1pct_min_avg),
            (144.0, 144.0, 144.0)
        );
        assert_eq!(s.over_budget, 0);
    }

    #[test]
    fn no_frames_is_all_zero_not_nan() {
        let s = FrameStats::of_sorted(&[], 7);
        assert_eq!(s.frames, 0);
        assert_eq!(s.budget_ns, 7);
        assert_eq!(s.over_budget_ratio, 0.0);
        assert_eq!(s.fps_1pct_low, 0.0);
    }
}
