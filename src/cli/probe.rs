// SPDX-License-Identifier: GPL-2.0-only
//! `probe`: how late does an interactive task wake up?
//!
//! The probe sleeps to absolute deadlines on CLOCK_MONOTONIC (`clock_nanosleep` with
//! `TIMER_ABSTIME`) and records, for every deadline, its lateness: the time it actually woke
//! minus the time it asked to. Optionally it spins a little after each wake (`--work-us`) so the
//! scheduler sees a short-running task rather than one that blocks again at once. The sample
//! buffer is allocated and touched before the clock starts; the loop itself does no I/O, no
//! allocation and no locking.
//!
//! # Coordinated omission
//!
//! A naive loop that oversleeps by k periods records one large sample and then carries on, so a
//! stall that swallowed k deadlines counts once and the tail looks k times rarer than it was.
//! Here every deadline that passed while the probe was off the CPU is recorded with the lateness
//! it would have had (wake minus that deadline): a wake L late at period P yields the samples
//! L, L-P, L-2P, ... while they stay above zero. The next deadline is then re-anchored to the
//! first period boundary at or after the wake — on the original grid, so the sampling phase is
//! kept — instead of firing the swallowed deadlines back to back, which would record a burst of
//! artificial near-zero samples. With `--sleep-range-us` the same holds with each swallowed
//! interval drawn from the PRNG in turn, so a seeded run walks the same deadline sequence under
//! every scheduler.
//!
//! # Frames
//!
//! `--frames` paces at `--fps` (60: 16.667 ms) and spins `--frame-work-us` per frame. A frame
//! *misses* when its wake is more than 500 us late (the upstream definition, kept so numbers
//! stay comparable); it misses its *deadline* when its work ends after the next frame boundary,
//! and every frame a stall swallowed misses its deadline too.

mod args;
mod config;
mod measure;
mod omission;
mod report;

pub use args::{ProbeArgs, SleepRange};
pub use config::{FRAME_MISS_NS, MAX_SAMPLES, Pacing, ProbeConfig};
pub use measure::{measure, measure_until};
pub use omission::coordinated_omission;
pub use report::ProbeReport;

use anyhow::{Context, Result};

/// The `probe` subcommand: measures, then prints one JSON object (or a human line) on stdout.
/// Installs SIGINT/SIGTERM handlers so an interrupted run still prints what it measured.
pub fn run(args: &ProbeArgs) -> Result<()> {
    let cfg = args.to_config()?;
    let stop = super::signal::install().context("installing SIGINT/SIGTERM handlers")?;
    let report = measure_until(&cfg, stop)?;
    super::print_report(args.human, || report.to_human(), || report.to_json())
}
