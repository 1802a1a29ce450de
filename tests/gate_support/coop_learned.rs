// SPDX-License-Identifier: GPL-2.0-only
//! The `coop` layer's second half (issue #34, `--coop-learn`): the cooperative group recognised
//! from behaviour, without `--coop`. In one boot, after the layer's EEVDF and `--coop` runs:
//! - a scheduler with `--coop-learn` and a fresh procdb runs hackbench in thread mode beside
//!   busy loops (threads that wake each other while crowded, but no team): it is not learned;
//! - it watches pairs of coopbench processes (the sched_yield() barrier) until BPF's
//!   `coop_comms` holds the name as learned;
//! - the three workloads run again: the yield team and the active-wait team (its threads
//!   co-running, never sleeping) are given the treatment (`nr_coop_grants`,
//!   `nr_coop_dispatches`), and no thread preempts a mate; the others are printed;
//! - a busy loop renamed coopbench (this process, one thread spinning beside busy loops:
//!   crowded, but no mate runs beside it) gets nothing: no grant, no coop dispatch;
//! - the scheduler restarts: the procdb file holds the name as learned, BPF has it from the
//!   first seconds, and a new pair is recognised at once, mates again never preempting;
//! - with a fresh procdb again, active-wait pairs alone teach the name (co-running: no wakeup,
//!   no yield), and the next pair is granted and finishes before EEVDF's; a frame-paced task
//!   beside such a granted pair wakes within the trust layer's bound of its P99 under EEVDF;
//!   and a process of two threads that spin without waiting on each other (co-running too, so
//!   it may be treated as a team) beside two single-threaded busy loops leaves each loop, and
//!   each of its own threads, the trust layer's floor of a fair share.

use super::coop::{self, Run, Work};
use super::cputime::process_cpu_ns;
use super::frames::{self, FrameStats};
use super::trust::{FAIR_FLOOR, FRAME_FACTOR, FRAME_SLACK_NS};
use super::*;
use scx_pandemonium::bpf_intf::{COOP_LEARNED, Stats};
use scx_pandemonium::procdb::{self, LoadOutcome, ProcDb};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

const NAME: &str = "coopbench";
/// Yield pairs the learning may take: each lasts over a second, and two seconds of behaviour
/// make the name learned.
const LEARN_RUNS: usize = 6;
/// How long hackbench -T runs beside busy loops: the learning needs 2 s.
const MESSAGING: Duration = Duration::from_secs(8);
/// How long the renamed busy loop spins.
const BUSY: Duration = Duration::from_secs(4);
/// The two-thread spinner's name, and its time to be learned and granted before its share and
/// the busy loops' are measured over SHARE_WINDOW.
const SPINNER: &str = "gate-spinner";
const SHARE_WARM: Duration = Duration::from_secs(5);
const SHARE_WINDOW: Duration = Duration::from_secs(10);
/// What a spinner child process runs: "THREADS SECONDS".
const SPINNER_ENV: &str = "PANDEMONIUM_GATE_SPINNER";

#[derive(Debug, Default, Clone, Copy)]
struct Delta {
    grants: u64,
    dispatches: u64,
    preempts: u64,
}

fn delta(before: &Stats, after: &Stats) -> Delta {
    Delta {
        grants: after.nr_coop_grants - before.nr_coop_grants,
        dispatches: after.nr_coop_dispatches - before.nr_coop_dispatches,
        preempts: after.nr_coop_mate_preempts - before.nr_coop_mate_preempts,
    }
}

fn measured(work: Work) -> (Run, Delta) {
    let before = maps::read_stats();
    let r = coop::run(work);
    (r, delta(&before, &maps::read_stats()))
}

fn learned_in_bpf() -> bool {
    maps::read_coop_comms().get(NAME) == Some(&COOP_LEARNED)
}

/// Message passing between the threads of one process, crowded by busy loops: its threads wake
/// each other all the time, but they are no team at a barrier, and the treatment would take
/// their wakeup preemption. Not learned, not granted.
fn messaging_is_not_learned() {
    let _busy = standard::BusyLoops::start();
    let before = maps::read_stats();
    let t0 = Instant::now();
    let mut runs = 0;
    while t0.elapsed() < MESSAGING {
        let st = Command::new("hackbench")
            .args(["-T", "-g", "2", "-l", "500"])
            .stdout(Stdio::null())
            .status()
            .expect("running hackbench");
        assert!(st.success(), "hackbench: {st}");
        runs += 1;
    }
    std::thread::sleep(Duration::from_millis(1500));
    let d = delta(&before, &maps::read_stats());
    let names = maps::read_coop_comms();
    eprintln!(
        "gate coop: hackbench -T beside busy loops, {runs} runs: grants {}, learned names {:?}",
        d.grants,
        names.keys().collect::<Vec<_>>()
    );
    assert!(
        !names.contains_key("hackbench"),
        "message passing was learned as a cooperative group"
    );
    assert_eq!(d.grants, 0, "message passing was given the treatment");
}

