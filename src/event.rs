// SPDX-License-Identifier: GPL-2.0-only
//! A fixed-capacity ring of per-second records: the recent history the daemon keeps for
//! telemetry and post-mortems. All storage is allocated at construction; pushing never allocates,
//! so recording a second costs the same on second one and on day ten.

use crate::bpf_intf::NR_TIERS;

/// One second of the control loop, as kept in the ring.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StatsRecord {
    /// Seconds since the daemon started.
    pub at_s: u64,
    pub dispatches: u64,
    pub wakeups: u64,
    pub idle_pct: f64,
    pub rescues: u64,
    /// P99 wakeup latency per tier, 0 when the tier had no wakeups.
    pub p99_ns: [u64; NR_TIERS],
    /// `crate::regime::Regime as u8`.
    pub regime: u8,
    pub longrun: bool,
}

/// Ring buffer of `Copy` records, oldest overwritten first.
#[derive(Clone, Debug)]
pub struct EventRing<T> {
    buf: Box<[T]>,
    /// Index of the oldest record.
    head: usize,
    len: usize,
}

impl<T: Copy + Default> EventRing<T> {
    /// A ring holding up to `capacity` records (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        EventRing {
            buf: vec![T::default(); capacity.max(1)].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_full(&self) -> bool {
        self.len == self.buf.len()
    }

    /// Appends a record; returns the one it overwrote when the ring was full.
    pub fn push(&mut self, rec: T) -> Option<T> {
        let cap = self.buf.len();
        if self.len < cap {
            self.buf[(self.head + self.len) % cap] = rec;
            self.len += 1;
            None
        } else {
            let old = std::mem::replace(&mut self.buf[self.head], rec);
            self.head = (self.head + 1) % cap;
            Some(old)
        }
    }

    /// The `i`-th record, 0 = oldest.
    pub fn get(&self, i: usize) -> Option<&T> {
        (i < self.len).then(|| &self.buf[(self.head + i) % self.buf.len()])
    }

    pub fn latest(&self) -> Option<&T> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    pub fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    /// Records from oldest to newest.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator + '_ {
        let cap = self.buf.len();
        (0..self.len).map(move |i| &self.buf[(self.head + i) % cap])
    }

    /// The records as two slices, oldest first (the second is empty unless the ring wrapped).
    pub fn as_slices(&self) -> (&[T], &[T]) {
        let cap = self.buf.len();
        let end = self.head + self.len;
        if end <= cap {
            (&self.buf[self.head..end], &[])
        } else {
            (&self.buf[self.head..], &self.buf[..end - cap])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(r: &EventRing<u32>) -> Vec<u32> {
        r.iter().copied().collect()
    }

    #[test]
    fn fills_then_overwrites_oldest_first() {
        let mut r = EventRing::with_capacity(3);
        assert!(r.is_empty() && r.latest().is_none());
        assert_eq!(r.push(1), None);
        assert_eq!(r.push(2), None);
        assert_eq!(items(&r), [1, 2]);
        assert_eq!(r.push(3), None);
        assert!(r.is_full());
        assert_eq!(r.push(4), Some(1));
        assert_eq!(r.push(5), Some(2));
        assert_eq!(items(&r), [3, 4, 5]);
        assert_eq!(r.latest(), Some(&5));
        assert_eq!((r.get(0), r.get(3)), (Some(&3), None));
        assert_eq!(r.iter().rev().copied().collect::<Vec<_>>(), [5, 4, 3]);
        assert_eq!(r.iter().len(), 3);
        assert_eq!(r.as_slices(), (&[3][..], &[4, 5][..]));
    }

    #[test]
    fn iteration_order_holds_across_many_wraps() {
        let mut r = EventRing::with_capacity(7);
        for i in 0..1000u32 {
            r.push(i);
            let want: Vec<u32> = (i.saturating_sub(6)..=i).collect();
            assert_eq!(items(&r), want);
        }
    }

    #[test]
    fn push_never_reallocates() {
        let mut r: EventRing<StatsRecord> = EventRing::with_capacity(60);
        let storage = r.buf.as_ptr();
        for s in 0..10_000 {
            r.push(StatsRecord {
                at_s: s,
                ..Default::default()
            });
        }
        assert_eq!(r.buf.as_ptr(), storage);
        assert_eq!(r.capacity(), 60);
        assert_eq!(r.iter().next().unwrap().at_s, 10_000 - 60);
    }

    #[test]
    fn zero_capacity_means_one_and_clear_empties() {
        let mut r = EventRing::with_capacity(0);
        assert_eq!(r.capacity(), 1);
        r.push(1u32);
        assert_eq!(r.push(2), Some(1));
        r.clear();
        assert!(r.is_empty());
        assert_eq!(items(&r), Vec::<u32>::new());
        r.push(9);
        assert_eq!(items(&r), [9]);
    }
}
