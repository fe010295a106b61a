//! VolumeZone: a pod whose claims are bound to volumes labelled with a
//! zone or region runs only on nodes of that zone or region
//! (kube-scheduler's plugin).
//!
//! As kube-scheduler: the labels compared are `topology.kubernetes.io/zone`
//! and `/region` and the legacy `failure-domain.beta.kubernetes.io/zone`
//! and `/region`; a volume's value may list several zones separated by
//! `__`; a node with none of these labels fits every volume; a node with
//! some of them fits a volume when, for each of these labels the volume
//! has, the node's value of the same label is one of the volume's (a
//! missing label on the node does not match).
//!
//! Claims that are not found or not bound are skipped here: VolumeBinding
//! refuses their pods at PreFilter, naming the claim.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use kolo_core::HasMeta;
use kolo_core::node::NodeView;

use super::volume_binding::claims::{Claims, Volume, ZONE_LABELS, claim_names, uses_claims};
use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, ExtensionPoints,
    Filter, NodeInfo, ObjectEvent, Plugin, PodInfo, PreFilter, PreFilterOutcome, Rejection,
    Verdict,
};
use crate::registry::PluginArgsError;

/// The plugin's registered name (kube-scheduler's).
pub const NAME: &str = "VolumeZone";

/// kube-scheduler's reason.
pub const REASON: &str = "node(s) had no available volume zone";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct VolumeZone {
    claims: RwLock<Claims>,
}

/// The pod's bound volumes with zone labels, found at PreFilter.
struct Zoned(Vec<Arc<Volume>>);

impl VolumeZone {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(VolumeZone::default()))
    }

    fn read(&self) -> RwLockReadGuard<'_, Claims> {
        self.claims.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The pod's bound volumes that carry zone labels (claims that do not
    /// resolve are skipped).
    fn zoned(&self, pod: &PodInfo) -> Vec<Arc<Volume>> {
        let claims = self.read();
        let namespace = pod.view().namespace();
        claim_names(pod.pod())
            .filter_map(|name| {
                let claim = claims.claim(&format!("{namespace}/{name}"))?;
                let volume = claims.volume(claim.volume.as_deref().filter(|_| claim.bound)?)?;
                (!volume.zones.is_empty()).then(|| volume.clone())
            })
            .collect()
    }
}

/// Whether a node may use every one of `volumes` (see the module
/// documentation for the rules).
pub fn node_fits(volumes: &[Arc<Volume>], node: &NodeView) -> bool {
    let labels = node.labels();
    if ZONE_LABELS.iter().all(|key| labels.get(key).is_none()) {
        return true;
    }
    volumes.iter().flat_map(|v| &v.zones).all(|(key, allowed)| {
        let value = labels.get(key).unwrap_or_default();
        allowed.iter().any(|zone| &**zone == value)
    })
}

impl Plugin for VolumeZone {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).pre_filter().filter().event_handler().into()
    }
    fn events_to_register(&self) -> EventKinds {
        EventKinds::VOLUME | EventKinds::NODE_ADD | EventKinds::NODE_UPDATE
    }
    fn trivially_passes(&self, pod: &PodInfo) -> bool {
        // Reads claims and volumes, which no node generation tracks.
        !uses_claims(pod.pod())
    }
}

impl PreFilter for VolumeZone {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        if !uses_claims(pod.pod()) {
            return PreFilterOutcome::Skip;
        }
        let zoned = self.zoned(pod);
        if zoned.is_empty() {
            return PreFilterOutcome::Skip;
        }
        state.write(Zoned(zoned));
        PreFilterOutcome::Proceed
    }
}

impl Filter for VolumeZone {
    fn filter(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        let fits = match state.read::<Zoned>() {
            Some(z) => node_fits(&z.0, node.view()),
            None => node_fits(&self.zoned(pod), node.view()),
        };
        if fits { Ok(()) } else { Err(Rejection::unresolvable(REASON)) }
    }
}