/// Waits up to `limit` for the daemon's tick to put the learned name into BPF.
fn wait_learned(limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if learned_in_bpf() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    false
}

fn start() -> SchedulerProc {
    let mut s = SchedulerProc::start(&["--coop-learn"]);
    s.wait_attached();
    s
}

/// This process renamed NAME (its leader's comm, which BPF and the procdb read), one thread
/// spinning beside busy loops: crowded, cut short all the time, but no thread of its process
/// waits on it or runs beside it. (Two or more spinning threads co-run, and are given the
/// treatment by that behaviour whatever their name: `shares_beside_a_threaded_spinner`.)
fn renamed_busy_loop() -> Delta {
    let _busy = standard::BusyLoops::start();
    let own = fs::read_to_string("/proc/self/comm").expect("reading our comm");
    fs::write("/proc/self/comm", NAME).expect("renaming this process");
    let stop = Arc::new(AtomicBool::new(false));
    let before = maps::read_stats();
    let spinners: Vec<_> = (0..1)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                x
            })
        })
        .collect();
    std::thread::sleep(BUSY);
    let d = delta(&before, &maps::read_stats());
    let entry = maps::read_coop_proc(std::process::id());
    stop.store(true, Ordering::Relaxed);
    for s in spinners {
        s.join().expect("a spinner panicked");
    }
    fs::write("/proc/self/comm", own.trim_end()).expect("restoring our comm");
    eprintln!(
        "gate coop: renamed busy loop: grants {}, coop dispatches {}, evidence {entry:?}",
        d.grants, d.dispatches
    );
    assert!(
        entry.is_none_or(|e| e.granted == 0),
        "a busy loop named {NAME} was given the treatment: {entry:?}"
    );
    d
}

fn show(who: &str, work: Work, r: &Run, d: &Delta, eevdf: &Run) {
    eprintln!(
        "gate coop: {who:<7} {:<12} makespan {:.2} s (processes {}), ratio to EEVDF {:.2}, \
         involuntary switches {}, grants {}, coop dispatches {}, mate preemptions {}",
        work.name(),
        r.makespan(),
        r.walls_text(),
        r.makespan() / eevdf.makespan().max(1e-9),
        r.nivcsw,
        d.grants,
        d.dispatches,
        d.preempts
    );
}

