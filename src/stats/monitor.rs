// SPDX-License-Identifier: GPL-2.0-only
//! The client side: connect to a running scheduler's stats socket, check that it is ours, and
//! print a block of statistics every interval. Used by `--monitor` (another process) and by
//! `--stats` (a thread of the scheduler itself, through the same socket).
//!
//! Not `scx_utils::monitor_stats`, which other scx schedulers' `--monitor` use: it retries a
//! socket that is not there forever (we say no scheduler runs), never asks `stats_meta` (we
//! refuse another scheduler's server, and the metadata drives our block's fields and rates),
//! prints the same sample again when it polls twice between two of the daemon's, answers EAGAIN
//! (no sample yet) with a warning and a reconnect, reconnects when the scheduler goes away (we
//! stop with an error), and sleeps whole intervals (Ctrl-C and `--stats`' shutdown wait them out).

use super::format;
use super::metrics::PandemoniumMetrics;
use anyhow::{Context, Result, anyhow, bail};
use scx_stats::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The scx convention's socket (`/var/run/scx/<sched>/stats`, sched "root" for the one attached
/// scheduler), so scx tools find us too. The unit's `RuntimeDirectory=scx` must cover it.
pub const DEFAULT_SOCKET: &str = "/var/run/scx/root/stats";

/// Where the server binds and clients connect: always [`DEFAULT_SOCKET`]. No environment
/// variable moves it: the server removes whatever is at its path, as root.
pub fn socket_path() -> PathBuf {
    PathBuf::from(DEFAULT_SOCKET)
}

/// A live read can stall while the BPF program loads under emulation; a dead peer closes the
/// socket at once, so this only bounds a scheduler that is alive but stuck.
const READ_TIMEOUT_MS: u64 = 30_000;

/// How soon `run` asks again when the scheduler had no new sample.
const RETRY: Duration = Duration::from_millis(100);

pub struct Monitor {
    client: StatsClient,
    meta: StatsMeta,
    prev: Option<Value>,
    path: PathBuf,
}

fn connect_error(path: &Path, e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<std::io::Error>().map(|e| e.kind()) {
        Some(ErrorKind::NotFound | ErrorKind::ConnectionRefused) => anyhow!(
            "no scx_pandemonium is running: nothing answers at {} (start it with `sudo \
             scx_pandemonium`, or use --stats SECS to run and print statistics at once)",
            path.display()
        ),
        Some(ErrorKind::PermissionDenied) => anyhow!(
            "cannot connect to {}: permission denied; try: sudo scx_pandemonium --monitor",
            path.display()
        ),
        _ => e.context(format!("connecting to {}", path.display())),
    }
}

impl Monitor {
    /// Connects and checks the server describes our statistics, not another scheduler's.
    pub fn connect(path: &Path) -> Result<Monitor> {
        let mut client = StatsClient::new()
            .set_path(path)
            .connect(Some(READ_TIMEOUT_MS))
            .map_err(|e| connect_error(path, e))?;
        let metas: BTreeMap<String, StatsMeta> = client
            .request("stats_meta", vec![])
            .with_context(|| format!("asking {} for its statistics", path.display()))?;
        let ours = PandemoniumMetrics::meta();
        if !metas.contains_key(&ours.name) {
            bail!(
                "the stats server at {} belongs to another sched_ext scheduler (it describes: {})",
                path.display(),
                metas.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        }
        Ok(Monitor {
            client,
            meta: ours,
            prev: None,
            path: path.to_path_buf(),
        })
    }

    /// The next block of output, or `None` while the scheduler has no new sample: none yet while
    /// it loads, or the one already printed. The daemon samples at 1 Hz on its own clock, so a
    /// poll can land twice between two of its samples; printing that one again would show a
    /// block whose counters did not move.
    pub fn poll(&mut self) -> Result<Option<String>> {
        let at = format::sample_at;
        match self.client.request::<Value>("stats", vec![]) {
            Ok(cur) if self.prev.as_ref().is_some_and(|p| at(p) == at(&cur)) => Ok(None),
            Ok(cur) => {
                let text = format::block(&self.meta, self.prev.as_ref(), &cur);
                self.prev = Some(cur);
                Ok(Some(text))
            }
            Err(e)
                if e.downcast_ref::<StatsErrno>()
                    .is_some_and(|n| n.0 == libc::EAGAIN) =>
            {
                Ok(None)
            }
            Err(e) => Err(e.context(format!(
                "the scheduler stopped answering at {}",
                self.path.display()
            ))),
        }
    }

    /// Prints a block every `interval` until `should_exit` says so or the scheduler goes away.
    /// When no new sample is there yet, it asks again soon rather than a whole interval later.
    pub fn run(
        &mut self,
        interval: Duration,
        should_exit: impl Fn() -> bool,
        mut out: impl FnMut(&str) -> Result<()>,
    ) -> Result<()> {
        while !should_exit() {
            let wait = match self.poll()? {
                Some(text) => {
                    out(&text)?;
                    interval
                }
                None => RETRY.min(interval),
            };
            let until = Instant::now() + wait;
            while !should_exit() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50).min(interval));
            }
        }
        Ok(())
    }
}

/// `--stats` / `--monitor` interval: positive seconds, fractions allowed.
pub fn parse_interval(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !v.is_finite() || !(0.1..=3600.0).contains(&v) {
        return Err(format!(
            "{s} s: the interval must be between 0.1 and 3600 seconds"
        ));
    }
    Ok(v)
}
