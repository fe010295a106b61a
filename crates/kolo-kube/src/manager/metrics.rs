//! The manager's SLO-controller metrics, served on the process's
//! `/metrics` beside `kolo_manager_actions_total` (node status patches,
//! NodeMetric / NodeSLO writes by result) and `kolo_manager_leader`:
//!
//! * `kolo_manager_node_batch_cpu_cores{node,term}` and
//!   `kolo_manager_node_batch_memory_bytes{node,term}`: a node's batch
//!   allocatable and the terms of the formula that produced it (`capacity`,
//!   `safety_margin`, `system_used_or_reserved`, `hp_request`, `hp_used`,
//!   `allocatable`) as of the last pass, written or not;
//! * `kolo_manager_node_mid_cpu_cores{node}` and
//!   `kolo_manager_node_mid_memory_bytes{node}`: its mid allocatable;
//! * `kolo_manager_nodes{state}`: nodes whose amounts were `computed`, or
//!   `reset` (withdrawn: co-location off, NodeMetric stale or missing);
//! * `kolo_manager_node_status_updates_throttled_total`: node status
//!   changes the update throttle held back in a pass;
//! * `kolo_manager_config_errors`: keys of `slo-controller-config` rejected
//!   now (their last good values are used), and
//!   `kolo_manager_config_present` (0 while the ConfigMap is missing);
//! * `kolo_manager_pass_duration_seconds`: one pass's decision time.

use std::sync::Arc;
use std::time::Duration;

use kolo_manager::noderesource::NodeResource;
use kolo_manager::pass::Plan;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::health::Health;

/// A float gauge.
type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// Labels of a node's term.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TermLabels {
    /// The node.
    pub node: String,
    /// The term of the formula.
    pub term: &'static str,
}

/// Labels of a node's amount.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeLabel {
    /// The node.
    pub node: String,
}

/// Labels of `kolo_manager_nodes`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    /// `computed` or `reset`.
    pub state: &'static str,
}

/// The manager's SLO-controller metrics.
pub struct ManagerMetrics {
    batch_cpu: Family<TermLabels, FloatGauge>,
    batch_memory: Family<TermLabels, FloatGauge>,
    mid_cpu: Family<NodeLabel, FloatGauge>,
    mid_memory: Family<NodeLabel, FloatGauge>,
    nodes: Family<StateLabel, Gauge>,
    throttled: Counter,
    config_errors: Gauge,
    config_present: Gauge,
    pass_duration: Histogram,
}

impl std::fmt::Debug for ManagerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerMetrics").finish_non_exhaustive()
    }
}

impl ManagerMetrics {
    /// The metrics, registered with `health`'s `/metrics`.
    pub fn new(health: &Health) -> Arc<ManagerMetrics> {
        let mut registry = Registry::with_prefix("kolo_manager");
        let m = ManagerMetrics {
            batch_cpu: Family::default(),
            batch_memory: Family::default(),
            mid_cpu: Family::default(),
            mid_memory: Family::default(),
            nodes: Family::default(),
            throttled: Counter::default(),
            config_errors: Gauge::default(),
            config_present: Gauge::default(),
            // 100 µs to ~3.3 s.
            pass_duration: Histogram::new(exponential_buckets(1e-4, 2.0, 16)),
        };
        let r = &mut registry;
        r.register(
            "node_batch_cpu_cores",
            "A node's batch CPU and the terms of its formula",
            m.batch_cpu.clone(),
        );
        r.register(
            "node_batch_memory_bytes",
            "A node's batch memory and the terms of its formula",
            m.batch_memory.clone(),
        );
        r.register("node_mid_cpu_cores", "A node's mid CPU", m.mid_cpu.clone());
        r.register("node_mid_memory_bytes", "A node's mid memory", m.mid_memory.clone());
        r.register("nodes", "Nodes by whether batch was computed or reset", m.nodes.clone());
        r.register(
            "node_status_updates_throttled",
            "Node status changes the update throttle held back",
            m.throttled.clone(),
        );
        r.register(
            "config_errors",
            "Keys of slo-controller-config rejected (last good values used)",
            m.config_errors.clone(),
        );
        r.register(
            "config_present",
            "1 while slo-controller-config exists",
            m.config_present.clone(),
        );
        r.register("pass_duration_seconds", "Decision time of one pass", m.pass_duration.clone());
        health.add_registry(registry);
        Arc::new(m)
    }

    /// The state of the configuration: rejected keys, and whether the
    /// ConfigMap exists.
    pub fn config(&self, errors: usize, present: bool) {
        self.config_errors.set(errors as i64);
        self.config_present.set(i64::from(present));
    }

