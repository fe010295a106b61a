//! The scheduler driver's metrics, served on the process's `/metrics`
//! beside `kolo_scheduler_actions_total` (binds, Events, status writes by
//! result) and `kolo_scheduler_leader`:
//!
//! * `kolo_scheduler_schedule_attempts_total{result}`: scheduling cycles by
//!   result (`scheduled`, `unschedulable`, `error`);
//! * `kolo_scheduler_scheduling_algorithm_duration_seconds`: one cycle's
//!   decision time (Filter, Score, Reserve, Permit; preemption when it
//!   runs), measured around the core's `schedule_next`;
//! * `kolo_scheduler_pod_scheduling_duration_seconds`: from the pod's first
//!   arrival in the scheduler (its watch event) to its assignment, across
//!   every attempt;
//! * `kolo_scheduler_pending_pods{queue}`: pods waiting, by queue
//!   (`active`, `backoff`, `unschedulable`, `in_flight`);
//! * `kolo_scheduler_binds_total{result}` (`ok`, `error`),
//!   `kolo_scheduler_preemption_attempts_total`;
//! * `kolo_scheduler_node_evaluations_total` and
//!   `kolo_scheduler_equivalence_cache_reused_total`: nodes run through the
//!   plugins and nodes whose results the equivalence cache gave; their
//!   ratio is the cache's hit ratio;
//! * `kolo_scheduler_nodes`: nodes in the scheduler's cache.
//!
//! Per-plugin durations are not exported: a plugin call takes tens of
//! nanoseconds, less than reading the clock twice (`kolo bench schedule`
//! and criterion measure the plugins instead).

use std::sync::Arc;
use std::time::Duration;

use kolo_scheduler::scheduler::Stats;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::health::Health;

/// A `result` label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    /// How it ended.
    pub result: &'static str,
}

/// A `queue` label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabel {
    /// `active`, `backoff`, `unschedulable` or `in_flight`.
    pub queue: &'static str,
}

/// The scheduler driver's own metrics.
pub struct SchedulerMetrics {
    attempts: Family<ResultLabel, Counter>,
    algorithm: Histogram,
    e2e: Histogram,
    pending: Family<QueueLabel, Gauge>,
    binds: Family<ResultLabel, Counter>,
    preemptions: Counter,
    evaluations: Counter,
    reused: Counter,
    nodes: Gauge,
}

impl std::fmt::Debug for SchedulerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerMetrics").finish_non_exhaustive()
    }
}

impl SchedulerMetrics {
    /// The metrics, registered with `health`'s `/metrics`.
    pub fn new(health: &Health) -> Arc<SchedulerMetrics> {
        let mut registry = Registry::with_prefix("kolo_scheduler");
        let m = SchedulerMetrics {
            attempts: Family::default(),
            // 10 µs to ~5 s.
            algorithm: Histogram::new(exponential_buckets(1e-5, 2.0, 20)),
            // 1 ms to ~9 min.
            e2e: Histogram::new(exponential_buckets(1e-3, 2.0, 20)),
            pending: Family::default(),
            binds: Family::default(),
            preemptions: Counter::default(),
            evaluations: Counter::default(),
            reused: Counter::default(),
            nodes: Gauge::default(),
        };
        let r = &mut registry;
        r.register("schedule_attempts", "Scheduling cycles by result", m.attempts.clone());
        r.register(
            "scheduling_algorithm_duration_seconds",
            "Decision time of one scheduling cycle",
            m.algorithm.clone(),
        );
        r.register(
            "pod_scheduling_duration_seconds",
            "From a pod's first arrival in the scheduler to its assignment",
            m.e2e.clone(),
        );
        r.register("pending_pods", "Pods waiting, by queue", m.pending.clone());
        r.register("binds", "Binds by result", m.binds.clone());
        r.register("preemption_attempts", "Cycles that nominated a node", m.preemptions.clone());
        r.register(
            "node_evaluations",
            "Nodes run through the Filter and Score plugins",
            m.evaluations.clone(),
        );
        r.register(
            "equivalence_cache_reused",
            "Nodes whose Filter and Score results the equivalence cache gave",
            m.reused.clone(),
        );
        r.register("nodes", "Nodes in the scheduler's cache", m.nodes.clone());
        health.add_registry(registry);
        Arc::new(m)
    }

