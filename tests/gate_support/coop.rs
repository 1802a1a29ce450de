// SPDX-License-Identifier: GPL-2.0-only
//! The `coop` layer (issue #34): two processes of a libgomp program (coopbench, which the gate's
//! runner puts in the guest), each with as many threads as CPUs, looping parallel regions with
//! barriers. First under EEVDF (nothing attached), then under scx_pandemonium with
//! `--coop coopbench` in the same boot, with OMP_WAIT_POLICY=active (the case time-slicing
//! breaks: a spinner holds a CPU while the thread it waits for is queued) and passive, and with
//! coopbench's sched_yield() barrier. Asserted: the group is recognised (its threads are
//! dispatched from the coop queues), no thread of a group preempts a mate, and the active wait
//! finishes sooner than under EEVDF. The other figures are printed, and how late a frame-paced
//! task wakes beside two active-wait processes under EEVDF (the bar for `--coop-learn`). Then
//! the same group, recognised from behaviour with `--coop-learn` (coop_learned.rs).

use super::frames::{self, FrameStats};
use super::*;

pub const COOPBENCH: &str = "/usr/local/bin/coopbench";
/// Regions of a 48 x 48 multiply per process: ~0.6 s alone at 2 vCPUs under TCG, long enough
/// that a makespan is not one scheduling accident.
const REGIONS: &str = "600";
const N: &str = "48";
const PROCS: usize = 2;

/// One workload: what coopbench runs and how.
#[derive(Clone, Copy, Debug)]
pub enum Work {
    OmpActive,
    OmpPassive,
    Yield,
}

impl Work {
    pub const ALL: [Work; 3] = [Work::OmpActive, Work::OmpPassive, Work::Yield];

    pub fn name(self) -> &'static str {
        match self {
            Work::OmpActive => "omp-active",
            Work::OmpPassive => "omp-passive",
            Work::Yield => "yield",
        }
    }

    fn command(self, threads: usize, regions: &str) -> Command {
        let mut cmd = Command::new(COOPBENCH);
        let t = threads.to_string();
        match self {
            Work::OmpActive | Work::OmpPassive => {
                cmd.args(["omp", regions, N])
                    .env("OMP_NUM_THREADS", &t)
                    .env(
                        "OMP_WAIT_POLICY",
                        if matches!(self, Work::OmpActive) {
                            "active"
                        } else {
                            "passive"
                        },
                    );
            }
            Work::Yield => {
                cmd.args(["yield", regions, N, &t]);
            }
        }
        cmd
    }
}

/// Each process's makespan (its own wall_s) and the involuntary switches of all of them.
#[derive(Debug, Clone)]
pub struct Run {
    pub walls: Vec<f64>,
    pub nivcsw: u64,
}

impl Run {
    pub fn makespan(&self) -> f64 {
        self.walls.iter().copied().fold(0.0, f64::max)
    }

    /// Each process's own time, as the log prints it ("1.34 / 2.44").
    pub fn walls_text(&self) -> String {
        super::slashed(&self.walls, |w| format!("{w:.2}"))
    }
}

/// The value of `"key": number` in coopbench's one JSON line.
pub fn field(line: &str, key: &str) -> Option<f64> {
    let at = line.find(&format!("\"{key}\": "))? + key.len() + 4;
    let rest = &line[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

/// `PROCS` processes of `work` at once, each with a thread per online CPU.
pub fn run(work: Work) -> Run {
    let threads = online_cpus().len();
    let children: Vec<_> = (0..PROCS)
        .map(|_| {
            work.command(threads, REGIONS)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("starting {COOPBENCH}: {e} (the gate runner adds it)"))
        })
        .collect();
    let mut out = Run {
        walls: vec![],
        nivcsw: 0,
    };
    for c in children {
        let o = c.wait_with_output().expect("waiting for coopbench");
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "coopbench {work:?}: {}\n{text}",
            o.status
        );
        let wall = field(&text, "wall_s").unwrap_or_else(|| panic!("no wall_s in {text}"));
        out.walls.push(wall);
        out.nivcsw += field(&text, "nivcsw").unwrap_or(0.0) as u64;
    }
    out
}

/// The frame task beside the groups: a compositor's rhythm at ~144 Hz, as the trust layer's.
pub const FRAME_PERIOD: Duration = Duration::from_millis(7);
pub const FRAME_WORK: Duration = Duration::from_millis(1);
const FRAME_RUN: Duration = Duration::from_secs(4);
/// Time for the groups to start (and, under `--coop-learn`, to show their behaviour) first.
const FRAME_WARM: Duration = Duration::from_secs(2);