impl ClusterEventHandler for VolumeZone {
    // State from claims and volumes only.
    fn on_event(&self, _event: &ClusterEvent<'_>) {}

    fn on_node_metrics(
        &self,
        _updates: &[(&NodeInfo, &Arc<kolo_core::usage_report::NodeUsageReport>)],
    ) {
    }

    fn on_object(&self, event: &ObjectEvent<'_>) {
        if event.kind() == EventKinds::VOLUME {
            self.claims.write().unwrap_or_else(PoisonError::into_inner).on_object(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::SchedulingObject;
    use crate::testing::{ctx, node_from_yaml, node_info, pod_from_yaml};

    fn plugin() -> VolumeZone {
        let plugin = VolumeZone::default();
        let objects = [
            SchedulingObject::PersistentVolume(Arc::new(serde_saphyr::from_str(
                "metadata: {name: pv-a, labels: {topology.kubernetes.io/zone: a}}",
            ).unwrap())),
            SchedulingObject::PersistentVolume(Arc::new(serde_saphyr::from_str(
                "metadata: {name: pv-bc, labels: {failure-domain.beta.kubernetes.io/zone: b__c, failure-domain.beta.kubernetes.io/region: r1}}",
            ).unwrap())),
            SchedulingObject::PersistentVolumeClaim(Arc::new(serde_saphyr::from_str(
                "metadata: {name: in-a, namespace: ns, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}\nspec: {volumeName: pv-a}",
            ).unwrap())),
            SchedulingObject::PersistentVolumeClaim(Arc::new(serde_saphyr::from_str(
                "metadata: {name: in-bc, namespace: ns, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}\nspec: {volumeName: pv-bc}",
            ).unwrap())),
            SchedulingObject::PersistentVolumeClaim(Arc::new(serde_saphyr::from_str(
                "metadata: {name: unbound, namespace: ns}\nspec: {}",
            ).unwrap())),
        ];
        for object in &objects {
            plugin.on_object(&ObjectEvent::Applied(object));
        }
        plugin
    }

    /// `None`: PreFilter skipped the pod.
    fn fits(plugin: &VolumeZone, claim: &str, node_labels: &str) -> Option<bool> {
        let pod = PodInfo::new(pod_from_yaml(&format!(
            "metadata: {{name: p, namespace: ns}}\nspec: {{containers: [{{name: c}}], volumes: [{{name: v, persistentVolumeClaim: {{claimName: {claim}}}}}]}}"
        )))
        .unwrap();
        let node =
            node_info(node_from_yaml(&format!("metadata: {{name: n, labels: {{{node_labels}}}}}")));
        let mut state = CycleState::new();
        match plugin.pre_filter(&ctx(), &mut state, &pod) {
            PreFilterOutcome::Skip => None,
            PreFilterOutcome::Proceed => Some(plugin.filter(&ctx(), &state, &pod, &node).is_ok()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn volume_zones_against_node_labels() {
        let plugin = plugin();
        let cases = [
            ("in-a", "topology.kubernetes.io/zone: a", Some(true)),
            ("in-a", "topology.kubernetes.io/zone: b", Some(false)),
            // A node without any zone label fits (kube-scheduler).
            ("in-a", "other: x", Some(true)),
            // With a region label but not the zone the volume names: no.
            ("in-a", "topology.kubernetes.io/region: r1", Some(false)),
            (
                "in-bc",
                "failure-domain.beta.kubernetes.io/zone: c, failure-domain.beta.kubernetes.io/region: r1",
                Some(true),
            ),
            (
                "in-bc",
                "failure-domain.beta.kubernetes.io/zone: c, failure-domain.beta.kubernetes.io/region: r2",
                Some(false),
            ),
            // The legacy labels are not the topology ones.
            ("in-bc", "topology.kubernetes.io/zone: b", Some(false)),
            // Left to VolumeBinding.
            ("unbound", "topology.kubernetes.io/zone: b", None),
            ("missing", "topology.kubernetes.io/zone: b", None),
        ];
        for (claim, labels, want) in cases {
            assert_eq!(fits(&plugin, claim, labels), want, "{claim} on {labels}");
        }
    }
}
