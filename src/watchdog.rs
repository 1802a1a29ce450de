// SPDX-License-Identifier: GPL-2.0-only
//! Control-loop stall detector. The loop calls [`Heartbeat::beat`] every tick; a separate thread
//! checks once a second and, after [`STALL_TIMEOUT`] without a beat, runs a callback. The default
//! callback ([`exit_on_stall`]) ends the process: a wedged loop leaves BPF running on stale knobs
//! with nobody draining its maps, while exiting closes the struct_ops link, the kernel's default
//! scheduler takes over at once, and systemd restarts the daemon.
//!
//! Time is `Instant` (CLOCK_MONOTONIC), which stops during suspend, so a laptop waking up does
//! not look like a ten-second stall.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Silence after which the loop counts as stalled: ten missed one-second ticks.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the watchdog thread looks.
pub const CHECK_PERIOD: Duration = Duration::from_secs(1);
/// Exit status of a stall exit: EX_TEMPFAIL from sysexits.h ("try again later"), distinct from
/// the 1 of an ordinary error so logs and `systemctl status` tell the two apart; systemd's
/// `Restart=on-failure` restarts on it.
pub const STALL_EXIT_CODE: i32 = 75;

struct Shared {
    epoch: Instant,
    /// Nanoseconds from `epoch` to the last beat.
    last_beat_ns: AtomicU64,
}

/// The control loop's side: cheap to clone and to call (one relaxed atomic store).
#[derive(Clone)]
pub struct Heartbeat(Arc<Shared>);

impl Heartbeat {
    fn new(now: Instant) -> Heartbeat {
        Heartbeat(Arc::new(Shared {
            epoch: now,
            last_beat_ns: AtomicU64::new(0),
        }))
    }

    pub fn beat(&self) {
        self.beat_at(Instant::now());
    }

    /// [`Heartbeat::beat`] with an injected clock.
    pub fn beat_at(&self, now: Instant) {
        let ns = u64::try_from(now.saturating_duration_since(self.0.epoch).as_nanos())
            .unwrap_or(u64::MAX);
        self.0.last_beat_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// Time since the last beat (or since creation, before the first beat).
    pub fn silence(&self, now: Instant) -> Duration {
        let last = self.0.epoch + Duration::from_nanos(self.0.last_beat_ns.load(Ordering::Relaxed));
        now.saturating_duration_since(last)
    }
}

pub struct Watchdog {
    heartbeat: Heartbeat,
    timeout: Duration,
}

impl Watchdog {
    /// A watchdog whose clock starts now, as if the loop had just beaten.
    pub fn new(timeout: Duration) -> Watchdog {
        Watchdog::new_at(timeout, Instant::now())
    }

    pub fn new_at(timeout: Duration, now: Instant) -> Watchdog {
        Watchdog {
            heartbeat: Heartbeat::new(now),
            timeout,
        }
    }

    pub fn heartbeat(&self) -> Heartbeat {
        self.heartbeat.clone()
    }

    /// `Some(silence)` when the loop has been silent for longer than the timeout at `now`.
    pub fn check(&self, now: Instant) -> Option<Duration> {
        let silence = self.heartbeat.silence(now);
        (silence > self.timeout).then_some(silence)
    }

    /// Starts the watchdog thread, checking every `period`. `on_stall` runs at most once, with
    /// the silence observed; the thread ends after it returns.
    pub fn spawn(
        self,
        period: Duration,
        on_stall: impl FnOnce(Duration) + Send + 'static,
    ) -> std::io::Result<WatchdogHandle> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("pandemonium-watchdog".into())
            .spawn(move || {
                loop {
                    std::thread::park_timeout(period);
                    if flag.load(Ordering::Relaxed) {
                        return;
                    }
                    if let Some(silence) = self.check(Instant::now()) {
                        on_stall(silence);
                        return;
                    }
                }
            })?;
        Ok(WatchdogHandle {
            stop,
            thread: Some(thread),
        })
    }
}

/// Stops and joins the watchdog thread when dropped (a clean shutdown is not a stall).
pub struct WatchdogHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for WatchdogHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// The production stall callback: says so loudly on stderr (the journal) and exits with
/// [`STALL_EXIT_CODE`]. An error, not a warning: the process is about to fail.
pub fn exit_on_stall(silence: Duration) {
    log::error!(
        "WATCHDOG: the adaptive control loop has not run for {:.1} s; exiting with status {} so \
         the kernel's default scheduler takes over and the service manager restarts us",
        silence.as_secs_f64(),
        STALL_EXIT_CODE
    );
    std::process::exit(STALL_EXIT_CODE);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn check_fires_only_after_the_timeout_without_beats() {
        let t0 = Instant::now();
        let wd = Watchdog::new_at(STALL_TIMEOUT, t0);
        let hb = wd.heartbeat();
        assert_eq!(wd.check(t0 + 9 * S), None);
        assert_eq!(
            wd.check(t0 + 10 * S),
            None,
            "exactly the timeout is not past it"
        );
        assert_eq!(wd.check(t0 + 11 * S), Some(11 * S));
        hb.beat_at(t0 + 10 * S);
        assert_eq!(wd.check(t0 + 15 * S), None);
        assert_eq!(wd.check(t0 + 21 * S), Some(11 * S));
    }

    #[test]
    fn a_late_beat_from_an_older_clock_reading_does_not_rewind() {
        let t0 = Instant::now();
        let wd = Watchdog::new_at(STALL_TIMEOUT, t0);
        let hb = wd.heartbeat();
        hb.beat_at(t0 + 8 * S);
        hb.beat_at(t0 + 2 * S);
        assert_eq!(wd.check(t0 + 15 * S), None);
    }

    #[test]
    fn thread_stays_quiet_while_beaten_and_fires_once_when_not() {
        let wd = Watchdog::new(Duration::from_millis(800));
        let hb = wd.heartbeat();
        let (tx, rx) = mpsc::channel();
        let _handle = wd
            .spawn(Duration::from_millis(20), move |s| tx.send(s).unwrap())
            .unwrap();
        let until = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < until {
            hb.beat();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(rx.try_recv().is_err(), "fired while the loop was beating");
        let silence = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("never fired");
        assert!(silence > Duration::from_millis(800));
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "fired twice"
        );
    }

    #[test]
    fn dropping_the_handle_stops_the_thread_without_firing() {
        let fired = Arc::new(AtomicBool::new(false));
        let f = fired.clone();
        let wd = Watchdog::new(Duration::from_millis(1));
        let handle = wd
            .spawn(Duration::from_secs(3600), move |_| {
                f.store(true, Ordering::Relaxed)
            })
            .unwrap();
        let t = Instant::now();
        drop(handle);
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "join waited for the period"
        );
        assert!(!fired.load(Ordering::Relaxed));
    }
}
