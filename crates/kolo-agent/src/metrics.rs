//! The agent's `/metrics`: what it measured and how it is doing, in the
//! Prometheus text format.
//!
//! A fresh registry is filled from the agent's state at each scrape, so a
//! pod that went away simply stops appearing (no stale series to expire).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use crate::agent::Agent;
use crate::pods::PodSource;

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PodLabels {
    namespace: String,
    pod: String,
    qos: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FeatureLabels {
    feature: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContainerLabels {
    namespace: String,
    pod: String,
    container: String,
}

fn gauge(registry: &mut Registry, name: &str, help: &str, value: f64) {
    let g = FloatGauge::default();
    g.set(value);
    registry.register(name, help, g);
}

fn counter(registry: &mut Registry, name: &str, help: &str, value: u64) {
    let c: Counter = Counter::default();
    c.inc_by(value);
    registry.register(name, help, c);
}

/// The Prometheus text of the agent's current state.
pub fn encode<S: PodSource>(agent: &Agent<S>) -> String {
    let mut registry = Registry::with_prefix("kolo_agent");
    let stats = agent.stats();
    counter(&mut registry, "ticks", "Collection rounds run", stats.ticks);
    counter(
        &mut registry,
        "errors",
        "Problems met while collecting (each is logged)",
        stats.errors,
    );
    counter(
        &mut registry,
        "pod_source_failures",
        "Pod list fetches that failed or were empty (the last good list was kept)",
        stats.pod_source_failures,
    );
    gauge(
        &mut registry,
        "tick_duration_seconds",
        "Wall time of the last collection round",
        stats.last_tick_seconds,
    );
    gauge(&mut registry, "pods", "Pods the agent knows on its node", agent.pods().len() as f64);
    gauge(
        &mut registry,
        "store_bytes",
        "Approximate memory held by the metric store",
        agent.store().approx_bytes() as f64,
    );
    gauge(
        &mut registry,
        "predictor_bytes",
        "Approximate memory held by the peak predictor",
        agent.predictor().approx_bytes() as f64,
    );
    if let Some(node) = agent.last_node_sample() {
        gauge(&mut registry, "node_cpu_usage_cores", "Node CPU in use", node.cpu_cores);
        gauge(
            &mut registry,
            "node_memory_usage_bytes",
            "Node memory in use, without page cache",
            node.memory_bytes as f64,
        );
    }
    if let Some(report) = agent.doctor() {
        encode_doctor(&mut registry, report);
    }
    let pod_cpu = Family::<PodLabels, FloatGauge>::default();
    let pod_memory = Family::<PodLabels, FloatGauge>::default();
    let container_cpu = Family::<ContainerLabels, FloatGauge>::default();
    let container_memory = Family::<ContainerLabels, FloatGauge>::default();
    for sample in agent.last_pod_samples() {
        let Some(pod) = agent.pods().iter().find(|p| p.id.uid == sample.uid) else { continue };
        let labels = PodLabels {
            namespace: pod.id.namespace.clone(),
            pod: pod.id.name.clone(),
            qos: pod.qos.as_str().to_string(),
        };
        pod_cpu.get_or_create(&labels).set(sample.cpu_cores);
        pod_memory.get_or_create(&labels).set(sample.memory_bytes as f64);
        for c in &sample.containers {
            let labels = ContainerLabels {
                namespace: pod.id.namespace.clone(),
                pod: pod.id.name.clone(),
                container: c.name.clone(),
            };
            container_cpu.get_or_create(&labels).set(c.cpu_cores);
            container_memory.get_or_create(&labels).set(c.memory_bytes as f64);
        }
    }
    registry.register("pod_cpu_usage_cores", "Pod CPU in use", pod_cpu);
    registry.register(
        "pod_memory_usage_bytes",
        "Pod memory in use, without page cache",
        pod_memory,
    );
    registry.register("container_cpu_usage_cores", "Container CPU in use", container_cpu);
    registry.register(
        "container_memory_usage_bytes",
        "Container memory in use, without page cache",
        container_memory,
    );
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
    text
}

/// What `kolo doctor` found at start-up: each QoS feature on (1) or off
/// (0) on this node, and the checks by status.
fn encode_doctor(registry: &mut Registry, report: &crate::doctor::Report) {
    let features = Family::<FeatureLabels, Gauge>::default();
    for f in &report.features {
        features.get_or_create(&FeatureLabels { feature: f.name.clone() }).set(i64::from(f.on));
    }
    registry.register(
        "qos_feature_enabled",
        "Whether the node's kernel and cgroups allow this QoS feature (kolo doctor at start-up)",
        features,
    );
    let checks = Family::<StatusLabels, Gauge>::default();
    for c in &report.checks {
        let status =
            serde_json::to_value(c.status).ok().and_then(|v| v.as_str().map(str::to_string));
        checks.get_or_create(&StatusLabels { status: status.unwrap_or_default() }).inc();
    }
    registry.register("doctor_checks", "kolo doctor's checks at start-up, by status", checks);
}

/// Labels of `kolo_agent_qos_actions_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabels {
    strategy: String,
    kind: String,
    /// `fast` (a fast-path round between collections) or `slow`.
    path: String,
}

/// Labels of `kolo_agent_qos_class_cgroup_value`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassValueLabels {
    class: String,
    resource: String,
}

/// The Prometheus text of the QoS actions: every change the strategies
/// made since start by strategy, kind and path
/// (`kolo_agent_qos_actions_total`), and the numeric values in force on
/// the QoS-class cgroups (`kolo_agent_qos_class_cgroup_value`, e.g. the BE
/// CFS quota: the suppression level).
pub fn encode_history(history: &crate::history::ActionHistory) -> String {
    let mut registry = Registry::with_prefix("kolo_agent");
    let actions = Family::<ActionLabels, Counter>::default();
    for ((strategy, kind, fast), n) in history.counts() {
        let path = if *fast { "fast" } else { "slow" };
        let labels = ActionLabels {
            strategy: strategy.clone(),
            kind: kind.as_str().into(),
            path: path.into(),
        };
        actions.get_or_create(&labels).inc_by(*n);
    }
    registry.register(
        "qos_actions",
        "QoS actions (cgroup changes, evictions, evictions held back) by strategy, kind and path",
        actions,
    );
    let values = Family::<ClassValueLabels, FloatGauge>::default();
    for current in history.current() {
        let crate::history::Target::QosClass { class } = &current.target else { continue };
        let Ok(value) = current.value.trim().parse::<f64>() else { continue };
        let labels = ClassValueLabels { class: class.clone(), resource: current.resource.clone() };
        values.get_or_create(&labels).set(value);
    }
    registry.register(
        "qos_class_cgroup_value",
        "The value in force on a QoS class's cgroup file (numeric files only)",
        values,
    );
    let mut text = String::new();
    let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
    text
}
