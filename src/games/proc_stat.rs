// SPDX-License-Identifier: GPL-2.0-only
//! `/proc/PID/stat`, read as bytes (a comm may be cut in the middle of a UTF-8 character, or be
//! no text at all), and reads of `/proc` files that never take more than a cap.
//!
//! Not the `procfs` crate: its `Stat` turns the comm into a `String`, each byte that is no UTF-8
//! replaced by U+FFFD (the scan keys an exec by its comm where the kernel hides the addresses, and
//! logs it escaped byte for byte), and it refuses a line short of the fields kernels have had
//! since 2.6 (the old-kernel test below); its `environ()` and `cmdline()` read the whole file,
//! which the scan caps ([`super::scan::Limits`]) because a process may have megabytes of
//! environment. All that would be left for it is listing `/proc`, one `read_dir`.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// PF_KTHREAD (include/linux/sched.h): a kernel thread has no environment or command line.
const PF_KTHREAD: u64 = 0x0020_0000;

/// More than any stat line: 52 numbers and a comm of at most 64 bytes.
pub const STAT_BYTES: u64 = 4096;

/// What a scan needs of one process's stat line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    pub comm: Vec<u8>,
    pub ppid: u32,
    pub kthread: bool,
    /// Clock ticks after boot (field 22): with the pid, tells one process from the next.
    pub start: u64,
    /// arg_start, arg_end, env_start, env_end (fields 48-51): where the last exec put argv and
    /// the environment, so a new exec shows here (the stack is randomized). The kernel shows
    /// zeros to a reader that may not read the process's memory (no ptrace access), and
    /// kernels before 3.5 have no such fields.
    pub exec: [u64; 4],
}

impl Stat {
    /// Whether the kernel showed us where this exec's environment lies, i.e. we may read it.
    pub fn exec_known(&self) -> bool {
        self.exec != [0; 4]
    }
}

/// Parses one stat line. The comm sits between the first '(' and the last ')' and may itself
/// hold spaces, parentheses and any byte; the fields after it are ASCII numbers.
pub fn parse(stat: &[u8]) -> Option<Stat> {
    let open = stat.iter().position(|&b| b == b'(')?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // fields[0] is field 3 (the state).
    let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
    let exec = |n: usize| field(n).unwrap_or(0);
    Some(Stat {
        comm: stat[open + 1..close].to_vec(),
        ppid: u32::try_from(field(4)?).ok()?,
        kthread: field(9)? & PF_KTHREAD != 0,
        start: field(22)?,
        exec: [exec(48), exec(49), exec(50), exec(51)],
    })
}

/// At most `cap` bytes of `path`.
pub fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    File::open(path)?.take(cap).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A stat line with every field through 52; `exec` goes into 48-51.
    pub(crate) fn line(pid: u32, comm: &[u8], ppid: u32, start: u64, exec: [u64; 4]) -> Vec<u8> {
        let mut fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        fields[0] = "S".into();
        fields[4 - 3] = ppid.to_string();
        fields[9 - 3] = "4194560".into(); // PF_RANDOMIZE | PF_SUPERPRIV, no PF_KTHREAD
        fields[22 - 3] = start.to_string();
        for (i, v) in exec.iter().enumerate() {
            fields[48 - 3 + i] = v.to_string();
        }
        let mut out = format!("{pid} (").into_bytes();
        out.extend_from_slice(comm);
        out.extend_from_slice(format!(") {}\n", fields.join(" ")).as_bytes());
        out
    }

    #[test]
    fn fields_survive_a_comm_with_spaces_and_parentheses() {
        let st = parse(&line(42, b"Game (Main) x", 7, 987654, [1, 2, 3, 9])).unwrap();
        assert_eq!(st.comm, b"Game (Main) x");
        assert_eq!((st.ppid, st.start, st.kthread), (7, 987654, false));
        assert_eq!(st.exec, [1, 2, 3, 9]);
        assert!(st.exec_known());
        assert_eq!(parse(b"42 (x"), None);
        assert_eq!(parse(b"42 )x( S 1"), None);
    }

    /// `comm` is 15 bytes of whatever the process named itself: a multi-byte character cut at
    /// the limit, or bytes that are no UTF-8 at all, are still a process.
    #[test]
    fn a_comm_that_is_not_utf8_is_still_a_process() {
        // "Spiel-Übersicht" cut inside "Ü" (0xc3 0x9c) at 15 bytes.
        let cut = b"Spiel-\xc3\x9cbersi\xc3";
        let st = parse(&line(9, cut, 1, 5, [0; 4])).unwrap();
        assert_eq!((st.comm.as_slice(), st.start), (&cut[..], 5));
        assert!(!st.exec_known());
    }

    #[test]
    fn kernel_threads_and_old_kernels() {
        let kworker = b"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0";
        let st = parse(kworker).unwrap();
        assert!(st.kthread);
        assert_eq!((st.start, st.exec), (9, [0; 4]));
    }

    #[test]
    fn a_capped_read_stops_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![b'x'; 10_000]).unwrap();
        assert_eq!(read_capped(&p, 4096).unwrap().len(), 4096);
        assert_eq!(read_capped(&p, 1 << 20).unwrap().len(), 10_000);
        assert!(read_capped(&dir.path().join("none"), 1).is_err());
    }
}
