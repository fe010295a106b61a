//! The scheduling queue: pods waiting for a scheduling cycle.
//!
//! * **active**: pods ready to be tried, highest priority first (the order
//!   comes from the profile's QueueSort plugin), then in arrival order;
//! * **backoff**: pods that failed recently, waiting out an exponential
//!   delay (initial × 2^(attempts−1), capped);
//! * **unschedulable**: pods no node could take; they wait for a cluster
//!   change that may help — one of the events the rejecting plugins
//!   registered, narrowed by the queueing hints of those that give them
//!   ([`crate::wake`]) — or for [`UNSCHEDULABLE_FLUSH`] to pass.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kolo_core::clock::Timestamp;

use crate::framework::{EventKinds, PodInfo, QueueKey};
use crate::wake::{WakeOn, Wakeup};

/// How long an unschedulable pod waits at most before it is retried anyway
/// (kube-scheduler's `podMaxInUnschedulablePodsDuration`).
pub const UNSCHEDULABLE_FLUSH: Duration = Duration::from_secs(5 * 60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Active,
    Backoff(Timestamp),
    Unschedulable {
        since: Timestamp,
        /// Every kind of event that may wake the pod.
        interest: EventKinds,
    },
    /// Popped and being scheduled (or waiting for a bind).
    InFlight,
}

#[derive(Debug)]
struct Entry {
    info: Arc<PodInfo>,
    key: QueueKey,
    attempts: u32,
    place: Place,
    /// While unschedulable: why, as far as waking it goes.
    wake_on: Option<Arc<WakeOn>>,
    /// Bumped whenever the pod moves, so stale heap entries are skipped.
    version: u64,
}

/// An active pod in the heap: (queue key, arrival, version, pod key).
type ActiveItem = (QueueKey, u64, u64, Box<str>);
/// A backing-off pod in the heap: (backoff end, version, pod key).
type BackoffItem = (Timestamp, u64, Box<str>);

/// A pod taken from the queue.
#[derive(Debug, Clone)]
pub struct QueuedPod {
    /// The pod.
    pub info: Arc<PodInfo>,
    /// Scheduling attempts before this one.
    pub attempts: u32,
}

/// The queue.
#[derive(Debug)]
pub struct SchedulingQueue {
    entries: HashMap<Box<str>, Entry>,
    /// Keys of the entries in [`Place::Unschedulable`], so events only look
    /// at those pods.
    unschedulable: HashSet<Box<str>>,
    /// The unschedulable pods counted by the events they wait for, and by
    /// when they became unschedulable: an event that moves none of them
    /// (most NodeMetric and pod events in a full cluster, thousands per
    /// report round) is dismissed without looking at each pod.
    waiting_for: HashMap<EventKinds, usize>,
    unschedulable_since: BTreeMap<Timestamp, usize>,
    active: BinaryHeap<Reverse<ActiveItem>>,
    backoff: BinaryHeap<Reverse<BackoffItem>>,
    arrivals: u64,
    versions: u64,
    initial_backoff: Duration,
    max_backoff: Duration,
}

impl SchedulingQueue {
    /// An empty queue with these retry delays.
    pub fn new(initial_backoff: Duration, max_backoff: Duration) -> SchedulingQueue {
        SchedulingQueue {
            entries: HashMap::new(),
            unschedulable: HashSet::new(),
            waiting_for: HashMap::new(),
            unschedulable_since: BTreeMap::new(),
            active: BinaryHeap::new(),
            backoff: BinaryHeap::new(),
            arrivals: 0,
            versions: 0,
            initial_backoff,
            max_backoff,
        }
    }

    /// Adds a pending pod, or replaces its object. A changed pod that was
    /// waiting as unschedulable is tried again (its change may help).
    pub fn add(&mut self, info: Arc<PodInfo>, key: QueueKey) {
        let name: Box<str> = info.key().into();
        match self.entries.get_mut(&name) {
            Some(entry) => {
                entry.info = info;
                entry.key = key;
                if matches!(entry.place, Place::Unschedulable { .. } | Place::Active) {
                    self.push_active(&name);
                }
            }
            None => {
                self.entries.insert(
                    name.clone(),
                    Entry {
                        info,
                        key,
                        attempts: 0,
                        place: Place::Active,
                        wake_on: None,
                        version: 0,
                    },
                );
                self.push_active(&name);
            }
        }
    }