/// A frame-paced thread of this process beside `PROCS` processes of `work` that outlast it
/// (they are killed after it): how late an interactive task wakes beside the groups.
pub fn frames_beside(work: Work) -> FrameStats {
    let threads = online_cpus().len();
    let mut children: Vec<_> = (0..PROCS)
        .map(|_| {
            work.command(threads, "1000000")
                .stdout(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("starting {COOPBENCH}: {e}"))
        })
        .collect();
    std::thread::sleep(FRAME_WARM);
    let f = frames::one("gate-coop-frame", FRAME_PERIOD, FRAME_WORK, FRAME_RUN);
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    f
}

pub fn show_frames(who: &str, work: Work, f: &FrameStats) {
    eprintln!(
        "gate coop: {who:<7} frame task beside {}: {} wakes, P50 {:.2} ms, P99 {:.2} ms, max \
         {:.2} ms, {} frames skipped",
        work.name(),
        f.wakes,
        f.p50_ns as f64 / 1e6,
        f.p99_ns as f64 / 1e6,
        f.max_ns as f64 / 1e6,
        f.skipped
    );
}

fn show(who: &str, work: Work, r: &Run) {
    eprintln!(
        "gate coop: {who:<6} {:<12} makespan {:.2} s (processes {}), involuntary switches {}",
        work.name(),
        r.makespan(),
        r.walls_text(),
        r.nivcsw
    );
}

pub fn layer_coop() {
    require_gate_environment();
    assert!(
        Path::new(COOPBENCH).exists(),
        "{COOPBENCH} is missing: the gate runner copies it into the guest"
    );
    let eevdf: Vec<Run> = Work::ALL.iter().map(|&w| run(w)).collect();
    for (w, r) in Work::ALL.iter().zip(&eevdf) {
        show("EEVDF", *w, r);
    }
    let eevdf_frames = frames_beside(Work::OmpActive);
    show_frames("EEVDF", Work::OmpActive, &eevdf_frames);
    let shares = super::coop_learned::spinner_shares(2, |_| {});
    super::coop_learned::show_shares("EEVDF", &shares, "");

    let mut sched = SchedulerProc::start(&["--coop", "coopbench"]);
    sched.wait_attached();
    let mut ours = vec![];
    let mut deltas = vec![];
    for &w in &Work::ALL {
        let before = maps::read_stats();
        let r = run(w);
        let after = maps::read_stats();
        show("coop", w, &r);
        let d = (
            after.nr_coop_dispatches - before.nr_coop_dispatches,
            after.nr_coop_rotations - before.nr_coop_rotations,
            after.nr_coop_yield_handoffs - before.nr_coop_yield_handoffs,
            after.nr_coop_mate_preempts - before.nr_coop_mate_preempts,
            after.nr_coop_fillers - before.nr_coop_fillers,
        );
        eprintln!(
            "gate coop: {:<12} coop dispatches {}, rotations {}, fillers {}, yield handoffs {}, \
             mate preemptions {}",
            w.name(),
            d.0,
            d.1,
            d.4,
            d.2,
            d.3
        );
        ours.push(r);
        deltas.push(d);
    }
    assert!(sched.running(), "the scheduler exited:\n{}", sched.output());
    sched.stop();
    for (r, e) in ours.iter().zip(&eevdf) {
        eprintln!(
            "gate coop: ratio to EEVDF {:.2}",
            r.makespan() / e.makespan().max(1e-9)
        );
    }

    let active = &deltas[0];
    assert!(
        active.0 > 0,
        "no coopbench thread was dispatched from a coop queue: --coop did not recognise the group"
    );
    let preempts: u64 = deltas.iter().map(|d| d.3).sum();
    assert_eq!(preempts, 0, "threads of one group preempted each other");
    assert!(
        ours[0].makespan() < eevdf[0].makespan(),
        "OMP_WAIT_POLICY=active: makespan {:.2} s with --coop, not below EEVDF's {:.2} s",
        ours[0].makespan(),
        eevdf[0].makespan()
    );
    super::coop_learned::layer_coop_learned(&eevdf, &eevdf_frames);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_coopbench_fields() {
        let line = "{\"coopbench\": {\"mode\": \"omp\", \"threads\": 2, \"wall_s\": 0.9512, \
                    \"nivcsw\": 17, \"checksum\": 1.0}}";
        assert_eq!(field(line, "wall_s"), Some(0.9512));
        assert_eq!(field(line, "nivcsw"), Some(17.0));
        assert_eq!(field(line, "checksum"), Some(1.0));
        assert_eq!(field(line, "missing"), None);
    }
}
