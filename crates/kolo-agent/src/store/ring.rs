//! A fixed-capacity ring of `(timestamp, value)` points, 8 bytes a point.
//!
//! Timestamps are kept as `u32` milliseconds after a per-ring base (an `i64`
//! of Unix milliseconds), so a ring covers about 49 days before it has to be
//! rebased; values are `f32`. Points are kept in time order: a point older
//! than the newest one means the wall clock stepped back, and the ring then
//! starts over (its old points carry "future" timestamps that would break
//! every window query).

/// One stored point: milliseconds after the ring's base, and the value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    /// Milliseconds after [`Ring::base_ms`].
    pub(crate) offset_ms: u32,
    /// The value, in the series' storage unit.
    pub(crate) value: f32,
}

/// What [`Ring::push`] did with a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Stored.
    Stored,
    /// Stored after dropping every older point: it was older than the newest
    /// point (the clock stepped back).
    StoredAfterReset,
    /// Not stored: the value is NaN or infinite.
    NotFinite,
}

/// The ring. Logical index 0 is the oldest point.
#[derive(Debug, Clone)]
pub(crate) struct Ring {
    /// Unix milliseconds that offsets count from.
    base_ms: i64,
    /// The points; `buf.len() < cap` until the ring first fills.
    buf: Vec<Point>,
    /// Physical index of the oldest point (0 until the ring first fills).
    head: usize,
    /// The most points kept.
    cap: usize,
}

impl Ring {
    /// An empty ring keeping at most `cap` (at least 1) points. Nothing is
    /// allocated until the first point arrives.
    pub(crate) fn new(cap: usize) -> Ring {
        Ring { base_ms: 0, buf: Vec::new(), head: 0, cap: cap.max(1) }
    }

