//! The NodeSLO of each node, rendered from the ConfigMap (Koordinator spec
//! §3.4): for every part, the first node strategy whose selector matches the
//! node, else the cluster strategy, both layered over the defaults; then the
//! node's `node.koordinator.sh/network-bandwidth` annotation overrides
//! `systemStrategy.totalNetworkBandwidth`.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kolo_api::crd::NodeSLOSpec;
use kolo_core::selector::LabelMap;

use crate::config::SloKeys;

/// Node annotation: the node's total network bandwidth (a quantity).
pub const NETWORK_BANDWIDTH_ANNOTATION: &str = "node.koordinator.sh/network-bandwidth";

/// A rendered NodeSLO spec and the problems met on the way (each names the
/// node and the key; the offending input was skipped).
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedNodeSlo {
    /// The spec.
    pub spec: NodeSLOSpec,
    /// Skipped inputs.
    pub warnings: Vec<String>,
}

/// Renders the NodeSLO spec of one node.
pub fn render_node_slo(
    slo: &SloKeys,
    node_name: &str,
    labels: &(impl LabelMap + ?Sized),
    annotations: &(impl LabelMap + ?Sized),
) -> RenderedNodeSlo {
    let mut warnings = Vec::new();
    let mut system = slo.system.for_node(labels).clone();
    if let Some(text) = annotations.label(NETWORK_BANDWIDTH_ANNOTATION) {
        match kolo_api::Quantity::parse(text.trim()) {
            Ok(q) if !q.is_negative() => system.total_network_bandwidth = Some(Quantity(text.trim().into())),
            Ok(_) => warnings.push(format!(
                "node {node_name}: annotation {NETWORK_BANDWIDTH_ANNOTATION}={text:?} is negative (ignored)"
            )),
            Err(e) => warnings.push(format!(
                "node {node_name}: annotation {NETWORK_BANDWIDTH_ANNOTATION}={text:?}: {e} (ignored)"
            )),
        }
    }
    let host_applications = slo.host_applications.for_node(labels);
    let spec = NodeSLOSpec {
        resource_used_threshold_with_be: Some(slo.resource_threshold.for_node(labels).clone()),
        resource_qos_strategy: Some(slo.resource_qos.for_node(labels).clone()),
        cpu_burst_strategy: Some(slo.cpu_burst.for_node(labels).clone()),
        system_strategy: Some(system),
        extensions: None,
        host_applications: (!host_applications.is_empty()).then(|| host_applications.to_vec()),
    };
    RenderedNodeSlo { spec, warnings }
}

/// What to do with one node's NodeSLO.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeSloAction {
    /// Create it with this spec.
    Create(Arc<NodeSLOSpec>),
    /// Replace its spec.
    Update(Arc<NodeSLOSpec>),
    /// The node is gone: delete it.
    Delete,
    /// Nothing to do.
    Keep,
}

