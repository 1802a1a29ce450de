// SPDX-License-Identifier: GPL-2.0-only
//! The command-line modes: `--monitor` (a process of its own), `--stats` (a printer thread next
//! to the scheduler) and starting the server for a scheduler run.

use super::{Monitor, Publisher, launch, socket_path};
use anyhow::{Context, Result};
use log::warn;
use scx_stats::StatsServer;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Writes a block to stdout; a closed pipe (`| head`) ends the monitor instead of panicking.
fn print_block(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing statistics to stdout")
}

/// A reader that went away (`| head`) is no error of ours.
fn ignore_broken_pipe(r: Result<()>) -> Result<()> {
    match r {
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            Ok(())
        }
        r => r,
    }
}

/// `--help-stats`.
pub fn help() -> Result<()> {
    ignore_broken_pipe(super::describe(&mut std::io::stdout().lock()))
}

/// `--monitor SECS`: attach to the running scheduler's stats server and print until Ctrl-C.
pub fn monitor(secs: f64) -> Result<()> {
    let path = socket_path();
    let mut m = Monitor::connect(&path)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))?;
    ignore_broken_pipe(m.run(
        Duration::from_secs_f64(secs),
        || stop.load(Ordering::Relaxed),
        print_block,
    ))
}

/// Starts the stats server for a scheduler run. Without `--stats` a failure only costs the
/// statistics, so it is a warning; with `--stats` the user asked for them, so it is an error.
pub fn serve(publisher: Publisher, required: bool) -> Result<Option<StatsServer<(), ()>>> {
    match launch(publisher, &socket_path()) {
        Ok(s) => Ok(Some(s)),
        Err(e) if !required => {
            warn!("{e:#}; statistics will not be available");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// `--stats SECS`: a thread that reads our own server like `--monitor` would, so what it prints
/// is exactly what other clients get.
pub fn spawn_printer(secs: f64, shutdown: Arc<AtomicBool>) -> Result<()> {
    let mut m = Monitor::connect(&socket_path())?;
    std::thread::Builder::new()
        .name("stats".into())
        .spawn(move || {
            let stop = || shutdown.load(Ordering::Relaxed);
            if let Err(e) = m.run(Duration::from_secs_f64(secs), stop, print_block) {
                warn!("statistics: {e:#}");
            }
        })
        .context("starting the statistics thread")?;
    Ok(())
}
