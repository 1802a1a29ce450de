// SPDX-License-Identifier: GPL-2.0-only
//! Pieces the gate layers share: the scheduler process, sched_ext state, CPU hotplug, the kernel
//! log, and workloads that count their own progress.
#![allow(dead_code)]

pub mod admin;
pub mod cgroup;
pub mod cgroup_share;
pub mod coop;
pub mod coop_learned;
pub mod cputime;
pub mod emulator;
pub mod faults;
pub mod frames;
pub mod gaming;
pub mod hybrid;
pub mod knobs;
pub mod maps;
pub mod powersave;
pub mod sessions;
pub mod stall;
pub mod standard;
pub mod trust;
pub mod verifier;
pub mod workload;

use scx_pandemonium::preflight::sched_ext_state;
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Loading a large BPF program under software emulation has taken up to ~100 s; allow plenty.
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(400);
pub const DETACH_TIMEOUT: Duration = Duration::from_secs(60);

pub fn sysfs() -> &'static Path {
    Path::new("/sys")
}

pub fn state() -> String {
    sched_ext_state(sysfs())
        .map(|s| s.state)
        .unwrap_or_else(|| "absent".into())
}

pub fn attached_ops() -> Option<String> {
    sched_ext_state(sysfs()).and_then(|s| s.ops)
}

/// Panics with the reason when the gate cannot run here at all: it needs root and sched_ext.
pub fn require_gate_environment() {
    let st = sched_ext_state(sysfs()).unwrap_or_else(|| {
        panic!("the gate needs a kernel with sched_ext; run it with ./pandemonium.py test")
    });
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the gate needs root");
    assert_eq!(
        st.state, "disabled",
        "a sched_ext scheduler is already attached: {:?}",
        st.ops
    );
}

