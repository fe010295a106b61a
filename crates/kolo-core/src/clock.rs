//! Time, as decision code sees it.
//!
//! Decision functions never read the system clock: they take a timestamp as
//! an argument, and the component that calls them asks a [`Clock`]. The real
//! components use [`SystemClock`]; tests and the simulator use a
//! [`ManualClock`] they move forward themselves, so the same inputs always
//! give the same decisions.

use std::sync::Mutex;
use std::time::Duration;

pub use k8s_openapi::jiff::Timestamp;

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The machine's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that only moves when told to.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock { now: Mutex::new(start) }
    }

    /// Sets the time. Moving backwards is allowed: tests of clock skew need it.
    pub fn set(&self, now: Timestamp) {
        *self.lock() = now;
    }

    /// Moves the clock forward by `by`, saturating at the largest timestamp.
    pub fn advance(&self, by: Duration) {
        let mut now = self.lock();
        *now = now.checked_add(by).unwrap_or(Timestamp::MAX);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Timestamp> {
        // A panic while holding this lock cannot leave a half-written
        // timestamp, so a poisoned lock is still safe to use.
        self.now.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::from_secs(90));
        assert_eq!(clock.now().to_string(), "2026-01-01T00:01:30Z");
        clock.set(start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::MAX);
        assert_eq!(clock.now(), Timestamp::MAX);
    }

    #[test]
    fn system_clock_is_after_2025() {
        let floor: Timestamp = "2025-01-01T00:00:00Z".parse().unwrap();
        assert!(SystemClock.now() > floor);
    }

    #[test]
    fn clocks_are_usable_as_trait_objects() {
        let clocks: Vec<Box<dyn Clock>> =
            vec![Box::new(SystemClock), Box::new(ManualClock::new(Timestamp::UNIX_EPOCH))];
        assert_eq!(clocks[1].now(), Timestamp::UNIX_EPOCH);
    }
}
