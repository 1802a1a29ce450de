// SPDX-License-Identifier: GPL-2.0-only
//! Gate layers for faults: the daemon killed with SIGKILL, the kernel disabling the scheduler on
//! SysRq-S, two instances started at once, SIGTERM while the BPF program is still loading, and
//! the process database's file on a read-only directory, a full disk, a planted symlink, a
//! corrupt file and a file the daemon may not read. In every case tasks keep running and nothing is left attached or half-written.

use super::workload::{Mix, Progress};
use super::*;
use scx_pandemonium::cli::stress::{self, Load, StressConfig};
use scx_pandemonium::procdb::{self, LoadOutcome, ProcDb};
use std::ffi::CString;
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn counts(workers: &[Arc<Progress>]) -> Vec<u64> {
    workers
        .iter()
        .map(|w| w.count.load(Ordering::Relaxed))
        .collect()
}

/// A CPU hog and a 1 ms sleeper, the two shapes that must keep running whatever the daemon does.
fn hog_and_sleeper() -> Mix {
    let mut mix = Mix::new();
    mix.named_hog("fault-hog").sleeper(
        "fault-sleeper",
        Duration::from_millis(1),
        Duration::from_micros(50),
    );
    mix
}

/// Runs a hog and a sleeper for `total`, calls `fault` once at `at`, and checks that the kernel
/// is back on its default scheduler within 10 s and that both workers progressed after it.
fn fault_under_load(what: &str, total: Duration, at: Duration, mut fault: impl FnMut()) {
    let mix = hog_and_sleeper();
    let workers = mix.workers.clone();
    let mut at_fault = None;
    let mut disabled_after = None;
    let reports = mix.run_for(total, |t| {
        if at_fault.is_none() && t >= at {
            fault();
            at_fault = Some((t, counts(&workers)));
        }
        if let Some((t0, _)) = at_fault
            && disabled_after.is_none()
            && state() == "disabled"
        {
            disabled_after = Some(t - t0);
        }
    });
    let (_, before) = at_fault.expect("the fault step did not run");
    let took =
        disabled_after.unwrap_or_else(|| panic!("{what}: sched_ext still {} at the end", state()));
    eprintln!(
        "gate {what}: sched_ext disabled {:.0} ms after the fault",
        took.as_secs_f64() * 1e3
    );
    assert!(
        took < Duration::from_secs(10),
        "{what}: detach took {took:?}"
    );
    for (r, b) in reports.iter().zip(before) {
        eprintln!(
            "gate {what}: {:>14} progress {b} at the fault, {} at the end; worst wait {:?}",
            r.name, r.count, r.worst_gap
        );
        assert!(r.count > b, "{what}: {} stopped after the fault", r.name);
        assert!(
            r.worst_gap < Duration::from_secs(5),
            "{what}: {} waited {:?}",
            r.name,
            r.worst_gap
        );
    }
}

/// SIGKILL leaves no chance to detach: the kernel must do it when the link's last fd closes.
pub fn layer_kill9() {
    require_gate_environment();
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    let pid = sched.pid();
    fault_under_load(
        "kill9",
        Duration::from_secs(8),
        Duration::from_secs(3),
        || {
            // SAFETY: plain kill(2) on our own child.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        },
    );
    let st = sched.wait_exit(Duration::from_secs(10));
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&st),
        Some(libc::SIGKILL)
    );
    let complaints = kernel_complaints(&kernel_log());
    assert!(complaints.is_empty(), "{}", complaints.join("\n"));
}

/// The lines our dump ops (src/bpf/dump.bpf.h) add to the kernel's debug dump: the global state,
/// a CPU and a task.
const DUMP_MARKERS: [&str; 3] = [
    "pandemonium: vtime_now ",
    "pandemonium: cpu ",
    "pandemonium: tier ",
];

fn missing_dump_lines(dump: &str) -> Vec<&'static str> {
    DUMP_MARKERS
        .into_iter()
        .filter(|m| !dump.contains(m))
        .collect()
}

