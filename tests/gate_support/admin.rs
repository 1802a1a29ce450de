// SPDX-License-Identifier: GPL-2.0-only
//! The `admin` layer (issue #32): what the administrator set decides CPU shares, as under EEVDF.
//! Every case runs first under EEVDF (nothing attached) and then under scx_pandemonium in the
//! same boot, and is printed as a ratio to the configured value and to EEVDF's figure:
//! - cgroup v2 cpu.weight 100 against 300;
//! - nested weights: 100/100, one side split 1:4 again;
//! - cpu.max "50000 100000" (half a CPU) on a group with hogs on every CPU;
//! - cpu.max "20000 100000" on one hog alone on an idle machine, where nothing else would take
//!   its CPU;
//! - SCHED_IDLE hogs beside plain ones;
//! - nice 0 against nice 19;
//! - two sessions of one and three loops on one CPU, with kernel.sched_autogroup_enabled set
//!   and cleared (sessions.rs).
//!
//! Groups are measured by cpu.stat usage_usec, threads by schedstat. Each group or class runs 2
//! busy loops per CPU, so every side always has work queued.

use super::cgroup::{self, Group};
use super::cputime::{HogSpec, Hogs, Policy, by_label};
use super::sessions;
use super::*;

const WARM: Duration = Duration::from_secs(2);
const WINDOW: Duration = Duration::from_secs(10);
/// The 300/100 case runs longer: EEVDF's own ratio read 2.65-3.50 over 10 s windows at 2 vCPUs
/// (per-CPU group shares follow where the load balancer happens to put the hogs), 3.10 over 15.
const WEIGHT_WINDOW: Duration = Duration::from_secs(15);
/// cpu.weight 300 against 100 gives 3.0 within this fraction.
const WEIGHT_TOL: f64 = 0.10;
/// Nested: each leaf's share of the whole within this much (absolute) of what the weights give
/// it. Absolute, because the light leaf's 0.1 is tens of ms per thread per second, and EEVDF
/// itself gave it 0.087 (-13 %) in a 10 s window; an even split (1/3 each) misses by 0.17-0.23.
const NESTED_TOL: f64 = 0.05;
/// cpu.max "50000 100000": 0.5 CPU within this fraction.
const MAX_TOL: f64 = 0.10;
/// cpu.max "20000 100000" on a lone hog: 0.2 CPU within this fraction.
const ALONE_TOL: f64 = 0.15;
/// The unlimited group beside the capped one gets at least this fraction of what the cap
/// leaves.
const REST_FLOOR: f64 = 0.85;
/// Plain hogs' share of the CPU time beside SCHED_IDLE hogs.
const IDLE_FLOOR: f64 = 0.95;
/// Nice 0 against nice 19: within this fraction of EEVDF's ratio.
const NICE_TOL: f64 = 0.15;
/// What the kernel's weights give nice 0 against nice 19 (sched_prio_to_weight 1024 / 15).
const NICE_WEIGHTS: f64 = 1024.0 / 15.0;
/// The light session's share within this much (absolute) of what the autogroups give it.
const SESSION_TOL: f64 = 0.06;
/// EEVDF's nice ratio counts as stable enough to hold ours to it when its two half-windows
/// agree within this fraction.
const NICE_STABLE: f64 = 0.15;

#[derive(Debug, Clone)]
struct Figures {
    /// usage(weight 300) / usage(weight 100).
    weight_ratio: f64,
    /// Shares of the whole of the nested leaves: A (100), B1 (B's 100), B2 (B's 400).
    nested: [f64; 3],
    /// CPUs' worth of time of the capped group, and of the unlimited one beside it.
    max_cpus: f64,
    rest_cpus: f64,
    /// CPUs' worth of time of one hog in a group capped at 0.2 CPU, with nothing else to run.
    alone_cpus: f64,
    /// Plain hogs' share of the hogs' CPU time beside SCHED_IDLE hogs.
    idle_plain_share: f64,
    /// Mean nice 0 hog's CPU time over the mean nice 19 hog's, whole window and its halves.
    nice_ratio: f64,
    nice_halves: [f64; 2],
    /// The light session's share of the CPU, autogroups on and off.
    session_share: [f64; 2],
}

