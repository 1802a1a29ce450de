// SPDX-License-Identifier: GPL-2.0-only
//! Coordinated-omission correction (see the module docs of `probe`).

/// Records one sample for every deadline that passed while the probe overslept: starting at
/// `*next`, each deadline strictly before `wake` contributes `wake - deadline`, and `*next`
/// advances by `draw()` per deadline. On return `*next` is the first deadline at or after
/// `wake` (the re-anchored one) unless `end` or the room in `out` cut it short. Returns how many
/// samples it wrote. Allocation-free: this runs on the probe's hot path.
pub(crate) fn backfill(
    wake: u64,
    next: &mut u64,
    end: u64,
    mut draw: impl FnMut() -> u64,
    out: &mut [u64],
) -> usize {
    let mut k = 0;
    while *next < wake && *next <= end && k < out.len() {
        out[k] = wake - *next;
        k += 1;
        *next += draw();
    }
    k
}

/// The samples one wake contributes at a fixed period: its own `lateness_ns`, then one per
/// swallowed period (`lateness - period`, `lateness - 2 * period`, ... while above zero).
/// A zero period is treated as "no grid" and yields the single sample.
pub fn coordinated_omission(lateness_ns: u64, period_ns: u64) -> Vec<u64> {
    if period_ns == 0 {
        return vec![lateness_ns];
    }
    let mut out = vec![0; 1 + (lateness_ns / period_ns) as usize];
    out[0] = lateness_ns;
    let mut next = period_ns;
    let n = backfill(
        lateness_ns,
        &mut next,
        u64::MAX,
        || period_ns,
        &mut out[1..],
    );
    out.truncate(1 + n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 10_000_000;

    #[test]
    fn a_wake_within_the_period_is_one_sample() {
        assert_eq!(coordinated_omission(0, P), vec![0]);
        assert_eq!(coordinated_omission(40_000, P), vec![40_000]);
        assert_eq!(coordinated_omission(P - 1, P), vec![P - 1]);
    }

    #[test]
    fn a_stall_counts_every_period_it_swallowed() {
        assert_eq!(
            coordinated_omission(25_000_000, P),
            vec![25_000_000, 15_000_000, 5_000_000]
        );
        assert_eq!(coordinated_omission(P + 1, P), vec![P + 1, 1]);
    }

    #[test]
    fn an_exact_multiple_leaves_the_boundary_to_the_next_wake() {
        // The deadline at exactly the wake time is not overslept: it is the re-anchored next
        // deadline, sampled by the next iteration with its own (tiny) lateness.
        assert_eq!(coordinated_omission(2 * P, P), vec![2 * P, P]);
        let mut next = P;
        assert_eq!(backfill(2 * P, &mut next, u64::MAX, || P, &mut [0; 4]), 1);
        assert_eq!(next, 2 * P);
    }

    #[test]
    fn backfill_reanchors_and_respects_limits() {
        // Deadline 100 woke at 1_000 with period 300: deadlines 400 and 700 were swallowed,
        // 1_000 is next.
        let mut out = [0u64; 8];
        let mut next = 400;
        assert_eq!(backfill(1_000, &mut next, u64::MAX, || 300, &mut out), 2);
        assert_eq!(&out[..2], &[600, 300]);
        assert_eq!(next, 1_000);

        // Deadlines after the end of the run are not the run's.
        let mut next = 400;
        assert_eq!(backfill(1_000, &mut next, 500, || 300, &mut out), 1);
        assert_eq!(next, 700);

        // A full buffer stops the backfill.
        let mut next = 400;
        assert_eq!(
            backfill(1_000, &mut next, u64::MAX, || 300, &mut out[..1]),
            1
        );

        // Varying intervals (the sleep-range mode) are drawn one per swallowed deadline.
        let mut steps = [100, 250, 400].into_iter();
        let mut next = 100;
        let n = backfill(500, &mut next, u64::MAX, || steps.next().unwrap(), &mut out);
        assert_eq!(&out[..n], &[400, 300, 50]);
        assert_eq!(next, 850);
    }
}
