// SPDX-License-Identifier: GPL-2.0-only
//! Workloads for the gate. Every worker counts its progress and stamps when it last made some, so
//! a monitor can report the worst time any worker went without running.

use super::cputime::{HogSpec, apply};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Progress of one worker: how much it did, and when it last did anything.
pub struct Progress {
    pub name: String,
    pub count: AtomicU64,
    last_ns: AtomicU64,
    worst_gap_ns: AtomicU64,
    /// Ticks per CPU the worker was on when it ticked: where the scheduler put it.
    on_cpu: Vec<AtomicU64>,
}

/// CPUs whose ticks [`Progress::on_cpu`] counts; the gate's guests have at most 4.
const COUNTED_CPUS: usize = 64;

fn now_ns(epoch: Instant) -> u64 {
    epoch.elapsed().as_nanos() as u64
}

impl Progress {
    fn tick(&self, epoch: Instant) {
        let now = now_ns(epoch);
        self.count.fetch_add(1, Ordering::Relaxed);
        // The worker's own view of its gap: the monitor samples only every 10 ms and not at all
        // while a layer's step (a hotplug write) blocks its thread.
        let last = self.last_ns.swap(now, Ordering::Relaxed);
        self.worst_gap_ns
            .fetch_max(now.saturating_sub(last), Ordering::Relaxed);
        // SAFETY: sched_getcpu(3) has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        if let Some(n) = usize::try_from(cpu).ok().and_then(|c| self.on_cpu.get(c)) {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Ticks so far per CPU (index = CPU id).
    pub fn ticks_per_cpu(&self) -> Vec<u64> {
        self.on_cpu
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect()
    }
}

/// A set of workers started together and stopped together.
pub struct Mix {
    epoch: Instant,
    stop: Arc<AtomicBool>,
    pub workers: Vec<Arc<Progress>>,
    handles: Vec<JoinHandle<()>>,
}

impl Default for Mix {
    fn default() -> Self {
        Self::new()
    }
}

impl Mix {
    pub fn new() -> Mix {
        Mix {
            epoch: Instant::now(),
            stop: Arc::new(AtomicBool::new(false)),
            workers: Vec::new(),
            handles: Vec::new(),
        }
    }

    fn spawn(
        &mut self,
        name: String,
        body: impl FnOnce(Arc<Progress>, Arc<AtomicBool>, Instant) + Send + 'static,
    ) {
        let p = Arc::new(Progress {
            name: name.clone(),
            count: AtomicU64::new(0),
            last_ns: AtomicU64::new(now_ns(self.epoch)),
            worst_gap_ns: AtomicU64::new(0),
            on_cpu: (0..COUNTED_CPUS).map(|_| AtomicU64::new(0)).collect(),
        });
        let (pp, stop, epoch) = (p.clone(), self.stop.clone(), self.epoch);
        self.workers.push(p);
        self.handles.push(
            std::thread::Builder::new()
                .name(name)
                .spawn(move || body(pp, stop, epoch))
                .expect("spawning a worker thread"),
        );
    }

    /// `n` busy loops that never sleep.
    pub fn hogs(&mut self, n: usize) -> &mut Self {
        for i in 0..n {
            self.spawn(format!("hog{i}"), spin);
        }
        self
    }

    /// `n` busy loops named `spec.name`N that first take `spec`'s nice and policy (SCHED_IDLE,
    /// nice 19: what an administrator gives background work). They count progress 20x as
    /// often as the others: such a loop runs a short slice per turn, and a count that needs
    /// more than one turn reads two waits as one gap.
    pub fn light_hogs(&mut self, n: usize, spec: &HogSpec) -> &mut Self {
        for i in 0..n {
            let spec = spec.clone();
            self.spawn(format!("{}{i}", spec.name), move |p, stop, epoch| {
                if let Err(e) = apply(&spec) {
                    panic!("{e}");
                }
                spin_by(p, stop, epoch, SPIN_ITERS / 20)
            });
        }
        self
    }

    /// `n` busy loops named `late-hogN` that first sleep `after`: they join CPUs that busy loops
    /// already hold, whose slices were set while nothing else waited. Their first wait counts
    /// `after` too.
    pub fn late_hogs(&mut self, n: usize, after: Duration) -> &mut Self {
        for i in 0..n {
            self.spawn(format!("late-hog{i}"), move |p, stop, epoch| {
                std::thread::sleep(after);
                spin(p, stop, epoch)
            });
        }
        self
    }

    /// A thread that sleeps `sleep` and then spins for `run`, forever: the shape of an input or
    /// audio handler.
    pub fn sleeper(&mut self, name: &str, sleep: Duration, run: Duration) -> &mut Self {
        self.spawn(name.into(), move |p, stop, epoch| {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(sleep);
                let t0 = Instant::now();
                while t0.elapsed() < run {
                    std::hint::spin_loop();
                }
                p.tick(epoch);
            }
        });
        self
    }

