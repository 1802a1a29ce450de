// SPDX-License-Identifier: GPL-2.0-only
//! The `hybrid` layer: the size-aware placement BPF runs on big.LITTLE and P+E machines, shown in
//! a VM that has no hybrid CPU. The scheduler reads its topology through scx_utils, which reads
//! sysfs under `$SCX_SYSFS_PREFIX` when it is set (the ecosystem's own way to feed it another
//! machine); the test writes there a copy of the guest's CPU and NUMA tree plus a
//! `cpu_capacity` per CPU, half the CPUs 1024 and half 512, as an Arm kernel exports them.
//!
//! Two workers whose tiers differ run beside each other on an otherwise idle guest: a sleeper
//! that wakes every millisecond for 50 us (INTERACTIVE or LAT_CRITICAL) and one that sleeps 1 ms
//! between 200 ms bursts (BATCH). Every wakeup of either is a placement decision, and each worker
//! records the CPU it ran on. (A worker with 40 ms bursts between 2 ms sleeps scored
//! LAT_CRITICAL at most wakeups here: preempted at ~100 Hz by the test's own thread, its wake
//! rate times switch rate outweighed its runtime, so it asked for a big CPU like the sleeper.) The first must land on big CPUs and the second on little
//! ones; then the same with the sizes swapped, so a CPU preferred for any other reason (the lowest
//! id, the one the test thread sleeps on) cannot pass the check both times.

use super::workload::{Mix, Progress};
use super::*;
use scx_pandemonium::bpf_intf::Tier;
use scx_pandemonium::topology::format_cpu_list;
use std::sync::Arc;

const BIG_CAPACITY: u32 = 1024;
const LITTLE_CAPACITY: u32 = 512;
/// Ticks of each worker that must come from CPUs of the size its tier wants.
const MIN_SHARE: f64 = 0.8;
const MEASURE: Duration = Duration::from_secs(8);
const CLASSIFY_LIMIT: Duration = Duration::from_secs(40);
const INTERACTIVE: &str = "hyb-interactive";
const BATCH: &str = "hyb-batch";

/// Copies the regular files under `from` into `to`, `depth` directory levels down. Sysfs holds
/// write-only and unreadable attributes (uevent on some kernels, cpufreq's root-only ones); those
/// are skipped, as are symlinks (the tree's `subsystem`, `driver` and `firmware_node` links lead
/// out of it).
fn copy_tree(from: &Path, to: &Path, depth: u32) {
    fs::create_dir_all(to).unwrap();
    let Ok(entries) = fs::read_dir(from) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let dest = to.join(entry.file_name());
        if kind.is_file() {
            if let Ok(bytes) = fs::read(entry.path()) {
                fs::write(&dest, bytes).unwrap();
            }
        } else if kind.is_dir() && depth > 0 {
            copy_tree(&entry.path(), &dest, depth - 1);
        }
    }
}

fn is_numbered(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The guest's CPU and NUMA sysfs with the given CPUs made big and little.
fn hybrid_sysfs(big: &[u32], little: &[u32]) -> tempfile::TempDir {
    let root = tempfile::Builder::new()
        .prefix("pandemonium-hybrid-")
        .tempdir()
        .unwrap();
    let cpu_from = Path::new("/sys/devices/system/cpu");
    let cpu_to = root.path().join("sys/devices/system/cpu");
    copy_tree(cpu_from, &cpu_to, 0);
    copy_tree(&cpu_from.join("smt"), &cpu_to.join("smt"), 0);
    for entry in fs::read_dir(cpu_from).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_numbered(&name, "cpu") {
            copy_tree(
                &entry.path().join("topology"),
                &cpu_to.join(&name).join("topology"),
                0,
            );
            copy_tree(
                &entry.path().join("cache"),
                &cpu_to.join(&name).join("cache"),
                1,
            );
        }
    }
    let node_from = Path::new("/sys/devices/system/node");
    for entry in fs::read_dir(node_from).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_numbered(&name, "node") {
            continue;
        }
        let node_to = root.path().join("sys/devices/system/node").join(&name);
        copy_tree(&entry.path(), &node_to, 0);
        // A node lists its CPUs as symlinks into the CPU tree; scx_utils reads only their names.
        for cpu in fs::read_dir(entry.path()).unwrap().flatten() {
            let cpu_name = cpu.file_name().to_string_lossy().into_owned();
            if is_numbered(&cpu_name, "cpu") {
                fs::create_dir_all(node_to.join(cpu_name)).unwrap();
            }
        }
    }
    for (cpus, capacity) in [(big, BIG_CAPACITY), (little, LITTLE_CAPACITY)] {
        for cpu in cpus {
            fs::write(
                cpu_to.join(format!("cpu{cpu}/cpu_capacity")),
                format!("{capacity}\n"),
            )
            .unwrap();
        }
    }
    root
}

