// SPDX-License-Identifier: GPL-2.0-only
//! Frame-paced threads of this process, compared two at a time: each wakes on a fixed grid
//! (absolute deadlines on CLOCK_MONOTONIC), spins its work, and records how late each wake was.
//!
//! One sample per wake: a wake that comes after later deadlines have passed counts once, and the
//! task goes on at the next grid point. `pandemonium-tools probe` back-fills those deadlines
//! (coordinated omission), which is right for an absolute latency figure but made two identical
//! tasks measured at once differ 1.8x in P99 under EEVDF on a loaded host (7.3.4, 2 vCPUs,
//! tcg-single: 672 against 377 ms), where a host stall of QEMU's thread lands a few hundred ms
//! of back-filled samples on whichever task it catches. Comparing two tasks needs the wakes.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct FrameStats {
    pub name: String,
    pub wakes: usize,
    /// Frames whose deadline passed while the task was still late (not sampled).
    pub skipped: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: an absolute sleep on a timespec we own; EINTR is retried.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

fn percentile(sorted: &[u64], q: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() * q).div_ceil(100)).clamp(1, sorted.len()) - 1]
}

/// Runs the frame loop on the calling thread, which is already named.
fn frame_loop(name: &str, period: Duration, work: Duration, run: Duration) -> FrameStats {
    // The default 50 us timer slack would be the timer's delay, not the scheduler's.
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and acts on this thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let (period, work) = (period.as_nanos() as u64, work.as_nanos() as u64);
    let start = now_ns();
    let end = start + run.as_nanos() as u64;
    let (mut late, mut skipped) = (Vec::new(), 0u64);
    let mut deadline = start + period;
    while deadline <= end {
        sleep_until(deadline);
        let wake = now_ns();
        late.push(wake.saturating_sub(deadline));
        while now_ns() < wake + work {
            std::hint::spin_loop();
        }
        deadline += period;
        let t = now_ns();
        if deadline <= t {
            let missed = (t - deadline) / period + 1;
            skipped += missed;
            deadline += missed * period;
        }
    }
    late.sort_unstable();
    FrameStats {
        name: name.into(),
        wakes: late.len(),
        skipped,
        p50_ns: percentile(&late, 50),
        p99_ns: percentile(&late, 99),
        max_ns: late.last().copied().unwrap_or(0),
    }
}

/// Two frame-paced threads named `a` and `b`, identical but for the name, run at the same time.
pub fn pair(a: &str, b: &str, period: Duration, work: Duration, run: Duration) -> [FrameStats; 2] {
    let spawn = |name: &str| {
        let n = name.to_string();
        std::thread::Builder::new()
            .name(n.clone())
            .spawn(move || frame_loop(&n, period, work, run))
            .expect("spawning a frame thread")
    };
    let (ta, tb) = (spawn(a), spawn(b));
    [
        ta.join().expect("a frame thread panicked"),
        tb.join().expect("a frame thread panicked"),
    ]
}

/// Whether the VM resolves a frame task's wakeups at this size: `reference`, a frame task
/// measured under EEVDF beside the same load, woke a median of less than one period late.
/// Where it does not (4 vCPUs on tcg-single's one host thread), QEMU's vCPU round robin, not
/// the scheduler, decides when a frame task runs, even under EEVDF: two identical tasks then
/// differ either way round, and comparing them says nothing of the scheduler.
/// When it does not, says so on `layer`'s behalf for `mode`: the frame bar is not judged there.
pub fn resolved(reference: &FrameStats, period: Duration, layer: &str, mode: &str) -> bool {
    let ok = reference.p50_ns < period.as_nanos() as u64;
    if !ok {
        eprintln!(
            "gate {layer}: {mode}: frame bar not judged at {} vCPUs: under EEVDF the plain frame \
             task's median wake was {:.2} ms late, over its {} ms period, so the VM's vCPU \
             round robin sets these figures, not the scheduler",
            super::online_cpus().len(),
            reference.p50_ns as f64 / 1e6,
            period.as_millis()
        );
    }
    ok
}

