// SPDX-License-Identifier: GPL-2.0-only
//! The game's threads and its frame loop.
//!
//! - The calling thread is the game's main thread (`GameThread`). Its frame limiter sleeps to
//!   absolute deadlines one period apart (`clock_nanosleep`, `TIMER_ABSTIME`), so a late wake
//!   does not push the frames after it; a frame that overran its period starts the next one at
//!   once, without a burst of catch-up frames (the next deadline is the later of one period on
//!   and now). Each frame it wakes every worker and waits until the frame is presented.
//! - `GameWorker<i>` threads each run the frame's work, a fixed amount of their own CPU time;
//!   the last one done wakes the render thread.
//! - `RenderThread` runs the present's work, stamps the present, and wakes the main thread.
//!
//! Threads hand frames over with atomics and `park`/`unpark` (a futex each way, as a job
//! system's wait does): every wake the scheduler handles is one a game would ask for. The main
//! thread records the stamps into buffers allocated and touched before the first frame.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle, Thread};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};

use super::config::FramesConfig;
use crate::cli::clock::{Slept, now_ns, sleep_until};
use crate::cli::run_meta::RunEnd;
use crate::cli::thread as cli_thread;
use crate::cli::work::burn_cpu;

/// The frame number that tells the workers and the render thread to return.
const QUIT: u64 = u64::MAX;

/// How often the main thread, waiting for a present, looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(100);

/// What the threads share: the frame handed from one to the next.
struct Shared {
    workers: usize,
    work_ns: u64,
    render_ns: u64,
    /// The frame released to the workers (0 before the first; QUIT at the end).
    frame: AtomicU64,
    /// Workers done with `frame`.
    done: AtomicUsize,
    /// The frame whose workers are all done, for the render thread.
    ready: AtomicU64,
    /// The last frame presented, and when (CLOCK_MONOTONIC ns).
    presented: AtomicU64,
    present_ns: AtomicU64,
}

/// Waits (parked) until `load()` differs from `seen`, and returns the new value.
fn wait_change(load: impl Fn() -> u64, seen: u64) -> u64 {
    loop {
        let v = load();
        if v != seen {
            return v;
        }
        thread::park();
    }
}

fn worker(sh: Arc<Shared>, render: Thread) {
    let mut seen = 0;
    loop {
        let f = wait_change(|| sh.frame.load(Ordering::Acquire), seen);
        if f == QUIT {
            return;
        }
        seen = f;
        burn_cpu(sh.work_ns);
        if sh.done.fetch_add(1, Ordering::AcqRel) + 1 == sh.workers {
            // The main thread releases the next frame only after this one is presented, so no
            // worker counts into `done` before it is reset here.
            sh.done.store(0, Ordering::Relaxed);
            sh.ready.store(f, Ordering::Release);
            render.unpark();
        }
    }
}

fn render(sh: Arc<Shared>, main: Thread) {
    let mut seen = 0;
    loop {
        let f = wait_change(|| sh.ready.load(Ordering::Acquire), seen);
        if f == QUIT {
            return;
        }
        seen = f;
        let t = burn_cpu(sh.render_ns);
        sh.present_ns.store(t, Ordering::Relaxed);
        sh.presented.store(f, Ordering::Release);
        main.unpark();
    }
}