/// SysRq-D: the kernel writes its debug dump, ours included, to the sched_ext_dump tracepoint and
/// the scheduler keeps running. It is the dump an error exit hands to the daemon.
fn sysrq_dump() {
    let tracing = Path::new("/sys/kernel/tracing");
    let enable = tracing.join("events/sched_ext/sched_ext_dump/enable");
    let trace = tracing.join("trace");
    fs::write(&trace, "").expect("clearing the trace buffer");
    fs::write(&enable, "1").expect("enabling the sched_ext_dump tracepoint");
    fs::write("/proc/sysrq-trigger", "D").expect("writing D to /proc/sysrq-trigger");
    std::thread::sleep(Duration::from_secs(1));
    let dump = fs::read_to_string(&trace).unwrap_or_default();
    fs::write(&enable, "0").expect("disabling the sched_ext_dump tracepoint");
    fs::write(&trace, "").expect("clearing the trace buffer");
    let ours: Vec<&str> = dump
        .lines()
        .filter(|l| l.contains("pandemonium: "))
        .collect();
    eprintln!(
        "gate sysrq: SysRq-D dumped {} lines, {} of them ours; first: {:?}",
        dump.lines().count(),
        ours.len(),
        ours.first()
    );
    let missing = missing_dump_lines(&dump);
    assert!(
        missing.is_empty(),
        "the SysRq-D dump lacks {missing:?}:\n{dump}"
    );
    assert_eq!(state(), "enabled", "SysRq-D ended the scheduler");
}

/// SysRq-D first: the kernel's debug dump holds our lines, and the scheduler runs on. Then
/// SysRq-S: the kernel disables the scheduler on the user's request. The daemon says why and
/// exits with status 0 (a deliberate detach, so systemd's Restart=on-failure leaves it off).
pub fn layer_sysrq() {
    require_gate_environment();
    let mut sched = SchedulerProc::start(&["-v"]);
    sched.wait_attached();
    sysrq_dump();
    fault_under_load(
        "sysrq",
        Duration::from_secs(8),
        Duration::from_secs(3),
        || {
            fs::write("/proc/sysrq-trigger", "S").expect("writing S to /proc/sysrq-trigger");
        },
    );
    let st = sched.wait_exit(DETACH_TIMEOUT);
    let out = sched.output();
    assert_eq!(st.code(), Some(0), "exit status after SysRq-S:\n{out}");
    assert!(out.contains("SysRq-S"), "no reason in the output:\n{out}");
    assert_eq!(
        out.matches("scheduler attached").count(),
        1,
        "the daemon re-attached after SysRq-S:\n{out}"
    );
    let log = kernel_log();
    assert!(
        log.iter()
            .any(|l| l.contains("disabled (") && l.contains("sysrq")),
        "the kernel log does not show the SysRq-S disable"
    );
    let complaints = kernel_complaints(&log);
    assert!(complaints.is_empty(), "{}", complaints.join("\n"));
}

/// Pins the calling thread to `cpu`.
fn pin_thread(cpu: u32) {
    // SAFETY: a zeroed cpu_set_t with one bit set, for the calling thread only.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(rc, 0, "pinning a thread to cpu{cpu}");
}

/// Whether the kernel serves sched_ext tasks on a CPU that an RT task keeps busy: its deadline
/// server for them (debugfs sched/ext_server, after 6.18). Mounts debugfs if nothing has.
fn has_ext_server() -> bool {
    let sched = Path::new("/sys/kernel/debug/sched");
    if !sched.exists() {
        // SAFETY: mount(2) with constant NUL-terminated strings; a failure changes nothing.
        unsafe {
            libc::mount(
                c"none".as_ptr(),
                c"/sys/kernel/debug".as_ptr(),
                c"debugfs".as_ptr(),
                0,
                std::ptr::null(),
            );
        }
    }
    sched.join("ext_server").exists()
}

