//! The workload object limiter (`objectLimiters.workload`): at most
//! `max` migrations of one workload in any window of `duration`.
//!
//! Koordinator keeps a `rate.Limiter` per workload (rate max/duration,
//! burst 1), which spaces migrations evenly; kolo keeps the times of the
//! workload's recent migrations and counts them in a sliding window —
//! the same long-run rate, but up to `max` may go at once, which is what
//! the option's documentation ("maximum number of migrations allowed
//! within the window time") says.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use kolo_core::clock::Timestamp;

/// Recent migrations per workload UID.
#[derive(Debug, Clone, Default)]
pub struct ObjectLimiter {
    window: Duration,
    recent: HashMap<String, VecDeque<Timestamp>>,
}

impl ObjectLimiter {
    /// A limiter over `window` (zero: never limits).
    pub fn new(window: Duration) -> ObjectLimiter {
        ObjectLimiter { window, recent: HashMap::new() }
    }

    /// How many migrations of `workload` fall in the window ending at `now`.
    pub fn count(&mut self, workload: &str, now: Timestamp) -> usize {
        self.expire(now);
        self.recent.get(workload).map_or(0, VecDeque::len)
    }

    /// Whether one more migration of `workload` at `now` stays within
    /// `max` (`max` 0: no limit).
    pub fn allows(&mut self, workload: &str, max: usize, now: Timestamp) -> bool {
        self.window.is_zero() || max == 0 || self.count(workload, now) < max
    }

    /// Records a migration of `workload` at `now`.
    pub fn record(&mut self, workload: &str, now: Timestamp) {
        if self.window.is_zero() {
            return;
        }
        self.recent.entry(workload.to_string()).or_default().push_back(now);
    }

    /// Forgets migrations older than the window (and empty workloads, so
    /// the map stays as small as the set of recently migrated workloads).
    fn expire(&mut self, now: Timestamp) {
        let window = i128::try_from(self.window.as_nanos()).unwrap_or(i128::MAX);
        let now = now.as_nanosecond();
        self.recent.retain(|_, times| {
            while times.front().is_some_and(|t| now - t.as_nanosecond() >= window) {
                times.pop_front();
            }
            !times.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: i64) -> Timestamp {
        Timestamp::from_second(n).unwrap()
    }

    #[test]
    fn counts_within_a_sliding_window() {
        let mut l = ObjectLimiter::new(Duration::from_secs(300));
        assert!(l.allows("rs", 2, s(0)));
        l.record("rs", s(0));
        l.record("rs", s(100));
        assert!(!l.allows("rs", 2, s(299)), "two in the last 5 min");
        assert!(l.allows("other", 2, s(299)), "per workload");
        assert!(l.allows("rs", 2, s(300)), "the first left the window at 300 s");
        assert_eq!(l.count("rs", s(300)), 1);
        assert_eq!(l.count("rs", s(400)), 0);
        assert!(l.allows("rs", 0, s(100)), "max 0: no limit");
        let mut off = ObjectLimiter::new(Duration::ZERO);
        off.record("rs", s(0));
        assert!(off.allows("rs", 1, s(0)), "zero window: no limit");
    }
}
