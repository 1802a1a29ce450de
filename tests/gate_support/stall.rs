// SPDX-License-Identifier: GPL-2.0-only
//! Gate layers for stall and starvation control: interactive latency under saturation (measured
//! against EEVDF in the same boot), oversubscribed contention, a fork storm, and long-runner
//! starvation. Bounds are generous for software emulation (guest code runs 5-12x slower and a
//! vCPU waits its turn in QEMU's round-robin); the figures are logged for the closing notes.

use super::cputime::{HogSpec, Hogs, Policy, by_label};
use super::emulator::{StopWatcher, Stops};
use super::workload::{Mix, assert_all_progressed, worst_gap};
use super::*;
use scx_pandemonium::cli::probe::{self, Pacing, ProbeConfig, ProbeReport};
use scx_pandemonium::cli::stats::percentile;
use scx_pandemonium::cli::stress::{self, Load, StressConfig};
use scx_pandemonium::longest_wait;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const MS: u64 = 1_000_000;

fn hogs(n: usize) -> stress::Running {
    let mut cfg = StressConfig::new(n);
    cfg.load = Load::LongRunner;
    cfg.name = Some("gate-hog".into());
    stress::start(&cfg).expect("starting the CPU hogs")
}

/// A probe sleeping 1-5 ms at random, like an input or audio thread.
fn interactive_probe(secs: u64) -> ProbeConfig {
    ProbeConfig {
        pacing: Pacing::Range {
            min_ns: MS,
            max_ns: 5 * MS,
        },
        duration_ns: Some(secs * 1000 * MS),
        name: Some("gate-probe".into()),
        ..ProbeConfig::default()
    }
}

