//! NodeMetric: the real object dumped from a running Koordinator cluster
//! (`fixtures/nodemetric-master-01.yaml`) and the lookup helpers.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kolo_api::crd::{AggregationType, NodeMetric, NodeMetricSpec, NodeMetricStatus, ResourceList};

fn master_01() -> NodeMetric {
    let yaml = include_str!("fixtures/nodemetric-master-01.yaml");
    serde_saphyr::from_str(yaml).expect("the dumped NodeMetric deserializes")
}

fn q(list: &ResourceList, name: &str) -> String {
    list.get(name).map(|Quantity(s)| s.clone()).unwrap_or_else(|| panic!("no {name} in {list:?}"))
}

#[test]
fn spec_collect_policy() {
    let nm = master_01();
    assert_eq!(nm.metadata.name.as_deref(), Some("master-01"));
    assert_eq!(nm.metadata.namespace, None);
    let policy = nm.spec.metric_collect_policy.as_ref().expect("metricCollectPolicy");
    assert_eq!(policy.aggregate_duration_seconds, Some(300));
    assert_eq!(policy.report_interval_seconds, Some(60));
    assert_eq!(policy.node_memory_collect_policy.as_deref(), Some("usageWithoutPageCache"));
    let durations = policy.node_aggregate_policy.as_ref().and_then(|p| p.durations.clone());
    assert_eq!(durations, Some(vec!["5m0s".to_string(), "10m0s".to_string(), "30m0s".to_string()]));
}

#[test]
fn aggregated_usages() {
    let nm = master_01();
    // (window as asked, statistic, resource, expected)
    let node_cases: &[(&str, AggregationType, &str, &str)] = &[
        ("5m", AggregationType::P99, "cpu", "1366m"),
        ("5m0s", AggregationType::P99, "cpu", "1366m"),
        ("300s", AggregationType::P99, "memory", "5938812Ki"),
        ("5m", AggregationType::P50, "cpu", "429m"),
        ("5m", AggregationType::P90, "cpu", "886m"),
        ("5m", AggregationType::P95, "memory", "5833412Ki"),
        ("10m", AggregationType::P99, "cpu", "1537m"),
        ("30m0s", AggregationType::P50, "memory", "5723620Ki"),
        ("30m", AggregationType::P95, "cpu", "1113m"),
    ];
    for &(window, stat, resource, want) in node_cases {
        let usage = nm
            .aggregated_node_usage(window, stat)
            .unwrap_or_else(|| panic!("node {window} {stat} missing"));
        assert_eq!(q(usage, resource), want, "node {window} {stat} {resource}");
    }
    let system_cases: &[(&str, AggregationType, &str, &str)] = &[
        ("5m", AggregationType::P99, "cpu", "795m"),
        ("10m", AggregationType::P95, "cpu", "551m"),
        ("30m", AggregationType::P90, "memory", "3179492Ki"),
    ];
    for &(window, stat, resource, want) in system_cases {
        let usage = nm
            .aggregated_system_usage(window, stat)
            .unwrap_or_else(|| panic!("system {window} {stat} missing"));
        assert_eq!(q(usage, resource), want, "system {window} {stat} {resource}");
    }
    // Not reported: an unknown window, and the `avg` statistic this dump lacks.
    assert!(nm.aggregated_node_usage("1h", AggregationType::P99).is_none());
    assert!(nm.aggregated_node_usage("5m", AggregationType::Avg).is_none());
}

#[test]
fn node_and_prod_metrics() {
    let nm = master_01();
    let status = nm.status.as_ref().expect("status");
    assert_eq!(
        status.update_time.as_ref().map(|t| t.0.to_string()),
        Some("2025-05-25T03:36:38Z".to_string())
    );
    let node = nm.node_usage().expect("nodeUsage");
    assert_eq!(q(node, "cpu"), "515m");
    assert_eq!(q(node, "memory"), "5862330450");
    let system = nm.system_usage().expect("systemUsage");
    assert_eq!(q(system, "cpu"), "196m");
    let reclaimable = nm.prod_reclaimable().expect("prodReclaimableMetric");
    assert_eq!(q(reclaimable, "cpu"), "2380m");
    assert_eq!(q(reclaimable, "memory"), "0");
    assert!(nm.prod_peak().is_none(), "this dump predates prodPeakMetric");
}

