// SPDX-License-Identifier: GPL-2.0-only
//! `-d/--debug`: the kernel's trace pipe (bpf_printk output of every BPF program, and any trace
//! event someone enabled) copied to stderr while the scheduler runs, so it lands in the same
//! terminal or journal as the scheduler's own lines.
//!
//! Reading trace_pipe consumes what it returns: a `cat` of it elsewhere at the same time sees
//! only part of the stream.

use anyhow::{Context, Result, bail};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// Where tracefs is: its own mount point first, then the debugfs path older setups use (debugfs
/// mounts tracefs there on first access).
pub const CANDIDATES: [&str; 2] = [
    "kernel/tracing/trace_pipe",
    "kernel/debug/tracing/trace_pipe",
];

/// Every line copied to stderr starts with this, so trace output is told apart from the
/// scheduler's own messages.
pub const PREFIX: &str = "trace: ";

/// Opens the first trace pipe below `sysfs` that opens; the error lists every path tried.
pub fn open(sysfs: &Path) -> Result<(PathBuf, File)> {
    let mut tried = Vec::new();
    for rel in CANDIDATES {
        let path = sysfs.join(rel);
        match File::open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) => tried.push(format!("{}: {e}", path.display())),
        }
    }
    bail!(
        "-d/--debug cannot open the kernel's trace pipe ({}). It needs root and tracefs \
         (CONFIG_TRACING): mount it with `mount -t tracefs nodev /sys/kernel/tracing`, or run \
         without -d",
        tried.join("; ")
    )
}

/// Copies `pipe` to `out` line by line, each line prefixed, until end of file or an error.
/// Each line goes out in one write: on unlocked stderr that takes the lock per line, so the
/// scheduler's own messages are neither cut into a trace line nor held up while the pipe is
/// quiet (reading it blocks).
pub fn copy_lines(pipe: impl Read, mut out: impl Write) -> Result<()> {
    let mut reader = BufReader::new(pipe);
    let mut line = Vec::new();
    loop {
        line.clear();
        line.extend_from_slice(PREFIX.as_bytes());
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        out.write_all(&line)?;
        // The journal and a terminal should see each line as it comes, not in batches.
        out.flush()?;
    }
}

/// Opens the pipe (so a failure stops the start with a clear error) and copies it to stderr on a
/// thread of its own. The thread blocks in read(2) and ends with the process.
pub fn spawn(sysfs: &Path) -> Result<PathBuf> {
    let (path, file) = open(sysfs)?;
    let shown = path.clone();
    std::thread::Builder::new()
        .name("trace_pipe".into())
        .spawn(move || {
            if let Err(e) = copy_lines(file, std::io::stderr()) {
                log::warn!("reading {}: {e:#}", shown.display());
            }
        })
        .context("starting the trace pipe reader")?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn sysfs_with(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for rel in files {
            let p = dir.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, "x\n").unwrap();
        }
        dir
    }

    #[test]
    fn tracefs_mount_point_comes_first() {
        let d = sysfs_with(&CANDIDATES);
        let (path, _) = open(d.path()).unwrap();
        assert_eq!(path, d.path().join("kernel/tracing/trace_pipe"));
    }

    #[test]
    fn falls_back_to_the_debugfs_path() {
        let d = sysfs_with(&["kernel/debug/tracing/trace_pipe"]);
        let (path, _) = open(d.path()).unwrap();
        assert_eq!(path, d.path().join("kernel/debug/tracing/trace_pipe"));
    }

    #[test]
    fn neither_path_is_a_clear_error_naming_both() {
        let d = sysfs_with(&[]);
        let msg = format!("{:#}", open(d.path()).unwrap_err());
        assert!(msg.contains("-d/--debug cannot open"), "{msg}");
        assert!(msg.contains("kernel/tracing/trace_pipe: "), "{msg}");
        assert!(msg.contains("kernel/debug/tracing/trace_pipe: "), "{msg}");
        assert!(msg.contains("mount -t tracefs"), "{msg}");
    }

    #[test]
    fn lines_are_prefixed_and_a_last_partial_line_is_ended() {
        let input = b"  sh-1 [000] d..1 1.0: bpf_trace_printk: one\nsecond\nthird";
        let mut out = Vec::new();
        copy_lines(&input[..], &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "trace:   sh-1 [000] d..1 1.0: bpf_trace_printk: one\ntrace: second\ntrace: third\n"
        );
    }

    /// Records every write and flush, as stderr would take its lock for each.
    #[derive(Default)]
    struct Calls(Vec<String>);

    impl Write for Calls {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(String::from_utf8_lossy(buf).into_owned());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.0.push("<flush>".into());
            Ok(())
        }
    }

    #[test]
    fn each_line_is_one_write_then_a_flush() {
        let mut calls = Calls::default();
        copy_lines(&b"one\ntwo"[..], &mut calls).unwrap();
        assert_eq!(
            calls.0,
            ["trace: one\n", "<flush>", "trace: two\n", "<flush>"]
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_through() {
        let mut out = Vec::new();
        copy_lines(&b"a\xffb\n"[..], &mut out).unwrap();
        assert_eq!(out, b"trace: a\xffb\n");
    }
}
