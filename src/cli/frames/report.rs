// SPDX-License-Identifier: GPL-2.0-only
//! What a `frames` run found, and its JSON and human spellings.

use serde::Serialize;

use super::config::FramesConfig;
use super::game::Run;
use super::metrics::{FrameStats, budget_ns, frame_times};
use crate::cli::run_meta::RunEnd;
use crate::cli::stats::Summary;

/// The environment variable Steam sets for every game it starts, and gaming mode reads
/// (src/games/ids.rs).
pub const STEAM_GAME_ID: &str = "SteamGameId";

/// Its JSON is the fields in this order after `"tool":"frames"`, `end`'s and the frame
/// statistics' fields in their places (flattened).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "tool", rename = "frames")]
pub struct FramesReport {
    /// The limiter's rate (1e9 / period, rounded to 0.001).
    pub fps: f64,
    pub period_ns: u64,
    pub workers: usize,
    pub work_ns: u64,
    pub render_ns: u64,
    pub warmup_ns: u64,
    pub tolerance_pct: f64,
    pub timer_slack_ns: Option<u64>,
    /// `SteamGameId` in the environment: launched as Steam launches a game.
    pub steam_game_id: Option<String>,
    #[serde(flatten)]
    pub end: RunEnd,
    /// Frames run, warm-up included.
    pub frames_run: u64,
    /// Frame start (the main thread's wake) to present: how long a frame's work took.
    pub latency_p50_ns: u64,
    pub latency_p99_ns: u64,
    /// How late the main thread woke for its frame deadlines.
    pub wake_p50_ns: u64,
    pub wake_p99_ns: u64,
    pub wake_max_ns: u64,
    #[serde(flatten)]
    pub stats: FrameStats,
    /// Frame times in ns, ascending.
    #[serde(skip)]
    pub frame_times: Vec<u64>,
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

impl FramesReport {
    pub(crate) fn new(cfg: &FramesConfig, run: Run, steam_game_id: Option<String>) -> Self {
        let times = sorted(frame_times(&run.presents));
        let latency = sorted(
            run.presents
                .iter()
                .zip(&run.starts)
                .map(|(p, s)| p.saturating_sub(*s))
                .collect(),
        );
        let latency = Summary::of_sorted(&latency);
        let wake = Summary::of_sorted(&sorted(run.wake_late));
        FramesReport {
            fps: (1e12 / cfg.period_ns as f64).round() / 1e3,
            period_ns: cfg.period_ns,
            workers: cfg.workers,
            work_ns: cfg.work_ns,
            render_ns: cfg.render_ns,
            warmup_ns: cfg.warmup_ns,
            tolerance_pct: cfg.tolerance_pct,
            timer_slack_ns: cfg.timer_slack_ns,
            steam_game_id,
            end: run.end,
            frames_run: run.frames_run,
            latency_p50_ns: latency.p50_ns,
            latency_p99_ns: latency.p99_ns,
            wake_p50_ns: wake.p50_ns,
            wake_p99_ns: wake.p99_ns,
            wake_max_ns: wake.max_ns,
            stats: FrameStats::of_sorted(&times, budget_ns(cfg.period_ns, cfg.tolerance_pct)),
            frame_times: times,
        }
    }

    /// One JSON object on one line.
    pub fn to_json(&self) -> String {
        crate::cli::json_line(self)
    }

    pub fn to_human(&self) -> String {
        let ms = |ns: u64| ns as f64 / 1e6;
        let s = &self.stats;
        let mut line = format!(
            "frames at {} fps ({} workers x {:.1} ms){}: {} frames in {:.1} s: frame time p50 \
             {:.2} ms, p99 {:.2} ms, max {:.2} ms; 1% low {:.1} fps (0.1% {:.1}, 1% min avg \
             {:.1}), avg {:.1} fps; over budget (> {:.2} ms): {} ({:.2}%)",
            self.fps,
            self.workers,
            ms(self.work_ns),
            match &self.steam_game_id {
                Some(id) => format!(" as Steam game {id}"),
                None => String::new(),
            },
            s.frames,
            self.end.elapsed_ns as f64 / 1e9,
            ms(s.p50_ns),
            ms(s.p99_ns),
            ms(s.max_ns),
            s.fps_1pct_low,
            s.fps_01pct_low,
            s.fps_1pct_min_avg,
            s.fps_avg,
            ms(s.budget_ns),
            s.over_budget,
            100.0 * s.over_budget_ratio,
        );
        if self.end.interrupted {
            line.push_str(" [interrupted]");
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> Run {
        // Frames at 0, 10, 20 and 40 ms, each presented 3 ms after it started.
        let starts = vec![100_000_000, 110_000_000, 120_000_000, 140_000_000];
        Run {
            presents: starts.iter().map(|s| s + 3_000_000).collect(),
            wake_late: vec![1_000, 2_000, 3_000, 50_000],
            starts,
            frames_run: 300,
            end: RunEnd {
                elapsed_ns: 2_000_000_000,
                interrupted: false,
            },
        }
    }

    #[test]
    fn report_reads_the_run() {
        let cfg = FramesConfig {
            period_ns: 10_000_000,
            ..FramesConfig::default()
        };
        let r = FramesReport::new(&cfg, run(), Some("480".into()));
        assert_eq!(r.fps, 100.0);
        assert_eq!(r.frame_times, vec![10_000_000, 10_000_000, 20_000_000]);
        assert_eq!((r.stats.frames, r.stats.over_budget), (3, 1));
        assert_eq!(r.stats.budget_ns, 11_000_000);
        assert_eq!((r.latency_p50_ns, r.latency_p99_ns), (3_000_000, 3_000_000));
        assert_eq!((r.wake_p99_ns, r.wake_max_ns), (50_000, 50_000));
        let j = r.to_json();
        assert!(
            j.starts_with(r#"{"tool":"frames","fps":100.0,"period_ns":10000000,"#),
            "{j}"
        );
        assert!(
            j.contains(r#""steam_game_id":"480","elapsed_ns":2000000000,"interrupted":false,"#),
            "{j}"
        );
        assert!(j.contains(r#""fps_1pct_low":50.0,"#), "{j}");
        assert!(j.contains(r#""over_budget":1,"#), "{j}");
        assert!(!j.contains("frame_times"));
        let h = r.to_human();
        assert!(h.contains("as Steam game 480"), "{h}");
        assert!(h.contains("over budget (> 11.00 ms): 1 (33.33%)"), "{h}");
    }

    #[test]
    fn an_empty_run_reports_zeros() {
        let r = FramesReport::new(&FramesConfig::default(), Run::default(), None);
        assert_eq!(r.stats.frames, 0);
        assert!(r.to_json().contains(r#""steam_game_id":null,"#));
        assert!(!r.to_json().contains("NaN"));
    }
}