/// An error exit prints our state. A SCHED_FIFO busy loop on the last CPU starves a task pinned
/// there, the kernel's watchdog ejects the scheduler for the stall after timeout_ms (5 s), and
/// the daemon prints the kernel's debug dump (`--exit-dump-len`), which must hold the lines of
/// our ops.dump, ops.dump_cpu and ops.dump_task. Only a kernel without the sched_ext deadline
/// server stalls so (README, Known problems); on one with it the layer says so and checks
/// nothing. Its kernel log lines sit between the [`EXPECTED_EJECTION`] markers, which
/// `kernel_complaints` skips: later layers in the same boot read that log too.
pub fn layer_exit_dump() {
    require_gate_environment();
    if has_ext_server() {
        eprintln!(
            "GATE-SKIP exit_dump: this kernel serves sched_ext tasks beside an RT busy loop \
             (sched/ext_server): no stall to eject for"
        );
        return;
    }
    let cpu = *online_cpus().last().expect("no online CPU");
    let mut sched = SchedulerProc::start(&["--exit-dump-len", "262144"]);
    sched.wait_attached();
    let window = ExpectedEjection::open();
    let stop = Arc::new(AtomicBool::new(false));
    let pinned = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("dump-pinned".into())
            .spawn(move || {
                pin_thread(cpu);
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .unwrap()
    };
    std::thread::sleep(Duration::from_millis(200));
    let rt_hog = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("dump-rt-hog".into())
            .spawn(move || {
                pin_thread(cpu);
                if let Err(e) = super::cputime::make_fifo() {
                    panic!("SCHED_FIFO: {e}");
                }
                // Bounded, should the flag never come.
                let t0 = Instant::now();
                while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(40) {
                    std::hint::spin_loop();
                }
            })
            .unwrap()
    };
    let t0 = Instant::now();
    let ejected = wait_state("disabled", Duration::from_secs(30));
    let took = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    rt_hog.join().unwrap();
    pinned.join().unwrap();
    let st = sched.wait_exit(DETACH_TIMEOUT);
    drop(window);
    let out = sched.output();
    assert!(
        ejected,
        "no ejection {took:?} after an RT busy loop took cpu{cpu} from a task pinned there"
    );
    eprintln!(
        "gate exit_dump: ejected {:.1} s after the RT busy loop started on cpu{cpu}; {st}",
        took.as_secs_f64()
    );
    assert!(!st.success(), "an error exit ended with success:\n{out}");
    assert!(
        out.contains("runnable task stall"),
        "the daemon does not name the stall:\n{out}"
    );
    // scx_utils prints the dump between two lines of '='; the daemon's own lines start with
    // "pandemonium: " too, so only what lies between them counts.
    let rule = "=".repeat(80);
    let dump = out
        .split_once("DEBUG DUMP")
        .and_then(|(_, rest)| rest.split(rule.as_str()).nth(1))
        .unwrap_or_else(|| panic!("the daemon printed no debug dump:\n{out}"));
    let ours: Vec<&str> = dump
        .lines()
        .filter(|l| l.contains("pandemonium: "))
        .collect();
    eprintln!(
        "gate exit_dump: {} lines of dump, {} of them ours:\n{}",
        dump.lines().count(),
        ours.len(),
        ours.join("\n")
    );
    let missing = missing_dump_lines(dump);
    assert!(
        missing.is_empty(),
        "the exit dump lacks {missing:?}:\n{out}"
    );
    let complaints = kernel_complaints(&kernel_log());
    assert!(complaints.is_empty(), "{}", complaints.join("\n"));
}

/// SIGTERM while the BPF program is still loading: a clean exit (status 0), nothing attached.
pub fn layer_sigterm_load() {
    require_gate_environment();
    let mut sched = SchedulerProc::start(&[]);
    let t0 = Instant::now();
    while !sched.output().contains("loading BPF program") {
        assert!(
            sched.running(),
            "exited before loading:\n{}",
            sched.output()
        );
        assert!(t0.elapsed() < ATTACH_TIMEOUT, "never started loading");
        std::thread::sleep(Duration::from_millis(20));
    }
    sched.signal(libc::SIGTERM);
    let loaded = sched.output().contains("BPF program loaded");
    let st = sched.wait_exit(ATTACH_TIMEOUT);
    eprintln!(
        "gate sigterm_load: SIGTERM {} the load finished; exit {st}",
        if loaded { "after" } else { "before" }
    );
    assert!(st.success(), "exit after SIGTERM: {st}\n{}", sched.output());
    assert!(
        wait_state("disabled", Duration::from_secs(10)),
        "state {}",
        state()
    );
    let complaints = kernel_complaints(&kernel_log());
    assert!(complaints.is_empty(), "{}", complaints.join("\n"));
}

