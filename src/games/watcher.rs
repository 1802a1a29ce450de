// SPDX-License-Identifier: GPL-2.0-only
//! The scan's own thread. Listing `/proc` and reading environments takes time that grows with
//! what users run; on the control loop's thread the stall watchdog (watchdog.rs) would take a
//! long pass for a stalled scheduler. The loop only collects what the thread found.

use super::scan::{Changes, Limits, Scanner};
use anyhow::{Context, Result};
use log::warn;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Duration;

/// How often `/proc` is scanned: the control loop's tick.
pub const PERIOD: Duration = Duration::from_secs(1);

pub struct Watcher {
    rx: Receiver<Changes>,
}

impl Watcher {
    pub fn spawn() -> Result<Watcher> {
        let mut scanner = Scanner::new(Limits::default());
        let root = PathBuf::from("/proc");
        Watcher::spawn_with(move || scanner.scan(&root), PERIOD)
    }

    /// Runs `scan` every `period` and passes on what changed; the thread ends with the
    /// receiver. Warnings are logged here, as they are found.
    pub fn spawn_with(
        mut scan: impl FnMut() -> Changes + Send + 'static,
        period: Duration,
    ) -> Result<Watcher> {
        let (tx, rx) = mpsc::channel();
        thread::Builder::new()
            .name("games".into())
            .spawn(move || {
                loop {
                    let mut c = scan();
                    for w in c.warnings.drain(..) {
                        warn!("{w}");
                    }
                    if !c.is_empty() && tx.send(c).is_err() {
                        return;
                    }
                    thread::sleep(period);
                }
            })
            .context("cannot start the game scan's thread")?;
        Ok(Watcher { rx })
    }

    /// What the thread found since the last call, oldest first; never waits.
    pub fn changes(&self) -> Vec<Changes> {
        self.rx.try_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::scan::{GameProc, Via};
    use std::time::Instant;

    fn game(pid: u32) -> GameProc {
        let comm = "game".into();
        GameProc {
            pid,
            start: 1,
            comm,
            game: 730,
            via: Via::Environment,
        }
    }

    /// A pass that takes seconds (a /proc full of huge environments) does not hold up the
    /// caller: `changes` returns at once, and the pass's result arrives when it is done.
    #[test]
    fn a_slow_scan_never_holds_up_the_loop() {
        let mut passes = 0;
        let w = Watcher::spawn_with(
            move || {
                passes += 1;
                thread::sleep(Duration::from_millis(if passes == 1 { 1500 } else { 10 }));
                Changes {
                    added: vec![game(passes)],
                    ..Changes::default()
                }
            },
            Duration::from_millis(5),
        )
        .unwrap();
        let t = Instant::now();
        assert!(w.changes().is_empty());
        assert!(
            t.elapsed() < Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut got = Vec::new();
        while got.len() < 2 && Instant::now() < deadline {
            let t = Instant::now();
            got.extend(w.changes().into_iter().flat_map(|c| c.added));
            assert!(
                t.elapsed() < Duration::from_millis(100),
                "{:?}",
                t.elapsed()
            );
            thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            got.iter().map(|g| g.pid).take(2).collect::<Vec<_>>(),
            [1, 2]
        );
    }

    #[test]
    fn empty_passes_send_nothing() {
        let w = Watcher::spawn_with(Changes::default, Duration::from_millis(1)).unwrap();
        thread::sleep(Duration::from_millis(30));
        assert!(w.changes().is_empty());
    }
}
