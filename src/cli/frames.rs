// SPDX-License-Identifier: GPL-2.0-only
//! `frames`: what a gamer feels. A game-like frame loop (issue #33): at 144 Hz a main thread
//! wakes 4 worker threads, each runs 1 ms of CPU, and a render thread presents once they are all
//! done. The frame time is present to present, as MangoHud's frame-time graph shows it, and the
//! report gives what gamers compare schedulers by: frame-time P50 and P99, the 1 % low FPS
//! (MangoHud's definitions: `metrics`) and the frames over budget (longer than the period plus
//! a tolerance, 10 % by default: 7.64 ms at 144 Hz).
//!
//! The threads are one process, so launched with `SteamGameId` in its environment it is a game
//! as Steam starts one, which gaming mode boosts (src/games/).

mod args;
mod config;
mod game;
mod metrics;
mod report;

pub use args::FramesArgs;
pub use config::{FramesConfig, MAX_FRAMES, MAX_WORKERS};
pub use metrics::{FrameStats, budget_ns, fps_of, frame_times, min_avg_fps, percentile_fps};
pub use report::{FramesReport, STEAM_GAME_ID};

use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};

/// Runs the game on the calling thread until its warm-up and duration are over, or `stop` is
/// raised (then the report says `interrupted`).
pub fn measure_until(cfg: &FramesConfig, stop: &AtomicBool) -> Result<FramesReport> {
    let run = game::play(cfg, stop)?;
    let steam = std::env::var(STEAM_GAME_ID).ok().filter(|v| !v.is_empty());
    Ok(FramesReport::new(cfg, run, steam))
}

/// The `frames` subcommand: plays, then prints one JSON object (or a human line) on stdout.
pub fn run(args: &FramesArgs) -> Result<()> {
    let cfg = args.to_config()?;
    let stop = super::signal::install().context("installing SIGINT/SIGTERM handlers")?;
    let report = measure_until(&cfg, stop)?;
    super::print_report(args.human, || report.to_human(), || report.to_json())
}
