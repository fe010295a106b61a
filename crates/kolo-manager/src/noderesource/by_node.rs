//! A cluster's pods and NodeMetrics grouped by node: what each node's
//! decision reads about it, looked up once per pass rather than searched for
//! per node.

use std::collections::HashMap;

use kolo_api::crd::NodeMetric;
use kolo_core::pod::PodView;
use kolo_core::usage_report::NodeUsageReport;

/// Pods by `spec.nodeName` and NodeMetrics (read) by name.
#[derive(Debug, Default)]
pub struct ByNode<'a> {
    pods: HashMap<&'a str, Vec<&'a PodView>>,
    reports: HashMap<String, NodeUsageReport>,
}

impl<'a> ByNode<'a> {
    /// Groups `pods` by the node they are bound to (unbound pods are left
    /// out) and reads every named NodeMetric ([`NodeUsageReport::read`]; a
    /// later duplicate wins).
    pub fn new(
        pods: impl IntoIterator<Item = &'a PodView>,
        metrics: impl IntoIterator<Item = &'a NodeMetric>,
    ) -> ByNode<'a> {
        let mut by_node: HashMap<&str, Vec<&PodView>> = HashMap::new();
        for pod in pods {
            if let Some(node) = pod.node_name() {
                by_node.entry(node).or_default().push(pod);
            }
        }
        let reports = metrics
            .into_iter()
            .filter(|m| m.metadata.name.is_some())
            .map(|m| {
                let report = NodeUsageReport::read(m);
                (report.node.clone(), report)
            })
            .collect();
        ByNode { pods: by_node, reports }
    }

    /// The pods bound to `node`, in input order.
    pub fn pods(&self, node: &str) -> &[&'a PodView] {
        self.pods.get(node).map_or(&[][..], Vec::as_slice)
    }

    /// The NodeMetric of `node`, read.
    pub fn report(&self, node: &str) -> Option<&NodeUsageReport> {
        self.reports.get(node)
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::crd::NodeMetricSpec;

    use super::*;

    #[test]
    fn pods_and_metrics_are_found_by_node() {
        let bound = |name: &str, node: Option<&str>| {
            let view = PodView::new("ns", name);
            match node {
                Some(n) => view.with_node_name(n),
                None => view,
            }
        };
        let pods = [bound("a", Some("n1")), bound("b", None), bound("c", Some("n1"))];
        let metrics = [NodeMetric::new("n1", NodeMetricSpec::default())];
        let index = ByNode::new(&pods, &metrics);
        let names: Vec<&str> = index.pods("n1").iter().map(|p| p.name()).collect();
        assert_eq!(names, ["a", "c"]);
        assert!(index.pods("n2").is_empty());
        assert_eq!(index.report("n1").map(|r| r.node.as_str()), Some("n1"));
        assert!(index.report("n2").is_none());
    }
}