/// The worker and render threads; dropping it tells them to return and joins them, so an
/// error or a failing test leaves no thread behind.
struct Crew {
    sh: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Crew {
    fn spawn(cfg: &FramesConfig) -> Result<Crew> {
        let sh = Arc::new(Shared {
            workers: cfg.workers,
            work_ns: cfg.work_ns,
            render_ns: cfg.render_ns,
            frame: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            ready: AtomicU64::new(0),
            presented: AtomicU64::new(0),
            present_ns: AtomicU64::new(0),
        });
        let mut crew = Crew {
            sh: Arc::clone(&sh),
            threads: Vec::new(),
        };
        let main = thread::current();
        let s = Arc::clone(&sh);
        let r = thread::Builder::new()
            .name("RenderThread".into())
            .spawn(move || render(s, main))
            .context("starting the render thread")?;
        let render_thread = r.thread().clone();
        crew.threads.push(r);
        for i in 0..cfg.workers {
            let s = Arc::clone(&sh);
            let rt = render_thread.clone();
            let w = thread::Builder::new()
                .name(format!("GameWorker{i}"))
                .spawn(move || worker(s, rt))
                .with_context(|| format!("starting worker {i}"))?;
            crew.threads.push(w);
        }
        Ok(crew)
    }

    /// Releases frame `k` to the workers.
    fn release(&self, k: u64) {
        self.sh.frame.store(k, Ordering::Release);
        for t in &self.threads[1..] {
            t.thread().unpark();
        }
    }
}

impl Drop for Crew {
    fn drop(&mut self) {
        self.sh.frame.store(QUIT, Ordering::Release);
        self.sh.ready.store(QUIT, Ordering::Release);
        for t in &self.threads {
            t.thread().unpark();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// What one run recorded: per recorded frame (in order) its start, the main thread's wake
/// lateness for it, and its present.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub starts: Vec<u64>,
    pub wake_late: Vec<u64>,
    pub presents: Vec<u64>,
    /// Frames run, warm-up included.
    pub frames_run: u64,
    pub end: RunEnd,
}

/// Runs the game on the calling thread (renamed `GameThread` for the run) until the warm-up
/// and the duration are over or `stop` is raised.
pub(crate) fn play(cfg: &FramesConfig, stop: &AtomicBool) -> Result<Run> {
    let cap = cfg.capacity()?;
    let buffer = || -> Result<Vec<u64>> {
        let mut v = Vec::new();
        v.try_reserve_exact(cap)
            .map_err(|e| anyhow!("allocating {cap} frame stamps: {e}"))?;
        // Written now so the pages fault in before the first frame, not during one.
        v.resize(cap, u64::MAX);
        Ok(v)
    };
    let (mut starts, mut wake_late, mut presents) = (buffer()?, buffer()?, buffer()?);
    let _name = cli_thread::set_name("GameThread").context("naming the main thread")?;
    let _slack = match cfg.timer_slack_ns {
        Some(ns) => Some(cli_thread::set_timer_slack(ns).context("setting the timer slack")?),
        None => None,
    };
    let crew = Crew::spawn(cfg)?;

    let mut run = Run::default();
    let mut n = 0;
    let start = now_ns();
    let record_from = start + cfg.warmup_ns;
    let end = record_from + cfg.duration_ns;
    let mut deadline = start + cfg.period_ns;
    let mut k = 0;
    'frames: while deadline <= end && n < cap {
        if stop.load(Ordering::Relaxed) {
            run.end.interrupted = true;
            break;
        }
        if sleep_until(deadline).context("clock_nanosleep")? == Slept::Interrupted {
            continue;
        }
        let wake = now_ns();
        k += 1;
        crew.release(k);
        while crew.sh.presented.load(Ordering::Acquire) < k {
            if stop.load(Ordering::Relaxed) {
                run.end.interrupted = true;
                break 'frames;
            }
            thread::park_timeout(STOP_POLL);
        }
        if wake >= record_from {
            starts[n] = wake;
            wake_late[n] = wake - deadline;
            presents[n] = crew.sh.present_ns.load(Ordering::Relaxed);
            n += 1;
        }
        deadline = (deadline + cfg.period_ns).max(now_ns());
    }
    run.end.elapsed_ns = now_ns() - start;
    drop(crew);
    run.frames_run = k;
    for v in [&mut starts, &mut wake_late, &mut presents] {
        v.truncate(n);
    }
    run.starts = starts;
    run.wake_late = wake_late;
    run.presents = presents;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_game_presents_every_frame_in_order() {
        let cfg = FramesConfig {
            period_ns: 4_000_000,
            workers: 3,
            work_ns: 200_000,
            render_ns: 50_000,
            duration_ns: 120_000_000,
            warmup_ns: 20_000_000,
            ..FramesConfig::default()
        };
        let run = std::thread::spawn(move || play(&cfg, &AtomicBool::new(false)).unwrap())
            .join()
            .unwrap();
        assert!(!run.end.interrupted);
        let n = run.presents.len();
        // At most one frame per period of the recorded window; a loaded test host may run
        // fewer, but some.
        assert!((2..=32).contains(&n), "{n} frames");
        assert!(run.frames_run as usize >= n);
        assert!(run.presents.windows(2).all(|w| w[0] < w[1]));
        for i in 0..n {
            // A frame is presented after it started, and after its work (at least the work of
            // one worker and the present's).
            assert!(run.presents[i] >= run.starts[i] + 250_000);
        }
        // One wake lateness per recorded frame, and the starts ascend.
        assert!(run.starts.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(run.wake_late.len(), n);
    }

    #[test]
    fn a_raised_stop_flag_ends_the_game_at_once() {
        let run =
            std::thread::spawn(|| play(&FramesConfig::default(), &AtomicBool::new(true)).unwrap())
                .join()
                .unwrap();
        assert!(run.end.interrupted);
        assert_eq!((run.frames_run, run.presents.len()), (0, 0));
    }
}