/// Two instances started together: preflight cannot see the other one while it is still
/// loading, so the kernel's refusal must also end in a clear message. Exactly one attaches and
/// keeps running; the other exits with status 1, names the problem, and does not panic, and
/// the one running still answers on the stats socket (`--monitor`): an instance that never
/// attached must not have taken the socket's path. The second starts once the first is loading
/// its BPF program, so both pass preflight and the first has got as far as it gets before
/// attaching. (There is no second sched_ext scheduler binary in the guest; the `errors` layer
/// covers a start beside an already-attached instance of ours, which the refusal names
/// `pandemonium`.)
pub fn layer_start_twice() {
    require_gate_environment();
    let mut a = SchedulerProc::start(&[]);
    let t0 = Instant::now();
    while !a.output().contains("loading BPF program") {
        assert!(a.running(), "exited before loading:\n{}", a.output());
        assert!(t0.elapsed() < ATTACH_TIMEOUT, "never started loading");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut b = SchedulerProc::start(&[]);
    let t0 = Instant::now();
    let (winner, loser) = loop {
        assert!(t0.elapsed() < ATTACH_TIMEOUT, "neither instance finished");
        match (a.running(), b.running()) {
            (true, false) => break (&mut a, &mut b),
            (false, true) => break (&mut b, &mut a),
            (false, false) => panic!(
                "both instances exited:\n{}\n----\n{}",
                a.output(),
                b.output()
            ),
            (true, true) => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    let st = loser.wait_exit(Duration::from_secs(5));
    let out = loser.output();
    eprintln!("gate start_twice: the second instance said:\n{out}");
    assert_eq!(st.code(), Some(1), "second instance: {st}\n{out}");
    assert!(!out.contains("panicked"), "{out}");
    assert!(
        out.contains("already attached") || out.contains("another sched_ext scheduler"),
        "the refusal does not say another scheduler is attached:\n{out}"
    );
    winner.wait_attached();
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        winner.running(),
        "the first instance died:\n{}",
        winner.output()
    );
    assert_eq!(state(), "enabled");
    let blocks = monitor_blocks(Duration::from_secs(4));
    eprintln!("gate start_twice: --monitor read {blocks} blocks from the running instance");
    assert!(
        blocks >= 2,
        "the running instance's statistics are unreachable after the second one failed"
    );
    winner.stop();
}

/// Runs `scx_pandemonium --monitor 1` for `dur`, stops it with SIGINT, and returns how many
/// statistics blocks it printed; panics with its output unless it exits 0.
pub fn monitor_blocks(dur: Duration) -> usize {
    use std::process::{Command, Stdio};
    let monitor = Command::new(scheduler_binary())
        .args(["--monitor", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting scx_pandemonium --monitor");
    std::thread::sleep(dur);
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(monitor.id() as i32, libc::SIGINT) };
    let out = monitor.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "--monitor exit status {}:\n{stdout}\n{stderr}",
        out.status
    );
    stdout.matches(scx_pandemonium::stats::BLOCK_HEADER).count()
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

fn mount(src: &str, target: &Path, fstype: &str, flags: libc::c_ulong, data: &str) {
    let (s, t, f, d) = (
        CString::new(src).unwrap(),
        cstr(target),
        CString::new(fstype).unwrap(),
        CString::new(data).unwrap(),
    );
    // SAFETY: valid NUL-terminated strings that outlive the call.
    let rc = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, d.as_ptr().cast()) };
    assert_eq!(
        rc,
        0,
        "mount {src} on {}: {}",
        target.display(),
        std::io::Error::last_os_error()
    );
}

fn umount(target: &Path) {
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::umount2(cstr(target).as_ptr(), libc::MNT_DETACH) };
    assert_eq!(rc, 0, "umount {}", target.display());
}

/// Runs the scheduler beside hogs with a fresh name until the daemon has learned their profile
/// (so it has something new to save), calls `during` while it runs, then stops it with SIGINT
/// (asserting exit status 0) and returns its output. The scheduler must survive `during`.
fn run_learning(tag: &str, during: impl FnOnce()) -> String {
    run_learning_as(tag, |_| {}, during)
}

