//! The descheduler's metrics, served on the process's `/metrics` beside
//! `kolo_descheduler_actions_total` and `kolo_descheduler_leader`:
//!
//! * `kolo_descheduler_migrations{phase,reason}`: PodMigrationJobs now, by
//!   phase and reason (from the jobs store);
//! * `kolo_descheduler_evictions_total{result}`: evictions the driver made
//!   (`evicted`, `gone`, `refused` by a PodDisruptionBudget, `error`);
//! * `kolo_descheduler_balance_rounds_total` and
//!   `kolo_descheduler_balance_duration_seconds`: Balance rounds and how
//!   long each took to decide;
//! * `kolo_descheduler_nodes{pool,class}`: nodes by LowNodeLoad class per
//!   pool in the last round;
//! * `kolo_descheduler_reservation_crd_installed`: 0 while the Reservation
//!   CRD is missing (ReservationFirst migrations cannot progress).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kolo_descheduler::low_node_load::PoolReport;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::health::Health;

/// Labels of `kolo_descheduler_migrations`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MigrationLabels {
    /// The job's phase.
    pub phase: String,
    /// The job's reason (empty when none).
    pub reason: String,
}

/// Labels of `kolo_descheduler_evictions_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EvictionLabels {
    /// `evicted`, `gone`, `refused` or `error`.
    pub result: String,
}

/// Labels of `kolo_descheduler_nodes`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeClassLabels {
    /// The node pool.
    pub pool: String,
    /// The LowNodeLoad class (`low`, `source`, ...).
    pub class: String,
}

/// The descheduler's own metrics.
pub struct DeschedulerMetrics {
    /// Jobs by phase and reason.
    pub migrations: Family<MigrationLabels, Gauge>,
    /// Evictions by result.
    pub evictions: Family<EvictionLabels, Counter>,
    /// Balance rounds run.
    pub balance_rounds: Counter,
    /// Balance round decision time, seconds.
    pub balance_duration: Histogram,
    /// Nodes by class per pool.
    pub nodes: Family<NodeClassLabels, Gauge>,
    /// 1 while the Reservation CRD is served.
    pub reservation_crd: Gauge,
}

impl std::fmt::Debug for DeschedulerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeschedulerMetrics").finish_non_exhaustive()
    }
}

impl DeschedulerMetrics {
    /// The metrics, registered with `health`'s `/metrics`.
    pub fn new(health: &Health) -> Arc<DeschedulerMetrics> {
        let mut registry = Registry::with_prefix("kolo_descheduler");
        let metrics = DeschedulerMetrics {
            migrations: Family::default(),
            evictions: Family::default(),
            balance_rounds: Counter::default(),
            // 100 µs to ~3.3 s.
            balance_duration: Histogram::new(exponential_buckets(1e-4, 2.0, 16)),
            nodes: Family::default(),
            reservation_crd: Gauge::default(),
        };
        registry.register(
            "migrations",
            "PodMigrationJobs by phase and reason",
            metrics.migrations.clone(),
        );
        registry.register("evictions", "Evictions by result", metrics.evictions.clone());
        registry.register("balance_rounds", "Balance rounds run", metrics.balance_rounds.clone());
        registry.register(
            "balance_duration_seconds",
            "Time to decide one Balance round",
            metrics.balance_duration.clone(),
        );
        registry.register(
            "nodes",
            "Nodes by LowNodeLoad class per node pool in the last round",
            metrics.nodes.clone(),
        );
        registry.register(
            "reservation_crd_installed",
            "1 while the Reservation CRD is served (ReservationFirst migrations need it)",
            metrics.reservation_crd.clone(),
        );
        health.add_registry(registry);
        Arc::new(metrics)
    }

    /// Sets the jobs gauge to `counts` (phase, reason) → jobs.
    pub fn set_migrations(&self, counts: &HashMap<(String, String), i64>) {
        self.migrations.clear();
        for ((phase, reason), n) in counts {
            let labels = MigrationLabels { phase: phase.clone(), reason: reason.clone() };
            self.migrations.get_or_create(&labels).set(*n);
        }
    }

    /// Records a Balance round: its decision time and each pool's classes.
    pub fn balance_round(&self, took: Duration, pools: &[PoolReport]) {
        self.balance_rounds.inc();
        self.balance_duration.observe(took.as_secs_f64());
        self.nodes.clear();
        for pool in pools {
            for node in &pool.nodes {
                let labels =
                    NodeClassLabels { pool: pool.pool.clone(), class: node.class.as_str().into() };
                self.nodes.get_or_create(&labels).inc();
            }
        }
    }

    /// Counts an eviction by `result`.
    pub fn eviction(&self, result: &str) {
        self.evictions.get_or_create(&EvictionLabels { result: result.into() }).inc();
    }
}

#[cfg(test)]
mod tests {
    use kolo_descheduler::low_node_load::{NodeClass, NodeReport};

    use super::*;

    fn node(name: &str, class: NodeClass) -> NodeReport {
        NodeReport {
            node: name.into(),
            class,
            note: String::new(),
            usage: Vec::new(),
            abnormal: None,
            score: None,
        }
    }

    #[test]
    fn metrics_say_what_the_stores_and_rounds_hold() {
        let health = Health::new("descheduler");
        let metrics = DeschedulerMetrics::new(&health);
        let pool = PoolReport {
            pool: "default".into(),
            nodes: vec![
                node("a", NodeClass::Source),
                node("b", NodeClass::Low),
                node("c", NodeClass::Low),
            ],
            candidates: Vec::new(),
            stopped: String::new(),
        };
        metrics.balance_round(Duration::from_millis(3), &[pool]);
        let counts = [(("Failed".to_string(), "FailedEvict".to_string()), 2)].into();
        metrics.set_migrations(&counts);
        metrics.eviction("refused");
        metrics.reservation_crd.set(1);
        let text = health.encode();
        for line in [
            r#"kolo_descheduler_nodes{pool="default",class="low"} 2"#,
            r#"kolo_descheduler_nodes{pool="default",class="source"} 1"#,
            r#"kolo_descheduler_migrations{phase="Failed",reason="FailedEvict"} 2"#,
            r#"kolo_descheduler_evictions_total{result="refused"} 1"#,
            "kolo_descheduler_balance_rounds_total 1",
            "kolo_descheduler_balance_duration_seconds_count 1",
            "kolo_descheduler_reservation_crd_installed 1",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
        // A later round with no pools leaves no stale classes.
        metrics.balance_round(Duration::from_millis(1), &[]);
        assert!(!health.encode().contains("kolo_descheduler_nodes{"));
    }
}
