// SPDX-License-Identifier: GPL-2.0-only
//! `stress`: CPU load for the probe to compete with.
//!
//! Each worker spins in fixed chunks of arithmetic (10 000 dependent multiply-adds, some tens of
//! microseconds) and stamps CLOCK_MONOTONIC after each: the chunk count is its progress, and the
//! longest time between two stamps is the longest it went without the CPU (plus one chunk).
//! Workers keep their counters on their own stacks and hand them back when joined, so the hot
//! loop shares nothing but the stop flag.
//!
//! Load shapes:
//! - default (`yield`): never blocks, but calls `sched_yield` once per 10 ms of spinning. The
//!   classifier still sees a CPU-bound task, and the scheduler gets a regular voluntary decision
//!   point, like thread pools and user-space spin locks. Under sched_ext a yield re-enters the
//!   BPF scheduler's dispatch path, so this also exercises it.
//! - `--long-runner`: pure spin, never yields or sleeps. The worst case: only slice expiry or
//!   preemption takes the CPU away.
//! - `--run-us X --sleep-us Y`: duty cycle, spin X then sleep Y. The gap across a sleep is
//!   measured from when the sleep should have ended, so an intended sleep is not a stall.

mod args;
mod config;
mod report;
mod running;
mod worker;

pub use args::StressArgs;
pub use config::{DEFAULT_YIELD_EVERY_NS, Load, MAX_WORKERS, StressConfig};
pub use report::{StressReport, WorkerReport};
pub use running::{Running, measure, measure_until, start};

use anyhow::{Context, Result};

/// The `stress` subcommand: loads the CPUs until its duration or SIGINT/SIGTERM, then prints one
/// JSON object (or a human line) on stdout.
pub fn run(args: &StressArgs) -> Result<()> {
    let cfg = args.to_config()?;
    let stop = super::signal::install().context("installing SIGINT/SIGTERM handlers")?;
    if cfg.duration_ns.is_none() {
        eprintln!(
            "stress: {} workers ({}), until SIGINT/SIGTERM",
            cfg.workers,
            cfg.load.name()
        );
    }
    let report = measure_until(&cfg, stop)?;
    super::print_report(args.human, || report.to_human(), || report.to_json())
}
