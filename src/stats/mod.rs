// SPDX-License-Identifier: GPL-2.0-only
//! Observability through the scx_stats framework (as scx_bpfland and scx_lavd do it): the daemon
//! serves one [`PandemoniumMetrics`] record per control-loop tick on a UNIX socket under
//! /var/run/scx; `--monitor SECS` reads it from another process, `--stats SECS` from a thread of
//! the scheduler itself, `--help-stats` describes every field.

mod format;
mod metrics;
mod monitor;
mod run;
mod server;
#[cfg(test)]
mod tests;

pub use format::{BLOCK_HEADER, block};
pub use metrics::{COUNTER_ATTR, NO_REGIME, PandemoniumMetrics, RANKED_ATTR, Sample};
pub use monitor::{DEFAULT_SOCKET, Monitor, parse_interval, socket_path};
pub use run::{help, monitor, serve, spawn_printer};
pub use server::{Publisher, describe, launch, server_data};

/// CLOCK_MONOTONIC in ms: the clock BPF stamps with, shared by every process on the machine.
pub fn monotonic_ms() -> u64 {
    crate::cli::clock::now_ns() / 1_000_000
}
