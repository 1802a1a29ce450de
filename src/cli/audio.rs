// SPDX-License-Identifier: GPL-2.0-only
//! `audio`: what an audio user feels. A PipeWire-like data thread (issue #33): a period of 256
//! frames at 48 kHz (5.33 ms) on absolute deadlines (`clock_nanosleep`, `TIMER_ABSTIME`), 0.5 ms
//! of CPU time per period, and every period missed counted as an xrun (`xrun`): its work ended
//! after the period's end, or the thread slept through the period's start. With it, how late the
//! thread woke for each period (its P99 is the wakeup-latency figure).
//!
//! It runs as an ordinary thread (SCHED_OTHER, nice 0): PipeWire's data thread without RTKit,
//! and the only kind a sched_ext scheduler schedules (realtime threads never reach it).

mod args;
mod config;
mod counters;
mod cycle;
mod report;
mod xrun;

pub use args::AudioArgs;
pub use config::{AudioConfig, DEFAULT_NAME, MAX_PERIODS};
pub use report::AudioReport;

use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};

/// Runs the loop on the calling thread until its duration is over, or `stop` is raised (then the
/// report says `interrupted`).
pub fn measure_until(cfg: &AudioConfig, stop: &AtomicBool) -> Result<AudioReport> {
    Ok(AudioReport::new(cfg, cycle::cycle(cfg, stop)?))
}

/// The `audio` subcommand: runs, then prints one JSON object (or a human line) on stdout.
pub fn run(args: &AudioArgs) -> Result<()> {
    let cfg = args.to_config()?;
    let stop = super::signal::install().context("installing SIGINT/SIGTERM handlers")?;
    let report = measure_until(&cfg, stop)?;
    super::print_report(args.human, || report.to_human(), || report.to_json())
}
