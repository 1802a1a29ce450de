// SPDX-License-Identifier: GPL-2.0-only
//! CPU time as the kernel accounts it, per thread and per process, and busy loops that carry the
//! attributes a user or an administrator gives a task (name, nice, policy), or sleep after each
//! burst of CPU time (`HogSpec::sleeper`). The trust and admin layers judge shares of CPU time,
//! not loop iterations: a loop's speed under TCG depends on what else QEMU translates, its CPU
//! time does not.

use std::fs;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use scx_pandemonium::cli::work::burn_cpu;

/// Nanoseconds a task has run: the first field of its schedstat (se.sum_exec_runtime), which
/// sched_ext keeps up to date as the fair class does.
pub fn task_cpu_ns(pid: u32, tid: u32) -> Option<u64> {
    fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Nanoseconds all threads of a live process have run together.
pub fn process_cpu_ns(pid: u32) -> u64 {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
        panic!("process {pid} is gone: cannot read its CPU time");
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|tid| task_cpu_ns(pid, tid))
        .sum()
}

/// The scheduling policy a hog asks for with sched_setscheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Normal,
    Batch,
    Idle,
}

impl Policy {
    fn raw(self) -> libc::c_int {
        match self {
            Policy::Normal => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
        }
    }
}

/// Makes the calling thread SCHED_FIFO at the lowest RT priority: a task sched_ext never
/// schedules.
pub fn make_fifo() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler on the calling thread (0) with a valid param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// What one group of hog threads looks like to the scheduler.
#[derive(Debug, Clone)]
pub struct HogSpec {
    /// The threads' comm (at most 15 bytes).
    pub name: String,
    pub nice: i32,
    pub policy: Policy,
    /// `Some((work, sleep))`: the thread sleeps `sleep` after each `work` of CPU time, a short
    /// frequent sleeper that scores as interactive as a compositor; `None`: a busy loop.
    pub duty: Option<(Duration, Duration)>,
}

impl HogSpec {
    pub fn plain(name: &str) -> HogSpec {
        HogSpec {
            name: name.into(),
            nice: 0,
            policy: Policy::Normal,
            duty: None,
        }
    }

    /// A hog named `name` that sleeps `sleep` after each `work` of CPU time.
    pub fn sleeper(name: &str, work: Duration, sleep: Duration) -> HogSpec {
        HogSpec {
            duty: Some((work, sleep)),
            ..HogSpec::plain(name)
        }
    }
}

