// SPDX-License-Identifier: GPL-2.0-only
//! The integration gate: runs the real scheduler on a sched_ext kernel, as root. Every layer is
//! `#[ignore]`d so `cargo test` on an ordinary host skips it; `./pandemonium.py test` runs it
//! inside the VM with `--ignored --test-threads=1`.
//!
//! Layers: load and errors (implemented), classify, latency, responsiveness, contention (not yet: listed in
//! TODO_LAYERS and reported as skipped by full_gate, never as passes).

mod gate_support;

use gate_support::workload::Mix;
use gate_support::*;
use std::os::unix::process::CommandExt;
use std::time::Duration;

/// Layers that do not exist yet, with the issue that brings them. full_gate prints them as skipped.
const TODO_LAYERS: &[(&str, &str)] = &[
    ("classify", "BPF core classification (issue 3)"),
    ("latency", "stall and starvation control (issue 5)"),
    ("responsiveness", "stall and starvation control (issue 5)"),
    ("contention", "stall and starvation control (issue 5)"),
];

const LOAD_RUN: Duration = Duration::from_secs(10);

/// Attach, survive a mixed load with a CPU going offline and back, detach cleanly on SIGINT.
fn layer_load() {
    require_gate_environment();
    let cpus = online_cpus();
    let nr = cpus.len();
    // CPU 0 usually cannot go offline; take the highest one.
    let hot = *cpus.iter().max().unwrap();
    assert!(
        nr >= 2,
        "the load layer needs at least 2 CPUs to exercise hotplug (have {nr})"
    );

    let mut sched = SchedulerProc::start(&["-v"]);
    let took = sched.wait_attached();
    eprintln!(
        "gate load: attached in {:.1} s as {:?}",
        took.as_secs_f64(),
        attached_ops()
    );

    let mut mix = Mix::new();
    mix.hogs(2 * nr).fork_loop().ping_pong();
    let (mut offlined, mut onlined) = (false, false);
    let reports = mix.run_for(LOAD_RUN, |t| {
        if !offlined && t >= LOAD_RUN * 3 / 10 {
            set_cpu_online(hot, false);
            offlined = true;
            eprintln!("gate load: cpu{hot} offline at {:.1} s", t.as_secs_f64());
        }
        if offlined && !onlined && t >= LOAD_RUN * 6 / 10 {
            set_cpu_online(hot, true);
            onlined = true;
            eprintln!("gate load: cpu{hot} online at {:.1} s", t.as_secs_f64());
        }
    });
    assert!(offlined && onlined, "hotplug steps did not run");
    assert_eq!(
        online_cpus(),
        cpus,
        "CPU set did not return to its original state"
    );

    for r in &reports {
        eprintln!(
            "gate load: {:>7} progress {:>8}  worst wait {:?}",
            r.name, r.count, r.worst_gap
        );
        assert!(r.count > 0, "{} made no progress under pandemonium", r.name);
    }
    assert!(
        sched.running(),
        "scheduler died during the load:\n{}",
        sched.output()
    );
    assert_eq!(
        state(),
        "enabled",
        "sched_ext left the enabled state during the load"
    );

    sched.signal(libc::SIGINT);
    let st = sched.wait_exit(DETACH_TIMEOUT);
    assert!(
        st.success(),
        "scheduler exit status after SIGINT: {st}\n{}",
        sched.output()
    );
    assert!(
        wait_state("disabled", Duration::from_secs(10)),
        "state is {} after exit",
        state()
    );

    let complaints = kernel_complaints(&kernel_log());
    assert!(
        complaints.is_empty(),
        "kernel log complaints:\n{}",
        complaints.join("\n")
    );
    let out = sched.output();
    assert!(
        out.contains("d/s:"),
        "no telemetry line in -v output:\n{out}"
    );
}

/// The refusals that need a real sched_ext kernel: not root, and a scheduler already attached.
fn layer_errors() {
    require_gate_environment();
    let bin = scheduler_binary();

    let o = std::process::Command::new(&bin)
        .uid(65534)
        .gid(65534)
        .output()
        .expect("running the scheduler as nobody");
    let t = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "as nobody: {t}");
    assert!(
        t.contains("must run as root") && t.contains("sudo"),
        "as nobody: {t}"
    );

    let mut first = SchedulerProc::start(&[]);
    first.wait_attached();
    let o = std::process::Command::new(&bin)
        .output()
        .expect("starting a second instance");
    let t = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "second instance: {t}");
    assert!(
        t.contains("already attached: pandemonium"),
        "second instance: {t}"
    );
    assert!(!t.contains("panicked"), "{t}");
    assert_eq!(
        state(),
        "enabled",
        "the second instance disturbed the first"
    );

    first.signal(libc::SIGTERM);
    assert!(
        first.wait_exit(DETACH_TIMEOUT).success(),
        "SIGTERM exit:\n{}",
        first.output()
    );
    assert!(wait_state("disabled", Duration::from_secs(10)));
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn errors() {
    layer_errors();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn load() {
    layer_load();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn full_gate() {
    layer_load();
    eprintln!("gate full_gate: load passed");
    layer_errors();
    eprintln!("gate full_gate: errors passed");
    for (layer, why) in TODO_LAYERS {
        eprintln!("GATE-SKIP {layer}: not implemented yet: {why}");
    }
}
