// SPDX-License-Identifier: GPL-2.0-only
//! Gate layer `knob_clamp`: bad values written straight into BPF's `knobs_map` must not become a
//! stall. The daemon range-checks what it writes, but BPF reads the map on every decision, so
//! BPF has to clamp too. The scheduler runs with `--no-adaptive`, so nothing rewrites the map,
//! and each bad set runs under busy loops and a periodic task.

use super::workload::{Mix, Report, worst_gap};
use super::*;
use scx_pandemonium::bpf_intf::TuningKnobs;

/// How long each bad set runs under load: past the busy-loop bound and the late start, so a task
/// never served fails the bound, kept short because the layer runs 11 sets at each vCPU count.
const RUN: Duration = Duration::from_secs(6);
/// Bounds, well inside the kernel's 5 s watchdog (timeout_ms in main.bpf.c): the periodic task
/// (2 ms asleep, 100 us busy) may go at most 1 s without a round, a busy loop at most 2.5 s
/// without progress. Generous for TCG, where a loaded host stretches every wait (the contention
/// layer allows 1 s), yet a slice of SCX_SLICE_INF, or a task never served, shows as the whole
/// run or as an ejection.
const PERIODIC_BOUND: Duration = Duration::from_secs(1);
const HOG_BOUND: Duration = Duration::from_millis(2500);
/// The second half of the busy loops starts this late (and may wait this much longer): the first
/// half took every CPU while nothing else waited, so whatever slice a bad knob gives a runner
/// alone is what the late ones must get past.
const LATE: Duration = Duration::from_secs(1);

/// The bad sets: each changes the mode's defaults in one way.
fn bad_sets() -> Vec<(&'static str, TuningKnobs)> {
    let d = TuningKnobs::defaults();
    let set = |f: &dyn Fn(&mut TuningKnobs)| {
        let mut k = d;
        f(&mut k);
        k
    };
    vec![
        (
            "slice 0",
            set(&|k| {
                k.slice_ns = 0;
                k.burst_slice_ns = 0;
            }),
        ),
        (
            "slice SCX_SLICE_INF",
            set(&|k| {
                k.slice_ns = u64::MAX;
                k.burst_slice_ns = u64::MAX;
            }),
        ),
        ("batch slice 0", set(&|k| k.batch_slice_ns = 0)),
        (
            "batch slice SCX_SLICE_INF",
            set(&|k| k.batch_slice_ns = u64::MAX),
        ),
        ("preempt threshold 0", set(&|k| k.preempt_thresh_ns = 0)),
        (
            "preempt threshold u64::MAX",
            set(&|k| k.preempt_thresh_ns = u64::MAX),
        ),
        (
            "class thresholds 0",
            set(&|k| {
                k.lat_cri_thresh_high = 0;
                k.lat_cri_thresh_low = 0;
            }),
        ),
        (
            "class thresholds u64::MAX",
            set(&|k| {
                k.lat_cri_thresh_high = u64::MAX;
                k.lat_cri_thresh_low = u64::MAX;
            }),
        ),
        ("lag scale 0", set(&|k| k.lag_scale = 0)),
        ("lag scale 2^40", set(&|k| k.lag_scale = 1 << 40)),
        ("lag scale u64::MAX", set(&|k| k.lag_scale = u64::MAX)),
    ]
}

fn start() -> SchedulerProc {
    let mut sched = if gate_args().iter().any(|a| a == "--no-adaptive") {
        SchedulerProc::start(&[])
    } else {
        SchedulerProc::start(&["--no-adaptive"])
    };
    sched.wait_attached();
    sched
}

/// What went wrong under one set (empty when nothing did).
fn judge(reports: &[Report], attached: bool, running: bool, complaints: &[String]) -> Vec<String> {
    let mut bad = Vec::new();
    if !attached || !running || !complaints.is_empty() {
        bad.push(format!(
            "ejected or exited (state {}, daemon {}): {}",
            state(),
            if running { "running" } else { "gone" },
            complaints.join(" | ")
        ));
    }
    for r in reports.iter().filter(|r| r.count == 0) {
        bad.push(format!("{} made no progress", r.name));
    }
    let periodic = worst_gap(reports, |r| r.name == "knob-periodic");
    if periodic >= PERIODIC_BOUND {
        bad.push(format!("the periodic task waited {periodic:?}"));
    }
    let hog = worst_gap(reports, |r| r.name.starts_with("hog"));
    if hog >= HOG_BOUND {
        bad.push(format!("a busy loop waited {hog:?}"));
    }
    let late = worst_gap(reports, |r| r.name.starts_with("late-hog"));
    if late >= HOG_BOUND + LATE {
        bad.push(format!(
            "a late busy loop waited {late:?} (its {LATE:?} asleep included)"
        ));
    }
    bad
}

/// Each bad set for [`RUN`] under 2 busy loops per CPU (one per CPU from the start, one per
/// CPU [`LATE`]) and the periodic task; the scheduler must
/// stay attached, every worker progress, and the waits stay under the bounds. A set that ejects
/// the scheduler is recorded and the next one starts a fresh instance, so one run reports every
/// set that fails.
pub fn layer_knob_clamp() {
    require_gate_environment();
    let n = online_cpus().len();
    let mut sched = start();
    let mut failed = Vec::new();
    for (name, knobs) in bad_sets() {
        if !sched.running() || state() != "enabled" {
            drop(sched);
            assert!(
                wait_state("disabled", Duration::from_secs(10)),
                "state {}",
                state()
            );
            sched = start();
        }
        let log_from = kernel_log().len();
        maps::write_knobs(&knobs);
        let mut mix = Mix::new();
        mix.hogs(n).late_hogs(n, LATE).sleeper(
            "knob-periodic",
            Duration::from_millis(2),
            Duration::from_micros(100),
        );
        let reports = mix.run_for(RUN, |_| {});
        let attached = state() == "enabled";
        let running = sched.running();
        let complaints = kernel_complaints(&kernel_log()[log_from..]);
        if attached && running {
            let read = maps::read_knobs();
            eprintln!("gate knob_clamp: {name}: the map reads {read:?}");
            maps::write_knobs(&TuningKnobs::defaults());
        }
        let bad = judge(&reports, attached, running, &complaints);
        eprintln!(
            "gate knob_clamp: {name}: periodic worst wait {:?}, busy loops' worst {:?} (late \
             ones {:?}), progress {:?}: {}",
            worst_gap(&reports, |r| r.name == "knob-periodic"),
            worst_gap(&reports, |r| r.name.starts_with("hog")),
            worst_gap(&reports, |r| r.name.starts_with("late-hog")),
            reports.iter().map(|r| r.count).collect::<Vec<_>>(),
            if bad.is_empty() {
                "ok".to_string()
            } else {
                bad.join("; ")
            }
        );
        if !bad.is_empty() {
            failed.push(format!("{name}: {}", bad.join("; ")));
        }
    }
    if sched.running() && state() == "enabled" {
        sched.stop();
    }
    assert!(
        failed.is_empty(),
        "bad knobs in BPF's map stalled or ejected the scheduler:\n{}",
        failed.join("\n")
    );
}
