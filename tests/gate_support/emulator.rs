// SPDX-License-Identifier: GPL-2.0-only
//! How long the emulator stopped the whole guest. Under TCG the guest's clock is the host's, so
//! when the host does not run QEMU (other VMs or builds on its cores) every task in the guest
//! sees the time go by without running, and a figure taken from task progress grows with the
//! host's load, not with what the scheduler did. A SCHED_FIFO thread, which sched_ext never
//! schedules, sleeps a short period again and again: what it oversleeps by far is the guest
//! stopped, whichever scheduler runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The watcher's sleep.
const PERIOD: Duration = Duration::from_millis(10);
/// An oversleep past this counts as the guest stopped. Below it is the emulator's own round
/// robin: single-threaded TCG runs one vCPU at a time and switches every 100 ms when all are busy,
/// so at 4 vCPUs a wakeup can wait 300 ms with the host idle; that time the loops' bar already
/// holds.
const STOPPED_PAST: Duration = Duration::from_millis(400);

/// What the watcher saw: the stopped time in all, and the longest stop.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stops {
    pub total: Duration,
    pub longest: Duration,
}

impl Stops {
    /// One wake `slept` after the watcher went to sleep for `PERIOD`.
    fn add(&mut self, slept: Duration) {
        if slept > PERIOD + STOPPED_PAST {
            let stop = slept - PERIOD;
            self.total += stop;
            self.longest = self.longest.max(stop);
        }
    }
}

pub struct StopWatcher {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Stops>,
}

impl StopWatcher {
    /// Starts the watcher; panics when the thread cannot be SCHED_FIFO (the gate runs as root).
    pub fn start() -> StopWatcher {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let _ = ready_tx.send(super::cputime::make_fifo());
            let mut stops = Stops::default();
            while !flag.load(Ordering::Relaxed) {
                let t = Instant::now();
                std::thread::sleep(PERIOD);
                stops.add(t.elapsed());
            }
            stops
        });
        if let Err(e) = ready_rx.recv().expect("the stop watcher's thread ended") {
            panic!("the stop watcher cannot be SCHED_FIFO: {e}");
        }
        StopWatcher { stop, thread }
    }

    pub fn finish(self) -> Stops {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the stop watcher panicked")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_oversleeps_past_the_threshold_count_as_stops() {
        let mut s = Stops::default();
        s.add(PERIOD);
        s.add(PERIOD + STOPPED_PAST);
        assert_eq!(s, Stops::default());
        s.add(PERIOD + Duration::from_millis(900));
        s.add(PERIOD + Duration::from_millis(500));
        assert_eq!(s.total, Duration::from_millis(1400));
        assert_eq!(s.longest, Duration::from_millis(900));
    }
}
