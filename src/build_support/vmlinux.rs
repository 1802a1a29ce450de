// SPDX-License-Identifier: GPL-2.0-only
//! vmlinux.h for the BPF build: GNU C23 made bool, true and false keywords, and every vmlinux.h
//! bpftool writes (scx_cargo's bundled copy too) still declares them as a typedef and an enum,
//! which clang rejects under -std=gnu23. A patched copy goes into a directory of its own that
//! build.rs puts ahead of the bundle on the include path. The running kernel's BTF is used
//! instead of the bundle when it already describes sched_ext (and bpftool is installed), and
//! PANDEMONIUM_VMLINUX_H names a file to use instead of either.

use std::fs;
use std::path::Path;
use std::process::Command;

/// Names a vmlinux.h to use instead of the running kernel's or the bundled one.
pub const ENV: &str = "PANDEMONIUM_VMLINUX_H";

/// Writes the patched vmlinux.h into `out` from the best source; `arch_dir` is the bundle's
/// arch/<target>/ directory. Returns where it came from, for the build log and `--version`.
pub fn prepare(arch_dir: &Path, out: &Path) -> std::io::Result<String> {
    fs::create_dir_all(out)?;
    let (text, origin) = if let Ok(path) = std::env::var(ENV) {
        (fs::read_to_string(&path)?, format!("{ENV}={path}"))
    } else if let Some(text) = running_kernel() {
        (
            text,
            "running kernel BTF (/sys/kernel/btf/vmlinux via bpftool)".into(),
        )
    } else {
        // The bundle also holds vmlinux-v<version>-g<sha>.h: its name says which kernel.
        let versioned = fs::read_dir(arch_dir)?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .find(|n| n.starts_with("vmlinux-"))
            .unwrap_or_else(|| "vmlinux.h".into());
        (
            fs::read_to_string(arch_dir.join("vmlinux.h"))?,
            format!("scx_cargo bundle ({versioned}); the host kernel's BTF has no sched_ext types"),
        )
    };
    fs::write(out.join("vmlinux.h"), patch_for_c23(&text))?;
    Ok(origin)
}

/// Only a BTF that already describes sched_ext is worth dumping; bpftool is optional.
fn running_kernel() -> Option<String> {
    let btf = fs::read("/sys/kernel/btf/vmlinux").ok()?;
    let needle = b"sched_ext_ops";
    if !btf.windows(needle.len()).any(|w| w == needle) {
        return None;
    }
    let out = Command::new("bpftool")
        .args(["btf", "dump", "file", "/sys/kernel/btf/vmlinux"])
        .args(["format", "c"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Drops `typedef _Bool bool;` and the `enum { false = 0, true = 1, };` block (bpftool splits it
/// over several lines); everything else is copied as it is.
pub fn patch_for_c23(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t == "typedef _Bool bool;" {
            out.push_str("/* C23: bool is a keyword */\n");
            continue;
        }
        if t == "enum {" {
            let mut block = vec![line.to_string()];
            for next in lines.by_ref() {
                block.push(next.to_string());
                if next.trim_start().starts_with('}') {
                    break;
                }
            }
            let body: String = block.join("\n");
            if body.contains("false = 0") && body.contains("true = 1") && block.len() <= 5 {
                out.push_str("/* C23: true/false are keywords */\n");
            } else {
                out.push_str(&body);
                out.push('\n');
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