    /// Gives a queued pod a new key (its QueueSort's key changed without
    /// the pod changing; `None`: keep it); an active pod takes its new
    /// place at once.
    pub fn rekey(&mut self, name: &str, key: impl FnOnce(&PodInfo) -> Option<QueueKey>) {
        let Some(entry) = self.entries.get_mut(name) else { return };
        let Some(key) = key(&entry.info) else { return };
        if entry.key == key {
            return;
        }
        entry.key = key;
        if entry.place == Place::Active {
            self.push_active(name);
        }
    }

    /// Removes a pod (deleted, or bound).
    pub fn remove(&mut self, key: &str) -> bool {
        self.unmark_unschedulable(key);
        self.entries.remove(key).is_some()
    }

    /// Whether the queue holds this pod (in any place).
    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// Takes the next pod to schedule: moves pods whose backoff ended to
    /// active, then pops the best active pod.
    pub fn pop(&mut self, now: Timestamp) -> Option<QueuedPod> {
        self.flush_backoff(now);
        while let Some(Reverse((_, _, version, name))) = self.active.pop() {
            let Some(entry) = self.entries.get_mut(&name) else { continue };
            if entry.version != version || entry.place != Place::Active {
                continue;
            }
            entry.place = Place::InFlight;
            return Some(QueuedPod { info: entry.info.clone(), attempts: entry.attempts });
        }
        None
    }

    /// Puts back a pod no node could take. It waits for events that
    /// [`wake`](Self::wake) it as `wake_on` says (or for
    /// [`UNSCHEDULABLE_FLUSH`]).
    pub fn requeue_unschedulable(&mut self, key: &str, now: Timestamp, wake_on: Arc<WakeOn>) {
        self.unmark_unschedulable(key);
        if let Some(entry) = self.entries.get_mut(key) {
            let interest = wake_on.interest();
            entry.attempts += 1;
            entry.place = Place::Unschedulable { since: now, interest };
            entry.wake_on = Some(wake_on);
            self.versions += 1;
            entry.version = self.versions;
            self.unschedulable.insert(key.into());
            *self.waiting_for.entry(interest).or_default() += 1;
            *self.unschedulable_since.entry(now).or_default() += 1;
        }
    }

    /// Puts back a pod that failed for another reason (a failed bind, an
    /// error): it is retried after its backoff.
    pub fn requeue_backoff(&mut self, key: &str, now: Timestamp) {
        let Some(entry) = self.entries.get_mut(key) else { return };
        entry.attempts += 1;
        let attempts = entry.attempts;
        let until = now.checked_add(self.backoff(attempts)).unwrap_or(now);
        self.push_backoff(key, until);
    }