    /// Records one cycle's decision time.
    pub fn cycle(&self, took: Duration) {
        self.algorithm.observe(took.as_secs_f64());
    }

    /// Records a pod's time from arrival to assignment.
    pub fn assigned(&self, since_arrival: Duration) {
        self.e2e.observe(since_arrival.as_secs_f64());
    }

    /// Brings the counters up to the core's `stats` (cumulative) from
    /// `last` (what they were at the previous call), and the gauges to the
    /// queue counts and node count.
    pub fn update(
        &self,
        last: &Stats,
        stats: &Stats,
        queue: (usize, usize, usize, usize),
        nodes: usize,
    ) {
        let add = |counter: &Counter, now: u64, before: u64| {
            counter.inc_by(now.saturating_sub(before));
        };
        let result = |result| ResultLabel { result };
        add(&self.attempts.get_or_create(&result("scheduled")), stats.scheduled, last.scheduled);
        add(
            &self.attempts.get_or_create(&result("unschedulable")),
            stats.unschedulable,
            last.unschedulable,
        );
        add(&self.attempts.get_or_create(&result("error")), stats.failed, last.failed);
        add(&self.binds.get_or_create(&result("ok")), stats.bound, last.bound);
        add(&self.binds.get_or_create(&result("error")), stats.bind_failures, last.bind_failures);
        add(&self.preemptions, stats.preemptions, last.preemptions);
        add(&self.evaluations, stats.node_evaluations, last.node_evaluations);
        add(&self.reused, stats.node_results_reused, last.node_results_reused);
        let (active, backoff, unschedulable, in_flight) = queue;
        for (queue, n) in [
            ("active", active),
            ("backoff", backoff),
            ("unschedulable", unschedulable),
            ("in_flight", in_flight),
        ] {
            self.pending.get_or_create(&QueueLabel { queue }).set(n as i64);
        }
        self.nodes.set(nodes as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(health: &Health) -> String {
        health.encode()
    }

    #[test]
    fn counters_follow_the_core_stats_by_difference() {
        let health = Health::new("scheduler");
        let m = SchedulerMetrics::new(&health);
        let first = Stats {
            cycles: 5,
            scheduled: 3,
            unschedulable: 2,
            bound: 3,
            node_evaluations: 40,
            node_results_reused: 60,
            ..Stats::default()
        };
        m.update(&Stats::default(), &first, (1, 2, 3, 4), 10);
        let second = Stats { scheduled: 4, bind_failures: 1, ..first };
        m.update(&first, &second, (0, 0, 1, 0), 11);
        m.cycle(Duration::from_micros(50));
        m.assigned(Duration::from_millis(20));
        let text = scrape(&health);
        for line in [
            "kolo_scheduler_schedule_attempts_total{result=\"scheduled\"} 4",
            "kolo_scheduler_schedule_attempts_total{result=\"unschedulable\"} 2",
            "kolo_scheduler_binds_total{result=\"ok\"} 3",
            "kolo_scheduler_binds_total{result=\"error\"} 1",
            "kolo_scheduler_node_evaluations_total 40",
            "kolo_scheduler_equivalence_cache_reused_total 60",
            "kolo_scheduler_pending_pods{queue=\"unschedulable\"} 1",
            "kolo_scheduler_pending_pods{queue=\"active\"} 0",
            "kolo_scheduler_nodes 11",
            "kolo_scheduler_scheduling_algorithm_duration_seconds_count 1",
            "kolo_scheduler_pod_scheduling_duration_seconds_count 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
    }
}