/// The nested leaves and the share of the whole their weights give them.
const NESTED_LEAVES: [&str; 3] = [
    "a (100)",
    "b/b1 (100 under b's 100)",
    "b/b2 (400 under b's 100)",
];
const NESTED_WANT: [f64; 3] = [0.5, 0.1, 0.4];

fn per_cpu() -> usize {
    online_cpus().len()
}

/// Each group's usage over the window, after the warm-up, and the window's length.
fn usage(groups: &[&Group], window: Duration) -> (Vec<u64>, Duration) {
    std::thread::sleep(WARM);
    let t0 = Instant::now();
    let before: Vec<u64> = groups.iter().map(|g| g.usage_ns()).collect();
    std::thread::sleep(window);
    let after: Vec<u64> = groups.iter().map(|g| g.usage_ns()).collect();
    let took = t0.elapsed();
    (
        after.iter().zip(&before).map(|(a, b)| a - b).collect(),
        took,
    )
}

fn weights() -> f64 {
    let n = 2 * per_cpu();
    let mut light = Group::new(None, "gate-w100");
    light.set("cpu.weight", "100").spawn_hogs(n, "gate-w100");
    let mut heavy = Group::new(None, "gate-w300");
    heavy.set("cpu.weight", "300").spawn_hogs(n, "gate-w300");
    let (u, _) = usage(&[&light, &heavy], WEIGHT_WINDOW);
    u[1] as f64 / u[0].max(1) as f64
}

fn nested() -> [f64; 3] {
    let n = 2 * per_cpu();
    let mut top = Group::new(None, "gate-nest");
    top.enable_cpu_for_children();
    let mut a = Group::new(Some(&top), "a");
    a.set("cpu.weight", "100").spawn_hogs(n, "gate-na");
    let mut b = Group::new(Some(&top), "b");
    b.set("cpu.weight", "100").enable_cpu_for_children();
    let mut b1 = Group::new(Some(&b), "b1");
    b1.set("cpu.weight", "100").spawn_hogs(n, "gate-nb1");
    let mut b2 = Group::new(Some(&b), "b2");
    b2.set("cpu.weight", "400").spawn_hogs(n, "gate-nb2");
    let (u, _) = usage(&[&a, &b1, &b2], WINDOW);
    let total = u.iter().sum::<u64>().max(1) as f64;
    // Locals drop in reverse order, leaves before their parents, as cgroup removal needs.
    [
        u[0] as f64 / total,
        u[1] as f64 / total,
        u[2] as f64 / total,
    ]
}

fn bandwidth() -> (f64, f64) {
    let n = 2 * per_cpu();
    let mut capped = Group::new(None, "gate-max");
    capped
        .set("cpu.max", "50000 100000")
        .spawn_hogs(n, "gate-max");
    let mut rest = Group::new(None, "gate-rest");
    rest.spawn_hogs(n, "gate-rest");
    let (u, took) = usage(&[&capped, &rest], WINDOW);
    let wall = took.as_nanos() as f64;
    (u[0] as f64 / wall, u[1] as f64 / wall)
}

fn bandwidth_alone() -> f64 {
    let mut capped = Group::new(None, "gate-max-alone");
    capped
        .set("cpu.max", "20000 100000")
        .spawn_hogs(1, "gate-max-alone");
    let (u, took) = usage(&[&capped], WINDOW / 2);
    u[0] as f64 / took.as_nanos() as f64
}