    /// How many points are stored.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether no point is stored.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The most points kept.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// Heap bytes held by the ring.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.buf.capacity() * size_of::<Point>()
    }

    /// Drops every point and the allocation.
    pub(crate) fn clear(&mut self) {
        self.buf = Vec::new();
        self.head = 0;
    }

    /// The logical `i`-th point (0 = oldest) as (Unix ms, value).
    ///
    /// Panics if `i >= len()`.
    pub(crate) fn get(&self, i: usize) -> (i64, f32) {
        let p = self.buf[self.physical(i)];
        (self.base_ms + i64::from(p.offset_ms), p.value)
    }

    fn physical(&self, i: usize) -> usize {
        let j = self.head + i;
        if j >= self.buf.len() { j - self.buf.len() } else { j }
    }

    /// Unix ms of the logical `i`-th point.
    fn time_at(&self, i: usize) -> i64 {
        self.base_ms + i64::from(self.buf[self.physical(i)].offset_ms)
    }

    /// Unix ms of the newest point.
    pub(crate) fn last_ms(&self) -> Option<i64> {
        (!self.buf.is_empty()).then(|| self.time_at(self.buf.len() - 1))
    }

    /// Appends a point at `t_ms` (Unix ms), overwriting the oldest one when
    /// full.
    pub(crate) fn push(&mut self, t_ms: i64, value: f32) -> Pushed {
        if !value.is_finite() {
            return Pushed::NotFinite;
        }
        let mut outcome = Pushed::Stored;
        if self.last_ms().is_some_and(|last| t_ms < last) {
            self.clear();
            outcome = Pushed::StoredAfterReset;
        }
        if self.buf.is_empty() {
            self.base_ms = t_ms;
            self.head = 0;
            if self.buf.capacity() < self.cap {
                self.buf.reserve_exact(self.cap);
            }
        }
        if t_ms - self.base_ms > i64::from(u32::MAX) {
            self.rebase(t_ms);
        }
        // In range after the rebase: t_ms >= base_ms, and within u32.
        let offset_ms = u32::try_from(t_ms - self.base_ms).unwrap_or(u32::MAX);
        let point = Point { offset_ms, value };
        if self.buf.len() < self.cap {
            self.buf.push(point);
        } else {
            self.buf[self.head] = point;
            self.head += 1;
            if self.head == self.cap {
                self.head = 0;
            }
        }
        outcome
    }

    /// Moves the base so that `t_ms` fits: drops points more than
    /// `u32::MAX / 2` ms (~24 days) older than `t_ms`, and counts from the
    /// oldest point left (or from `t_ms`).
    fn rebase(&mut self, t_ms: i64) {
        let keep_from = t_ms - i64::from(u32::MAX / 2);
        let kept: Vec<(i64, f32)> =
            (0..self.len()).map(|i| self.get(i)).filter(|&(t, _)| t >= keep_from).collect();
        let base = kept.first().map_or(t_ms, |&(t, _)| t);
        let mut buf = Vec::with_capacity(self.cap);
        buf.extend(kept.into_iter().map(|(t, value)| Point {
            offset_ms: u32::try_from(t - base).unwrap_or(u32::MAX),
            value,
        }));
        self.buf = buf;
        self.head = 0;
        self.base_ms = base;
    }

    /// Changes the capacity, keeping the newest points that fit.
    pub(crate) fn set_capacity(&mut self, cap: usize) {
        let cap = cap.max(1);
        if cap == self.cap {
            return;
        }
        let n = self.len();
        let skip = n.saturating_sub(cap);
        let mut buf = Vec::new();
        if n > skip {
            buf.reserve_exact(cap);
            buf.extend((skip..n).map(|i| self.buf[self.physical(i)]));
        }
        self.buf = buf;
        self.head = 0;
        self.cap = cap;
    }

    /// Logical indices `lo..hi` of the points with `start_ms <= t <= end_ms`.
    pub(crate) fn range(&self, start_ms: i64, end_ms: i64) -> (usize, usize) {
        let lo = self.partition_point(|t| t < start_ms);
        let hi = self.partition_point(|t| t <= end_ms);
        (lo, hi.max(lo))
    }

    /// The first logical index whose time fails `pred` (times are sorted).
    fn partition_point(&self, pred: impl Fn(i64) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.time_at(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The points of logical range `lo..hi` as at most two physical slices,
    /// in time order.
    pub(crate) fn slices(&self, lo: usize, hi: usize) -> (&[Point], &[Point]) {
        if lo >= hi {
            return (&[], &[]);
        }
        let (a, b) = (self.physical(lo), self.physical(hi - 1));
        if a <= b { (&self.buf[a..=b], &[]) } else { (&self.buf[a..], &self.buf[..=b]) }
    }

    /// The base the offsets of [`Ring::slices`] count from.
    #[cfg(test)]
    pub(crate) fn base_ms(&self) -> i64 {
        self.base_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(r: &Ring) -> Vec<(i64, f32)> {
        (0..r.len()).map(|i| r.get(i)).collect()
    }

    #[test]
    fn wraps_around_keeping_the_newest() {
        let mut r = Ring::new(3);
        assert!(r.is_empty());
        assert_eq!(r.heap_bytes(), 0, "nothing allocated before the first point");
        for t in 0..5 {
            assert_eq!(r.push(t * 1000, t as f32), Pushed::Stored);
        }
        assert_eq!(all(&r), vec![(2000, 2.0), (3000, 3.0), (4000, 4.0)]);
        assert_eq!(r.heap_bytes(), 3 * 8);
        assert_eq!(r.last_ms(), Some(4000));
        // Logical range 0..3 spans the physical wrap.
        let (a, b) = r.slices(0, 3);
        assert_eq!(a.len() + b.len(), 3);
        assert_eq!(a[0].value, 2.0);
    }

    #[test]
    fn clock_step_back_starts_over() {
        let mut r = Ring::new(4);
        r.push(10_000, 1.0);
        r.push(11_000, 2.0);
        assert_eq!(r.push(11_000, 3.0), Pushed::Stored, "equal timestamps are fine");
        assert_eq!(r.push(5_000, 4.0), Pushed::StoredAfterReset);
        assert_eq!(all(&r), vec![(5_000, 4.0)]);
    }

    #[test]
    fn non_finite_values_are_refused() {
        let mut r = Ring::new(4);
        assert_eq!(r.push(0, f32::NAN), Pushed::NotFinite);
        assert_eq!(r.push(0, f32::INFINITY), Pushed::NotFinite);
        assert!(r.is_empty());
    }

    #[test]
    fn rebases_after_49_days_and_drops_only_ancient_points() {
        let mut r = Ring::new(4);
        let day = 86_400_000i64;
        r.push(0, 1.0);
        r.push(30 * day, 2.0);
        r.push(40 * day, 3.0);
        // 50 days after the base: beyond u32 ms; the point at 0 is > 24 days
        // older than the new one and goes, the others stay.
        r.push(50 * day, 4.0);
        assert_eq!(all(&r), vec![(30 * day, 2.0), (40 * day, 3.0), (50 * day, 4.0)]);
        assert_eq!(r.base_ms(), 30 * day);
        // A point years later keeps working.
        r.push(5000 * day, 5.0);
        assert_eq!(all(&r), vec![(5000 * day, 5.0)]);
    }

    #[test]
    fn ranges_are_inclusive_at_both_ends() {
        let mut r = Ring::new(10);
        for t in 1..=5 {
            r.push(t * 1000, t as f32);
        }
        assert_eq!(r.range(2000, 4000), (1, 4));
        assert_eq!(r.range(1500, 4500), (1, 4));
        assert_eq!(r.range(0, 999), (0, 0));
        assert_eq!(r.range(5001, 9000), (5, 5));
        assert_eq!(r.range(4000, 2000), (3, 3), "an inverted range is empty");
    }

    #[test]
    fn shrinking_keeps_the_newest_and_growing_keeps_all() {
        let mut r = Ring::new(5);
        for t in 0..7 {
            r.push(t, t as f32);
        }
        r.set_capacity(2);
        assert_eq!(all(&r), vec![(5, 5.0), (6, 6.0)]);
        assert_eq!(r.heap_bytes(), 2 * 8);
        r.set_capacity(4);
        r.push(7, 7.0);
        r.push(8, 8.0);
        r.push(9, 9.0);
        assert_eq!(all(&r), vec![(6, 6.0), (7, 7.0), (8, 8.0), (9, 9.0)]);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(u16, i8),
        Resize(u8),
        Query(u16, u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u16..2000, any::<i8>()).prop_map(|(dt, v)| Op::Push(dt, v)),
            1 => (1u8..20).prop_map(Op::Resize),
            2 => (any::<u16>(), any::<u16>()).prop_map(|(a, b)| Op::Query(a, b)),
        ]
    }

    proptest! {
        /// The ring behaves like a Vec that keeps the newest `cap` points.
        #[test]
        fn matches_a_vec_model(cap in 1usize..20, ops in proptest::collection::vec(op(), 0..200)) {
            let mut ring = Ring::new(cap);
            let mut model: Vec<(i64, f32)> = Vec::new();
            let mut cap = cap;
            let mut now = 1_700_000_000_000i64;
            for op in ops {
                match op {
                    Op::Push(dt, v) => {
                        now += i64::from(dt);
                        ring.push(now, f32::from(v));
                        model.push((now, f32::from(v)));
                        if model.len() > cap {
                            model.remove(0);
                        }
                    }
                    Op::Resize(c) => {
                        cap = usize::from(c);
                        ring.set_capacity(cap);
                        let n = model.len();
                        model.drain(..n.saturating_sub(cap));
                    }
                    Op::Query(a, b) => {
                        let start = now - i64::from(a);
                        let end = start + i64::from(b);
                        let (lo, hi) = ring.range(start, end);
                        let (x, y) = ring.slices(lo, hi);
                        let got: Vec<f32> = x.iter().chain(y).map(|p| p.value).collect();
                        let want: Vec<f32> = model
                            .iter()
                            .filter(|&&(t, _)| start <= t && t <= end)
                            .map(|&(_, v)| v)
                            .collect();
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(all(&ring), model.clone());
                prop_assert!(ring.heap_bytes() <= cap * 8);
            }
        }
    }
}
