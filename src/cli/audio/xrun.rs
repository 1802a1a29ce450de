// SPDX-License-Identifier: GPL-2.0-only
//! Which periods one processed period costs: the pure accounting of the audio loop, so the
//! host's unit tests pin it.
//!
//! The device's clock starts a period every `period` ns, on a fixed grid. The thread wakes for a
//! period's start and runs its work; the period is *missed* (an xrun) when the work ends after
//! the period's end, the next period's start. A period whose start the thread slept through
//! entirely (it woke after it) is never processed and missed as well. The thread then goes on
//! with the first period starting at or after its wake: a late period's successor runs late
//! but may still end in time, as a double-buffered device lets it.

/// What processing one period left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    /// Period starts after this one that passed before the thread woke for it (not after the
    /// end of the run): each missed without being processed.
    pub skipped: u64,
    /// This period's work ended after its end.
    pub late: bool,
    /// The start of the next period to process: the first at or after the wake.
    pub next: u64,
}

impl Step {
    /// Periods this step missed.
    pub fn misses(&self) -> u64 {
        self.skipped + u64::from(self.late)
    }
}

/// The period starting at `start`, woken for at `wake`, whose work ended at `done`, on a grid of
/// `period` ns; periods starting after `end` are not the run's.
pub(crate) fn step(start: u64, wake: u64, done: u64, period: u64, end: u64) -> Step {
    let slot_end = start + period;
    let passed = if wake > slot_end {
        (wake - slot_end).div_ceil(period)
    } else {
        0
    };
    let in_run = if end >= slot_end {
        (end - slot_end) / period + 1
    } else {
        0
    };
    Step {
        skipped: passed.min(in_run),
        late: done > slot_end,
        next: slot_end + passed * period,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 5_333_333;
    const END: u64 = u64::MAX;

    #[test]
    fn work_done_within_the_period_misses_nothing() {
        let s = step(P, P + 1_000, P + 600_000, P, END);
        assert_eq!(
            s,
            Step {
                skipped: 0,
                late: false,
                next: 2 * P
            }
        );
        assert_eq!(s.misses(), 0);
        // Ending exactly at the period's end is in time.
        assert_eq!(step(P, P, 2 * P, P, END).misses(), 0);
    }

    #[test]
    fn work_ending_past_the_period_is_one_xrun_and_the_next_runs_late() {
        let s = step(P, P + 4_000_000, 2 * P + 1, P, END);
        assert_eq!(
            s,
            Step {
                skipped: 0,
                late: true,
                next: 2 * P
            }
        );
        assert_eq!(s.misses(), 1);
    }

    #[test]
    fn periods_slept_through_are_each_missed() {
        // Woke 2.5 periods late: the periods starting at 2P and 3P passed; 4P is next.
        let wake = P + 5 * P / 2;
        let s = step(P, wake, wake + 500_000, P, END);
        assert_eq!(
            s,
            Step {
                skipped: 2,
                late: true,
                next: 4 * P
            }
        );
        assert_eq!(s.misses(), 3);
        // Woke exactly at the next start: that period is not passed, it is next.
        let s = step(P, 2 * P, 2 * P + 1, P, END);
        assert_eq!(
            s,
            Step {
                skipped: 0,
                late: true,
                next: 2 * P
            }
        );
    }

    #[test]
    fn periods_after_the_end_are_not_counted() {
        let wake = P + 5 * P / 2;
        // The run ends at 2P: only the period starting at 2P is the run's.
        assert_eq!(step(P, wake, wake, P, 2 * P).skipped, 1);
        assert_eq!(step(P, wake, wake, P, 2 * P - 1).skipped, 0);
        assert_eq!(step(P, wake, wake, P, 2 * P - 1).next, 4 * P);
    }
}