fn probe_under_hogs(secs: u64) -> ProbeReport {
    let load = hogs(2 * online_cpus().len());
    let rep = probe::measure(&interactive_probe(secs)).expect("probe");
    load.finish().expect("stopping the hogs");
    rep
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// How many times a layer measures our side; it is judged by the run with the median P99.
const OUR_RUNS: usize = 3;

/// `measure` run [`OUR_RUNS`] times: the report with the median P99, and every run's P99. The
/// probe counts each period a late wake swallowed as one more late sample (coordinated
/// omission), so one stall of the emulator, which the scheduler cannot shorten (a vCPU waiting
/// out QEMU's round robin, the host running another VM), becomes dozens of samples near its
/// length: with 1-5 ms periods one 134 ms stall leaves ~45 samples between 134 ms and 0, and the
/// P99 of 2,000 samples reads ~70 ms where the storm's is otherwise 12-24 ms. A median of three
/// is moved by a scheduler that is slow in two runs, not by one stall.
fn median_run(mut measure: impl FnMut() -> ProbeReport) -> (ProbeReport, Vec<u64>) {
    let mut runs: Vec<ProbeReport> = (0..OUR_RUNS).map(|_| measure()).collect();
    let p99s = runs.iter().map(|r| r.p99_ns).collect();
    runs.sort_by_key(|r| r.p99_ns);
    (runs.swap_remove(OUR_RUNS / 2), p99s)
}

/// With every CPU saturated by hogs, the probe's P99 (median of three runs: median_run()) stays
/// far below the hogs' 20 ms batch slice, and is reported next to EEVDF's in the same boot (EEVDF
/// first and last: TCG drifts).
pub fn layer_latency() {
    require_gate_environment();
    let secs = 6;
    let eevdf_a = probe_under_hogs(secs);
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    // Let the hogs be classified before measuring.
    let warm = hogs(2 * online_cpus().len());
    std::thread::sleep(Duration::from_secs(2));
    warm.finish().unwrap();
    let before = maps::read_stats();
    let (pand, p99s) = median_run(|| probe_under_hogs(secs));
    let (after, knobs) = (maps::read_stats(), maps::read_knobs());
    let profile = maps::read_profiles().remove("gate-probe");
    sched.stop();
    let eevdf_b = probe_under_hogs(secs);

    let eevdf_p99 = (eevdf_a.p99_ns + eevdf_b.p99_ns) / 2;
    eprintln!(
        "gate latency: probe P99 under {} hogs: pandemonium {:.0} us (median of {}; p50 {:.0}, \
         max {:.0}, n {}); EEVDF {:.0} / {:.0} us (first / last); ratio {:.2}",
        2 * online_cpus().len(),
        us(pand.p99_ns),
        slashed(&p99s, |&n| format!("{:.0}", us(n))),
        us(pand.p50_ns),
        us(pand.max_ns),
        pand.count,
        us(eevdf_a.p99_ns),
        us(eevdf_b.p99_ns),
        pand.p99_ns as f64 / eevdf_p99.max(1) as f64
    );
    let d = |f: fn(&scx_pandemonium::bpf_intf::Stats) -> u64| f(&after) - f(&before);
    eprintln!(
        "gate latency: while measuring: {} tick preemptions, {} wakeup preemptions, {} rescues; \
         wakeups {}: {} to an idle CPU, {} queued shared, {} per-CPU, {} pinned; \
         probe profile {profile:?}; knobs {knobs:?}",
        d(|s| s.nr_preempt),
        d(|s| s.nr_hard_kicks),
        d(|s| s.nr_overflow_rescue),
        d(|s| s.nr_enq_wakeup),
        d(|s| s.nr_idle_hits + s.nr_soft_kicks),
        d(|s| s.nr_shared),
        d(|s| s.nr_pcpu),
        d(|s| s.nr_pinned),
    );
    assert!(pand.count > 100, "too few probe samples: {}", pand.count);
    // Under single-threaded TCG every vCPU waits its turn in QEMU's round-robin, which sets a
    // latency floor that grows with the vCPU count (EEVDF's P99 is ~5-14 ms at 2 vCPUs, ~20-41
    // ms at 4) and makes the P99 of 2,000 samples move by a third between runs for both. Wakeups
    // preempt at once (p50 1.6 ms at 2 vCPUs), and the P99 measured 0.5-1.3x EEVDF's in seven
    // runs on 2026-11-25 (2 and 4 vCPUs): a bound at the worse bracket failed one run in four
    // on noise alone. 1.5x the worse bracket, as the responsiveness and interactive layers use,
    // still fails the old code's whole BATCH slice (3-4x). The figures are bench-scale's job.
    let bound = eevdf_a.p99_ns.max(eevdf_b.p99_ns) * 3 / 2;
    assert!(
        pand.p99_ns < bound,
        "probe P99 {:.0} us exceeds the bound {:.0} us",
        us(pand.p99_ns),
        us(bound)
    );
}

/// 4x oversubscribed mixed load: everything makes progress, nobody waits a second, and the
/// overflow rescue is what keeps it so.
pub fn layer_contention() {
    require_gate_environment();
    let n = online_cpus().len();
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    let before = maps::read_stats();
    let mut mix = Mix::new();
    mix.hogs(3 * n)
        .sleeper(
            "gate-sleeper",
            Duration::from_millis(2),
            Duration::from_micros(300),
        )
        .ping_pong()
        .fork_loop();
    let reports = mix.run_for(Duration::from_secs(30), |_| {});
    let after = maps::read_stats();
    let rescues = (after.nr_overflow_rescue - before.nr_overflow_rescue)
        + (after.nr_starvation_rescue - before.nr_starvation_rescue);
    // The forker's gap spans a whole fork + exec + exit of a new process, several scheduling
    // rounds; every other worker's gap is a single wait.
    let is_cycle = |name: &str| name == "forker";
    let worst = worst_gap(&reports, |r| !is_cycle(&r.name));
    let cycle = worst_gap(&reports, |r| is_cycle(&r.name));
    assert_all_progressed("contention", &reports);
    eprintln!(
        "gate contention: {} tasks on {n} CPUs, worst wait {worst:?}, slowest fork+exec cycle \
         {cycle:?}, {rescues} rescues",
        reports.len()
    );
    assert!(worst < Duration::from_secs(1), "a task waited {worst:?}");
    assert!(
        cycle < Duration::from_secs(3),
        "fork+exec cycle took {cycle:?}"
    );
    assert!(rescues > 0, "no overflow rescue under 4x oversubscription");
    assert!(sched.running(), "scheduler exited:\n{}", sched.output());
    sched.stop();
    let complaints = kernel_complaints(&kernel_log());
    assert!(complaints.is_empty(), "{}", complaints.join("\n"));
}

/// A fork/exec storm beside the probe: the probe stays responsive (the median of three storms'
/// P99s: median_run()) and the storm completes.
pub fn layer_responsiveness() {
    require_gate_environment();
    let eevdf_a = probe_during_storm();
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    let (pand, p99s) = median_run(probe_during_storm);
    sched.stop();
    let eevdf_b = probe_during_storm();
    eprintln!(
        "gate responsiveness: probe P99 {:.0} us (median of {}), max {:.0} us (n {}) during \
         {STORM_SPAWNS} fork/execs; EEVDF {:.0} / {:.0} us (first / last)",
        us(pand.p99_ns),
        slashed(&p99s, |&n| format!("{:.0}", us(n))),
        us(pand.max_ns),
        pand.count,
        us(eevdf_a.p99_ns),
        us(eevdf_b.p99_ns)
    );
    assert!(pand.count > 100, "too few probe samples: {}", pand.count);
    // The emulation floor grows with the vCPU count (see layer_latency), and a loaded host
    // stretches it further for both schedulers: 8 ms per vCPU or 1.5x the worse EEVDF bracket.
    let floor = 8 * MS * online_cpus().len() as u64;
    let bound = floor.max(eevdf_a.p99_ns.max(eevdf_b.p99_ns) * 3 / 2);
    assert!(
        pand.p99_ns < bound,
        "probe P99 {:.0} us during the storm exceeds {:.0} us",
        us(pand.p99_ns),
        us(bound)
    );
}

const STORM_SPAWNS: usize = 600;

/// The interactive probe while four threads fork/exec `true` STORM_SPAWNS times in all; the
/// storm must complete.
fn probe_during_storm() -> ProbeReport {
    let storm: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..STORM_SPAWNS / 4 {
                    let st = std::process::Command::new("true")
                        .status()
                        .expect("spawning true");
                    assert!(st.success());
                }
            })
        })
        .collect();
    let rep = probe::measure(&interactive_probe(6)).expect("probe");
    let t0 = std::time::Instant::now();
    for t in storm {
        t.join().expect("a storm thread failed");
    }
    eprintln!(
        "gate responsiveness: storm finished {:.1} s after the probe",
        t0.elapsed().as_secs_f64()
    );
    rep
}

