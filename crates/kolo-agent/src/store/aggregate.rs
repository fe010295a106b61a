//! Aggregations over the points of a window: avg, last, count and the
//! percentiles, with the reference's exact percentile index rule.

use std::time::Duration;

use kolo_core::clock::Timestamp;

use super::ring::{Point, Ring};

/// An aggregation the store answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregation {
    /// Arithmetic mean.
    Avg,
    /// The value with the greatest timestamp (the last one pushed on ties).
    Last,
    /// The number of points.
    Count,
    /// 50th percentile.
    P50,
    /// 90th percentile.
    P90,
    /// 95th percentile.
    P95,
    /// 99th percentile.
    P99,
}

impl Aggregation {
    /// The percentile as the reference's `float32`, for the percentile kinds.
    pub fn percentile(self) -> Option<f32> {
        match self {
            Aggregation::P50 => Some(0.5),
            Aggregation::P90 => Some(0.9),
            Aggregation::P95 => Some(0.95),
            Aggregation::P99 => Some(0.99),
            Aggregation::Avg | Aggregation::Last | Aggregation::Count => None,
        }
    }
}

/// The index into the ascending sorted values that percentile `p` picks
/// among `n` values: `int(float32(n) × p) − 1`, clamped to `0..n` (the
/// reference's rule, computed in `f32` like the reference).
///
/// So p90 of 10 values is index 8 (the 9th smallest), and p99 of 10 values
/// is `int(9.9) − 1 = 8` too.
pub fn percentile_index(n: usize, p: f32) -> usize {
    // `as` truncates toward zero like Go's int(float32) and saturates.
    let index = ((n as f32) * p) as i64 - 1;
    usize::try_from(index.max(0)).unwrap_or(0).min(n.saturating_sub(1))
}

/// The percentile `p` of `values` by [`percentile_index`], reordering
/// `values`; `None` when empty.
pub fn percentile(values: &mut [f32], p: f32) -> Option<f32> {
    if values.is_empty() {
        return None;
    }
    let k = percentile_index(values.len(), p);
    let (_, v, _) = values.select_nth_unstable_by(k, f32::total_cmp);
    Some(*v)
}

/// Every aggregation of one window at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of points (at least 1).
    pub count: usize,
    /// Mean.
    pub avg: f64,
    /// Value of the newest point.
    pub last: f64,
    /// 50th percentile.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Time of the oldest point in the window.
    pub first_at: Timestamp,
    /// Time of the newest point in the window.
    pub last_at: Timestamp,
}

impl Summary {
    /// The value of one aggregation (`Count` as a float).
    pub fn get(&self, aggregation: Aggregation) -> f64 {
        match aggregation {
            Aggregation::Avg => self.avg,
            Aggregation::Last => self.last,
            Aggregation::Count => self.count as f64,
            Aggregation::P50 => self.p50,
            Aggregation::P90 => self.p90,
            Aggregation::P95 => self.p95,
            Aggregation::P99 => self.p99,
        }
    }

    /// Newest minus oldest point time (the reference's
    /// `TimeRangeDuration`), the basis of the cold-start filter.
    pub fn time_range(&self) -> Duration {
        ms_duration(self.last_at.as_millisecond() - self.first_at.as_millisecond())
    }
}

pub(crate) fn ms_duration(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

pub(crate) fn timestamp(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(ms).unwrap_or(if ms < 0 { Timestamp::MIN } else { Timestamp::MAX })
}

/// The (non-empty) points of one series inside a time window, borrowed from
/// the store. Values come out in the metric's unit (cores, bytes, percent).
#[derive(Debug, Clone, Copy)]
pub struct Window<'a> {
    ring: &'a Ring,
    lo: usize,
    hi: usize,
    /// Storage unit → reporting unit (1024 for memory kept in KiB).
    scale: f64,
}

impl<'a> Window<'a> {
    /// The points of `ring` with `start_ms <= t <= end_ms`; `None` if none.
    pub(crate) fn new(ring: &'a Ring, start_ms: i64, end_ms: i64, scale: f64) -> Option<Self> {
        let (lo, hi) = ring.range(start_ms, end_ms);
        (hi > lo).then_some(Window { ring, lo, hi, scale })
    }

    fn points(&self) -> impl Iterator<Item = &'a Point> + 'a {
        let (a, b) = self.ring.slices(self.lo, self.hi);
        a.iter().chain(b)
    }

    /// Number of points (at least 1).
    pub fn count(&self) -> usize {
        self.hi - self.lo
    }

    /// Arithmetic mean.
    pub fn avg(&self) -> f64 {
        let sum: f64 = self.points().map(|p| f64::from(p.value)).sum();
        sum / self.count() as f64 * self.scale
    }

    /// The newest value.
    pub fn last(&self) -> f64 {
        f64::from(self.ring.get(self.hi - 1).1) * self.scale
    }

    /// Time of the oldest point.
    pub fn first_at(&self) -> Timestamp {
        timestamp(self.ring.get(self.lo).0)
    }

    /// Time of the newest point.
    pub fn last_at(&self) -> Timestamp {
        timestamp(self.ring.get(self.hi - 1).0)
    }

    /// Newest minus oldest point time.
    pub fn time_range(&self) -> Duration {
        ms_duration(self.ring.get(self.hi - 1).0 - self.ring.get(self.lo).0)
    }

    /// Percentile `p` (by [`percentile_index`]); `scratch` is reused for
    /// the selection so that a query does not allocate once it has grown.
    pub fn percentile(&self, p: f32, scratch: &mut Vec<f32>) -> f64 {
        self.fill(scratch);
        percentile(scratch, p).map_or(0.0, |v| f64::from(v) * self.scale)
    }