/// The share of `ticks` (per CPU id) that came from `cpus`, and their total.
fn share_on(ticks: &[u64], cpus: &[u32]) -> (f64, u64) {
    let total: u64 = ticks.iter().sum();
    let on: u64 = cpus.iter().map(|&c| ticks[c as usize]).sum();
    (on as f64 / total.max(1) as f64, total)
}

/// Per-CPU ticks of the interactive and the batch worker.
type Ticks = (Vec<u64>, Vec<u64>);

fn ticks_of(workers: &[Arc<Progress>], name: &str) -> Vec<u64> {
    workers
        .iter()
        .find(|w| w.name == name)
        .unwrap_or_else(|| panic!("no worker {name}"))
        .ticks_per_cpu()
}

/// One attach with `big` and `little` as the machine's sizes: checks the startup log names them,
/// waits for the workers' tiers, then counts where each ran for MEASURE.
fn run_sized(big: &[u32], little: &[u32]) {
    let tree = hybrid_sysfs(big, little);
    let mut sched = SchedulerProc::start_with_env(&["-v"], &[("SCX_SYSFS_PREFIX", tree.path())]);
    sched.wait_attached();
    let (big_list, little_list) = (format_cpu_list(big), format_cpu_list(little));
    let want = format!(
        "cpu sizes: hybrid, big {big_list} (capacity {BIG_CAPACITY}), little {little_list} \
         (capacity {LITTLE_CAPACITY})"
    );
    let out = sched.output();
    assert!(out.contains(&want), "startup log lacks {want:?}:\n{out}");

    let mut mix = Mix::new();
    mix.sleeper(
        INTERACTIVE,
        Duration::from_millis(1),
        Duration::from_micros(50),
    )
    .sleeper(BATCH, Duration::from_millis(1), Duration::from_millis(200));
    let workers = mix.workers.clone();
    let snapshot = || (ticks_of(&workers, INTERACTIVE), ticks_of(&workers, BATCH));
    let mut start: Option<(Duration, Ticks)> = None;
    let mut end = None;
    let mut next_look = Duration::ZERO;
    mix.run_while(|t| {
        if let Some((t0, _)) = &start {
            if t < *t0 + MEASURE {
                return true;
            }
            end = Some(snapshot());
            return false;
        }
        if t >= next_look {
            next_look = t + Duration::from_millis(500);
            let prof = maps::read_profiles();
            let tier = |c: &str| prof.get(c).and_then(|e| Tier::from_u8(e.tier));
            if matches!(
                tier(INTERACTIVE),
                Some(Tier::LatCritical | Tier::Interactive)
            ) && tier(BATCH) == Some(Tier::Batch)
            {
                start = Some((t, snapshot()));
            }
        }
        t < CLASSIFY_LIMIT
    });
    let Some(((t0, (i0, b0)), (i1, b1))) = start.zip(end) else {
        let prof = maps::read_profiles();
        panic!(
            "tiers not reached in {CLASSIFY_LIMIT:?}: {INTERACTIVE} {:?}, {BATCH} {:?}\n{}",
            prof.get(INTERACTIVE),
            prof.get(BATCH),
            sched.output()
        );
    };
    let diff = |a: Vec<u64>, b: Vec<u64>| a.iter().zip(&b).map(|(x, y)| x - y).collect::<Vec<_>>();
    let (inter, batch) = (diff(i1, i0), diff(b1, b0));
    let (inter_big, inter_n) = share_on(&inter, big);
    let (batch_little, batch_n) = share_on(&batch, little);
    eprintln!(
        "gate hybrid: big {big_list}, little {little_list} (tiers after {:.1} s): {INTERACTIVE} \
         on big {:.0} % of {inter_n} wakeups, {BATCH} on little {:.0} % of {batch_n} bursts",
        t0.as_secs_f64(),
        100.0 * inter_big,
        100.0 * batch_little
    );
    assert!(inter_n >= 100 && batch_n >= 20, "too few wakeups to judge");
    assert!(
        inter_big >= MIN_SHARE,
        "{INTERACTIVE} ran on big CPUs for {:.0} % of its wakeups (per CPU: {:?})",
        100.0 * inter_big,
        &inter[..8]
    );
    assert!(
        batch_little >= MIN_SHARE,
        "{BATCH} ran on little CPUs for {:.0} % of its bursts (per CPU: {:?})",
        100.0 * batch_little,
        &batch[..8]
    );
    assert!(sched.running(), "scheduler died:\n{}", sched.output());
    sched.stop();
}

pub fn layer_hybrid() {
    require_gate_environment();
    let cpus = online_cpus();
    assert!(cpus.len() >= 2, "the hybrid layer needs 2 CPUs or more");
    let (low, high) = cpus.split_at(cpus.len() / 2);
    run_sized(low, high);
    run_sized(high, low);
}
