// SPDX-License-Identifier: GPL-2.0-only
//! Machine-wide CPU idle share from /proc/stat, the regime detector's input.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Cumulative jiffies of the aggregate `cpu` line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub idle: u64,
    pub total: u64,
}

/// Parses the first (`cpu `) line of /proc/stat. Idle counts idle + iowait: a CPU waiting on
/// I/O has nothing to run.
pub fn parse(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 5 {
        return None;
    }
    // guest and guest_nice (fields 9, 10) are already included in user and nice.
    let total = v.iter().take(8).sum();
    Some(CpuTimes {
        idle: v[3] + v[4],
        total,
    })
}

/// /proc/stat kept open and re-read from offset 0 each time, and only its head: the aggregate
/// line comes first, while the whole file (per-CPU lines, every interrupt counter) runs to tens
/// of kilobytes and several read calls. The `procfs` crate's `KernelStats` opens and parses that
/// whole file on every read (it requires the ctxt, btime and processes lines further down), and
/// its parser of the `cpu` line alone is private: the crate would make this once-a-second read
/// larger, not the code smaller.
pub struct Reader {
    file: Option<File>,
    buf: Vec<u8>,
}

/// Far more than the aggregate line needs (10 counters of at most 20 digits).
const HEAD_BYTES: usize = 512;

impl Reader {
    pub fn new() -> Reader {
        Reader {
            file: File::open("/proc/stat").ok(),
            buf: vec![0; HEAD_BYTES],
        }
    }

    pub fn read(&mut self) -> Option<CpuTimes> {
        let n = self.file.as_ref()?.read_at(&mut self.buf, 0).ok()?;
        parse(std::str::from_utf8(&self.buf[..n]).ok()?)
    }
}

impl Default for Reader {
    fn default() -> Self {
        Self::new()
    }
}

/// Idle share between two readings, 0..=100; `None` if no time passed.
pub fn idle_pct(prev: CpuTimes, cur: CpuTimes) -> Option<f64> {
    let total = cur.total.checked_sub(prev.total)?;
    let idle = cur.idle.checked_sub(prev.idle)?;
    (total > 0).then(|| (idle.min(total) as f64) * 100.0 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 5 50 800 45 0 0 0 0 0\ncpu0 50 2 25 400 20 0 0 0 0 0\nintr 1\n";

    #[test]
    fn parses_the_aggregate_line() {
        assert_eq!(
            parse(STAT),
            Some(CpuTimes {
                idle: 845,
                total: 1000
            })
        );
    }

    #[test]
    fn idle_share_between_readings() {
        let a = CpuTimes {
            idle: 845,
            total: 1000,
        };
        let b = CpuTimes {
            idle: 945,
            total: 1400,
        };
        assert_eq!(idle_pct(a, b), Some(25.0));
        assert_eq!(idle_pct(a, a), None);
        assert_eq!(idle_pct(b, a), None);
    }

    #[test]
    fn reader_rereads_the_live_file() {
        let mut r = Reader::new();
        let a = r.read().expect("the host's /proc/stat");
        // Burn some CPU so the counters must move.
        let mut x = 0u64;
        let until = std::time::Instant::now() + std::time::Duration::from_millis(100);
        while std::time::Instant::now() < until {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let b = r.read().expect("a second read of the same open file");
        assert!(b.total > a.total, "{a:?} -> {b:?}");
    }

    #[test]
    fn garbage_is_none() {
        assert_eq!(parse("cpu  x y z\n"), None);
        assert_eq!(parse("intr 1\n"), None);
        assert_eq!(parse("cpu  1 2 3\n"), None);
    }
}
