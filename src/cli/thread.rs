// SPDX-License-Identifier: GPL-2.0-only
//! Per-thread attributes the scheduler sees: comm (what it classifies by), timer slack, CPU
//! affinity and nice. Everything acts on the calling thread only, so a tool running inside the
//! gate's test process changes nothing but its own thread, and restores what it can.

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::sys::prctl;
use nix::unistd::{Pid, gettid};
use std::ffi::{CStr, CString};
use std::io;

/// The kernel's comm is 16 bytes including the NUL.
pub(crate) const COMM_MAX: usize = 15;

/// Rejects a name the kernel would silently truncate or could not store, with the reason.
pub(crate) fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("thread name is empty".into());
    }
    if name.len() > COMM_MAX {
        return Err(format!(
            "thread name {name:?} is {} bytes; the kernel keeps at most {COMM_MAX} bytes of a \
             comm, and the scheduler would see a truncated name",
            name.len()
        ));
    }
    if name.contains('\0') {
        return Err(format!("thread name {name:?} contains NUL"));
    }
    Ok(())
}

/// Restores the calling thread's previous comm when dropped.
pub(crate) struct NameGuard {
    old: CString,
}

/// The calling thread's comm. Not nix's `prctl::get_name`: in 0.31 it hands the kernel a shared
/// reference to an immutable buffer, so an optimised build may read the zeros it started with
/// (a release build here did).
fn current_name() -> io::Result<CString> {
    let mut buf = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL included, into the buffer it is given.
    if unsafe { libc::prctl(libc::PR_GET_NAME, buf.as_mut_ptr() as libc::c_ulong) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let name = CStr::from_bytes_until_nul(&buf).map_err(io::Error::other)?;
    Ok(name.to_owned())
}

/// Sets the calling thread's comm (prctl(PR_SET_NAME)); `name` must pass `validate_name`.
pub(crate) fn set_name(name: &str) -> io::Result<NameGuard> {
    let new = CString::new(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let old = current_name()?;
    prctl::set_name(&new)?;
    Ok(NameGuard { old })
}

impl Drop for NameGuard {
    fn drop(&mut self) {
        let _ = prctl::set_name(&self.old);
    }
}

/// Restores the calling thread's previous timer slack when dropped.
pub(crate) struct SlackGuard {
    old: libc::c_ulong,
}

/// Sets the calling thread's timer slack (`ns` > 0; the kernel reads 0 as "reset to default").
pub(crate) fn set_timer_slack(ns: u64) -> io::Result<SlackGuard> {
    let old = prctl::get_timerslack()? as libc::c_ulong;
    prctl::set_timerslack(ns as libc::c_ulong)?;
    Ok(SlackGuard { old })
}

impl Drop for SlackGuard {
    fn drop(&mut self) {
        let _ = prctl::set_timerslack(self.old);
    }
}

/// CPUs the calling thread may run on, ascending. On a plain host that is every online CPU; in a
/// container or under `taskset` it is the subset we can actually load.
pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(0))?;
    Ok((0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect())
}

/// Pins the calling thread to `cpu`.
pub(crate) fn pin_to(cpu: usize) -> io::Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu)?;
    // Pid 0 is the calling thread.
    sched_setaffinity(Pid::from_raw(0), &set)?;
    Ok(())
}

/// Sets the calling thread's nice value. Linux keeps nice per thread, so this leaves the rest of
/// the process alone. Lowering it below the current value needs CAP_SYS_NICE.
pub(crate) fn set_nice(nice: i32) -> io::Result<()> {
    // nix has no setpriority.
    // SAFETY: a plain syscall on the calling thread's id.
    let rc =
        unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid().as_raw() as libc::id_t, nice) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> String {
        current_name().unwrap().to_string_lossy().into_owned()
    }

    #[test]
    fn name_validation() {
        assert!(validate_name("pnd-probe").is_ok());
        assert!(validate_name("exactly15bytes!").is_ok());
        assert!(validate_name("").unwrap_err().contains("empty"));
        assert!(
            validate_name("sixteen-bytes-xx")
                .unwrap_err()
                .contains("15 bytes")
        );
        assert!(validate_name("a\0b").unwrap_err().contains("NUL"));
    }

    #[test]
    fn name_and_slack_are_restored() {
        std::thread::spawn(|| {
            let before = name();
            {
                let _g = set_name("cli-name-test").unwrap();
                assert_eq!(name(), "cli-name-test");
            }
            assert_eq!(name(), before);

            let slack = || prctl::get_timerslack().unwrap();
            let old = slack();
            {
                let _g = set_timer_slack(1).unwrap();
                assert_eq!(slack(), 1);
            }
            assert_eq!(slack(), old);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn allowed_cpus_is_not_empty() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
    }
}