    /// The retry delay after `attempts` failures: initial × 2^(attempts−1),
    /// at most the maximum.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let factor = 1u32.checked_shl(attempts.saturating_sub(1)).unwrap_or(u32::MAX);
        self.initial_backoff.saturating_mul(factor).min(self.max_backoff)
    }

    /// Whether an event of these kinds may move any unschedulable pod: one
    /// waits for such events, or has waited [`UNSCHEDULABLE_FLUSH`]. When
    /// not, the caller need not ask the plugins' hints.
    pub fn wants(&self, kinds: EventKinds, now: Timestamp) -> bool {
        self.waiting_for.keys().any(|w| w.intersects(kinds)) || self.flush_due(now)
    }

    fn flush_due(&self, now: Timestamp) -> bool {
        self.unschedulable_since
            .keys()
            .next()
            .is_some_and(|&since| waited(since, now) >= UNSCHEDULABLE_FLUSH)
    }

    /// Cluster changes happened: the unschedulable pods they may help (as
    /// `wakeup` says) are retried (after their backoff). Pods that have
    /// waited [`UNSCHEDULABLE_FLUSH`] are retried whatever happened.
    pub fn wake(&mut self, wakeup: &Wakeup, now: Timestamp) {
        if !self.wants(wakeup.events(), now) {
            return;
        }
        let moved: Vec<Box<str>> = self
            .unschedulable
            .iter()
            .filter_map(|k| self.entries.get_key_value(k))
            .filter(|(_, e)| match (e.place, &e.wake_on) {
                (Place::Unschedulable { since, interest }, Some(on)) => {
                    (interest.intersects(wakeup.events()) && wakeup.wakes(on))
                        || waited(since, now) >= UNSCHEDULABLE_FLUSH
                }
                _ => false,
            })
            .map(|(k, _)| k.clone())
            .collect();
        // The set's order is random per process; sort so the pods go back
        // in the same order on every run (their queue key, then name).
        let mut moved: Vec<(QueueKey, Box<str>)> =
            moved.into_iter().map(|k| (self.entries[&k].key, k)).collect();
        moved.sort();
        for (_, name) in moved {
            self.move_to_backoff_or_active(&name, now);
        }
    }

    /// Retries unschedulable pods that have waited [`UNSCHEDULABLE_FLUSH`].
    pub fn flush_unschedulable(&mut self, now: Timestamp) {
        self.wake(&Wakeup::default(), now);
    }

    /// When the next backoff ends, if any pod is backing off.
    pub fn next_backoff_end(&self) -> Option<Timestamp> {
        self.backoff.iter().map(|Reverse((t, ..))| *t).min()
    }

    /// Pods waiting in each place: (active, backoff, unschedulable, in flight).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let mut c = (0, 0, 0, 0);
        for e in self.entries.values() {
            match e.place {
                Place::Active => c.0 += 1,
                Place::Backoff(_) => c.1 += 1,
                Place::Unschedulable { .. } => c.2 += 1,
                Place::InFlight => c.3 += 1,
            }
        }
        c
    }

    fn move_to_backoff_or_active(&mut self, name: &str, now: Timestamp) {
        let Some(entry) = self.entries.get(name) else { return };
        let since = match entry.place {
            Place::Unschedulable { since, .. } => since,
            _ => return,
        };
        let until = since.checked_add(self.backoff(entry.attempts)).unwrap_or(since);
        if until > now {
            self.push_backoff(name, until);
        } else {
            self.push_active(name);
        }
    }

    fn push_backoff(&mut self, name: &str, until: Timestamp) {
        self.unmark_unschedulable(name);
        let Some(entry) = self.entries.get_mut(name) else { return };
        entry.place = Place::Backoff(until);
        self.versions += 1;
        entry.version = self.versions;
        self.backoff.push(Reverse((until, entry.version, name.into())));
    }

    fn flush_backoff(&mut self, now: Timestamp) {
        while let Some(Reverse((until, version, _))) = self.backoff.peek() {
            if *until > now {
                break;
            }
            let version = *version;
            let Some(Reverse((_, _, name))) = self.backoff.pop() else { break };
            if self.entries.get(&name).is_some_and(|e| e.version == version) {
                self.push_active(&name);
            }
        }
    }

    fn push_active(&mut self, name: &str) {
        self.unmark_unschedulable(name);
        let Some(entry) = self.entries.get_mut(name) else { return };
        entry.place = Place::Active;
        self.versions += 1;
        entry.version = self.versions;
        self.arrivals += 1;
        self.active.push(Reverse((entry.key, self.arrivals, entry.version, name.into())));
    }

    /// Takes a pod out of the unschedulable set and its counts, if it is
    /// there (before it moves elsewhere or is removed).
    fn unmark_unschedulable(&mut self, name: &str) {
        if !self.unschedulable.remove(name) {
            return;
        }
        let Some(entry) = self.entries.get_mut(name) else { return };
        entry.wake_on = None;
        let Place::Unschedulable { since, interest } = entry.place else { return };
        // Only keys some pod still has are kept, so that events look at few.
        if let Some(n) = self.waiting_for.get_mut(&interest) {
            *n -= 1;
            if *n == 0 {
                self.waiting_for.remove(&interest);
            }
        }
        if let Some(n) = self.unschedulable_since.get_mut(&since) {
            *n -= 1;
            if *n == 0 {
                self.unschedulable_since.remove(&since);
            }
        }
    }
}