/// Drops the capabilities that let root read and write any file whatever its mode, as
/// pandemonium.service does (it keeps four others), for the scheduler about to be started.
fn without_dac_override(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; the closure touches nothing else.
    unsafe {
        cmd.pre_exec(|| {
            // CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (linux/capability.h).
            for cap in [1 as libc::c_ulong, 2] {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    };
}

/// [`run_learning`] with the scheduler's command adjusted by `configure`.
fn run_learning_as(
    tag: &str,
    configure: impl FnOnce(&mut std::process::Command),
    during: impl FnOnce(),
) -> String {
    let mut sched = SchedulerProc::start_with(&["-v"], configure);
    sched.wait_attached();
    let name = format!("pdb-{tag}");
    // One hog more than CPUs: a hog alone on a CPU keeps it slice after slice without a
    // context switch, and only context switches feed its profile (a lone hog on 4 vCPUs
    // went unprofiled for 60 s in CI). Two sharing a CPU switch every slice.
    let mut cfg = StressConfig::new(online_cpus().len() + 1);
    cfg.load = Load::LongRunner;
    cfg.name = Some(name.clone());
    let load = stress::start(&cfg).expect("starting the hogs");
    let t0 = Instant::now();
    while !maps::read_profiles().contains_key(&name) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{name} was never profiled"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // Two control-loop ticks, so the daemon has read the published profile.
    std::thread::sleep(Duration::from_millis(2500));
    during();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        sched.running(),
        "the scheduler died after the fault:\n{}",
        sched.output()
    );
    load.finish().expect("stopping the hogs");
    sched.stop();
    sched.output()
}

fn entries(path: &Path) -> usize {
    match ProcDb::load(path, procdb::DEFAULT_CAPACITY).1 {
        LoadOutcome::Loaded { entries, .. } => entries,
        other => panic!("{} does not load: {other}", path.display()),
    }
}

/// The process database's file under attack. Each case runs the adaptive scheduler under load
/// and stops it, which saves the database: the scheduler keeps running and exits 0, and the
/// file that was there before is never destroyed or written through.
pub fn layer_procdb_faults() {
    require_gate_environment();
    if gate_args().iter().any(|a| a == "--no-adaptive") {
        eprintln!("gate procdb_faults: BPF-only mode keeps no procdb; nothing to check");
        return;
    }
    let path = procdb::default_path().expect("no procdb path for root");
    let dir = path.parent().unwrap().to_path_buf();
    fs::create_dir_all(&dir).unwrap();
    for e in fs::read_dir(&dir).unwrap().flatten() {
        let _ = fs::remove_file(e.path());
    }

    // A corrupt file is set aside byte for byte, and a good one is written in its place.
    let garbage = b"PANDPDB\0 but not really a database".to_vec();
    fs::write(&path, &garbage).unwrap();
    let out = run_learning("corrupt", || {});
    assert!(
        out.contains("moved it to"),
        "corrupt file not reported:\n{out}"
    );
    let aside: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "set-aside files: {aside:?}");
    assert_eq!(
        fs::read(&aside[0]).unwrap(),
        garbage,
        "the corrupt file changed"
    );
    let n = entries(&path);
    assert!(n > 0, "the new procdb is empty");
    eprintln!("gate procdb_faults: corrupt file set aside, new file has {n} profiles");
    let good = fs::read(&path).unwrap();

    // A read-only directory (even root cannot write through a read-only mount).
    let out = run_learning("ro", || {
        mount(&dir.to_string_lossy(), &dir, "", libc::MS_BIND, "");
        mount(
            "",
            &dir,
            "",
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
            "",
        );
    });
    umount(&dir);
    assert!(
        out.contains("procdb: cannot save"),
        "no save warning:\n{out}"
    );
    assert_eq!(
        fs::read(&path).unwrap(),
        good,
        "read-only: the old file changed"
    );
    eprintln!("gate procdb_faults: read-only directory: save refused, old file intact");

    // A full disk: a tiny tmpfs holding the good file and a filler up to the last byte.
    mount("tmpfs", &dir, "tmpfs", 0, "size=64k,mode=0700");
    fs::write(&path, &good).unwrap();
    let filler = dir.join("filler");
    let mut f = fs::File::create(&filler).unwrap();
    while std::io::Write::write_all(&mut f, &[0u8; 512]).is_ok() {}
    drop(f);
    let out = run_learning("full", || {});
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let kept = fs::read(&path).unwrap();
    umount(&dir);
    assert!(
        out.contains("procdb: cannot save"),
        "no save warning:\n{out}"
    );
    assert_eq!(kept, good, "full disk: the old file changed");
    assert_eq!(
        leftovers.len(),
        2,
        "temp files left on the full disk: {leftovers:?}"
    );
    eprintln!("gate procdb_faults: full disk: save failed, old file intact, no temp left");

    // A file the daemon cannot read (mode 000, and no CAP_DAC_OVERRIDE, as under the unit): it
    // stays as it is, and the learned profiles are not saved over it.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    let out = run_learning_as("eacces", without_dac_override, || {});
    let meta = fs::metadata(&path).unwrap();
    let now = fs::read(&path).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    assert!(
        out.contains("Permission denied") && out.contains("the file stays as it is"),
        "the unreadable file was not reported once as kept:\n{out}"
    );
    assert_eq!(
        out.matches("the file stays as it is").count(),
        1,
        "said more than once:\n{out}"
    );
    assert_eq!(now, good, "unreadable: the file was replaced");
    assert_eq!(
        meta.permissions().mode() & 0o777,
        0,
        "unreadable: the file was replaced"
    );
    eprintln!("gate procdb_faults: unreadable file: reported once, kept byte for byte");

    // A symlink planted at the database's path while root runs: neither followed nor replaced.
    let victim_file = tempfile::NamedTempFile::new().unwrap();
    let victim = victim_file.path();
    fs::write(victim, b"somebody else's file").unwrap();
    let out = run_learning("link", || {
        fs::remove_file(&path).unwrap();
        symlink(victim, &path).unwrap();
    });
    assert!(out.contains("symlink"), "no symlink refusal:\n{out}");
    assert_eq!(fs::read(victim).unwrap(), b"somebody else's file");
    assert!(
        fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    fs::remove_file(&path).unwrap();
    eprintln!("gate procdb_faults: planted symlink: not followed, not replaced");
}
