// SPDX-License-Identifier: GPL-2.0-only
//! The `log` backend: one line per record on stderr, prefixed "pandemonium: " so the scheduler's
//! lines stand out in a VM console among the kernel's, and greppable by the test harnesses.
//!
//! Under systemd, stderr is a stream to the journal, which reads every line as priority info
//! unless it starts with a sd-daemon(3) prefix such as `<4>`. We add one when stderr is that
//! stream, so `journalctl -p warning` finds our warnings; anywhere else it would be noise.

use libbpf_rs::PrintLevel;
use log::{Level, LevelFilter, Log, Metadata, Record};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;

struct Logger {
    journal: bool,
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let text = format(record.level(), &record.args().to_string(), self.journal);
        // One write per record keeps lines from several threads whole. A failed write has
        // nowhere to be reported, and must not panic as eprintln! would (a restarted journald
        // leaves a broken pipe).
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }

    fn flush(&self) {}
}

/// Installs the logger for the whole process; `level` is the most verbose level shown. A
/// second call changes nothing.
pub fn init(level: LevelFilter) {
    static LOGGER: OnceLock<Logger> = OnceLock::new();
    let logger = LOGGER.get_or_init(|| Logger {
        journal: stderr_is_journal(),
    });
    if log::set_logger(logger).is_ok() {
        log::set_max_level(level);
    }
}

/// The record as it goes to stderr, newline-terminated. Every line of a multi-line message
/// (libbpf's verifier log) carries the prefix, or the journal would file all but the first at
/// priority info and a grep for our prefix would miss them.
pub fn format(level: Level, msg: &str, journal: bool) -> String {
    let (priority, tag) = match level {
        Level::Error => ("<3>", "error: "),
        Level::Warn => ("<4>", "warning: "),
        Level::Info => ("<6>", ""),
        Level::Debug => ("<7>", "debug: "),
        Level::Trace => ("<7>", "trace: "),
    };
    let priority = if journal { priority } else { "" };
    // libbpf ends its messages with a newline of its own.
    let msg = msg.trim_end_matches('\n');
    let mut out = String::with_capacity(msg.len() + 32);
    for line in msg.split('\n') {
        out.push_str(priority);
        out.push_str("pandemonium: ");
        out.push_str(tag);
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// systemd's documented test (systemd.exec(5), $JOURNAL_STREAM): the variable names the
/// device and inode of the stream it connected, and stderr is still that stream only if they
/// match; a redirection (`2>file`) in a child of the unit keeps the variable but not the inode.
pub fn is_journal_stream(journal_stream: Option<&str>, dev: u64, ino: u64) -> bool {
    let Some((d, i)) = journal_stream.and_then(|v| v.trim().split_once(':')) else {
        return false;
    };
    d.parse() == Ok(dev) && i.parse() == Ok(ino)
}

fn stderr_is_journal() -> bool {
    let Some(var) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    // fstat(2) through a duplicate: std has no metadata() on a borrowed descriptor.
    let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() else {
        return false;
    };
    let Ok(meta) = File::from(fd).metadata() else {
        return false;
    };
    is_journal_stream(var.to_str(), meta.dev(), meta.ino())
}

/// The least important libbpf message to pass on, from `LIBBPF_LOG_LEVEL` as libbpf's own
/// printer reads it (warn, info, debug; default info), so the variable keeps working now that
/// libbpf prints through `log`. Its debug level writes thousands of lines per load (every
/// CO-RE relocation), which is why `-v` alone does not ask for it.
pub fn libbpf_level(var: Option<&str>) -> PrintLevel {
    match var.map(str::trim) {
        Some(v) if v.eq_ignore_ascii_case("warn") => PrintLevel::Warn,
        Some(v) if v.eq_ignore_ascii_case("debug") => PrintLevel::Debug,
        _ => PrintLevel::Info,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_the_journal_lines_look_as_before() {
        assert_eq!(
            format(Level::Info, "scheduler attached", false),
            "pandemonium: scheduler attached\n"
        );
        assert_eq!(
            format(Level::Warn, "procdb: cannot save /x: denied", false),
            "pandemonium: warning: procdb: cannot save /x: denied\n"
        );
        assert_eq!(
            format(Level::Error, "must run as root", false),
            "pandemonium: error: must run as root\n"
        );
        assert_eq!(
            format(Level::Debug, "proxy: new channel", false),
            "pandemonium: debug: proxy: new channel\n"
        );
    }

    #[test]
    fn in_the_journal_each_line_starts_with_its_priority() {
        assert_eq!(
            format(Level::Error, "e", true),
            "<3>pandemonium: error: e\n"
        );
        assert_eq!(
            format(Level::Warn, "w", true),
            "<4>pandemonium: warning: w\n"
        );
        assert_eq!(format(Level::Info, "i", true), "<6>pandemonium: i\n");
        assert_eq!(
            format(Level::Debug, "d", true),
            "<7>pandemonium: debug: d\n"
        );
        assert_eq!(
            format(Level::Trace, "t", true),
            "<7>pandemonium: trace: t\n"
        );
    }

    #[test]
    fn every_line_of_a_multi_line_message_is_prefixed() {
        let msg = "libbpf: prog 'x': BPF program load failed\n0: R1=ctx\n1: exit\n";
        assert_eq!(
            format(Level::Warn, msg, true),
            "<4>pandemonium: warning: libbpf: prog 'x': BPF program load failed\n\
             <4>pandemonium: warning: 0: R1=ctx\n\
             <4>pandemonium: warning: 1: exit\n"
        );
    }

    #[test]
    fn a_trailing_newline_does_not_make_an_empty_line() {
        assert_eq!(
            format(Level::Info, "libbpf: loaded\n", false),
            "pandemonium: libbpf: loaded\n"
        );
        assert_eq!(format(Level::Info, "", false), "pandemonium: \n");
    }

    #[test]
    fn journal_stream_must_name_this_very_stream() {
        assert!(is_journal_stream(Some("8:12345"), 8, 12345));
        assert!(!is_journal_stream(Some("8:12345"), 8, 12346));
        assert!(!is_journal_stream(Some("9:12345"), 8, 12345));
        assert!(!is_journal_stream(None, 8, 12345));
        for bad in ["", "8", "8:", ":12345", "x:y", "8:12345:1"] {
            assert!(!is_journal_stream(Some(bad), 8, 12345), "{bad:?}");
        }
    }

    #[test]
    fn a_real_file_matches_its_own_dev_and_inode_only() {
        let f = tempfile::tempfile().unwrap();
        let m = f.metadata().unwrap();
        let var = format!("{}:{}", m.dev(), m.ino());
        assert!(is_journal_stream(Some(&var), m.dev(), m.ino()));
        let other = tempfile::tempfile().unwrap().metadata().unwrap();
        assert!(!is_journal_stream(Some(&var), other.dev(), other.ino()));
    }

    #[test]
    fn libbpf_level_reads_libbpfs_own_variable() {
        assert_eq!(libbpf_level(None), PrintLevel::Info);
        assert_eq!(libbpf_level(Some("")), PrintLevel::Info);
        assert_eq!(libbpf_level(Some("info")), PrintLevel::Info);
        assert_eq!(libbpf_level(Some("bogus")), PrintLevel::Info);
        assert_eq!(libbpf_level(Some("warn")), PrintLevel::Warn);
        assert_eq!(libbpf_level(Some("DEBUG")), PrintLevel::Debug);
    }
}
