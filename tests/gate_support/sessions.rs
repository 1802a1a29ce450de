// SPDX-License-Identifier: GPL-2.0-only
//! The kernel's autogroups, for the admin layer: two sessions (setsid, as two terminals) of busy
//! loops in the root cgroup, all on one CPU, one loop in one session and three in the other.
//! With kernel.sched_autogroup_enabled set, each session weighs one nice 0 task, and the lone
//! loop gets half the CPU; with it cleared, every loop weighs the same, and it gets a quarter.

use super::cgroup::{ROOT, hogs_command, join_cgroup, procs_path};
use super::cputime::process_cpu_ns;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Child;
use std::time::Duration;

const SYSCTL: &str = "/proc/sys/kernel/sched_autogroup_enabled";
const WARM: Duration = Duration::from_secs(2);
const WINDOW: Duration = Duration::from_secs(6);
/// Loops in the heavy session; the light one has one.
pub const HEAVY: usize = 3;

/// What the light session's share is with autogroups on and off.
pub const WANT_ON: f64 = 0.5;
pub const WANT_OFF: f64 = 1.0 / (1 + HEAVY) as f64;

/// A session of `n` busy loops (one `pandemonium-tools stress` process) on CPU 0, in the root
/// cgroup: the child leaves the gate's cgroup and session before exec.
fn session(n: usize, name: &str) -> Child {
    let mut cmd = hogs_command(n, name);
    let procs = procs_path(Path::new(ROOT));
    // SAFETY: between fork and exec only async-signal-safe calls (join_cgroup()'s, setsid,
    // sched_setaffinity) on memory allocated before the fork.
    unsafe {
        cmd.pre_exec(move || {
            join_cgroup(&procs)?;
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
        .unwrap_or_else(|e| panic!("starting the {name} session: {e}"))
}

/// Sets the sysctl for as long as it lives, and puts back what was there.
struct Sysctl(String);

impl Sysctl {
    fn set(on: bool) -> Sysctl {
        let old = fs::read_to_string(SYSCTL).unwrap_or_else(|e| {
            panic!("{SYSCTL}: {e} (the guest kernel must have CONFIG_SCHED_AUTOGROUP)")
        });
        fs::write(SYSCTL, if on { "1" } else { "0" })
            .unwrap_or_else(|e| panic!("writing {SYSCTL}: {e}"));
        Sysctl(old)
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let _ = fs::write(SYSCTL, self.0.trim());
    }
}

/// The light session's part of the two sessions' CPU time, with autogroups `on`.
pub fn light_share(on: bool) -> f64 {
    let _sysctl = Sysctl::set(on);
    let mut light = session(1, "gate-ag-light");
    let mut heavy = session(HEAVY, "gate-ag-heavy");
    std::thread::sleep(WARM);
    let (l0, h0) = (process_cpu_ns(light.id()), process_cpu_ns(heavy.id()));
    std::thread::sleep(WINDOW);
    let (l1, h1) = (process_cpu_ns(light.id()), process_cpu_ns(heavy.id()));
    for c in [&mut light, &mut heavy] {
        let _ = c.kill();
        let _ = c.wait();
    }
    let (l, h) = (l1 - l0, h1 - h0);
    l as f64 / (l + h).max(1) as f64
}
