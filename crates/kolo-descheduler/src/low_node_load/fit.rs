//! Node fit of a candidate pod (spec §9.3): the standard predicates the
//! descheduler checks against a target node (node selector and required
//! affinity, NoSchedule / NoExecute taints, cordoned, requests against
//! allocatable minus the requests of the pods already there), then whether
//! the pod's measured usage would push the target over its high
//! threshold.

use kolo_core::node::{NodeView, TaintEffect};
use kolo_core::resources::{ResourceName, ResourceVector};
use kolo_scheduler::framework::PodInfo;
use kolo_scheduler::plugins::node_affinity::{Required, required};
use kolo_scheduler::plugins::tolerations::{Toleration, tolerated, tolerations};

/// Why a target does not take a pod, counted per rule in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Misfit {
    /// Cordoned.
    Unschedulable,
    /// `nodeSelector` / required node affinity.
    Affinity,
    /// A NoSchedule or NoExecute taint the pod does not tolerate.
    Taint,
    /// Requests do not fit the free allocatable.
    Resources,
    /// The pod's usage would take the target over its high threshold.
    OverHighThreshold,
}

impl Misfit {
    /// Words for the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Misfit::Unschedulable => "unschedulable",
            Misfit::Affinity => "node affinity/selector",
            Misfit::Taint => "untolerated taint",
            Misfit::Resources => "insufficient resources",
            Misfit::OverHighThreshold => "would exceed high threshold",
        }
    }
}

/// What the predicates read of a pod, computed once per candidate.
#[derive(Debug, Clone)]
pub struct PodFit {
    required: Required,
    tolerations: Vec<Toleration>,
    requests: ResourceVector,
}

impl PodFit {
    /// Reads `pod`.
    pub fn of(pod: &PodInfo) -> PodFit {
        PodFit {
            required: required(pod.pod()),
            tolerations: tolerations(pod.pod()),
            requests: pod.view().requests().with(ResourceName::Pods, 1),
        }
    }

    /// The scheduling predicates against `node`, whose pods request
    /// `requested` (with their count as `pods`).
    pub fn predicates(&self, node: &NodeView, requested: &ResourceVector) -> Result<(), Misfit> {
        if node.is_unschedulable() {
            return Err(Misfit::Unschedulable);
        }
        if !self.required.matches_node(node) {
            return Err(Misfit::Affinity);
        }
        let blocking = |e| matches!(e, TaintEffect::NoSchedule | TaintEffect::NoExecute);
        if node.taints().iter().any(|t| blocking(t.effect) && !tolerated(&self.tolerations, t)) {
            return Err(Misfit::Taint);
        }
        let alloc = node.allocatable();
        let mut request = self.requests;
        if !alloc.contains(ResourceName::Pods) {
            // A node that states no pod capacity is not limited by count.
            request.remove(ResourceName::Pods);
        }
        let free = alloc.saturating_sub(requested);
        if !request.fits_allocatable(&free) {
            return Err(Misfit::Resources);
        }
        Ok(())
    }
}

fn amount(pod: &ResourceVector, r: ResourceName) -> i64 {
    if r == ResourceName::Pods { 1 } else { pod.value(r) }
}

/// Whether adding `pod` to `used` keeps every threshold resource at or
/// under `high`.
pub fn check_within(
    used: &ResourceVector,
    pod: &ResourceVector,
    high: &ResourceVector,
    resources: &[ResourceName],
) -> Result<(), Misfit> {
    if resources.iter().any(|&r| used.value(r).saturating_add(amount(pod, r)) > high.value(r)) {
        return Err(Misfit::OverHighThreshold);
    }
    Ok(())
}

/// Adds `pod` to `used` unless some threshold resource would go over
/// `high`; on refusal `used` is unchanged.
pub fn add_within(
    used: &mut ResourceVector,
    pod: &ResourceVector,
    high: &ResourceVector,
    resources: &[ResourceName],
) -> Result<(), Misfit> {
    check_within(used, pod, high, resources)?;
    let amount = |r| amount(pod, r);
    for &r in resources {
        used.set(r, used.value(r).saturating_add(amount(r)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kolo_core::node::Taint;
    use kolo_core::pod::{PodView, StringMap};

    use super::*;
    use ResourceName::{Cpu, Memory};

    fn pod(spec: &str, cpu: i64) -> PodInfo {
        let object: k8s_openapi::api::core::v1::Pod = serde_saphyr::from_str(&format!(
            "metadata: {{name: p, namespace: ns}}\nspec:\n  containers: []\n{spec}"
        ))
        .unwrap();
        let view = PodView::new("ns", "p").with_requests(ResourceVector::cpu_memory(cpu, 0));
        PodInfo::from_parts(Arc::new(object), view)
    }

    fn node() -> NodeView {
        let alloc = ResourceVector::cpu_memory(4000, 1 << 30);
        NodeView::new("t").with_resources(alloc, alloc)
    }

    #[test]
    fn each_predicate_rejects_with_its_rule() {
        let free = ResourceVector::EMPTY;
        let plain = PodFit::of(&pod("", 1000));
        assert_eq!(plain.predicates(&node(), &free), Ok(()));
        assert_eq!(
            plain.predicates(&node().with_unschedulable(true), &free),
            Err(Misfit::Unschedulable)
        );
        let zone = PodFit::of(&pod("  nodeSelector: {zone: a}\n", 1000));
        assert_eq!(zone.predicates(&node(), &free), Err(Misfit::Affinity));
        let labelled = node().with_labels(StringMap::from_iter([("zone", "a")]));
        assert_eq!(zone.predicates(&labelled, &free), Ok(()));
        let taint = |effect| vec![Taint { key: "k".into(), value: "v".into(), effect }];
        assert_eq!(
            plain.predicates(&node().with_taints(taint(TaintEffect::NoSchedule)), &free),
            Err(Misfit::Taint)
        );
        assert_eq!(
            plain.predicates(&node().with_taints(taint(TaintEffect::NoExecute)), &free),
            Err(Misfit::Taint)
        );
        assert_eq!(
            plain.predicates(&node().with_taints(taint(TaintEffect::PreferNoSchedule)), &free),
            Ok(())
        );
        let tolerant = PodFit::of(&pod("  tolerations: [{key: k, operator: Exists}]\n", 1000));
        assert_eq!(
            tolerant.predicates(&node().with_taints(taint(TaintEffect::NoSchedule)), &free),
            Ok(())
        );
        // 4000m allocatable, 3500m requested by the pods there: 500m free.
        let busy = ResourceVector::EMPTY.with(Cpu, 3500);
        assert_eq!(plain.predicates(&node(), &busy), Err(Misfit::Resources));
        assert_eq!(PodFit::of(&pod("", 500)).predicates(&node(), &busy), Ok(()));
    }

    #[test]
    fn usage_is_added_only_when_every_resource_stays_under_high() {
        let high = ResourceVector::cpu_memory(2000, 1000);
        let mut used = ResourceVector::cpu_memory(1500, 100);
        assert_eq!(
            add_within(&mut used, &ResourceVector::cpu_memory(600, 0), &high, &[Cpu, Memory]),
            Err(Misfit::OverHighThreshold)
        );
        assert_eq!(used, ResourceVector::cpu_memory(1500, 100), "rolled back");
        assert_eq!(
            add_within(&mut used, &ResourceVector::cpu_memory(500, 900), &high, &[Cpu, Memory]),
            Ok(())
        );
        assert_eq!(used, ResourceVector::cpu_memory(2000, 1000), "equal to high still fits");
    }
}