    /// One aggregation.
    pub fn aggregate(&self, aggregation: Aggregation, scratch: &mut Vec<f32>) -> f64 {
        match aggregation {
            Aggregation::Avg => self.avg(),
            Aggregation::Last => self.last(),
            Aggregation::Count => self.count() as f64,
            _ => self.percentile(aggregation.percentile().unwrap_or(1.0), scratch),
        }
    }

    /// Every aggregation, with one copy of the values and one selection per
    /// percentile on a shrinking slice.
    pub fn summary(&self, scratch: &mut Vec<f32>) -> Summary {
        self.fill(scratch);
        let n = scratch.len();
        let mut out = [0f32; 4];
        let mut from = 0;
        for (slot, p) in [0.5f32, 0.9, 0.95, 0.99].into_iter().enumerate() {
            // Indices are non-decreasing in p, and after selecting index k
            // everything right of k is >= it: select within scratch[from..].
            let k = percentile_index(n, p).max(from);
            let (_, v, _) = scratch[from..].select_nth_unstable_by(k - from, f32::total_cmp);
            out[slot] = *v;
            from = k;
        }
        let s = self.scale;
        Summary {
            count: n,
            avg: self.avg(),
            last: self.last(),
            p50: f64::from(out[0]) * s,
            p90: f64::from(out[1]) * s,
            p95: f64::from(out[2]) * s,
            p99: f64::from(out[3]) * s,
            first_at: self.first_at(),
            last_at: self.last_at(),
        }
    }

    fn fill(&self, scratch: &mut Vec<f32>) {
        scratch.clear();
        let (a, b) = self.ring.slices(self.lo, self.hi);
        scratch.extend(a.iter().chain(b).map(|p| p.value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(values: &[f32], p: f32) -> Option<f32> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f32::total_cmp);
        let index = ((values.len() as f32) * p) as i64 - 1;
        Some(sorted[index.max(0) as usize])
    }

    #[test]
    fn percentile_index_table() {
        // (n, p, index, note)
        let cases: &[(usize, f32, usize)] = &[
            (10, 0.9, 8),   // the 9th smallest
            (10, 0.99, 8),  // int(9.9) - 1 = 8: also the 9th smallest
            (10, 0.5, 4),   // the 5th smallest
            (10, 0.95, 8),  // int(9.5) - 1
            (1, 0.5, 0),    // int(0.5) - 1 = -1 → clamped to 0
            (1, 0.99, 0),   // clamped
            (2, 0.5, 0),    // int(1.0) - 1
            (20, 0.95, 18), // int(19.0) - 1
            (100, 0.95, 94),
            (100, 0.99, 98),
            (300, 0.99, 296), // int(297) - 1
            (1800, 0.9, 1619),
            (3, 1.0, 2),
        ];
        for &(n, p, want) in cases {
            assert_eq!(percentile_index(n, p), want, "n={n} p={p}");
        }
    }

    #[test]
    fn percentiles_of_ten_points() {
        let mut v: Vec<f32> = (1..=10).rev().map(|x| x as f32).collect();
        assert_eq!(percentile(&mut v, 0.9), Some(9.0));
        assert_eq!(percentile(&mut v, 0.99), Some(9.0));
        assert_eq!(percentile(&mut v, 0.5), Some(5.0));
        assert_eq!(percentile(&mut [], 0.5), None);
    }

    #[test]
    fn summary_matches_single_queries() {
        let mut ring = Ring::new(100);
        let values = [5.0f32, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0, 4.0, 6.0, 10.0, 0.5];
        for (i, v) in values.iter().enumerate() {
            ring.push(1000 * i as i64, *v);
        }
        let w = Window::new(&ring, 0, 100_000, 2.0).unwrap();
        let mut scratch = Vec::new();
        let s = w.summary(&mut scratch);
        assert_eq!(s.count, 11);
        assert_eq!(s.last, 1.0); // 0.5 × scale 2
        assert!((s.avg - 2.0 * 55.5 / 11.0).abs() < 1e-9);
        for agg in [Aggregation::P50, Aggregation::P90, Aggregation::P95, Aggregation::P99] {
            assert_eq!(s.get(agg), w.aggregate(agg, &mut scratch), "{agg:?}");
            let want = naive(&values, agg.percentile().unwrap()).unwrap();
            assert_eq!(s.get(agg), f64::from(want) * 2.0, "{agg:?}");
        }
        assert_eq!(s.time_range(), Duration::from_secs(10));
        assert_eq!(s.get(Aggregation::Count), 11.0);
    }

    proptest! {
        #[test]
        fn percentile_matches_naive_sort(
            values in proptest::collection::vec(-1e6f32..1e6, 0..300),
            p in prop_oneof![Just(0.5f32), Just(0.9), Just(0.95), Just(0.99), 0.0f32..=1.0],
        ) {
            let mut v = values.clone();
            prop_assert_eq!(percentile(&mut v, p), naive(&values, p));
        }

        #[test]
        fn summary_matches_naive_sort(values in proptest::collection::vec(0f32..1e4, 1..300)) {
            let mut ring = Ring::new(values.len());
            for (i, v) in values.iter().enumerate() {
                ring.push(i as i64, *v);
            }
            let w = Window::new(&ring, 0, i64::MAX, 1.0).unwrap();
            let s = w.summary(&mut Vec::new());
            for agg in [Aggregation::P50, Aggregation::P90, Aggregation::P95, Aggregation::P99] {
                let want = naive(&values, agg.percentile().unwrap()).unwrap();
                prop_assert_eq!(s.get(agg), f64::from(want));
            }
            prop_assert_eq!(s.last, f64::from(*values.last().unwrap()));
        }
    }
}
