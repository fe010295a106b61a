//! The anomaly detector (spec §9.2 step 7): a node over its high threshold
//! becomes a source only after more than `consecutiveAbnormalities`
//! consecutive abnormal rounds; it stays one until the anomaly state times
//! out (counted from entering it) or more than `consecutiveNormalities`
//! consecutive normal rounds are seen. Detectors live in a cache whose
//! entries expire `detectorCacheTimeout` after their last mark.

use std::collections::HashMap;
use std::time::Duration;

use kolo_core::clock::Timestamp;

use super::args::AnomalyCondition;

/// The detector's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Not (yet) abnormal.
    Ok,
    /// Abnormal until `until` (or enough normal rounds).
    Anomaly {
        /// When the state expires (the state is left once `now > until`).
        until: Timestamp,
    },
}

/// One node's detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detector {
    /// The state, as of the last mark.
    pub state: State,
    /// Consecutive abnormal marks.
    pub abnormalities: u32,
    /// Consecutive normal marks.
    pub normalities: u32,
}

impl Default for Detector {
    fn default() -> Detector {
        Detector { state: State::Ok, abnormalities: 0, normalities: 0 }
    }
}

impl Detector {
    /// Leaves an expired anomaly state (clearing the counters).
    fn current(&mut self, now: Timestamp) -> State {
        if let State::Anomaly { until } = self.state
            && until < now
        {
            *self = Detector::default();
        }
        self.state
    }

    /// Records one round; returns whether the node is abnormal after it.
    pub fn mark(&mut self, normal: bool, cond: &AnomalyCondition, now: Timestamp) -> bool {
        let state = self.current(now);
        if normal {
            self.normalities = self.normalities.saturating_add(1);
            self.abnormalities = 0;
            if matches!(state, State::Anomaly { .. })
                && self.normalities > cond.consecutive_normalities
            {
                *self = Detector::default();
            }
        } else {
            self.abnormalities = self.abnormalities.saturating_add(1);
            self.normalities = 0;
            if state == State::Ok && self.abnormalities > cond.consecutive_abnormalities {
                let timeout = jiff_duration(cond.effective_timeout());
                let until = now.saturating_add(timeout).unwrap_or(now);
                *self =
                    Detector { state: State::Anomaly { until }, abnormalities: 0, normalities: 0 };
            }
        }
        matches!(self.current(now), State::Anomaly { .. })
    }
}

fn jiff_duration(d: Duration) -> k8s_openapi::jiff::SignedDuration {
    k8s_openapi::jiff::SignedDuration::try_from(d).unwrap_or(k8s_openapi::jiff::SignedDuration::MAX)
}

/// The detectors of one kind (node or prod usage), by node name.
#[derive(Debug, Clone, Default)]
pub struct Detectors {
    entries: HashMap<String, (Detector, Timestamp)>,
}

impl Detectors {
    /// Drops entries not marked within `ttl` (the cache expiry).
    pub fn expire(&mut self, ttl: Duration, now: Timestamp) {
        let ttl = jiff_duration(ttl);
        self.entries.retain(|_, (_, touched)| touched.saturating_add(ttl).is_ok_and(|t| t >= now));
    }

    /// Marks `node` abnormal (creating its detector); whether it now is
    /// really abnormal.
    pub fn mark_abnormal(&mut self, node: &str, cond: &AnomalyCondition, now: Timestamp) -> bool {
        let (d, touched) =
            self.entries.entry(node.to_owned()).or_insert((Detector::default(), now));
        *touched = now;
        d.mark(false, cond, now)
    }

    /// Marks `node` normal if it has a detector.
    pub fn mark_normal(&mut self, node: &str, cond: &AnomalyCondition, now: Timestamp) {
        if let Some((d, touched)) = self.entries.get_mut(node) {
            *touched = now;
            d.mark(true, cond, now);
        }
    }

    /// Resets `node`'s detector if it has one.
    pub fn reset(&mut self, node: &str) {
        if let Some((d, _)) = self.entries.get_mut(node) {
            *d = Detector::default();
        }
    }

    /// `node`'s detector.
    pub fn get(&self, node: &str) -> Option<&Detector> {
        self.entries.get(node).map(|(d, _)| d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    fn cond(n: u32, normal: u32) -> AnomalyCondition {
        AnomalyCondition {
            timeout: Some(Duration::from_secs(60)),
            consecutive_abnormalities: n,
            consecutive_normalities: normal,
        }
    }

    #[test]
    fn five_fires_on_the_sixth_consecutive_round() {
        let c = cond(5, 3);
        let mut d = Detectors::default();
        let fired: Vec<bool> = (0..6).map(|i| d.mark_abnormal("n", &c, at(i * 10))).collect();
        assert_eq!(fired, [false, false, false, false, false, true]);
    }

    #[test]
    fn a_normal_round_restarts_the_count() {
        let c = cond(2, 3);
        let mut d = Detectors::default();
        assert!(!d.mark_abnormal("n", &c, at(0)));
        assert!(!d.mark_abnormal("n", &c, at(1)));
        d.mark_normal("n", &c, at(2));
        assert!(!d.mark_abnormal("n", &c, at(3)));
        assert!(!d.mark_abnormal("n", &c, at(4)));
        assert!(d.mark_abnormal("n", &c, at(5)), "third consecutive");
    }

    #[test]
    fn the_state_times_out_from_entering_it_not_from_later_marks() {
        let c = cond(1, 3);
        let mut d = Detectors::default();
        assert!(!d.mark_abnormal("n", &c, at(0)));
        assert!(d.mark_abnormal("n", &c, at(10)), "entered at 10, until 70");
        assert!(d.mark_abnormal("n", &c, at(50)), "still abnormal; not extended");
        assert!(d.mark_abnormal("n", &c, at(70)), "until is inclusive");
        // At 71 the state has expired: counters restart, one abnormal mark
        // is not enough.
        assert!(!d.mark_abnormal("n", &c, at(71)));
    }

    #[test]
    fn more_normal_rounds_than_configured_leave_the_state() {
        let c = cond(1, 2);
        let mut d = Detectors::default();
        d.mark_abnormal("n", &c, at(0));
        assert!(d.mark_abnormal("n", &c, at(1)));
        d.mark_normal("n", &c, at(2));
        d.mark_normal("n", &c, at(3));
        assert!(matches!(d.get("n").unwrap().state, State::Anomaly { .. }), "2 is not more than 2");
        d.mark_normal("n", &c, at(4));
        assert_eq!(d.get("n").unwrap().state, State::Ok);
        // A reset clears everything too.
        d.mark_abnormal("n", &c, at(5));
        d.reset("n");
        assert_eq!(*d.get("n").unwrap(), Detector::default());
    }

    #[test]
    fn the_cache_forgets_untouched_detectors() {
        let c = cond(1, 3);
        let mut d = Detectors::default();
        d.mark_abnormal("n", &c, at(0));
        d.expire(Duration::from_secs(300), at(300));
        assert!(d.get("n").is_some());
        d.expire(Duration::from_secs(300), at(301));
        assert!(d.get("n").is_none());
        // So the next abnormal round starts from one again.
        assert!(!d.mark_abnormal("n", &c, at(302)));
    }
}