#[test]
fn pods() {
    let nm = master_01();
    let pods = nm.status.as_ref().and_then(|s| s.pods_metric.as_ref()).expect("podsMetric");
    assert_eq!(pods.len(), 9);
    // (namespace, name, qos, priority, cpu)
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        ("mysql", "mysql-7474b86d4f-52p5n", "LSR", "koord-prod", "21m"),
        ("monitor", "prometheus-prometheus-node-exporter-wgsq8", "BE", "koord-batch", "2m"),
        ("clickhouse", "my-clickhouse-shard0-0", "LS", "koord-prod", "183m"),
        ("kafka", "my-kafka-controller-0", "LS", "koord-prod", "57m"),
    ];
    for &(namespace, name, qos, priority, cpu) in cases {
        let pod = nm.pod_metric(namespace, name).unwrap_or_else(|| panic!("{namespace}/{name}"));
        assert_eq!(pod.qos.as_deref(), Some(qos), "{name}");
        assert_eq!(pod.priority.as_deref(), Some(priority), "{name}");
        let usage = pod.pod_usage.as_ref().and_then(|u| u.resources.as_ref()).expect("podUsage");
        assert_eq!(q(usage, "cpu"), cpu, "{name}");
    }
    assert!(nm.pod_metric("mysql", "no-such-pod").is_none());
}

#[test]
fn helpers_on_empty_objects() {
    let mut nm = NodeMetric::new("empty", Default::default());
    assert!(nm.aggregated_node_usage("5m", AggregationType::P99).is_none());
    assert!(nm.prod_reclaimable().is_none());
    assert!(nm.node_usage().is_none());
    assert!(nm.pod_metric("a", "b").is_none());
    nm.status = Some(NodeMetricStatus::default());
    assert!(nm.aggregated_system_usage("5m", AggregationType::P99).is_none());
    assert!(nm.prod_peak().is_none());
}

#[test]
fn aggregation_type_names() {
    let cases = [
        (AggregationType::Avg, "avg"),
        (AggregationType::P50, "p50"),
        (AggregationType::P90, "p90"),
        (AggregationType::P95, "p95"),
        (AggregationType::P99, "p99"),
    ];
    for (agg, name) in cases {
        assert_eq!(agg.as_str(), name);
        assert_eq!(agg.to_string(), name);
    }
}

#[test]
fn a_nodemetric_without_spec_reads_with_the_default_spec() {
    let cases = [
        (
            "no spec",
            r#"{"apiVersion":"slo.koordinator.sh/v1alpha1","kind":"NodeMetric","metadata":{"name":"n1"},"status":{"updateTime":"2026-01-01T00:00:00Z"}}"#,
        ),
        (
            "spec: null",
            r#"{"apiVersion":"slo.koordinator.sh/v1alpha1","kind":"NodeMetric","metadata":{"name":"n1"},"spec":null}"#,
        ),
        (
            "spec: {}",
            r#"{"apiVersion":"slo.koordinator.sh/v1alpha1","kind":"NodeMetric","metadata":{"name":"n1"},"spec":{}}"#,
        ),
    ];
    for (case, text) in cases {
        let nm: NodeMetric = serde_json::from_str(text).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(nm.spec, NodeMetricSpec::default(), "{case}");
        assert_eq!(nm.metadata.name.as_deref(), Some("n1"), "{case}");
    }
    let yaml = "apiVersion: slo.koordinator.sh/v1alpha1\nkind: NodeMetric\nmetadata:\n  name: n2\n";
    let nm: NodeMetric = serde_saphyr::from_str(yaml).unwrap();
    assert_eq!(nm.spec, NodeMetricSpec::default());
    // A spec that is there is read as before, and a wrong field still fails.
    let nm = master_01();
    assert!(nm.spec.metric_collect_policy.is_some());
    let wrong = r#"{"metadata":{"name":"n1"},"spec":{"metricCollectPolicy":{"reportIntervalSeconds":"often"}}}"#;
    let err = serde_json::from_str::<NodeMetric>(wrong).unwrap_err().to_string();
    assert!(err.contains("invalid type"), "{err}");
    // Written back, the default spec is an empty object.
    let written = serde_json::to_value(NodeMetric::new("n1", NodeMetricSpec::default())).unwrap();
    assert_eq!(written["spec"], serde_json::json!({}));
}