/// Decides the action for one node's NodeSLO. An `existing` spec that is
/// `desired` itself (a driver keeping the very spec it was told to write,
/// as the simulator does) is the same spec without a comparison of its
/// hundreds of fields; any other is compared field by field.
pub fn reconcile_node_slo(
    node_exists: bool,
    existing: Option<&NodeSLOSpec>,
    desired: &Arc<NodeSLOSpec>,
) -> NodeSloAction {
    match (node_exists, existing) {
        (false, Some(_)) => NodeSloAction::Delete,
        (false, None) => NodeSloAction::Keep,
        (true, None) => NodeSloAction::Create(Arc::clone(desired)),
        (true, Some(spec)) if std::ptr::eq(spec, &**desired) || spec == &**desired => {
            NodeSloAction::Keep
        }
        (true, Some(_)) => NodeSloAction::Update(Arc::clone(desired)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::SloConfigStore;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn store(pairs: &[(&str, &str)]) -> SloConfigStore {
        let mut store = SloConfigStore::new();
        store.update(Some(&map(pairs)));
        assert!(store.status().is_ok(), "{:?}", store.status());
        store
    }

    #[test]
    fn every_part_is_rendered_with_defaults() {
        let store = store(&[]);
        let r = render_node_slo(&store.config().slo, "n1", &map(&[]), &map(&[]));
        assert!(r.warnings.is_empty());
        let t = r.spec.resource_used_threshold_with_be.unwrap();
        assert_eq!((t.enable, t.cpu_suppress_threshold_percent), (Some(false), Some(65)));
        assert_eq!(r.spec.cpu_burst_strategy.unwrap().policy.as_deref(), Some("none"));
        assert_eq!(
            r.spec.system_strategy.unwrap().total_network_bandwidth,
            Some(Quantity("0".into()))
        );
        let qos = r.spec.resource_qos_strategy.unwrap();
        assert_eq!(qos.be_class.unwrap().cpu_qos.unwrap().group_identity, Some(-1));
        assert_eq!(r.spec.host_applications, None);
    }

    #[test]
    fn node_selectors_pick_per_part() {
        let store = store(&[
            (
                "resource-threshold-config",
                r#"{"clusterStrategy":{"enable":true},
                    "nodeStrategies":[{"name":"hot","nodeSelector":{"matchLabels":{"pool":"hot"}},"cpuSuppressThresholdPercent":45}]}"#,
            ),
            (
                "cpu-burst-config",
                r#"{"nodeStrategies":[{"nodeSelector":{"matchExpressions":[{"key":"burst","operator":"Exists"}]}, "policy":"auto"}]}"#,
            ),
        ]);
        let slo = &store.config().slo;
        let hot = render_node_slo(slo, "a", &map(&[("pool", "hot")]), &map(&[]));
        let t = hot.spec.resource_used_threshold_with_be.unwrap();
        assert_eq!((t.enable, t.cpu_suppress_threshold_percent), (Some(true), Some(45)));
        assert_eq!(hot.spec.cpu_burst_strategy.unwrap().policy.as_deref(), Some("none"));
        let burst = render_node_slo(slo, "b", &map(&[("burst", "")]), &map(&[]));
        let t = burst.spec.resource_used_threshold_with_be.unwrap();
        assert_eq!((t.enable, t.cpu_suppress_threshold_percent), (Some(true), Some(65)));
        let b = burst.spec.cpu_burst_strategy.unwrap();
        assert_eq!((b.policy.as_deref(), b.cpu_burst_percent), (Some("auto"), Some(1000)));
    }

    #[test]
    fn network_bandwidth_annotation_overrides() {
        let store = store(&[]);
        let slo = &store.config().slo;
        let ok =
            render_node_slo(slo, "n", &map(&[]), &map(&[(NETWORK_BANDWIDTH_ANNOTATION, "10G")]));
        assert_eq!(
            ok.spec.system_strategy.unwrap().total_network_bandwidth,
            Some(Quantity("10G".into()))
        );
        let bad =
            render_node_slo(slo, "n", &map(&[]), &map(&[(NETWORK_BANDWIDTH_ANNOTATION, "fast")]));
        assert_eq!(
            bad.spec.system_strategy.unwrap().total_network_bandwidth,
            Some(Quantity("0".into()))
        );
        assert_eq!(bad.warnings.len(), 1);
        assert!(
            bad.warnings[0]
                .starts_with("node n: annotation node.koordinator.sh/network-bandwidth=")
        );
    }

    #[test]
    fn malformed_key_keeps_rendering_the_last_good_value() {
        let mut store = store(&[(
            "resource-threshold-config",
            r#"{"clusterStrategy":{"enable":true,"memoryEvictThresholdPercent":80}}"#,
        )]);
        store.update(Some(&map(&[(
            "resource-threshold-config",
            r#"{"clusterStrategy":{"enable":true,"memoryEvictThresholdPercent":"eighty"}}"#,
        )])));
        assert_eq!(
            store.status().errors,
            vec![
                "resource-threshold-config: $.clusterStrategy.memoryEvictThresholdPercent: invalid type: string \"eighty\", expected i64"
                    .to_string()
            ]
        );
        let r = render_node_slo(&store.config().slo, "n", &map(&[]), &map(&[]));
        let t = r.spec.resource_used_threshold_with_be.unwrap();
        assert_eq!(
            t.memory_evict_threshold_percent,
            Some(80),
            "thresholds never fall back to defaults"
        );
    }

    #[test]
    fn reconcile_table() {
        let rendered = render_node_slo(&store(&[]).config().slo, "n", &map(&[]), &map(&[])).spec;
        let desired = Arc::new(rendered.clone());
        let mut other = rendered.clone();
        other.cpu_burst_strategy = None;
        assert_eq!(
            reconcile_node_slo(true, None, &desired),
            NodeSloAction::Create(desired.clone())
        );
        assert_eq!(reconcile_node_slo(true, Some(&desired), &desired), NodeSloAction::Keep);
        assert_eq!(reconcile_node_slo(true, Some(&rendered), &desired), NodeSloAction::Keep);
        assert_eq!(
            reconcile_node_slo(true, Some(&other), &desired),
            NodeSloAction::Update(desired.clone())
        );
        assert_eq!(reconcile_node_slo(false, Some(&rendered), &desired), NodeSloAction::Delete);
        assert_eq!(reconcile_node_slo(false, None, &desired), NodeSloAction::Keep);
    }
}