fn sched_idle() -> f64 {
    let n = 2 * per_cpu();
    let mut hogs = Hogs::new();
    hogs.add("plain", &HogSpec::plain("gate-plain"), n).add(
        "idle",
        &HogSpec {
            policy: Policy::Idle,
            ..HogSpec::plain("gate-idle")
        },
        n,
    );
    let (ns, _) = hogs.measure(WARM, WINDOW);
    let plain = by_label(&ns, "plain");
    let idle = by_label(&ns, "idle");
    plain as f64 / (plain + idle).max(1) as f64
}

fn nice() -> (f64, [f64; 2]) {
    let n = 2 * per_cpu();
    let mut hogs = Hogs::new();
    hogs.add("nice0", &HogSpec::plain("gate-nice0"), n).add(
        "nice19",
        &HogSpec {
            nice: 19,
            ..HogSpec::plain("gate-nice19")
        },
        n,
    );
    std::thread::sleep(WARM);
    let ratio = |a: &[(&'static str, u64)], b: &[(&'static str, u64)]| {
        let d: Vec<(&'static str, u64)> = a.iter().zip(b).map(|(x, y)| (x.0, x.1 - y.1)).collect();
        let fast = by_label(&d, "nice0");
        let slow = by_label(&d, "nice19");
        fast as f64 / slow.max(1) as f64
    };
    let s0 = hogs.cpu_ns();
    std::thread::sleep(WINDOW / 2);
    let s1 = hogs.cpu_ns();
    std::thread::sleep(WINDOW / 2);
    let s2 = hogs.cpu_ns();
    (ratio(&s2, &s0), [ratio(&s1, &s0), ratio(&s2, &s1)])
}

fn measure_all(who: &str) -> Figures {
    let weight_ratio = weights();
    eprintln!("gate admin: {who}: cpu.weight 300/100 done");
    let nested = nested();
    eprintln!("gate admin: {who}: nested weights done");
    let (max_cpus, rest_cpus) = bandwidth();
    eprintln!("gate admin: {who}: cpu.max done");
    let alone_cpus = bandwidth_alone();
    eprintln!("gate admin: {who}: cpu.max alone done");
    let idle_plain_share = sched_idle();
    eprintln!("gate admin: {who}: SCHED_IDLE done");
    let (nice_ratio, nice_halves) = nice();
    eprintln!("gate admin: {who}: nice done");
    let session_share = [sessions::light_share(true), sessions::light_share(false)];
    eprintln!("gate admin: {who}: autogroups done");
    Figures {
        weight_ratio,
        nested,
        max_cpus,
        rest_cpus,
        alone_cpus,
        idle_plain_share,
        nice_ratio,
        nice_halves,
        session_share,
    }
}

/// The relative spread of two figures: |a - b| / their mean.
fn spread(a: f64, b: f64) -> f64 {
    (a - b).abs() * 2.0 / (a + b).max(f64::MIN_POSITIVE)
}

fn report(e: &Figures, o: &Figures) {
    let n = per_cpu() as f64;
    eprintln!(
        "gate admin: {n} CPUs, {} s windows ({} s for 300/100)",
        WINDOW.as_secs(),
        WEIGHT_WINDOW.as_secs()
    );
    eprintln!(
        "gate admin: cpu.weight 300/100: ours {:.2} ({:.2}x the configured 3.0, {:.2}x EEVDF's \
         {:.2})",
        o.weight_ratio,
        o.weight_ratio / 3.0,
        o.weight_ratio / e.weight_ratio,
        e.weight_ratio
    );
    for (i, leaf) in NESTED_LEAVES.iter().enumerate() {
        eprintln!(
            "gate admin: nested {leaf}: ours {:.3} of the whole ({:.2}x the configured {:.2}, \
             {:.2}x EEVDF's {:.3})",
            o.nested[i],
            o.nested[i] / NESTED_WANT[i],
            NESTED_WANT[i],
            o.nested[i] / e.nested[i],
            e.nested[i]
        );
    }
    eprintln!(
        "gate admin: cpu.max 50000 100000: ours {:.3} CPU ({:.2}x the configured 0.5, {:.2}x \
         EEVDF's {:.3}); the unlimited group {:.2} CPUs (EEVDF {:.2})",
        o.max_cpus,
        o.max_cpus / 0.5,
        o.max_cpus / e.max_cpus,
        e.max_cpus,
        o.rest_cpus,
        e.rest_cpus
    );
    eprintln!(
        "gate admin: cpu.max 20000 100000 on a lone hog: ours {:.3} CPU (EEVDF {:.3})",
        o.alone_cpus, e.alone_cpus
    );
    eprintln!(
        "gate admin: SCHED_IDLE: plain hogs' share ours {:.3} (EEVDF {:.3}; bar {IDLE_FLOOR})",
        o.idle_plain_share, e.idle_plain_share
    );
    eprintln!(
        "gate admin: nice 0/19: ours {:.1} (halves {:.1} / {:.1}), {:.2}x EEVDF's {:.1} (halves \
         {:.1} / {:.1}; ~68 by the kernel's weights 1024/15)",
        o.nice_ratio,
        o.nice_halves[0],
        o.nice_halves[1],
        o.nice_ratio / e.nice_ratio,
        e.nice_ratio,
        e.nice_halves[0],
        e.nice_halves[1]
    );
    for (i, on) in ["on", "off"].iter().enumerate() {
        eprintln!(
            "gate admin: sessions of 1 and {} loops, autogroups {on}: the lone loop's share ours \
             {:.3} (EEVDF {:.3}; the kernel's weights give {:.3})",
            sessions::HEAVY,
            o.session_share[i],
            e.session_share[i],
            SESSION_WANT[i]
        );
    }
}

const SESSION_WANT: [f64; 2] = [sessions::WANT_ON, sessions::WANT_OFF];

/// Which bars `o` misses; `e` is EEVDF's figures, the reference for nice.
fn judge(e: &Figures, o: &Figures) -> Vec<String> {
    let n = per_cpu() as f64;
    let mut failed = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            failed.push(what);
        }
    };
    check(
        (o.weight_ratio / 3.0 - 1.0).abs() <= WEIGHT_TOL,
        format!(
            "cpu.weight 300/100 gave {:.2}, not 3.0 +-{:.0} %",
            o.weight_ratio,
            WEIGHT_TOL * 100.0
        ),
    );
    for ((leaf, got), want) in NESTED_LEAVES.iter().zip(o.nested).zip(NESTED_WANT) {
        check(
            (got - want).abs() <= NESTED_TOL,
            format!("nested {leaf} got {got:.3} of the whole, not {want:.2} +-{NESTED_TOL}"),
        );
    }
    check(
        (o.max_cpus / 0.5 - 1.0).abs() <= MAX_TOL,
        format!(
            "cpu.max 50000 100000 gave {:.3} CPU, not 0.5 +-{:.0} %",
            o.max_cpus,
            MAX_TOL * 100.0
        ),
    );
    check(
        o.rest_cpus >= REST_FLOOR * (n - 0.5),
        format!(
            "the unlimited group beside the capped one got {:.2} CPUs, under {REST_FLOOR} x {:.1}",
            o.rest_cpus,
            n - 0.5
        ),
    );
    check(
        (o.alone_cpus / 0.2 - 1.0).abs() <= ALONE_TOL,
        format!(
            "cpu.max 20000 100000 on a lone hog gave {:.3} CPU, not 0.2 +-{:.0} %",
            o.alone_cpus,
            ALONE_TOL * 100.0
        ),
    );
    check(
        o.idle_plain_share >= IDLE_FLOOR,
        format!(
            "plain hogs got {:.3} of the CPU beside SCHED_IDLE hogs (bar {IDLE_FLOOR})",
            o.idle_plain_share
        ),
    );
    // A nice 19 hog gets ~1.5 % under EEVDF: over 5 s that is tens of ms per thread, and one
    // slice more or less moves the ratio a lot. Ours is held to EEVDF's +-15 % (or nearer the
    // weights: nice_bounds()) only when EEVDF's own two half-windows agree within 15 %;
    // otherwise to the lower side alone (nice 19 taking more than 1.15x what EEVDF gives it),
    // the direction the issue is about.
    let (low, high) = nice_bounds(e.nice_ratio, nice_stable(e));
    check(
        o.nice_ratio >= low && high.is_none_or(|h| o.nice_ratio <= h),
        format!(
            "nice 0/19 ratio {:.1} against EEVDF's {:.1} (allowed {:.1}..{})",
            o.nice_ratio,
            e.nice_ratio,
            low,
            high.map_or("any".into(), |h| format!("{h:.1}"))
        ),
    );
    for (i, on) in ["on", "off"].iter().enumerate() {
        check(
            (o.session_share[i] - SESSION_WANT[i]).abs() <= SESSION_TOL,
            format!(
                "with autogroups {on}, the lone loop's session got {:.3} of the CPU, not \
                 {:.3} +-{SESSION_TOL}",
                o.session_share[i], SESSION_WANT[i]
            ),
        );
    }
    failed
}