pub fn scheduler_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("PANDEMONIUM_BIN") {
        return PathBuf::from(p);
    }
    for dir in ["/usr/local/bin", env!("CARGO_MANIFEST_DIR")] {
        let p = Path::new(dir).join("scx_pandemonium");
        if p.exists() {
            return p;
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/scx_pandemonium")
}

/// pandemonium-tools (probe, stress): beside the scheduler in the guest, else this checkout's.
pub fn tools_binary() -> PathBuf {
    let installed = Path::new("/usr/local/bin/pandemonium-tools");
    if installed.exists() {
        return installed.to_path_buf();
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/pandemonium-tools")
}

/// Extra scheduler arguments for every layer (e.g. `--no-adaptive`), from PANDEMONIUM_GATE_ARGS.
pub fn gate_args() -> Vec<String> {
    std::env::var("PANDEMONIUM_GATE_ARGS")
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// A running scx_pandemonium whose output goes to a log file, printed when the handle is dropped.
pub struct SchedulerProc {
    child: Child,
    /// Removed when the handle drops, after its output is printed.
    log: tempfile::NamedTempFile,
    reaped: Option<ExitStatus>,
}

impl SchedulerProc {
    pub fn start(extra: &[&str]) -> SchedulerProc {
        Self::start_with_env(extra, &[])
    }

    /// [`SchedulerProc::start`] with extra environment variables.
    pub fn start_with_env(extra: &[&str], env: &[(&str, &Path)]) -> SchedulerProc {
        Self::start_with(extra, |cmd| {
            cmd.envs(env.iter().copied());
        })
    }

    /// [`SchedulerProc::start`] with the command adjusted by `configure` first.
    pub fn start_with(extra: &[&str], configure: impl FnOnce(&mut Command)) -> SchedulerProc {
        let log = tempfile::Builder::new()
            .prefix("pandemonium-gate-")
            .suffix(".log")
            .tempfile()
            .expect("creating the scheduler log");
        let out = log.reopen().expect("opening the scheduler log");
        let err = out.try_clone().unwrap();
        let bin = scheduler_binary();
        let mut cmd = Command::new(&bin);
        cmd.args(gate_args()).args(extra);
        configure(&mut cmd);
        eprintln!("gate: starting {cmd:?}");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        SchedulerProc {
            child,
            log,
            reaped: None,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn output(&self) -> String {
        fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Waits until the kernel reports our scheduler enabled; panics with its output otherwise.
    pub fn wait_attached(&mut self) -> Duration {
        let t0 = Instant::now();
        while t0.elapsed() < ATTACH_TIMEOUT {
            if let Some(st) = self.child.try_wait().unwrap() {
                panic!(
                    "scheduler exited before attaching ({st}):\n{}",
                    self.output()
                );
            }
            if state() == "enabled" && attached_ops().is_some_and(|o| o.starts_with("pandemonium"))
            {
                return t0.elapsed();
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "scheduler did not attach within {:?} (state {}):\n{}",
            ATTACH_TIMEOUT,
            state(),
            self.output()
        );
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(self.pid(), sig) }, 0, "kill({sig})");
    }

    /// Waits for exit, at most `limit`; kills it and panics if it hangs.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                self.reaped = Some(st);
                return st;
            }
            if t0.elapsed() > limit {
                // Where the exit is stuck: our own stack, blocked tasks (w), every CPU (l).
                let stack = fs::read_to_string(format!("/proc/{}/stack", self.pid()));
                eprintln!(
                    "---- scheduler kernel stack ----\n{}",
                    stack.unwrap_or_default()
                );
                for cpu in online_cpus() {
                    eprintln!("cpu{cpu}: {}", probe_cpu(cpu));
                }
                eprintln!(
                    "---- blocked tasks and RCU kthreads ----\n{}",
                    kernel_stacks()
                );
                let _ = fs::write("/proc/sysrq-trigger", "l");
                let _ = fs::write("/proc/sysrq-trigger", "t");
                std::thread::sleep(Duration::from_secs(2));
                let klog = kernel_log();
                eprintln!(
                    "---- runnable or blocked tasks (sysrq-t) ----\n{}",
                    stuck_tasks(&klog)
                );
                eprintln!(
                    "---- kernel log tail ----\n{}",
                    klog[klog.len().saturating_sub(150)..].join("\n")
                );
                eprintln!("scheduler last ran on cpu{:?}", last_cpu_of(self.pid()));
                let _ = self.child.kill();
                panic!(
                    "scheduler did not exit within {limit:?}:\n{}",
                    self.output()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGINT, then a clean exit (status 0) and sched_ext back to disabled.
    pub fn stop(&mut self) {
        self.signal(libc::SIGINT);
        let st = self.wait_exit(DETACH_TIMEOUT);
        assert!(
            st.success(),
            "exit status after SIGINT: {st}\n{}",
            self.output()
        );
        assert!(
            wait_state("disabled", Duration::from_secs(10)),
            "state is {} after exit",
            state()
        );
    }

    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for SchedulerProc {
    fn drop(&mut self) {
        if self.reaped.is_none() && self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            // A process blocked in the kernel (D state) cannot die until that wait ends: give up
            // after a while so a hang fails the gate instead of stalling it until the VM timeout.
            let t0 = Instant::now();
            while self.child.try_wait().ok().flatten().is_none() {
                if t0.elapsed() > Duration::from_secs(10) {
                    eprintln!("scheduler (pid {}) did not die after SIGKILL", self.pid());
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        eprintln!("---- scheduler output ----\n{}---- end ----", self.output());
    }
}

/// Waits until sched_ext reports `want`, at most `limit`.
pub fn wait_state(want: &str, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if state() == want {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

pub fn online_cpus() -> Vec<u32> {
    let text = fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    scx_pandemonium::topology::parse_cpu_list(&text).unwrap()
}

/// How long a CPU hotplug step may take before the gate calls it stuck. Under TCG with the
/// gate's load a step takes well under a second.
pub const HOTPLUG_STEP_LIMIT: Duration = Duration::from_secs(30);

/// Takes `cpu` offline (false) or back online (true); panics if the kernel refuses, or with the
/// kernel stacks of whatever the step waits on if it takes longer than HOTPLUG_STEP_LIMIT.
pub fn set_cpu_online(cpu: u32, online: bool) {
    let path = format!("/sys/devices/system/cpu/cpu{cpu}/online");
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.clone();
    std::thread::spawn(move || {
        let _ = tx.send(fs::write(&p, if online { "1" } else { "0" }));
    });
    match rx.recv_timeout(HOTPLUG_STEP_LIMIT) {
        Ok(res) => res.unwrap_or_else(|e| panic!("writing {path}: {e}")),
        Err(_) => {
            eprintln!(
                "---- cpu{cpu} {} stuck: blocked tasks and RCU kthreads ----\n{}",
                if online { "online" } else { "offline" },
                kernel_stacks()
            );
            panic!("writing {path} did not finish within {HOTPLUG_STEP_LIMIT:?}");
        }
    }
}

/// Kernel log lines since boot, read from /dev/kmsg without blocking.
pub fn kernel_log() -> Vec<String> {
    let mut f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")
        .expect("opening /dev/kmsg");
    let mut lines = Vec::new();
    // One record per read; a record longer than the buffer fails with EINVAL.
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let rec = String::from_utf8_lossy(&buf[..n]);
                // "<prio>,<seq>,<ts>,<flags>;message"
                lines.push(
                    rec.split_once(';')
                        .map_or(&*rec, |(_, m)| m)
                        .trim_end()
                        .to_string(),
                );
            }
            // EPIPE: records were overwritten while we read; carry on from the oldest left.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(_) => break,
        }
    }
    lines
}

/// Whether `cpu` still schedules and fires timers: a thread pinned there sleeps 100 ms.
pub fn probe_cpu(cpu: u32) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: a zeroed cpu_set_t with one bit set, for this thread only.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(100));
        let _ = tx.send(t0.elapsed());
    });
    match rx.recv_timeout(Duration::from_secs(5)) {
        Ok(d) => format!("a pinned 100 ms sleep returned after {d:?}"),
        Err(_) => "a pinned 100 ms sleep did not return within 5 s".into(),
    }
}

/// /proc/PID/stat split into the command name and the fields after it (state first). The name
/// may hold spaces and parentheses, so it ends at the last ')'.
fn proc_stat(pid: &str) -> Option<(String, Vec<String>)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.rfind(')')?;
    let comm = stat[stat.find('(')? + 1..close].to_string();
    Some((
        comm,
        stat[close + 1..]
            .split_whitespace()
            .map(String::from)
            .collect(),
    ))
}

/// The CPU a task last ran on (field 39 of /proc/PID/stat).
pub fn last_cpu_of(pid: i32) -> Option<u32> {
    proc_stat(&pid.to_string())?.1.get(36)?.parse().ok()
}

/// Kernel stacks of every task blocked in D state and of the RCU kthreads: what a grace period
/// that never ends is waiting on.
pub fn kernel_stacks() -> String {
    let mut out = String::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some((comm, fields)) = proc_stat(&pid) else {
            continue;
        };
        let st = fields.first().and_then(|f| f.chars().next()).unwrap_or('?');
        if st == 'D' || st == 'R' || comm.starts_with("rcu") {
            let stack = fs::read_to_string(format!("/proc/{pid}/stack")).unwrap_or_default();
            out.push_str(&format!("{pid} ({comm}) state {st}\n{stack}"));
        }
    }
    out
}

/// The sysrq-t entries of tasks that are runnable (R) or blocked (D), with their stacks.
pub fn stuck_tasks(log: &[String]) -> String {
    let mut out = Vec::new();
    let mut keep = false;
    for l in log {
        if l.starts_with("task:") {
            keep = l.contains(" state:R") || l.contains(" state:D");
        }
        if keep {
            out.push(l.as_str());
        }
    }
    out.join("\n")
}

/// Written to the kernel log around an ejection a layer provokes on purpose (exit_dump): the
/// stall and error-exit lines between them are not complaints.
pub const EXPECTED_EJECTION: (&str, &str) = (
    "pandemonium-gate: a provoked ejection begins",
    "pandemonium-gate: the provoked ejection is over",
);

/// Appends a line to the kernel log.
pub fn kmsg(line: &str) {
    fs::write("/dev/kmsg", line).expect("writing to /dev/kmsg");
}

/// Writes [`EXPECTED_EJECTION`]'s first marker; dropping it, the second, also when the layer
/// panics in between, so the layers after it still see every other ejection.
pub struct ExpectedEjection(());

impl ExpectedEjection {
    pub fn open() -> ExpectedEjection {
        kmsg(EXPECTED_EJECTION.0);
        ExpectedEjection(())
    }
}

impl Drop for ExpectedEjection {
    fn drop(&mut self) {
        let _ = fs::write("/dev/kmsg", EXPECTED_EJECTION.1);
    }
}

/// Kernel log lines that mean the scheduler misbehaved: a stall ejection, an error exit, or a
/// kernel warning. A plain "unregistered from user space" detach is the expected ending, and a
/// SysRq-S disable is the operator's (the sysrq layer asks for one; later layers read the same
/// log since boot), as is a stall ejection between [`EXPECTED_EJECTION`]'s markers. A kernel
/// warning counts everywhere.
pub fn kernel_complaints(log: &[String]) -> Vec<String> {
    let mut expected = false;
    log.iter()
        .filter(|l| {
            if l.contains(EXPECTED_EJECTION.0) {
                expected = true;
            } else if l.contains(EXPECTED_EJECTION.1) {
                expected = false;
            }
            let ejection = l.contains("runnable task stall")
                || (l.contains("sched_ext")
                    && l.contains("disabled (")
                    && !l.contains("unregistered from user space")
                    && !l.contains("disabled by sysrq-S"));
            (ejection && !expected) || l.contains("BUG:") || l.contains("WARNING:")
        })
        .cloned()
        .collect()
}

/// A helper process that holds one thread of another process stopped.
pub struct Frozen(libc::pid_t);

impl Drop for Frozen {
    fn drop(&mut self) {
        // SAFETY: kill and waitpid on our own child; its death detaches ptrace.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            libc::waitpid(self.0, std::ptr::null_mut(), 0);
        }
    }
}

/// Stops thread `tid` of another process for `dur` (at most; less if the process exits first),
/// leaving its other threads running: a helper process seizes that thread alone with ptrace and
/// interrupts it. A process of its own, because a tracer receives its tracee's stops through
/// waitpid, and std's `Child::try_wait` here would take a stop for the exit of the scheduler
/// (our child). Returns once the thread is stopped; panics if it could not be.
pub fn freeze_thread(tid: libc::pid_t, dur: Duration) -> Frozen {
    let mut ready = [0 as libc::c_int; 2];
    // SAFETY: pipe(2) into a two-element array.
    assert_eq!(unsafe { libc::pipe(ready.as_mut_ptr()) }, 0, "pipe");
    let secs = dur.as_secs().max(1) as libc::c_uint;
    // SAFETY: the child of a threaded process calls only async-signal-safe functions (raw
    // system calls) and leaves with _exit.
    let helper = unsafe { libc::fork() };
    assert!(helper >= 0, "fork: {}", std::io::Error::last_os_error());
    if helper == 0 {
        // SAFETY: as above.
        unsafe { libc::_exit(hold_stopped(tid, secs, ready[1])) };
    }
    // SAFETY: closing our copy of the write end; reading one byte into a local.
    let said = unsafe {
        libc::close(ready[1]);
        let mut b = 0u8;
        let n = libc::read(ready[0], (&raw mut b).cast(), 1);
        libc::close(ready[0]);
        (n == 1).then_some(b)
    };
    let frozen = Frozen(helper);
    assert_eq!(
        said,
        Some(0),
        "could not stop thread {tid} with ptrace (helper step {said:?})"
    );
    frozen
}

/// The helper's side of [`freeze_thread`]: seize, interrupt, report on `ready` (0, or the step
/// that failed), then wait until the tracee exits or the alarm ends the helper, whose exit
/// detaches and resumes the thread.
unsafe fn hold_stopped(tid: libc::pid_t, secs: libc::c_uint, ready: libc::c_int) -> libc::c_int {
    let tell = |step: u8| {
        // SAFETY: writing one byte from a local to our pipe.
        unsafe { libc::write(ready, (&raw const step).cast(), 1) };
        libc::c_int::from(step)
    };
    // SAFETY: plain system calls on the target thread.
    unsafe {
        let none = std::ptr::null_mut::<libc::c_void>();
        // Set first: a step that hangs ends with the helper too.
        libc::alarm(secs);
        if libc::ptrace(libc::PTRACE_SEIZE, tid, none, none) != 0 {
            return tell(1);
        }
        if libc::ptrace(libc::PTRACE_INTERRUPT, tid, none, none) != 0 {
            return tell(2);
        }
        let mut status = 0;
        if libc::waitpid(tid, &mut status, libc::__WALL) != tid {
            return tell(3);
        }
        tell(0);
        // Further stops (a signal on its way to the thread) stay stopped too.
        loop {
            let r = libc::waitpid(tid, &mut status, libc::__WALL);
            if r < 0 || libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                return 0;
            }
        }
    }
}

/// Figures as the layers log them side by side: each formatted, "a / b / c".
pub fn slashed<T>(items: impl IntoIterator<Item = T>, fmt: impl Fn(T) -> String) -> String {
    items.into_iter().map(fmt).collect::<Vec<_>>().join(" / ")
}