fn waited(since: Timestamp, now: Timestamp) -> Duration {
    Duration::try_from(now.duration_since(since)).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod_info;

    fn any(events: EventKinds) -> Arc<WakeOn> {
        Arc::new(WakeOn::any(events))
    }

    fn event(q: &mut SchedulingQueue, kind: EventKinds, now: Timestamp) {
        q.wake(&Wakeup::of(kind), now);
    }

    fn t(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    fn queue() -> SchedulingQueue {
        SchedulingQueue::new(Duration::from_secs(1), Duration::from_secs(10))
    }

    fn add(q: &mut SchedulingQueue, name: &str, priority: i64) {
        q.add(Arc::new(pod_info(name, &[])), QueueKey::new(-priority, 0));
    }

    fn pop_name(q: &mut SchedulingQueue, now: Timestamp) -> Option<String> {
        q.pop(now).map(|p| p.info.key().to_string())
    }

    #[test]
    fn priority_then_arrival_order() {
        let mut q = queue();
        add(&mut q, "low", 1);
        add(&mut q, "high", 9);
        add(&mut q, "low2", 1);
        let order: Vec<_> = std::iter::from_fn(|| pop_name(&mut q, t(0))).collect();
        assert_eq!(order, ["default/high", "default/low", "default/low2"]);
    }

    #[test]
    fn a_rekeyed_pod_takes_its_new_place() {
        let mut q = queue();
        add(&mut q, "a", 1);
        add(&mut q, "b", 1);
        q.rekey("default/b", |_| Some(QueueKey::new(-5, 0)));
        q.rekey("default/a", |_| None);
        q.rekey("default/missing", |_| unreachable!("not queued"));
        let order: Vec<_> = std::iter::from_fn(|| pop_name(&mut q, t(0))).collect();
        assert_eq!(order, ["default/b", "default/a"]);
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let q = queue();
        let got: Vec<u64> = (1..=6).map(|a| q.backoff(a).as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 10, 10]);
    }

    #[test]
    fn failed_pods_wait_out_their_backoff() {
        let mut q = queue();
        add(&mut q, "p", 0);
        q.pop(t(0)).unwrap();
        q.requeue_backoff("default/p", t(0));
        assert_eq!(pop_name(&mut q, t(0)), None);
        assert_eq!(q.next_backoff_end(), Some(t(1)));
        assert_eq!(pop_name(&mut q, t(1)).as_deref(), Some("default/p"));
        q.requeue_backoff("default/p", t(1));
        assert_eq!(pop_name(&mut q, t(2)), None, "second failure waits 2 s");
        assert_eq!(pop_name(&mut q, t(3)).as_deref(), Some("default/p"));
    }

    #[test]
    fn unschedulable_pods_move_only_on_relevant_events_or_after_the_flush() {
        let mut q = queue();
        add(&mut q, "p", 0);
        q.pop(t(0)).unwrap();
        q.requeue_unschedulable(
            "default/p",
            t(0),
            any(EventKinds::NODE_ADD | EventKinds::POD_DELETE),
        );
        event(&mut q, EventKinds::NODE_METRIC, t(5));
        assert_eq!(pop_name(&mut q, t(5)), None, "not interested in metrics");
        event(&mut q, EventKinds::POD_DELETE, t(5));
        assert_eq!(pop_name(&mut q, t(5)).as_deref(), Some("default/p"));

        q.requeue_unschedulable("default/p", t(10), any(EventKinds::NODE_ADD));
        q.flush_unschedulable(t(10 + 299));
        assert_eq!(pop_name(&mut q, t(10 + 299)), None);
        q.flush_unschedulable(t(10 + 300));
        assert_eq!(pop_name(&mut q, t(10 + 300)).as_deref(), Some("default/p"));
        assert_eq!(q.counts(), (0, 0, 0, 1));
        assert!(q.remove("default/p"));
        assert_eq!(q.counts(), (0, 0, 0, 0));
    }

    #[test]
    fn the_unschedulable_counts_follow_the_pods() {
        let mut q = queue();
        add(&mut q, "a", 0);
        add(&mut q, "b", 0);
        q.pop(t(0)).unwrap();
        q.pop(t(0)).unwrap();
        q.requeue_unschedulable("default/a", t(0), any(EventKinds::POD_DELETE));
        q.requeue_unschedulable("default/b", t(1), any(EventKinds::NODE_ADD));
        let sizes = |q: &SchedulingQueue| (q.waiting_for.len(), q.unschedulable_since.len());
        // (event, unschedulable pods left, distinct counts left)
        let steps = [
            (EventKinds::NODE_METRIC, 2, (2, 2)),
            (EventKinds::POD_DELETE, 1, (1, 1)),
            (EventKinds::POD_ADD, 1, (1, 1)),
        ];
        for (event, left, counts) in steps {
            q.wake(&Wakeup::of(event), t(2));
            assert_eq!((q.counts().2, sizes(&q)), (left, counts), "{event:?}");
        }
        assert!(q.remove("default/b"));
        assert_eq!(sizes(&q), (0, 0), "removing a pod drops its counts");
    }

    #[test]
    fn an_event_right_after_a_failure_still_respects_the_backoff() {
        let mut q = queue();
        add(&mut q, "p", 0);
        q.pop(t(0)).unwrap();
        q.requeue_unschedulable("default/p", t(0), any(EventKinds::ALL));
        event(&mut q, EventKinds::NODE_ADD, t(0));
        assert_eq!(pop_name(&mut q, t(0)), None);
        assert_eq!(pop_name(&mut q, t(1)).as_deref(), Some("default/p"));
    }
}
