// SPDX-License-Identifier: GPL-2.0-only
//! The integration gate: runs the real scheduler on a sched_ext kernel, as root. Every layer is
//! `#[ignore]`d so `cargo test` on an ordinary host skips it; `./pandemonium.py test` runs it
//! inside the VM with `--ignored --test-threads=1`.
//!
//! Each `#[test]` here is a layer, by its name: `./pandemonium.py test --gate LAYER` runs one alone
//! (the runner, tools/pandemonium/gate_runner.py, reads the names from this file). full_gate runs
//! every other layer in one boot, in the order of its body (load with one CPU hotplug cycle,
//! hotplug with ten under hogs).

mod gate_support;

use gate_support::workload::{self, Mix};
use gate_support::*;
use scx_pandemonium::bpf_intf::Tier;
use scx_pandemonium::layout::Layout;
use scx_pandemonium::topology::SysfsTree;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

const LOAD_RUN: Duration = Duration::from_secs(10);

/// Attach, survive a mixed load while a CPU goes offline and back, detach cleanly on SIGINT.
fn layer_load() {
    run_load(1, LOAD_RUN);
}

/// CPU hotplug under hogs, the way `bench-stress`'s hotplug workload runs it: the highest CPU
/// goes offline for a second and comes back for a second, HOTPLUG_CYCLES times in one attach,
/// beside CPU count + 2 busy loops, 2 busy loops pinned to that CPU whenever it is online, and a
/// light periodic task. On 6.18 a hog whose runqueue was
/// the dying CPU's stayed in a shared DSQ that only the other CPUs served, behind their own hogs:
/// the watchdog ejected the scheduler, or the offline never finished (README "Hotplug"). Also
/// the cycles that once left a stranded irq_work behind, and proof that no placement ever
/// targets the offline CPU while the rank walks skip it.
fn layer_hotplug() {
    require_gate_environment();
    let cpus = online_cpus();
    let nr = cpus.len();
    let hot = *cpus.iter().max().unwrap();
    assert!(
        nr >= 2,
        "the hotplug layer needs at least 2 CPUs (have {nr})"
    );

    let mut sched = SchedulerProc::start(&["-v"]);
    let took = sched.wait_attached();
    eprintln!("gate hotplug: attached in {:.1} s", took.as_secs_f64());

    let before = maps::read_stats();
    let mut mix = Mix::new();
    mix.hogs(nr + 2).pinned_hogs(2, hot as usize).sleeper(
        "monitor",
        Duration::from_millis(3),
        Duration::from_micros(200),
    );
    let steps = 2 * HOTPLUG_CYCLES;
    let (mut done, mut skips, mut skips_at_offline) = (0u32, 0u64, 0u64);
    let mut last_step = Duration::ZERO;
    let mut slowest = Duration::ZERO;
    let reports = mix.run_while(|t| {
        if done < steps && t >= last_step + HOTPLUG_DWELL {
            // The stats map goes with an ejected scheduler: name the ejection, not the map.
            assert_eq!(
                state(),
                "enabled",
                "sched_ext left the enabled state during the hotplug cycles:\n{}",
                kernel_complaints(&kernel_log()).join("\n")
            );
            let offline = done % 2 == 0;
            let s = maps::read_stats().nr_rank_offline_skips;
            if offline {
                skips_at_offline = s;
            } else {
                skips += s - skips_at_offline;
            }
            let t0 = std::time::Instant::now();
            set_cpu_online(hot, !offline);
            slowest = slowest.max(t0.elapsed());
            done += 1;
            last_step = t + t0.elapsed();
        }
        done < steps || t < last_step + HOTPLUG_DWELL
    });
    let after = maps::read_stats();
    let placed = after.nr_offline_placements - before.nr_offline_placements;
    eprintln!(
        "gate hotplug: {HOTPLUG_CYCLES} cycles of cpu{hot}, slowest step {slowest:?}; rank walks \
         skipped it {skips} times, {placed} placements on it; going offline, {} slices kept \
         and {} kicks for work in its local queue; {} unserved queues rescued",
        after.nr_offline_keeps - before.nr_offline_keeps,
        after.nr_offline_kicks - before.nr_offline_kicks,
        after.nr_stranded_rescues - before.nr_stranded_rescues
    );
    assert_eq!(
        online_cpus(),
        cpus,
        "CPU set did not return to its original state"
    );
    assert_eq!(placed, 0, "a placement targeted an offline CPU");
    if nr > 2 {
        assert!(
            skips > 0,
            "no rank walk met the offline cpu{hot}; the check proved nothing"
        );
    }
    workload::assert_all_progressed("hotplug", &reports);
    assert!(
        sched.running(),
        "scheduler died during the hotplug cycles:\n{}",
        sched.output()
    );
    let complaints = kernel_complaints(&kernel_log());
    assert!(
        complaints.is_empty(),
        "kernel log complaints:\n{}",
        complaints.join("\n")
    );
    assert_eq!(state(), "enabled", "sched_ext left the enabled state");
    let worst = workload::worst_gap(&reports, |_| true);
    assert!(
        worst < HOTPLUG_WAIT_LIMIT,
        "a worker went {worst:?} without running (bound {HOTPLUG_WAIT_LIMIT:?}, the watchdog's \
         half)"
    );
    sched.stop();
}

