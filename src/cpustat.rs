// SPDX-License-Identifier: GPL-2.0-only
//! Machine-wide CPU idle share from /proc/stat, the regime detector's input.

use std::fs;

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

pub fn read() -> Option<CpuTimes> {
    parse(&fs::read_to_string("/proc/stat").ok()?)
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
    fn garbage_is_none() {
        assert_eq!(parse("cpu  x y z\n"), None);
        assert_eq!(parse("intr 1\n"), None);
        assert_eq!(parse("cpu  1 2 3\n"), None);
    }
}
