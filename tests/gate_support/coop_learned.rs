// SPDX-License-Identifier: GPL-2.0-only
//! The `coop` layer's second half (issue #34, `--coop-learn`): the cooperative group recognised
//! from behaviour, without `--coop`. In one boot, after the layer's EEVDF and `--coop` runs:
//! - a scheduler with `--coop-learn` and a fresh procdb runs hackbench in thread mode beside
//!   busy loops (threads that wake each other while crowded, but no team): it is not learned;
//! - it watches pairs of coopbench processes (the sched_yield() barrier) until BPF's
//!   `coop_comms` holds the name as learned;
//! - the three workloads run again: the yield team is given the treatment (`nr_coop_grants`,
//!   `nr_coop_dispatches`), and no thread preempts a mate; the others are printed;
//! - a plain busy loop renamed coopbench (this process, its threads spinning) gets nothing: no
//!   grant, no coop dispatch;
//! - the scheduler restarts: the procdb file holds the name as learned, BPF has it from the
//!   first seconds, and a new pair is recognised at once, mates again never preempting.

use super::coop::{self, Run, Work};
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

/// This process renamed NAME (its leader's comm, which BPF and the procdb read), its threads
/// spinning without ever waking one another: crowded, but no team.
fn renamed_busy_loop() -> Delta {
    let own = fs::read_to_string("/proc/self/comm").expect("reading our comm");
    fs::write("/proc/self/comm", NAME).expect("renaming this process");
    let stop = Arc::new(AtomicBool::new(false));
    let before = maps::read_stats();
    let spinners: Vec<_> = (0..2 * online_cpus().len())
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

/// `eevdf`: the layer's runs of Work::ALL under EEVDF, in that order.
pub fn layer_coop_learned(eevdf: &[Run]) {
    if gate_args().iter().any(|a| a == "--no-adaptive") {
        eprintln!("gate coop: BPF-only mode keeps no procdb; --coop-learn is not checked");
        return;
    }
    let path = procdb::default_path().expect("no procdb path for root");
    let _ = fs::remove_file(&path);

    let mut sched = start();
    messaging_is_not_learned();
    let mut runs = 0;
    while runs < LEARN_RUNS && !learned_in_bpf() {
        coop::run(Work::Yield);
        runs += 1;
        wait_learned(Duration::from_millis(1500));
    }
    assert!(
        learned_in_bpf(),
        "{runs} yield pairs did not teach the procdb {NAME:?}:\n{}",
        sched.output()
    );
    eprintln!("gate coop: {NAME} learned after {runs} yield pairs");

    let mut total = Delta::default();
    for (&w, e) in Work::ALL.iter().zip(eevdf) {
        let (r, d) = measured(w);
        show("learned", w, &r, &d, e);
        total.preempts += d.preempts;
        if matches!(w, Work::Yield) {
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
    assert_eq!(
        total.preempts, 0,
        "threads of a learned group preempted each other"
    );
}