/// Applies `spec`'s nice and policy to the calling thread.
pub fn apply(spec: &HogSpec) -> Result<(), String> {
    // SAFETY: gettid, setpriority and sched_setscheduler act on the calling thread only and
    // take plain values and a pointer to a local.
    unsafe {
        let tid = libc::gettid();
        if spec.policy != Policy::Normal {
            let param = libc::sched_param { sched_priority: 0 };
            if libc::sched_setscheduler(0, spec.policy.raw(), &param) != 0 {
                return Err(format!(
                    "sched_setscheduler({:?}) for {}: {}",
                    spec.policy,
                    spec.name,
                    std::io::Error::last_os_error()
                ));
            }
        }
        if spec.nice != 0 && libc::setpriority(libc::PRIO_PROCESS, tid as u32, spec.nice) != 0 {
            return Err(format!(
                "setpriority({}) for {}: {}",
                spec.nice,
                spec.name,
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// The calling thread's comm, set for as long as this lives (clone copies it to new threads).
struct Comm([u8; 16]);

impl Comm {
    fn set(name: &str) -> Comm {
        let (mut old, mut new) = ([0u8; 16], [0u8; 16]);
        let n = name.len().min(15);
        new[..n].copy_from_slice(&name.as_bytes()[..n]);
        // SAFETY: PR_GET_NAME and PR_SET_NAME read or write 16 bytes; `new` ends in NUL.
        unsafe {
            libc::prctl(libc::PR_GET_NAME, old.as_mut_ptr() as libc::c_ulong);
            libc::prctl(libc::PR_SET_NAME, new.as_ptr() as libc::c_ulong);
        }
        Comm(old)
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        // SAFETY: the 16 NUL-terminated bytes PR_GET_NAME returned.
        unsafe { libc::prctl(libc::PR_SET_NAME, self.0.as_ptr() as libc::c_ulong) };
    }
}

struct Hog {
    label: &'static str,
    tid: u32,
    handle: Option<JoinHandle<()>>,
}

/// Busy-loop threads of this process, grouped under labels; stopped and joined on drop.
pub struct Hogs {
    stop: Arc<AtomicBool>,
    hogs: Vec<Hog>,
}

impl Default for Hogs {
    fn default() -> Self {
        Self::new()
    }
}

impl Hogs {
    pub fn new() -> Hogs {
        Hogs {
            stop: Arc::new(AtomicBool::new(false)),
            hogs: Vec::new(),
        }
    }

    /// Starts `n` busy loops labelled `label`; returns once each has its name, nice and policy.
    /// Each is born with its name, as the threads of a program started under that name are:
    /// a thread renamed after it started is seen by the scheduler under its old name until the
    /// scheduler looks again.
    pub fn add(&mut self, label: &'static str, spec: &HogSpec, n: usize) -> &mut Self {
        let _born_as = Comm::set(&spec.name);
        for _ in 0..n {
            let (tx, rx) = mpsc::channel();
            let (stop, spec) = (self.stop.clone(), spec.clone());
            let handle = std::thread::Builder::new()
                .name(spec.name.clone())
                .spawn(move || {
                    // SAFETY: gettid has no preconditions.
                    let tid = unsafe { libc::gettid() } as u32;
                    let _ = tx.send(apply(&spec).map(|()| tid));
                    // CPU time, not wall time: a burst the scheduler cut short is finished
                    // when the thread runs again, as a frame's or a period's work is.
                    if let Some((work, sleep)) = spec.duty {
                        while !stop.load(Ordering::Relaxed) {
                            burn_cpu(work.as_nanos() as u64);
                            std::thread::sleep(sleep);
                        }
                        return;
                    }
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..10_000 {
                            x = std::hint::black_box(
                                x.wrapping_mul(6364136223846793005).wrapping_add(1),
                            );
                        }
                    }
                })
                .expect("spawning a hog thread");
            let tid = rx
                .recv()
                .expect("a hog thread died during setup")
                .unwrap_or_else(|e| panic!("setting up a hog: {e}"));
            self.hogs.push(Hog {
                label,
                tid,
                handle: Some(handle),
            });
        }
        self
    }

    /// Every hog's label and CPU time so far, in the order they were added.
    pub fn cpu_ns(&self) -> Vec<(&'static str, u64)> {
        let pid = std::process::id();
        self.hogs
            .iter()
            .map(|h| {
                let ns = task_cpu_ns(pid, h.tid)
                    .unwrap_or_else(|| panic!("no schedstat for hog thread {}", h.tid));
                (h.label, ns)
            })
            .collect()
    }

    /// Each hog's CPU time over `window`, measured after `warm` (time for the scheduler to
    /// classify them), with the window's actual length.
    pub fn measure(
        &self,
        warm: Duration,
        window: Duration,
    ) -> (Vec<(&'static str, u64)>, Duration) {
        std::thread::sleep(warm);
        let (t0, before) = (Instant::now(), self.cpu_ns());
        std::thread::sleep(window);
        let (after, took) = (self.cpu_ns(), t0.elapsed());
        let delta = before
            .iter()
            .zip(&after)
            .map(|(b, a)| (a.0, a.1.saturating_sub(b.1)))
            .collect();
        (delta, took)
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in &mut self.hogs {
            if let Some(j) = h.handle.take() {
                let _ = j.join();
            }
        }
    }
}

/// The CPU time of the hogs labelled `label`, together.
pub fn by_label(ns: &[(&'static str, u64)], label: &str) -> u64 {
    assert!(
        ns.iter().any(|(l, _)| *l == label),
        "no hog labelled {label}"
    );
    ns.iter().filter(|(l, _)| *l == label).map(|x| x.1).sum()
}