/// A CPU-bound program of about half a second under TCG: a shell counting, as a launched
/// program's start is one burst.
fn run_counter() -> Duration {
    let t0 = Instant::now();
    let st = Command::new("sh")
        .args(["-c", "i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done"])
        .status()
        .expect("running sh");
    assert!(st.success(), "the counting shell failed: {st}");
    t0.elapsed()
}

/// What busy loops get beside fork/exit chains, and a CPU-bound launch beside both.
struct ChainShare {
    /// The loops' CPU time over the window, as a fraction of every CPU's.
    loops: f64,
    /// [`run_counter`] alone, then beside the loops and chains.
    alone: Duration,
    launch: Duration,
    /// Links per second, over both chains and the window.
    forks: f64,
    /// The 99th percentile of a link's time, from its fork to its reaping.
    link_p99: Duration,
}

/// 2 busy loops per CPU beside one chain per CPU (a thread that runs `true` and waits for it,
/// in a loop: a shell looping over a short command). Fair shares are 2/3 of the CPU for the
/// loops and 1/3 for the chains, each chain being one runnable task at a time.
fn chain_share(n: usize) -> ChainShare {
    let alone = run_counter();
    let mut loops = Hogs::new();
    loops.add("loop", &HogSpec::plain("gate-loop"), 2 * n);
    let stop = Arc::new(AtomicBool::new(false));
    let links = Arc::new(AtomicU64::new(0));
    let chains: Vec<_> = (0..n)
        .map(|_| {
            let (stop, links) = (stop.clone(), links.clone());
            std::thread::spawn(move || {
                let mut took = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    let st = Command::new("true").status().expect("running `true`");
                    assert!(st.success(), "`true` failed: {st}");
                    took.push(t0.elapsed());
                    links.fetch_add(1, Ordering::Relaxed);
                }
                took
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let links0 = links.load(Ordering::Relaxed);
    let (ns, took) = loops.measure(Duration::ZERO, Duration::from_secs(5));
    let forks = (links.load(Ordering::Relaxed) - links0) as f64 / took.as_secs_f64();
    let launch = run_counter();
    stop.store(true, Ordering::Relaxed);
    let mut link_ns: Vec<u64> = chains
        .into_iter()
        .flat_map(|c| c.join().expect("a chain thread panicked"))
        .map(|d| d.as_nanos() as u64)
        .collect();
    link_ns.sort_unstable();
    let link_p99 =
        Duration::from_nanos(percentile(&link_ns, 0.99).expect("no link of a chain finished"));
    ChainShare {
        loops: by_label(&ns, "loop") as f64 / (took.as_nanos() as f64 * n as f64),
        alone,
        launch,
        forks,
        link_p99,
    }
}

/// Below the loops' fair 2/3 by the margin TCG's noise needs (they read 0.56-0.64 at 2 and 4
/// vCPUs, EEVDF 0.63-0.75); before the chains were charged as a whole they got 0.16 here at 2
/// vCPUs (EEVDF 0.66 in the same boot).
const CHAIN_LOOPS_MIN: f64 = 0.4;
/// The launch's time over its time alone, against the same under EEVDF in the same boot. Its fair
/// share is about 1 / (3 + 1/n) of a CPU, but what the chains' fork and exec cost the kernel moves
/// EEVDF's own figure (3-4x in a shell's storm under tcg-icount, 7-9x here under tcg-single);
/// before the chains were charged as a whole it took 30x here where EEVDF took 9x. All are read
/// against the fastest lone run: the counter's work is the same under either class,
/// and a lone run can only be slowed by the host (one lone run took 1.25 s where the other took
/// 0.58 s, and divided by it EEVDF's slowdown read half its real one).
const CHAIN_LAUNCH_VS_EEVDF: f64 = 2.0;
/// A link's P99 against the worse of EEVDF's first and last in the same boot. A link that outran
/// its share waits for the BATCH work below its vtime (chain_ahead()), so how far ahead the mark
/// lets a chain run sets this: 1.06-1.28x here at 2 vCPUs; with the mark at a lag cap and a whole
/// batch slice, 1.84-2.12x. One run of ours against one of EEVDF read 1.63x on drift alone (46
/// links/s against 72), hence the median and the brackets.
const CHAIN_LINK_P99_VS_EEVDF: f64 = 1.6;

impl ChainShare {
    /// Each figure's median over `runs`, so that one emulator stall, which moves one run's link
    /// P99 and launch by tens of milliseconds, does not decide the layer (median_run()).
    fn median(runs: &[ChainShare]) -> ChainShare {
        fn mid<T: Copy + PartialOrd>(runs: &[ChainShare], f: impl Fn(&ChainShare) -> T) -> T {
            let mut v: Vec<T> = runs.iter().map(f).collect();
            v.sort_by(|a, b| a.partial_cmp(b).expect("a figure is NaN"));
            v[v.len() / 2]
        }
        ChainShare {
            loops: mid(runs, |c| c.loops),
            alone: mid(runs, |c| c.alone),
            launch: mid(runs, |c| c.launch),
            forks: mid(runs, |c| c.forks),
            link_p99: mid(runs, |c| c.link_p99),
        }
    }
}

fn chain_line(c: &ChainShare) -> String {
    format!(
        "loops {:.2} of the CPU, {:.0} links/s (P99 {:.1} ms), a {:.2} s launch took {:.2} s",
        c.loops,
        c.forks,
        c.link_p99.as_secs_f64() * 1000.0,
        c.alone.as_secs_f64(),
        c.launch.as_secs_f64()
    )
}

/// BATCH long-runners beside a steady interactive stream: the long-runners are never starved
/// (the upstream design once left them 19-29 s without a CPU at 2 CPUs). Beside fork/exit
/// chains, busy loops and a CPU-bound launch get near their fair share: each link of a chain is
/// new and short, but the chain as a whole is charged (src/bpf/family.bpf.h).
pub fn layer_starvation() {
    require_gate_environment();
    let n = online_cpus().len();
    // EEVDF first and last, ours three times between (CHAIN_LINK_P99_VS_EEVDF says why).
    let eevdf_a = chain_share(n);
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    let runs: Vec<ChainShare> = (0..OUR_RUNS).map(|_| chain_share(n)).collect();
    sched.stop();
    let eevdf_b = chain_share(n);
    let ours = ChainShare::median(&runs);
    eprintln!(
        "gate starvation: beside {n} fork/exit chains, ours (medians of {}): {}; link P99s {} ms; \
         EEVDF first: {}; last: {}",
        runs.len(),
        chain_line(&ours),
        slashed(&runs, |c| format!(
            "{:.1}",
            c.link_p99.as_secs_f64() * 1000.0
        )),
        chain_line(&eevdf_a),
        chain_line(&eevdf_b)
    );
    assert!(
        ours.loops >= CHAIN_LOOPS_MIN,
        "busy loops beside fork/exit chains got {:.2} of the CPU, below {CHAIN_LOOPS_MIN}",
        ours.loops
    );
    let alone = runs
        .iter()
        .chain([&eevdf_a, &eevdf_b])
        .map(|c| c.alone)
        .min()
        .expect("no lone run")
        .as_secs_f64();
    let slowdown = |c: &ChainShare| c.launch.as_secs_f64() / alone;
    let eevdf_slowdown = slowdown(&eevdf_a).max(slowdown(&eevdf_b));
    assert!(
        slowdown(&ours) <= CHAIN_LAUNCH_VS_EEVDF * eevdf_slowdown,
        "a launch beside fork/exit chains took {:.1}x the fastest lone run, over \
         {CHAIN_LAUNCH_VS_EEVDF}x EEVDF's {eevdf_slowdown:.1}x",
        slowdown(&ours),
    );
    let eevdf_link = eevdf_a.link_p99.max(eevdf_b.link_p99);
    assert!(
        ours.link_p99.as_secs_f64() <= CHAIN_LINK_P99_VS_EEVDF * eevdf_link.as_secs_f64(),
        "a link of a fork/exit chain took {:?} at its P99, over {CHAIN_LINK_P99_VS_EEVDF}x \
         EEVDF's {eevdf_link:?}",
        ours.link_p99,
    );
    let secs = std::env::var("PANDEMONIUM_GATE_STARVATION_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        // 30 s is a few thousand turns of each long-runner; the light loops' bound has its own
        // layer (wait_bound).
        .unwrap_or(30);
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    let mut mix = Mix::new();
    mix.hogs(n);
    for i in 0..2 * n {
        mix.sleeper(
            &format!("gate-ia{i}"),
            Duration::from_millis(1),
            Duration::from_micros(200),
        );
    }
    let reports = mix.run_for(Duration::from_secs(secs), |_| {});
    let worst = worst_gap(&reports, |r| r.name.starts_with("hog"));
    assert_all_progressed("starvation", &reports);
    eprintln!("gate starvation: {n} CPUs, {secs} s: long-runners' worst wait {worst:?}");
    assert!(
        worst < Duration::from_secs(2),
        "a long-runner waited {worst:?}"
    );
    sched.stop();
}

/// How long each side of the wait-bound layer runs.
const WAIT_BOUND_SECS: u64 = 20;
/// README's bound is about 2.1 s: 2 s in a queue, then the next dispatch on the node (a batch
/// slice at most). What BPF measures from a task's first queueing to its run is held to that
/// plus room for a dispatching vCPU that the emulator stops for a moment (TCG runs one vCPU at a
/// time).
const WAIT_BOUND_BPF_MAX: Duration = Duration::from_millis(2600);
/// A loop's own view, the longest gap between its progress counts, can hold two bounds: under TCG
/// a vCPU may be stopped just after a rescued task starts on it while the guest clock goes on, so
/// the run is charged with little or no work done and the task queues again (two rescues
/// back to back read 4.02-4.05 s). Still inside the 5 s watchdog. EEVDF: 4.7-11.7 s.
const WAIT_BOUND_GAP_MAX: Duration = Duration::from_millis(4600);

/// The light loops' worst wait, every worker's report and how long the emulator stopped the
/// guest meanwhile, beside 2 nice 0 loops per CPU.
fn light_loops_worst_wait(n: usize) -> (Duration, Vec<super::workload::Report>, Stops) {
    let watcher = StopWatcher::start();
    let mut mix = Mix::new();
    mix.hogs(2 * n)
        .light_hogs(
            n,
            &HogSpec {
                policy: Policy::Idle,
                ..HogSpec::plain("gate-idle")
            },
        )
        .light_hogs(
            n,
            &HogSpec {
                nice: 19,
                ..HogSpec::plain("gate-n19-")
            },
        );
    let reports = mix.run_for(Duration::from_secs(WAIT_BOUND_SECS), |_| {});
    let stops = watcher.finish();
    let worst = worst_gap(&reports, |r| r.name.starts_with("gate-"));
    (worst, reports, stops)
}

/// The wait bound (README): a SCHED_IDLE or nice 19 loop's turn comes after the nice 0 loops
/// beside it have caught up with its vtime charge, which takes seconds; whatever its weight, no
/// runnable task may wait past the bound, well inside sched_ext's 5 s watchdog. EEVDF's figure
/// in the same boot is printed, not held to anything. Both figures may also hold time the host
/// did not run the emulator at all (emulator.rs): that time is added to both bars, and is 0 on
/// a quiet host.
pub fn layer_wait_bound() {
    require_gate_environment();
    let n = online_cpus().len();
    let (eevdf, _, eevdf_stops) = light_loops_worst_wait(n);
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    let (ours, reports, stops) = light_loops_worst_wait(n);
    // Time the emulator did not run counts in BPF's clock and in the loops' alike.
    let bpf_bar = WAIT_BOUND_BPF_MAX + stops.total;
    let gap_max = WAIT_BOUND_GAP_MAX + stops.total;
    // Every task's, since this instance loaded: the loops, the nice 0 ones and the rest.
    let bpf_max = Duration::from_nanos(maps::read_stats().wake_lat_max_ns);
    let who = longest_wait::describe(&maps::read_longest_wait()).unwrap_or_default();
    assert!(sched.running(), "scheduler died:\n{}", sched.output());
    sched.stop();
    assert_all_progressed("wait_bound", &reports);
    eprintln!(
        "gate wait_bound: {n} CPUs, {WAIT_BOUND_SECS} s, {n} SCHED_IDLE and {n} nice 19 loops \
         beside {} nice 0 ones: longest queue wait in BPF {bpf_max:?} (bar \
         {bpf_bar:?}); the light loops' worst gap between progress counts ours {ours:?} (bar \
         {gap_max:?}); bars {WAIT_BOUND_BPF_MAX:?} and {WAIT_BOUND_GAP_MAX:?} plus the {:?} the \
         emulator stopped the guest ({:?} at most); EEVDF {eevdf:?} (guest stopped {:?})",
        2 * n,
        stops.total,
        stops.longest,
        eevdf_stops.total
    );
    eprintln!("gate wait_bound: the longest wait on record: {who}");
    assert!(
        bpf_max < bpf_bar,
        "a task waited {bpf_max:?} in a queue, past the wait bound's {bpf_bar:?}; the longest \
         wait on record: {who}"
    );
    assert!(
        ours < gap_max,
        "a light loop went {ours:?} without progress, past {gap_max:?}"
    );
}
