// SPDX-License-Identifier: GPL-2.0-only
//! Checks made before touching BPF, so the common ways to fail end in one clear sentence instead of
//! a libbpf error: not root, a kernel without sched_ext, another scheduler already attached.

use crate::checkout;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// Why the scheduler cannot start here. Each variant's message says what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    NotRoot {
        euid: u32,
    },
    /// `checkout` is the source tree the binary runs from, if any: only there can the project's
    /// VM be offered as a way out.
    NoSchedExt {
        kernel: String,
        checkout: Option<PathBuf>,
    },
    AlreadyAttached {
        name: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotRoot { euid } => write!(
                f,
                "scx_pandemonium must run as root to load a BPF scheduler (running as uid {euid}); \
                 try: sudo scx_pandemonium"
            ),
            Refusal::NoSchedExt { kernel, checkout } => {
                write!(
                    f,
                    "this kernel ({kernel}) has no sched_ext support (/sys/kernel/sched_ext is \
                     missing): scx_pandemonium needs a kernel built with \
                     CONFIG_SCHED_CLASS_EXT=y (Linux 6.12+)"
                )?;
                match checkout {
                    Some(dir) => write!(
                        f,
                        ". To watch the scheduler anyway, run it in the project's VM: cd {} && \
                         ./pandemonium.py vm -- scx_pandemonium -v",
                        dir.display()
                    ),
                    None => write!(
                        f,
                        "; `grep SCHED_CLASS_EXT /boot/config-$(uname -r)` shows whether the \
                         installed kernel has it"
                    ),
                }
            }
            Refusal::AlreadyAttached { name } => write!(
                f,
                "another sched_ext scheduler is already attached: {name}. Stop it first \
                 (e.g. systemctl stop scx.service, or end that process), then start scx_pandemonium"
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// The parts of the system the checks read, injectable so tests can fake any machine.
pub struct System {
    pub sysfs: PathBuf,
    pub euid: u32,
    pub kernel: String,
    pub checkout: Option<PathBuf>,
}

impl System {
    pub fn live() -> System {
        let euid = nix::unistd::geteuid().as_raw();
        let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        System {
            sysfs: PathBuf::from("/sys"),
            euid,
            kernel,
            checkout: checkout::of_current_exe(),
        }
    }
}

/// State of the kernel's sched_ext core as sysfs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedExtState {
    pub state: String,
    pub ops: Option<String>,
}

/// Reads `state` and the attached scheduler's name; `None` if the kernel has no sched_ext.
pub fn sched_ext_state(sysfs: &Path) -> Option<SchedExtState> {
    let dir = sysfs.join("kernel/sched_ext");
    let state = fs::read_to_string(dir.join("state"))
        .ok()?
        .trim()
        .to_string();
    let ops = fs::read_to_string(dir.join("root/ops"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    Some(SchedExtState { state, ops })
}

/// The order matters: a missing sched_ext cannot be fixed by sudo, so it is reported first.
pub fn check(sys: &System) -> Result<(), Refusal> {
    let Some(st) = sched_ext_state(&sys.sysfs) else {
        return Err(Refusal::NoSchedExt {
            kernel: sys.kernel.clone(),
            checkout: sys.checkout.clone(),
        });
    };
    if sys.euid != 0 {
        return Err(Refusal::NotRoot { euid: sys.euid });
    }
    if st.state != "disabled" {
        return Err(Refusal::AlreadyAttached {
            name: st
                .ops
                .unwrap_or_else(|| format!("unknown (state: {})", st.state)),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(state: Option<&str>, ops: Option<&str>, euid: u32) -> (tempfile::TempDir, System) {
        let dir = tempfile::tempdir().unwrap();
        if let Some(s) = state {
            let d = dir.path().join("kernel/sched_ext/root");
            fs::create_dir_all(&d).unwrap();
            fs::write(dir.path().join("kernel/sched_ext/state"), format!("{s}\n")).unwrap();
            if let Some(o) = ops {
                fs::write(d.join("ops"), format!("{o}\n")).unwrap();
            }
        }
        let sys = System {
            sysfs: dir.path().to_path_buf(),
            euid,
            kernel: "6.1.0-test".into(),
            checkout: None,
        };
        (dir, sys)
    }

    #[test]
    fn no_sched_ext_is_reported_first() {
        let (_d, sys) = fake(None, None, 1000);
        assert_eq!(
            check(&sys).unwrap_err(),
            Refusal::NoSchedExt {
                kernel: "6.1.0-test".into(),
                checkout: None,
            }
        );
    }

    #[test]
    fn an_installed_binary_names_the_kernel_option_and_not_the_vm() {
        let (_d, sys) = fake(None, None, 0);
        let msg = check(&sys).unwrap_err().to_string();
        assert!(msg.contains("CONFIG_SCHED_CLASS_EXT=y"), "{msg}");
        assert!(msg.contains("6.1.0-test"), "{msg}");
        assert!(!msg.contains("pandemonium.py"), "{msg}");
    }

    #[test]
    fn a_binary_in_a_checkout_also_points_at_the_vm_there() {
        let (_d, mut sys) = fake(None, None, 0);
        sys.checkout = Some(PathBuf::from("/home/me/src/pandemonium"));
        let msg = check(&sys).unwrap_err().to_string();
        assert!(msg.contains("CONFIG_SCHED_CLASS_EXT=y"), "{msg}");
        assert!(
            msg.contains("cd /home/me/src/pandemonium && ./pandemonium.py vm -- scx_pandemonium"),
            "{msg}"
        );
    }

    #[test]
    fn non_root_is_refused() {
        let (_d, sys) = fake(Some("disabled"), None, 1000);
        let err = check(&sys).unwrap_err();
        assert_eq!(err, Refusal::NotRoot { euid: 1000 });
        assert!(err.to_string().contains("sudo"));
    }

    #[test]
    fn attached_scheduler_is_named() {
        let (_d, sys) = fake(Some("enabled"), Some("lavd_1.0.0_x86_64"), 0);
        let err = check(&sys).unwrap_err();
        assert_eq!(
            err,
            Refusal::AlreadyAttached {
                name: "lavd_1.0.0_x86_64".into()
            }
        );
        assert!(err.to_string().contains("lavd_1.0.0_x86_64"));
    }

    #[test]
    fn transitional_state_without_ops_still_refuses() {
        let (_d, sys) = fake(Some("disabling"), None, 0);
        let err = check(&sys).unwrap_err();
        assert!(err.to_string().contains("state: disabling"), "{err}");
    }

    #[test]
    fn root_on_idle_sched_ext_passes() {
        let (_d, sys) = fake(Some("disabled"), None, 0);
        assert_eq!(check(&sys), Ok(()));
    }
}