/// A process of `threads` threads that spin for `secs` without waiting on each other, named
/// SPINNER: this gate binary running only `spinner_process`.
fn spawn_spinner(threads: usize, secs: u64) -> std::process::Child {
    Command::new(std::env::current_exe().expect("the gate binary's path"))
        .args(["--ignored", "--exact", "--nocapture", "--test-threads=1"])
        .arg("gate_support::coop_learned::tests::spinner_process")
        .env(SPINNER_ENV, format!("{threads} {secs}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("starting a spinner process")
}

/// An `n`-thread spinner's and `n` busy loops' CPU time over SHARE_WINDOW, each as a fraction of
/// a fair share (all 2n threads' time / 2n): the spinner's per thread, then each loop's, and the
/// CPUs' worth they used. `inspect` sees the spinner's pid before the processes are killed.
pub struct Shares {
    pub spinner: f64,
    pub loops: Vec<f64>,
    pub cpus: f64,
}

impl Shares {
    /// Each loop's share, "a / b / ...".
    pub fn loops_text(&self) -> String {
        super::slashed(&self.loops, |l| format!("{l:.2}"))
    }
}

pub fn spinner_shares(n: usize, inspect: impl FnOnce(u32)) -> Shares {
    let secs = (SHARE_WARM + SHARE_WINDOW).as_secs() + 5;
    let mut spinner = spawn_spinner(n, secs);
    let mut loops: Vec<_> = (0..n)
        .map(|_| {
            Command::new("/bin/sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("starting a busy loop")
        })
        .collect();
    let pids: Vec<u32> = std::iter::once(spinner.id())
        .chain(loops.iter().map(|c| c.id()))
        .collect();
    std::thread::sleep(SHARE_WARM);
    let t0: Vec<u64> = pids.iter().map(|&p| process_cpu_ns(p)).collect();
    std::thread::sleep(SHARE_WINDOW);
    let t1: Vec<u64> = pids.iter().map(|&p| process_cpu_ns(p)).collect();
    inspect(spinner.id());
    for c in loops.iter_mut().chain(std::iter::once(&mut spinner)) {
        let _ = c.kill();
        let _ = c.wait();
    }
    let ns: Vec<u64> = t0
        .iter()
        .zip(&t1)
        .map(|(a, b)| b.saturating_sub(*a))
        .collect();
    let total = ns.iter().sum::<u64>();
    let fair = total as f64 / (2 * n) as f64;
    Shares {
        spinner: ns[0] as f64 / n as f64 / fair,
        loops: ns[1..].iter().map(|&x| x as f64 / fair).collect(),
        cpus: total as f64 / SHARE_WINDOW.as_nanos() as f64,
    }
}

pub fn show_shares(who: &str, s: &Shares, what: &str) {
    eprintln!(
        "gate coop: {who:<7} 2-thread spinner beside 2 busy loops ({:.2} CPUs): each spinner \
         thread {:.2} of a fair share, the loops {}{what}",
        s.cpus,
        s.spinner,
        s.loops_text()
    );
}

/// What co-running costs others when the process is no team: two threads that never wait on
/// each other (so they look like an active-wait team) beside two single-threaded busy loops, 4
/// threads on 2 CPUs' worth of time. Each loop, and each of the spinner's threads, keeps the
/// trust layer's floor of a fair share.
fn shares_beside_a_threaded_spinner() {
    let before_stats = maps::read_stats();
    let mut seen = String::new();
    let s = spinner_shares(2, |pid| {
        let entry = maps::read_coop_proc(pid);
        let learned = maps::read_coop_comms().get(SPINNER) == Some(&COOP_LEARNED);
        let d = delta(&before_stats, &maps::read_stats());
        seen = format!(
            "; {SPINNER} learned {learned}, granted {}, coop dispatches {}, evidence {entry:?}",
            entry.is_some_and(|e| e.granted != 0),
            d.dispatches
        );
    });
    show_shares("learned", &s, &seen);
    for l in &s.loops {
        assert!(
            *l >= FAIR_FLOOR,
            "a busy loop got {l:.2} of its fair share beside a 2-thread spinner (floor \
             {FAIR_FLOOR})"
        );
    }
    assert!(
        s.spinner >= FAIR_FLOOR,
        "the 2-thread spinner's threads got {:.2} of a fair share each (floor {FAIR_FLOOR})",
        s.spinner
    );
}

/// Runs pairs of `work` until BPF holds NAME as learned (at most LEARN_RUNS), each pair's
/// makespan printed; fails the layer with the scheduler's output if none taught it. Returns how
/// many pairs it took.
fn teach(work: Work, what: &str, sched: &SchedulerProc) -> usize {
    let mut runs = 0;
    while runs < LEARN_RUNS && !learned_in_bpf() {
        let r = coop::run(work);
        runs += 1;
        eprintln!(
            "gate coop: learning from {what} pairs, pair {runs}: makespan {:.2} s",
            r.makespan()
        );
        wait_learned(Duration::from_millis(1500));
    }
    assert!(
        learned_in_bpf(),
        "{runs} {what} pairs did not teach the procdb {NAME:?}:\n{}",
        sched.output()
    );
    runs
}

/// With a fresh procdb, active-wait pairs alone teach NAME, and the next pair is granted and
/// beats EEVDF; then an interactive task beside such a pair, and a non-cooperating threaded
/// spinner's cost to others.
fn active_wait_is_learned(eevdf: &Run, eevdf_frames: &FrameStats, path: &Path) -> u64 {
    let _ = fs::remove_file(path);
    let mut sched = start();
    let runs = teach(Work::OmpActive, "active-wait", &sched);
    eprintln!("gate coop: {NAME} learned from active waits after {runs} pairs");
    let (r, d) = measured(Work::OmpActive);
    show("active", Work::OmpActive, &r, &d, eevdf);
    assert!(
        d.grants > 0 && d.dispatches > 0,
        "the active-wait team of a learned name was not recognised by its behaviour: {d:?}"
    );
    assert!(
        r.makespan() < eevdf.makespan(),
        "OMP_WAIT_POLICY=active: makespan {:.2} s under --coop-learn, not below EEVDF's {:.2} s",
        r.makespan(),
        eevdf.makespan()
    );

    let before = maps::read_stats();
    let f = coop::frames_beside(Work::OmpActive);
    let fd = delta(&before, &maps::read_stats());
    coop::show_frames("learned", Work::OmpActive, &f);
    // The frame task takes a group thread's CPU at many of its ~140 wakeups a second; when
    // the other CPU runs it first, this CPU runs the group's next queued thread, as it should.
    // That cut was the frame task's claim, not a mate's preemption (coop_stopping()).
    eprintln!(
        "gate coop: learned  frame run: grants {}, coop dispatches {}, mate preemptions {}",
        fd.grants, fd.dispatches, fd.preempts
    );
    assert!(
        fd.grants > 0,
        "the active-wait pair beside the frame task was not granted: {fd:?}"
    );
    assert_eq!(
        fd.preempts, 0,
        "threads of one group preempted each other beside the frame task"
    );
    let bound = (eevdf_frames.p99_ns as f64 * FRAME_FACTOR) as u64 + FRAME_SLACK_NS;
    if frames::resolved(eevdf_frames, coop::FRAME_PERIOD, "coop", "--coop-learn") {
        assert!(
            f.p99_ns <= bound,
            "a frame task beside a granted active-wait pair: P99 {:.2} ms, over {:.2} ms \
             (EEVDF's {:.2} ms x {FRAME_FACTOR} + {} ms)",
            f.p99_ns as f64 / 1e6,
            bound as f64 / 1e6,
            eevdf_frames.p99_ns as f64 / 1e6,
            FRAME_SLACK_NS / 1_000_000
        );
    }

    shares_beside_a_threaded_spinner();
    assert!(sched.running(), "the scheduler exited:\n{}", sched.output());
    sched.stop();
    d.preempts
}

/// `eevdf`: the layer's runs of Work::ALL under EEVDF, in that order; `eevdf_frames`: a frame
/// task beside an active-wait pair under EEVDF.
pub fn layer_coop_learned(eevdf: &[Run], eevdf_frames: &FrameStats) {
    if gate_args().iter().any(|a| a == "--no-adaptive") {
        eprintln!("gate coop: BPF-only mode keeps no procdb; --coop-learn is not checked");
        return;
    }
    let path = procdb::default_path().expect("no procdb path for root");
    let _ = fs::remove_file(&path);

    let mut sched = start();
    messaging_is_not_learned();
    let runs = teach(Work::Yield, "yield", &sched);
    eprintln!("gate coop: {NAME} learned after {runs} yield pairs");

    let mut total = Delta::default();
    for (&w, e) in Work::ALL.iter().zip(eevdf) {
        let (r, d) = measured(w);
        show("learned", w, &r, &d, e);
        total.preempts += d.preempts;
        if matches!(w, Work::Yield | Work::OmpActive) {
            assert!(
                d.grants > 0 && d.dispatches > 0,
                "{}: the learned name's team was not recognised: {d:?}",
                w.name()
            );
        }
    }
    let busy = renamed_busy_loop();
    assert_eq!(
        (busy.grants, busy.dispatches),
        (0, 0),
        "a busy loop renamed {NAME} ran as a cooperative group"
    );
    assert!(sched.running(), "the scheduler exited:\n{}", sched.output());
    sched.stop();

    let (db, outcome) = ProcDb::load(&path, procdb::DEFAULT_CAPACITY);
    assert!(matches!(outcome, LoadOutcome::Loaded { .. }), "{outcome}");
    let mut key = [0u8; scx_pandemonium::bpf_intf::COMM_LEN];
    key[..NAME.len()].copy_from_slice(NAME.as_bytes());
    assert!(
        db.get(&key).is_some_and(|p| p.coop),
        "the saved procdb does not hold {NAME} as learned"
    );

    let mut sched = start();
    assert!(
        wait_learned(Duration::from_secs(5)),
        "after a restart BPF did not get {NAME} from the procdb:\n{}",
        sched.output()
    );
    let (r, d) = measured(Work::Yield);
    show("restart", Work::Yield, &r, &d, &eevdf[2]);
    total.preempts += d.preempts;
    assert!(
        d.grants > 0 && d.dispatches > 0,
        "after a restart the learned team was not recognised: {d:?}"
    );
    assert!(sched.running(), "the scheduler exited:\n{}", sched.output());
    sched.stop();
    total.preempts += active_wait_is_learned(&eevdf[0], eevdf_frames, &path);
    assert_eq!(
        total.preempts, 0,
        "threads of a learned group preempted each other"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Not a layer: the body of a [`spawn_spinner`] child. Run any other way it fails, saying so.
    #[test]
    #[ignore = "started by the coop layer as a process of its own"]
    fn spinner_process() {
        let spec = std::env::var(SPINNER_ENV)
            .unwrap_or_else(|_| panic!("{SPINNER_ENV} is unset: the coop layer starts this"));
        let w: Vec<u64> = spec
            .split_whitespace()
            .map(|v| v.parse().expect("a number"))
            .collect();
        assert_eq!(w.len(), 2, "{SPINNER_ENV}={spec:?}");
        // The process's name is its leader's comm: the thread libtest waits in.
        fs::write("/proc/self/comm", SPINNER).expect("naming this process");
        let end = Instant::now() + Duration::from_secs(w[1]);
        let threads: Vec<_> = (0..w[0])
            .map(|_| {
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while Instant::now() < end {
                        for _ in 0..10_000 {
                            x = std::hint::black_box(
                                x.wrapping_mul(6364136223846793005).wrapping_add(1),
                            );
                        }
                    }
                    x
                })
            })
            .collect();
        for t in threads {
            t.join().expect("a spinner panicked");
        }
    }
}
