// SPDX-License-Identifier: GPL-2.0-only
//! cgroup v2 groups with the cpu controller, each running busy-loop processes, for the admin
//! layer: what an administrator (systemd's CPUWeight=, a container's cpu.max) sets.

use super::tools_binary;
use std::ffi::CString;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub const ROOT: &str = "/sys/fs/cgroup";

/// Makes sure cgroup v2 is mounted at ROOT (the guest's init mounts it; mount it if something
/// did not) and that the root hands the cpu controller to its children. The guard hands it back
/// when dropped if it was not handed out before, so later layers run as they did.
pub fn enable_cpu_controller() -> CpuController {
    let root = Path::new(ROOT);
    if !root.join("cgroup.controllers").exists() {
        let st = Command::new("mount")
            .args(["-t", "cgroup2", "cgroup2", ROOT])
            .status()
            .expect("running mount");
        assert!(st.success(), "mounting cgroup2 at {ROOT}: {st}");
    }
    let have = fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
    assert!(
        have.split_whitespace().any(|c| c == "cpu"),
        "the kernel offers no cpu controller in cgroup v2 (controllers: {have:?})"
    );
    CpuController {
        enabled_here: enable_for_children(root),
    }
}

pub struct CpuController {
    enabled_here: bool,
}

impl Drop for CpuController {
    fn drop(&mut self) {
        if self.enabled_here {
            let _ = fs::write(Path::new(ROOT).join("cgroup.subtree_control"), "-cpu");
        }
    }
}

/// Enables the cpu controller for `dir`'s children; false if it already was.
fn enable_for_children(dir: &Path) -> bool {
    let path = dir.join("cgroup.subtree_control");
    if fs::read_to_string(&path)
        .unwrap_or_default()
        .split_whitespace()
        .any(|c| c == "cpu")
    {
        return false;
    }
    fs::write(&path, "+cpu").unwrap_or_else(|e| panic!("enabling +cpu in {}: {e}", path.display()));
    true
}

/// One cgroup and the processes started in it. Dropping it kills them and removes the group, so
/// a failing case leaves nothing running into the next. Drop child groups before their parent.
pub struct Group {
    path: PathBuf,
    procs: Vec<Child>,
}

impl Group {
    /// Creates `name` under ROOT, or under `parent` when given.
    pub fn new(parent: Option<&Group>, name: &str) -> Group {
        let base = parent.map_or_else(|| PathBuf::from(ROOT), |p| p.path.clone());
        let path = base.join(name);
        fs::create_dir(&path).unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
        Group {
            path,
            procs: Vec::new(),
        }
    }

    pub fn name(&self) -> String {
        self.path
            .strip_prefix(ROOT)
            .unwrap_or(&self.path)
            .display()
            .to_string()
    }

    /// Writes `value` to the group's `file` (e.g. cpu.weight).
    pub fn set(&mut self, file: &str, value: &str) -> &mut Self {
        let p = self.path.join(file);
        fs::write(&p, value)
            .unwrap_or_else(|e| panic!("writing {value:?} to {}: {e}", p.display()));
        self
    }

    /// Lets this group's children have the cpu controller (they then compete by their weights).
    pub fn enable_cpu_for_children(&mut self) -> &mut Self {
        enable_for_children(&self.path);
        self
    }

    /// CPU time of every task in the group and its descendants: cpu.stat's usage_usec, in ns.
    pub fn usage_ns(&self) -> u64 {
        let p = self.path.join("cpu.stat");
        let text =
            fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
        text.lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no usage_usec in {}: {text}", p.display()))
            * 1000
    }

    /// Starts `n` busy loops (one `pandemonium-tools stress` process) that begin life in this
    /// group: the child moves itself before exec, so no instant of it runs elsewhere.
    pub fn spawn_hogs(&mut self, n: usize, name: &str) -> &mut Self {
        let mut cmd = hogs_command(n, name);
        let procs = procs_path(&self.path);
        // SAFETY: join_cgroup() is async-signal-safe and uses a path allocated before the fork.
        unsafe { cmd.pre_exec(move || join_cgroup(&procs)) };
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting hogs in {}: {e}", self.path.display()));
        self.procs.push(child);
        self
    }
}

/// `n` busy loops in one `pandemonium-tools stress` process named `name`, output discarded.
pub fn hogs_command(n: usize, name: &str) -> Command {
    let mut cmd = Command::new(tools_binary());
    cmd.args(["stress", "--long-runner", "--name", name, "--workers"])
        .arg(n.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// `dir`'s cgroup.procs, ready for join_cgroup() after a fork.
pub fn procs_path(dir: &Path) -> CString {
    CString::new(
        dir.join("cgroup.procs")
            .into_os_string()
            .into_encoded_bytes(),
    )
    .expect("a cgroup path without NUL")
}

/// Moves the calling process into the group whose cgroup.procs is `procs`. Only open, write
/// and close: async-signal-safe, for a child between fork and exec.
pub fn join_cgroup(procs: &CString) -> std::io::Result<()> {
    // SAFETY: a NUL-terminated path and a one-byte buffer, both valid for the calls.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if ok { Ok(()) } else { Err(err) }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        for c in &mut self.procs {
            let _ = c.kill();
            let _ = c.wait();
        }
        // A killed task leaves the group a moment after wait() returns; retry briefly.
        for _ in 0..50 {
            if fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("gate: could not remove cgroup {}", self.path.display());
    }
}