/// Runs one frame thread named `name` and returns when it is done.
pub fn one(name: &str, period: Duration, work: Duration, run: Duration) -> FrameStats {
    let n = name.to_string();
    std::thread::Builder::new()
        .name(n.clone())
        .spawn(move || frame_loop(&n, period, work, run))
        .expect("spawning a frame thread")
        .join()
        .expect("a frame thread panicked")
}

/// What a child process started by [`spawn_process`] runs: "NAME PERIOD_NS WORK_NS RUN_NS".
const CHILD_ENV: &str = "PANDEMONIUM_GATE_FRAME_TASK";
const CHILD_MARK: &str = "GATE-FRAMES";

/// A frame-paced task in a process of its own, with `env` added to its environment (the gaming
/// layer's game carries `SteamGameId`, which the daemon reads per process). The process is this
/// gate binary running only its `frame_task_process` test.
pub fn spawn_process(
    name: &str,
    period: Duration,
    work: Duration,
    run: Duration,
    env: &[(&str, &str)],
) -> Child {
    let spec = format!(
        "{name} {} {} {}",
        period.as_nanos(),
        work.as_nanos(),
        run.as_nanos()
    );
    Command::new(std::env::current_exe().expect("the gate binary's path"))
        .args(["--ignored", "--exact", "--nocapture", "--test-threads=1"])
        .arg("gate_support::frames::tests::frame_task_process")
        .env(CHILD_ENV, spec)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting a frame task process")
}

/// Waits for a [`spawn_process`] child and reads what its frame task measured.
pub fn wait_process(child: Child) -> FrameStats {
    let out = child.wait_with_output().expect("waiting for a frame task");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        // libtest prints "test NAME ... " before the test's own output, on the same line.
        .find_map(|l| l.split_once(CHILD_MARK).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("the frame task printed no {CHILD_MARK} line:\n{text}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| -> u64 {
        w.get(i)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("a bad {CHILD_MARK} line: {line}"))
    };
    FrameStats {
        name: w.first().unwrap_or(&"?").to_string(),
        wakes: num(1) as usize,
        skipped: num(2),
        p50_ns: num(3),
        p99_ns: num(4),
        max_ns: num(5),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Not a layer: the body of a [`spawn_process`] child, which says what to run in its
    /// environment. Run any other way it fails, saying so.
    #[test]
    #[ignore = "started by the gaming layer as a process of its own"]
    fn frame_task_process() {
        let spec = std::env::var(CHILD_ENV)
            .unwrap_or_else(|_| panic!("{CHILD_ENV} is unset: the gaming layer starts this"));
        let w: Vec<&str> = spec.split_whitespace().collect();
        let ns = |i: usize| Duration::from_nanos(w[i].parse().expect("a duration in ns"));
        assert_eq!(w.len(), 4, "{CHILD_ENV}={spec:?}");
        let s = one(w[0], ns(1), ns(2), ns(3));
        println!(
            "{CHILD_MARK} {} {} {} {} {} {}",
            s.name, s.wakes, s.skipped, s.p50_ns, s.p99_ns, s.max_ns
        );
    }

    #[test]
    fn percentiles_pick_the_rank_that_covers_the_fraction() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), 50);
        assert_eq!(percentile(&v, 99), 99);
        assert_eq!(percentile(&[7], 99), 7);
        assert_eq!(percentile(&[], 99), 0);
    }

    #[test]
    fn a_short_run_wakes_about_once_per_period() {
        let [s, _] = pair(
            "gate-fa",
            "gate-fb",
            Duration::from_millis(5),
            Duration::from_micros(200),
            Duration::from_millis(100),
        );
        assert!(s.wakes as u64 + s.skipped <= 20, "{s:?}");
        assert!(s.wakes >= 5, "{s:?}");
        assert!(s.p50_ns <= s.p99_ns && s.p99_ns <= s.max_ns, "{s:?}");
    }
}