/// The nice 0/19 ratios ours may read beside EEVDF's `eevdf` (no upper bound when EEVDF's
/// halves disagree). EEVDF itself lands off the weights' ratio, short of it when its load
/// balancing leaves some CPU with only nice 19 hogs (48 against 68.3 at 2 vCPUs): a ratio
/// between EEVDF's and the weights' (up to NICE_TOL past them) honours nice at least as well.
fn nice_bounds(eevdf: f64, stable: bool) -> (f64, Option<f64>) {
    let (mut low, mut high) = (eevdf * (1.0 - NICE_TOL), eevdf * (1.0 + NICE_TOL));
    if eevdf < NICE_WEIGHTS {
        high = high.max(NICE_WEIGHTS * (1.0 + NICE_TOL));
    } else {
        low = low.min(NICE_WEIGHTS * (1.0 - NICE_TOL));
    }
    (low, stable.then_some(high))
}

fn nice_stable(e: &Figures) -> bool {
    spread(e.nice_halves[0], e.nice_halves[1]) <= NICE_STABLE
}

pub fn layer_admin() {
    require_gate_environment();
    let _cpu = cgroup::enable_cpu_controller();
    let eevdf = measure_all("EEVDF");
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    let ours = measure_all("pandemonium");
    assert!(sched.running(), "scheduler died:\n{}", sched.output());
    sched.stop();
    report(&eevdf, &ours);
    eprintln!(
        "gate admin: nice: EEVDF's halves spread {:.0} %: {}",
        spread(eevdf.nice_halves[0], eevdf.nice_halves[1]) * 100.0,
        if nice_stable(&eevdf) {
            "stable, ours must be within +-15 % of EEVDF's ratio or nearer the weights' 68.3"
        } else {
            "unstable, ours must only reach EEVDF's ratio -15 % (nice 19 taking no more)"
        }
    );
    // EEVDF is not held to the bars, but whether it meets them says how tight they are here.
    for miss in judge(&eevdf, &eevdf) {
        eprintln!("gate admin: EEVDF itself misses: {miss}");
    }
    let failed = judge(&eevdf, &ours);
    assert!(failed.is_empty(), "gate admin:\n{}", failed.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_nearer_the_weights_than_eevdf_passes_and_past_them_does_not() {
        // EEVDF short of the weights: up to 15 % past 68.3 passes, below its own -15 % fails.
        let (low, high) = nice_bounds(48.2, true);
        assert!((low - 41.0).abs() < 0.1);
        assert!((high.unwrap() - 78.5).abs() < 0.1);
        // EEVDF past the weights: down to 15 % under 68.3 passes.
        let (low, high) = nice_bounds(90.0, true);
        assert!((low - 58.0).abs() < 0.1 && (high.unwrap() - 103.5).abs() < 0.1);
        // Halves that disagree leave only the lower bound.
        assert_eq!(nice_bounds(48.2, false).1, None);
    }
}