    /// Records a pass: its decision time and each node's computed amounts
    /// (nodes no longer in the plan lose their series).
    pub fn pass(&self, took: Duration, plan: &Plan) {
        self.pass_duration.observe(took.as_secs_f64());
        for family in [&self.batch_cpu, &self.batch_memory] {
            family.clear();
        }
        self.mid_cpu.clear();
        self.mid_memory.clear();
        let (mut computed, mut reset) = (0, 0);
        for decision in &plan.nodes {
            if decision.plan.throttled {
                self.throttled.inc();
            }
            let Some(resource) = &decision.plan.computed else { continue };
            if resource.reset.is_some() {
                reset += 1;
            } else {
                computed += 1;
            }
            self.node(&decision.node, resource);
        }
        self.nodes.get_or_create(&StateLabel { state: "computed" }).set(computed);
        self.nodes.get_or_create(&StateLabel { state: "reset" }).set(reset);
    }

    fn node(&self, node: &str, resource: &NodeResource) {
        let set = |family: &Family<TermLabels, FloatGauge>, term, value: f64| {
            family.get_or_create(&TermLabels { node: node.to_string(), term }).set(value);
        };
        if let Some(b) = &resource.batch {
            for (term, cpu_milli, memory) in [
                ("capacity", b.capacity.cpu, b.capacity.memory),
                ("safety_margin", b.safety_margin.cpu, b.safety_margin.memory),
                (
                    "system_used_or_reserved",
                    b.sys_used_or_reserved.cpu,
                    b.sys_used_or_reserved.memory,
                ),
                ("hp_request", b.hp_request.cpu, b.hp_request.memory),
                ("hp_used", b.hp_used.cpu, b.hp_used.memory),
            ] {
                set(&self.batch_cpu, term, cpu_milli as f64 / 1000.0);
                set(&self.batch_memory, term, memory as f64);
            }
        }
        let r = &resource.resources;
        let label = || NodeLabel { node: node.to_string() };
        if let Some(cpu) = r.batch_cpu {
            set(&self.batch_cpu, "allocatable", cpu as f64 / 1000.0);
        }
        if let Some(memory) = r.batch_memory {
            set(&self.batch_memory, "allocatable", memory as f64);
        }
        if let Some(cpu) = r.mid_cpu {
            self.mid_cpu.get_or_create(&label()).set(cpu as f64 / 1000.0);
        }
        if let Some(memory) = r.mid_memory {
            self.mid_memory.get_or_create(&label()).set(memory as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlabelled_series_exist_before_any_node() {
        let health = Health::new("manager");
        let m = ManagerMetrics::new(&health);
        m.config(2, true);
        m.pass(Duration::from_millis(3), &Plan::default());
        let text = health.encode();
        for line in [
            "kolo_manager_config_errors 2",
            "kolo_manager_config_present 1",
            "kolo_manager_nodes{state=\"computed\"} 0",
            "kolo_manager_node_status_updates_throttled_total 0",
            "kolo_manager_pass_duration_seconds_count 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
    }

    #[test]
    fn a_computed_node_has_its_terms_and_a_gone_node_loses_them() {
        use kolo_core::clock::Timestamp;
        use kolo_manager::config::SloConfigStore;
        use kolo_manager::pass::{Pass, StoreState};
        let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "8", "memory": "16Gi"},
                       "allocatable": {"cpu": "8", "memory": "16Gi"}}
        }))
        .unwrap();
        let metric: kolo_api::crd::NodeMetric = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n1"},
            "spec": {},
            "status": {"updateTime": "2023-11-14T22:13:20Z",
                       "nodeMetric": {"nodeUsage": {"resources": {"cpu": "1", "memory": "1Gi"}}}}
        }))
        .unwrap();
        let mut store = SloConfigStore::new();
        store.update(Some(
            &[("colocation-config".to_string(), r#"{"enable": true}"#.to_string())].into(),
        ));
        let state = StoreState {
            nodes: vec![std::sync::Arc::new(node)],
            metrics: vec![std::sync::Arc::new(metric)],
            ..StoreState::default()
        };
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let plan = Pass::new().plan(&state, &store.config(), now);
        let batch = plan.nodes[0].plan.computed.as_ref().unwrap().resources.batch_cpu.unwrap();
        let health = Health::new("manager");
        let m = ManagerMetrics::new(&health);
        m.pass(Duration::from_millis(1), &plan);
        let text = health.encode();
        let value = |term: &str| -> f64 {
            let prefix =
                format!("kolo_manager_node_batch_cpu_cores{{node=\"n1\",term=\"{term}\"}} ");
            let line = text
                .lines()
                .find(|l| l.starts_with(&prefix))
                .unwrap_or_else(|| panic!("{prefix}\n{text}"));
            line[prefix.len()..].parse().unwrap()
        };
        assert_eq!(value("capacity"), 8.0);
        assert_eq!(value("allocatable"), batch as f64 / 1000.0);
        assert!(text.contains("kolo_manager_nodes{state=\"computed\"} 1"), "{text}");
        // The node gone: its series go.
        m.pass(Duration::from_millis(1), &kolo_manager::pass::Plan::default());
        assert!(!health.encode().contains("node=\"n1\""));
    }
}
