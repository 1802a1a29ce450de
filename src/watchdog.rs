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
/// Test hook: seconds the control loop should sleep once, to exercise the watchdog end to end.
pub const STALL_ENV: &str = "PANDEMONIUM_TEST_STALL_LOOP_SECS";
/// Longest injectable stall; anything longer is a typo, not a test.
pub const MAX_INJECTED_STALL_SECS: u64 = 3600;

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

/// Parses the value of [`STALL_ENV`]: unset, empty or 0 mean no stall; otherwise whole seconds
/// up to [`MAX_INJECTED_STALL_SECS`].
pub fn parse_stall_secs(v: Option<&str>) -> Result<Option<Duration>, String> {
    let Some(v) = v.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let secs: u64 = v
        .parse()
        .map_err(|_| format!("{STALL_ENV}={v:?} is not a whole number of seconds"))?;
    if secs > MAX_INJECTED_STALL_SECS {
        return Err(format!(
            "{STALL_ENV}={secs} exceeds {MAX_INJECTED_STALL_SECS} s"
        ));
    }
    Ok((secs > 0).then(|| Duration::from_secs(secs)))
}

/// Test hook for the control loop: on the first call in the process, if [`STALL_ENV`] is set,
/// blocks for that long and returns the stall injected. Later calls return `None` at once, so
/// the loop recovers if the watchdog is not there to end it. A bad value is reported and ignored.
pub fn maybe_injected_stall() -> Option<Duration> {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::Relaxed) {
        return None;
    }
    let raw = std::env::var(STALL_ENV).ok();
    match parse_stall_secs(raw.as_deref()) {
        Ok(Some(d)) => {
            log::warn!(
                "{STALL_ENV}: stalling the control loop for {} s",
                d.as_secs()
            );
            std::thread::sleep(d);
            Some(d)
        }
        Ok(None) => None,
        Err(e) => {
            log::warn!("ignoring test hook: {e}");
            None
        }
    }
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

    #[test]
    fn stall_hook_parsing() {
        assert_eq!(parse_stall_secs(None), Ok(None));
        assert_eq!(parse_stall_secs(Some("")), Ok(None));
        assert_eq!(parse_stall_secs(Some("0")), Ok(None));
        assert_eq!(parse_stall_secs(Some("12")), Ok(Some(12 * S)));
        assert_eq!(parse_stall_secs(Some(" 15\n")), Ok(Some(15 * S)));
        assert_eq!(parse_stall_secs(Some("3600")), Ok(Some(3600 * S)));
        for bad in ["-1", "1.5", "ten", "3601", "18446744073709551616"] {
            assert!(parse_stall_secs(Some(bad)).is_err(), "{bad}");
        }
    }
}