    /// `n` busy loops named `pinnedN` that keep themselves pinned to `cpu`: the kernel breaks
    /// the pin when `cpu` goes offline, and each one pins itself again as soon as it can, so
    /// every unplug of `cpu` finds tasks whose only CPU is going away (bench-stress's hotplug
    /// workload re-pins its workers before each unplug for the same reason).
    pub fn pinned_hogs(&mut self, n: usize, cpu: usize) -> &mut Self {
        for i in 0..n {
            self.spawn(format!("pinned{i}"), move |p, stop, epoch| {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if !pinned_to(cpu) {
                        // Refused while `cpu` is offline; the next round tries again.
                        let _ = pin_to(cpu);
                    }
                    for _ in 0..SPIN_ITERS {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                    p.tick(epoch);
                }
            });
        }
        self
    }

    /// A named busy loop (thread names become the kernel's comm).
    pub fn named_hog(&mut self, name: &str) -> &mut Self {
        self.spawn(name.into(), spin);
        self
    }

    /// fork+exec+wait of a trivial program in a loop.
    pub fn fork_loop(&mut self) -> &mut Self {
        self.spawn("forker".into(), |p, stop, epoch| {
            while !stop.load(Ordering::Relaxed) {
                let st = Command::new("true")
                    .stdin(Stdio::null())
                    .status()
                    .expect("running `true`");
                assert!(st.success(), "`true` failed: {st}");
                p.tick(epoch);
            }
        });
        self
    }

    /// Two threads bouncing one byte over a socket pair: the classic wake-the-partner pattern.
    pub fn ping_pong(&mut self) -> &mut Self {
        let (mut a, mut b) = UnixStream::pair().expect("socketpair");
        b.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        a.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        self.spawn("pong".into(), move |p, stop, epoch| {
            let mut buf = [0u8; 1];
            while !stop.load(Ordering::Relaxed) {
                if b.read_exact(&mut buf).is_ok() && b.write_all(&buf).is_ok() {
                    p.tick(epoch);
                }
            }
        });
        self.spawn("ping".into(), move |p, stop, epoch| {
            let mut buf = [7u8; 1];
            while !stop.load(Ordering::Relaxed) {
                if a.write_all(&buf).is_ok() && a.read_exact(&mut buf).is_ok() {
                    p.tick(epoch);
                }
            }
        });
        self
    }

    /// Samples every worker's time since last progress for `dur`, keeping the worst per worker,
    /// then stops and joins everything.
    pub fn run_for(self, dur: Duration, mut during: impl FnMut(Duration)) -> Vec<Report> {
        self.run_while(|t| {
            during(t);
            t < dur
        })
    }

    /// Like run_for, but runs until `during` (called every 10 ms with the time since the start)
    /// returns false.
    pub fn run_while(mut self, mut during: impl FnMut(Duration) -> bool) -> Vec<Report> {
        let t0 = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(10));
            let now = now_ns(self.epoch);
            for w in &self.workers {
                let gap = now.saturating_sub(w.last_ns.load(Ordering::Relaxed));
                w.worst_gap_ns.fetch_max(gap, Ordering::Relaxed);
            }
            if !during(t0.elapsed()) {
                break;
            }
        }
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            h.join().expect("a worker panicked");
        }
        self.workers
            .iter()
            .map(|w| Report {
                name: w.name.clone(),
                count: w.count.load(Ordering::Relaxed),
                worst_gap: Duration::from_nanos(w.worst_gap_ns.load(Ordering::Relaxed)),
            })
            .collect()
    }
}

/// Whether the calling thread may run on `cpu` alone.
fn pinned_to(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and the call writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) == 0
            && libc::CPU_COUNT(&set) == 1
            && libc::CPU_ISSET(cpu, &set)
    }
}

/// Pins the calling thread to `cpu`; fails while `cpu` is offline.
fn pin_to(cpu: usize) -> std::io::Result<()> {
    // SAFETY: as in pinned_to(); the set holds `cpu` alone.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Iterations of a busy loop between two progress counts.
const SPIN_ITERS: u32 = 20_000;

/// A busy loop that counts its progress until told to stop.
fn spin(p: Arc<Progress>, stop: Arc<AtomicBool>, epoch: Instant) {
    spin_by(p, stop, epoch, SPIN_ITERS)
}

fn spin_by(p: Arc<Progress>, stop: Arc<AtomicBool>, epoch: Instant, iters: u32) {
    let mut x = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..iters {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        p.tick(epoch);
    }
}

#[derive(Debug)]
pub struct Report {
    pub name: String,
    pub count: u64,
    pub worst_gap: Duration,
}

/// Logs every worker's progress and worst wait under `layer`, and asserts that each one moved.
pub fn assert_all_progressed(layer: &str, reports: &[Report]) {
    for r in reports {
        eprintln!(
            "gate {layer}: {:>12} progress {:>8} worst wait {:?}",
            r.name, r.count, r.worst_gap
        );
        assert!(r.count > 0, "{} made no progress", r.name);
    }
}

/// The worst wait among the workers `pick` selects (zero when it selects none).
pub fn worst_gap(reports: &[Report], pick: impl Fn(&Report) -> bool) -> Duration {
    reports
        .iter()
        .filter(|r| pick(r))
        .map(|r| r.worst_gap)
        .max()
        .unwrap_or_default()
}
