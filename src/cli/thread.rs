// SPDX-License-Identifier: GPL-2.0-only
//! Per-thread attributes the scheduler sees: comm (what it classifies by), timer slack, CPU
//! affinity and nice. Everything acts on the calling thread only, so a tool running inside the
//! gate's test process changes nothing but its own thread, and restores what it can.

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

fn os_result(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Restores the calling thread's previous comm when dropped.
pub(crate) struct NameGuard {
    old: [u8; 16],
}

/// Sets the calling thread's comm (prctl(PR_SET_NAME)); `name` must pass `validate_name`.
pub(crate) fn set_name(name: &str) -> io::Result<NameGuard> {
    let mut old = [0u8; 16];
    let mut new = [0u8; 16];
    new[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: both buffers are 16 bytes, what PR_GET_NAME/PR_SET_NAME read and write; `new` is
    // NUL-terminated because the name is at most 15 bytes.
    unsafe {
        os_result(libc::prctl(
            libc::PR_GET_NAME,
            old.as_mut_ptr() as libc::c_ulong,
        ))?;
        os_result(libc::prctl(
            libc::PR_SET_NAME,
            new.as_ptr() as libc::c_ulong,
        ))?;
    }
    Ok(NameGuard { old })
}

impl Drop for NameGuard {
    fn drop(&mut self) {
        // SAFETY: `old` holds the NUL-terminated 16-byte name PR_GET_NAME returned.
        unsafe { libc::prctl(libc::PR_SET_NAME, self.old.as_ptr() as libc::c_ulong) };
    }
}

/// Restores the calling thread's previous timer slack when dropped.
pub(crate) struct SlackGuard {
    old: libc::c_ulong,
}

/// Sets the calling thread's timer slack (`ns` > 0; the kernel reads 0 as "reset to default").
pub(crate) fn set_timer_slack(ns: u64) -> io::Result<SlackGuard> {
    // SAFETY: PR_GET_TIMERSLACK/PR_SET_TIMERSLACK take and return plain integers.
    let old = unsafe { os_result(libc::prctl(libc::PR_GET_TIMERSLACK))? } as libc::c_ulong;
    unsafe { os_result(libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong))? };
    Ok(SlackGuard { old })
}

impl Drop for SlackGuard {
    fn drop(&mut self) {
        // SAFETY: as in set_timer_slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, self.old) };
    }
}

/// CPUs the calling thread may run on, ascending. On a plain host that is every online CPU; in a
/// container or under `taskset` it is the subset we can actually load.
pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        os_result(libc::sched_getaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        ))?;
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Pins the calling thread to `cpu`.
pub(crate) fn pin_to(cpu: usize) -> io::Result<()> {
    // SAFETY: as in allowed_cpus; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        os_result(libc::sched_setaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        ))?;
    }
    Ok(())
}

/// Sets the calling thread's nice value. Linux keeps nice per thread, so this leaves the rest of
/// the process alone. Lowering it below the current value needs CAP_SYS_NICE.
pub(crate) fn set_nice(nice: i32) -> io::Result<()> {
    // SAFETY: plain syscalls on the calling thread's id.
    unsafe {
        let tid = libc::gettid();
        os_result(libc::setpriority(
            libc::PRIO_PROCESS,
            tid as libc::id_t,
            nice,
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current_name() -> String {
        let mut buf = [0u8; 16];
        unsafe { libc::prctl(libc::PR_GET_NAME, buf.as_mut_ptr() as libc::c_ulong) };
        let n = buf.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&buf[..n]).into_owned()
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
            let before = current_name();
            {
                let _g = set_name("cli-name-test").unwrap();
                assert_eq!(current_name(), "cli-name-test");
            }
            assert_eq!(current_name(), before);

            let slack = || unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
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