/// Offline/online cycles of the hotplug layer, and the time between steps: as `bench-stress`.
const HOTPLUG_CYCLES: u32 = 10;
const HOTPLUG_DWELL: Duration = Duration::from_secs(1);
/// Half the 5 s watchdog: a task stranded by a hotplug step waited 4-6 s on 6.18 before the fix.
const HOTPLUG_WAIT_LIMIT: Duration = Duration::from_millis(2500);

fn run_load(cycles: u32, run: Duration) {
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

    let before = maps::read_stats();
    let mut mix = Mix::new();
    mix.hogs(2 * nr).fork_loop().ping_pong();
    // Steps alternate offline/online at equal intervals; the last step brings the CPU back.
    let steps = 2 * cycles;
    let period = run / (steps + 1);
    let (mut done, mut skips) = (0u32, 0u64);
    let mut skips_at_offline = 0;
    // A hotplug step can take seconds under TCG: the load runs until the last step is done.
    let reports = mix.run_while(|t| {
        if done < steps && t >= period * (done + 1) {
            let offline = done % 2 == 0;
            let s = maps::read_stats().nr_rank_offline_skips;
            if offline {
                skips_at_offline = s;
            } else {
                skips += s - skips_at_offline;
            }
            set_cpu_online(hot, !offline);
            done += 1;
            eprintln!(
                "gate load: cpu{hot} {} at {:.1} s",
                if offline { "offline" } else { "online" },
                t.as_secs_f64()
            );
        }
        done < steps || t < run
    });
    assert_eq!(done, steps, "hotplug steps did not all run");
    let placed = maps::read_stats().nr_offline_placements - before.nr_offline_placements;
    eprintln!(
        "gate load: {cycles} hotplug cycle(s) of cpu{hot}: rank walks skipped it {skips} times, \
         {placed} placements on it"
    );
    assert_eq!(placed, 0, "a placement targeted an offline CPU");
    if nr > 2 {
        assert!(
            skips > 0,
            "no rank walk met the offline cpu{hot}; the check proved nothing"
        );
    }
    assert_eq!(
        online_cpus(),
        cpus,
        "CPU set did not return to its original state"
    );

    workload::assert_all_progressed("load", &reports);
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

    sched.stop();

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

/// Behavior decides the tier: a CPU hog ends BATCH, named like a compositor or not, a 1 ms sleeper
/// that runs 50 us ends LAT_CRITICAL or INTERACTIVE, and a compositor's name lifts a slow sleeper
/// (4 wakes a second, 1 ms each: an INTERACTIVE score) to LAT_CRITICAL. The verdicts are read from
/// the scheduler's task_profiles BPF map.
fn layer_classify() {
    require_gate_environment();
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();

    let mut mix = Mix::new();
    // One anonymous hog per CPU as well: a hog alone on an otherwise idle CPU keeps its slice
    // refilled and is never stopped, so it records no samples and publishes no profile (once
    // at 4 vCPUs in the full gate, neither named hog had one after 40 s).
    mix.hogs(online_cpus().len())
        .named_hog("gate-hog")
        .sleeper(
            "gate-sleeper",
            Duration::from_millis(1),
            Duration::from_micros(50),
        )
        .named_hog("gamescope")
        .sleeper(
            "gamescope-wl",
            Duration::from_millis(250),
            Duration::from_millis(1),
        )
        .sleeper(
            "gate-slow",
            Duration::from_millis(250),
            Duration::from_millis(1),
        );
    let mut verdict = None;
    let deadline = Duration::from_secs(40);
    // Every 500 ms by the clock: the callback's own period stretches under a loaded TCG host,
    // and a fixed window of the elapsed time could then be skipped again and again.
    let mut next_look = Duration::ZERO;
    mix.run_while(|t| {
        if t >= next_look {
            next_look = t + Duration::from_millis(500);
            let prof = maps::read_profiles();
            let tier = |c: &str| prof.get(c).and_then(|e| Tier::from_u8(e.tier));
            let got = (
                tier("gate-hog"),
                tier("gate-sleeper"),
                tier("gamescope"),
                tier("gamescope-wl"),
                tier("gate-slow"),
            );
            if got.0 == Some(Tier::Batch)
                && matches!(got.1, Some(Tier::LatCritical | Tier::Interactive))
                && got.2 == Some(Tier::Batch)
                && got.3 == Some(Tier::LatCritical)
                && matches!(got.4, Some(Tier::LatCritical | Tier::Interactive))
            {
                verdict = Some((t, prof));
            }
        }
        verdict.is_none() && t < deadline
    });
    let prof = maps::read_profiles();
    for name in [
        "gate-hog",
        "gate-sleeper",
        "gamescope",
        "gamescope-wl",
        "gate-slow",
    ] {
        eprintln!("gate classify: {name:>12}: {:?}", prof.get(name));
    }
    let (t, _) = verdict.unwrap_or_else(|| panic!("classification not reached in {deadline:?}"));
    eprintln!(
        "gate classify: expected tiers reached after {:.1} s",
        t.as_secs_f64()
    );
    assert!(sched.running(), "scheduler died:\n{}", sched.output());
    sched.stop();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn classify() {
    layer_classify();
}

/// The rank map and tau BPF runs with are what the guest's sysfs implies: the daemon reads it
/// through scx_utils, this expectation through the sysfs reader.
fn layer_topology() {
    require_gate_environment();
    let sysfs = SysfsTree(std::path::Path::new("/sys"));
    let expect = Layout::detect(&sysfs).expect("detecting the topology");
    let mut sched = SchedulerProc::start(&["-v"]);
    sched.wait_attached();

    let out = sched.output();
    let first = expect
        .summary
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(out.contains(&first), "startup log lacks {first:?}:\n{out}");
    eprintln!(
        "gate topology: tau {} ns, c_eq {} ns",
        expect.tau_ns, expect.params.codel_eq_ns
    );
    for (cpu, row) in expect.ranks.iter().enumerate() {
        let got = maps::read_rank_row(cpu as u32);
        assert_eq!(
            got.cpus, row.cpus,
            "rank row of cpu{cpu} differs from the model"
        );
        let n = row.cpus.iter().take_while(|&&c| c != u32::MAX).count();
        eprintln!("gate topology: cpu{cpu} rank {:?}", &row.cpus[..n.min(8)]);
    }

    sched.stop();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn hotplug() {
    layer_hotplug();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn topology() {
    layer_topology();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn hybrid() {
    hybrid::layer_hybrid();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn gaming() {
    gaming::layer_gaming();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn trust() {
    trust::layer_trust();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn admin() {
    admin::layer_admin();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn coop() {
    coop::layer_coop();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn powersave() {
    powersave::layer_powersave();
}

/// Every scheduler op passed the running kernel's verifier; prints the verified instruction counts
/// (run on the default and on the newest kernel) and fails when a program grew more than the
/// record's tolerance over tests/fixtures/verifier_insns.json (see gate_support::verifier).
fn layer_verifier() {
    require_gate_environment();
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut progs: Vec<(String, u32)> = libbpf_rs::query::ProgInfoIter::default()
        .filter_map(|p| {
            let name = p.name.to_string_lossy().to_string();
            name.starts_with("pandemonium")
                .then_some((name, p.verified_insns))
        })
        .collect();
    progs.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (name, insns) in &progs {
        eprintln!(
            "gate verifier: {} {name:<16} {insns:>7} verified insns",
            kernel.trim()
        );
    }
    // BPF object names are cut at 15 bytes: "pandemonium_sel" is select_cpu.
    for op in [
        "pandemonium_sel",
        "pandemonium_enq",
        "pandemonium_dis",
        "pandemonium_tic",
    ] {
        assert!(
            progs.iter().any(|(n, _)| n == op),
            "{op} is not loaded: {progs:?}"
        );
    }
    assert!(
        progs.iter().all(|(_, n)| *n > 0),
        "a program reports no verified instructions"
    );
    let verdict = verifier::compare(&kernel, &progs);
    for line in &verdict.lines {
        eprintln!("gate verifier: {line}");
    }
    sched.stop();
    assert!(
        verdict.grown.is_empty(),
        "BPF programs grew more than {} % over {} on {}:\n{}\n(a deliberate growth: update the \
         record from the 'for the record' line above)",
        verdict.tolerance_pct,
        verifier::RECORD_PATH,
        kernel.trim(),
        verdict.grown.join("\n")
    );
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn verifier() {
    layer_verifier();
}

/// The adaptive loop's regime follows the load: HEAVY with every CPU busy, LIGHT when idle.
fn layer_adaptive() {
    require_gate_environment();
    if gate_args().iter().any(|a| a == "--no-adaptive") {
        eprintln!("gate adaptive: BPF-only mode has no regime; nothing to check");
        return;
    }
    let regimes = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.starts_with("d/s:"))
            .filter_map(|l| {
                l.rsplit_once('[')
                    .map(|(_, r)| r.trim_end_matches(']').to_string())
            })
            .collect()
    };
    let mut sched = SchedulerProc::start(&["-v"]);
    sched.wait_attached();
    let n = online_cpus().len();
    let mut mix = Mix::new();
    mix.hogs(2 * n);
    mix.run_for(Duration::from_secs(8), |_| {});
    let loaded = regimes(&sched.output());
    std::thread::sleep(Duration::from_secs(8));
    let all = regimes(&sched.output());
    let idle = &all[loaded.len().min(all.len())..];
    eprintln!("gate adaptive: under load {loaded:?}; idle {idle:?}");
    assert!(
        loaded.iter().any(|r| r.starts_with("HEAVY")),
        "never HEAVY under full load"
    );
    assert!(
        idle.last().is_some_and(|r| r.starts_with("LIGHT")),
        "not LIGHT when idle"
    );
    sched.stop();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn adaptive() {
    layer_adaptive();
}

/// A stalled control loop makes the watchdog exit with its status; the kernel then detaches the
/// scheduler and the default one takes over. The loop runs on the daemon's main thread, which
/// is frozen from outside (ptrace) while its watchdog thread runs on: the release binary has no
/// way to stall itself on request.
fn layer_watchdog() {
    require_gate_environment();
    if gate_args().iter().any(|a| a == "--no-adaptive") {
        eprintln!("gate watchdog: BPF-only mode has no control loop; nothing to check");
        return;
    }
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    // Two ticks, so the loop has beaten and the freeze is what silences it.
    std::thread::sleep(Duration::from_secs(2));
    let _frozen = freeze_thread(sched.pid(), Duration::from_secs(30));
    let st = sched.wait_exit(Duration::from_secs(60));
    assert_eq!(
        st.code(),
        Some(75),
        "watchdog exit status:\n{}",
        sched.output()
    );
    assert!(sched.output().contains("WATCHDOG"), "{}", sched.output());
    assert!(
        wait_state("disabled", Duration::from_secs(10)),
        "state {}",
        state()
    );
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn watchdog() {
    layer_watchdog();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn latency() {
    stall::layer_latency();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn interactive() {
    standard::layer_interactive();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn responsiveness() {
    stall::layer_responsiveness();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn contention() {
    stall::layer_contention();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn starvation() {
    stall::layer_starvation();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn wait_bound() {
    stall::layer_wait_bound();
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

// The `service` layer (the daemon under a real systemd) is not a test of this binary: it needs a
// guest of its own with systemd as PID 1. tools/pandemonium/gate_runner.py runs it after this one
// whenever full_gate is asked for (HOST_LAYERS there).
#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn full_gate() {
    // Each step's time goes into its "passed" line; the runner's summary lists the slowest, which
    // is what a CI time budget is trimmed from. The second column says whether a step's outcome
    // depends on how many CPUs there are (placement, shares, waits, hotplug): the others
    // (argument errors, the verifier, stats, procdb and knob faults) check the same code paths at
    // any size, so they run once. PANDEMONIUM_GATE_STEPS=sized or =unsized runs one kind only:
    // the runner splits the first vCPU count into two boots, so that the unsized steps can run
    // beside a later count's VM instead of before it.
    let steps: &[(&str, bool, fn())] = &[
        ("load", true, layer_load),
        ("errors", false, layer_errors),
        ("classify", false, layer_classify),
        ("topology", true, layer_topology),
        ("hybrid", true, hybrid::layer_hybrid),
        ("gaming", false, gaming::layer_gaming),
        ("trust", true, trust::layer_trust),
        ("admin", true, admin::layer_admin),
        ("powersave", true, powersave::layer_powersave),
        ("verifier", false, layer_verifier),
        ("adaptive", false, layer_adaptive),
        ("watchdog", false, layer_watchdog),
        ("latency", true, stall::layer_latency),
        ("responsiveness", true, stall::layer_responsiveness),
        ("interactive", true, standard::layer_interactive),
        ("stats", false, layer_stats),
        ("status", false, layer_status),
        ("debug", false, layer_debug),
        ("hotplug", true, layer_hotplug),
        ("faults", false, || {
            faults::layer_kill9();
            faults::layer_sysrq();
            faults::layer_sigterm_load();
            faults::layer_start_twice();
            faults::layer_procdb_faults();
            faults::layer_exit_dump();
        }),
        ("knob_clamp", false, knobs::layer_knob_clamp),
        ("contention", true, stall::layer_contention),
        ("starvation", true, stall::layer_starvation),
        ("wait_bound", true, stall::layer_wait_bound),
    ];
    let only: Option<bool> = match std::env::var("PANDEMONIUM_GATE_STEPS").as_deref() {
        Err(_) => None,
        Ok("sized") => Some(true),
        Ok("unsized") => Some(false),
        Ok(other) => panic!("PANDEMONIUM_GATE_STEPS={other:?}: want sized or unsized"),
    };
    for (name, sized, layer) in steps {
        if only.is_some_and(|want| want != *sized) {
            eprintln!(
                "gate full_gate: {name} not run in this boot: {}",
                if *sized {
                    "it depends on the CPU count and runs in another boot"
                } else {
                    "its outcome does not depend on the CPU count and runs in another boot"
                }
            );
            continue;
        }
        let start = Instant::now();
        layer();
        eprintln!(
            "gate full_gate: {name} passed in {:.1} s",
            start.elapsed().as_secs_f64()
        );
    }
}

/// `-d`: the BPF program reports waits longer than the overflow rescue age on the trace pipe, and
/// the daemon copies them to its output. Twice as many busy loops as CPUs make BATCH tasks wait
/// in the batch overflow a batch slice or more, so such lines must come, each one at least that
/// age, and the loops' lines must name the batch overflow.
fn layer_debug() {
    require_gate_environment();
    let mut sched = SchedulerProc::start(&["-d"]);
    sched.wait_attached();
    let rescue_us = maps::read_topo().overflow_rescue_ns / 1000;
    let mut mix = Mix::new();
    for _ in 0..2 * online_cpus().len() {
        mix.named_hog("pdb-slow");
    }
    mix.run_for(Duration::from_secs(4), |_| {});
    sched.stop();
    let out = sched.output();
    let slow: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("trace: ") && l.contains("slow wait "))
        .collect();
    eprintln!(
        "gate debug: {} slow-wait lines (overflow rescue {rescue_us} us), first: {:?}",
        slow.len(),
        slow.first()
    );
    for l in &slow {
        let us: u64 = l
            .split_once("slow wait ")
            .and_then(|(_, r)| r.split_once(" us:"))
            .and_then(|(n, _)| n.parse().ok())
            .unwrap_or_else(|| panic!("unparsable slow-wait line: {l}"));
        assert!(us >= rescue_us, "reported a wait below the threshold: {l}");
    }
    assert!(
        slow.iter()
            .any(|l| l.contains("pdb-slow") && l.contains("dsq 0x2000")),
        "no slow wait of a busy loop in the batch overflow:\n{out}"
    );
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn debug() {
    layer_debug();
}

/// One `--stats` / `--monitor` block as field name -> the rest of its line.
fn stats_blocks(out: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    out.split(scx_pandemonium::stats::BLOCK_HEADER)
        .skip(1)
        .map(|b| {
            b.lines()
                .skip(1)
                .take_while(|l| l.starts_with("  "))
                .filter_map(|l| {
                    let (name, rest) = l.trim_start().split_once(' ')?;
                    Some((name.to_string(), rest.trim().to_string()))
                })
                .collect()
        })
        .collect()
}

fn stat_u64(block: &std::collections::BTreeMap<String, String>, name: &str) -> u64 {
    let v = &block[name];
    v.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{name} is not a number: {v:?}"))
}

/// scx_stats end to end: the scheduler runs with `--stats 1` under load, a second process attaches
/// with `--monitor 1`; both print every described field, and the counters move. A cgroup running
/// one busy loop per CPU, beside the load and then alone, is in `cgroup_cpu_pct` in every monitor
/// sample of each phase, with a mean share within 25 % of what its cpu.stat says it used there.
/// After the scheduler stops, `--monitor` says that none runs.
fn layer_stats() {
    use scx_pandemonium::stats::PandemoniumMetrics;
    use scx_stats::Meta;
    use std::process::{Command, Stdio};
    require_gate_environment();
    let no_adaptive = gate_args().iter().any(|a| a == "--no-adaptive");
    let _cpu = cgroup::enable_cpu_controller();
    let mut sched = SchedulerProc::start(&["--stats", "1"]);
    sched.wait_attached();
    let ncpus = online_cpus().len();
    let mut group = cgroup::Group::new(None, "pdm-stats");
    group.spawn_hogs(ncpus, "pdm-cghog");
    let start = cgroup_share::Mark::now(&group);

    let monitor = Command::new(scheduler_binary())
        .args(["--monitor", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting scx_pandemonium --monitor");
    let mut mix = Mix::new();
    mix.hogs(online_cpus().len()).ping_pong();
    // Long enough for several whole samples after the monitor's first, which under emulation
    // at 4 vCPUs comes seconds after it starts.
    mix.run_for(Duration::from_secs(10), |_| {});
    let mixed = cgroup_share::Mark::now(&group);
    // The group's loops alone, one per CPU: each keeps its CPU with nothing else queued.
    std::thread::sleep(Duration::from_secs(5));
    let alone = cgroup_share::Mark::now(&group);
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(monitor.id() as i32, libc::SIGINT) };
    let out = monitor.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "gate stats: --monitor printed {} bytes; stderr: {}",
        text.len(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "--monitor exit status {}", out.status);

    let fields = PandemoniumMetrics::meta().fields;
    for (who, output) in [("--monitor", text.to_string()), ("--stats", sched.output())] {
        let blocks = stats_blocks(&output);
        assert!(
            blocks.len() >= 3,
            "{who} printed {} blocks:\n{output}",
            blocks.len()
        );
        for b in &blocks {
            for name in fields.keys() {
                assert!(
                    b.contains_key(name),
                    "{who}: no {name} in a block:\n{output}"
                );
            }
            assert_eq!(stat_u64(b, "adaptive"), u64::from(!no_adaptive), "{who}");
            let x = stat_u64(b, "codel_target_ns");
            let (lo, hi) = (stat_u64(b, "codel_floor_ns"), stat_u64(b, "codel_max_ns"));
            assert!(
                (lo..=hi).contains(&x),
                "{who}: codel target {x} outside [{lo}, {hi}]"
            );
        }
        let dispatches: Vec<u64> = blocks
            .iter()
            .map(|b| stat_u64(b, "nr_dispatches"))
            .collect();
        eprintln!("gate stats: {who} nr_dispatches {dispatches:?}");
        assert!(
            dispatches.windows(2).all(|w| w[1] > w[0]),
            "{who}: dispatches did not increase: {dispatches:?}"
        );
        let last = blocks.last().unwrap();
        assert!(
            last["nr_dispatches"].contains("/s)"),
            "{who}: no rate: {last:?}"
        );
        if no_adaptive {
            assert_eq!(last["regime"], "-", "{who}");
            assert_eq!(last["mwu_weights"], "-", "{who}");
        } else {
            assert!(last["mwu_weights"].contains("LATENCY="), "{who}: {last:?}");
            assert_ne!(last["regime"], "-", "{who}");
        }
    }
    let path = format!("/{}", group.name());
    let blocks = stats_blocks(&text);
    cgroup_share::check_shape(&blocks);
    let failed: Vec<String> = [
        ("beside the load", &start, &mixed),
        ("alone", &mixed, &alone),
    ]
    .into_iter()
    .filter_map(|(phase, from, to)| {
        cgroup_share::check_phase(&blocks, &path, ncpus, phase, from, to).err()
    })
    .collect();
    assert!(failed.is_empty(), "gate stats:\n{}", failed.join("\n"));
    drop(group);
    sched.stop();

    let after = Command::new(scheduler_binary())
        .args(["--monitor", "1"])
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&after.stderr);
    assert_eq!(after.status.code(), Some(1), "--monitor after stop: {msg}");
    assert!(msg.contains("no scx_pandemonium is running"), "{msg}");
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn stats() {
    layer_stats();
}

/// Where the status layer leaves its sysfs captures under the guest's /results; the host reads
/// them back with `./pandemonium.py status`'s own code (STATUS_DIR in
/// tools/pandemonium/gate_runner.py).
const STATUS_DIR: &str = "/results/sched_ext_status";

/// Copies every readable file under /sys/kernel/sched_ext to `STATUS_DIR/<name>/kernel/sched_ext`,
/// so the copy is a sysfs root that `status --sysfs` accepts.
fn capture_sched_ext(name: &str) {
    fn walk(src: &std::path::Path, dst: &std::path::Path, copied: &mut Vec<String>) {
        std::fs::create_dir_all(dst).unwrap();
        for e in std::fs::read_dir(src).unwrap().flatten() {
            let (from, to) = (e.path(), dst.join(e.file_name()));
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(&from, &to, copied),
                // Write-only or transient attributes are skipped; the state file is checked below.
                Ok(t) if t.is_file() => {
                    if let Ok(text) = std::fs::read_to_string(&from) {
                        std::fs::write(&to, &text).unwrap();
                        copied.push(format!("{}={}", from.display(), text.trim()));
                    }
                }
                _ => {}
            }
        }
    }
    let dst = std::path::Path::new(STATUS_DIR).join(name);
    let mut copied = Vec::new();
    walk(
        std::path::Path::new("/sys/kernel/sched_ext"),
        &dst.join("kernel/sched_ext"),
        &mut copied,
    );
    eprintln!("gate status: {name}: {}", copied.join(" "));
    assert!(
        dst.join("kernel/sched_ext/state").is_file(),
        "state was not captured"
    );
}

/// `./pandemonium.py status` while the scheduler runs and after it stops: the sched_ext sysfs
/// tree is captured at both moments for the host to read with the real status code; here the
/// Rust mirror of that parsing (preflight) must already agree.
fn layer_status() {
    require_gate_environment();
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    capture_sched_ext("running");
    let root = std::path::Path::new(STATUS_DIR).join("running");
    let st = scx_pandemonium::preflight::sched_ext_state(&root).expect("captured state");
    assert_eq!(st.state, "enabled");
    assert!(st.ops.is_some_and(|o| o.starts_with("pandemonium")));
    sched.stop();
    capture_sched_ext("stopped");
    let root = std::path::Path::new(STATUS_DIR).join("stopped");
    let st = scx_pandemonium::preflight::sched_ext_state(&root).expect("captured state");
    assert_eq!(st.state, "disabled");
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn status() {
    layer_status();
}

// Fault layers (tests/gate_support/faults.rs); the first five took about a minute together at 2
// vCPUs under TCG and exit_dump about 15 s, so full_gate runs them too.

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn kill9() {
    faults::layer_kill9();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn sysrq() {
    faults::layer_sysrq();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn sigterm_load() {
    faults::layer_sigterm_load();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn start_twice() {
    faults::layer_start_twice();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn procdb_faults() {
    faults::layer_procdb_faults();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn exit_dump() {
    faults::layer_exit_dump();
}

#[test]
#[ignore = "needs root and a sched_ext kernel: run with ./pandemonium.py test"]
fn knob_clamp() {
    knobs::layer_knob_clamp();
}
