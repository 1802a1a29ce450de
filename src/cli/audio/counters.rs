// SPDX-License-Identifier: GPL-2.0-only
//! The kernel's own accounting of the audio thread, read after each period's work: how often it
//! was preempted (`getrusage`'s involuntary context switches) and how long it waited runnable on
//! a runqueue (`/proc/thread-self/schedstat`'s run delay). Both are kept by the core scheduler
//! for every class, so they read the same under the fair class and any sched_ext scheduler, and
//! they part the scheduler's share of a missed period from what comes before any scheduler sees
//! the wakeup (the timer's own lateness, which the wake lateness also holds).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The calling thread's counters at one instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// Involuntary context switches so far.
    pub nivcsw: u64,
    /// Time spent runnable but waiting for a CPU so far (ns); None without schedstat.
    pub run_delay_ns: Option<u64>,
}

/// Reads the calling thread's counters; the schedstat file is opened once (by the thread that
/// reads it: `thread-self` is the opener).
pub(crate) struct Counters {
    schedstat: Option<File>,
}

impl Counters {
    pub(crate) fn open() -> Counters {
        Counters {
            schedstat: File::open("/proc/thread-self/schedstat").ok(),
        }
    }

    pub(crate) fn sample(&self) -> io::Result<Sample> {
        Ok(Sample {
            nivcsw: nivcsw()?,
            run_delay_ns: self.schedstat.as_ref().and_then(read_run_delay),
        })
    }
}

fn nivcsw() -> io::Result<u64> {
    // SAFETY: getrusage writes one struct rusage into the zeroed one it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ru.ru_nivcsw.max(0) as u64)
}

fn read_run_delay(f: &File) -> Option<u64> {
    let mut buf = [0u8; 96];
    let n = f.read_at(&mut buf, 0).ok()?;
    run_delay(std::str::from_utf8(&buf[..n]).ok()?)
}

/// The run delay of a schedstat line: "<run time ns> <run delay ns> <timeslices>".
pub(crate) fn run_delay(line: &str) -> Option<u64> {
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_delay_is_schedstats_second_field() {
        assert_eq!(run_delay("123456 7890 12\n"), Some(7890));
        assert_eq!(run_delay("123456\n"), None);
        assert_eq!(run_delay("a b c"), None);
    }

    #[test]
    fn the_counters_only_grow() {
        let c = Counters::open();
        let a = c.sample().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = c.sample().unwrap();
        assert!(b.nivcsw >= a.nivcsw);
        if let (Some(x), Some(y)) = (a.run_delay_ns, b.run_delay_ns) {
            assert!(y >= x);
        }
    }
}
