//! PlacementFieldGuard: no PodSpec field that affects placement is ignored
//! in silence. A pod that uses one no plugin honours yet is refused at
//! PreFilter, with a reason naming the field, instead of being placed as if
//! the field were absent (a pod whose volume lives in one zone, placed in
//! another, would hang in `ContainerCreating`).
//!
//! Refused (the full classification of every PodSpec field is in
//! `docs/scheduler.md`, "PodSpec fields and placement", and checked field
//! by field by `tests/placement_fields.rs`):
//!
//! | field | why |
//! | --- | --- |
//! | `schedulingGates` | kube-scheduler does not try a gated pod at all |
//! | `resourceClaims`, `containers[].resources.claims` | dynamic resource allocation is not implemented |
//! | `volumes[].ephemeral` | generic ephemeral volumes need a claim created and bound for the pod; kolo-scheduler binds no volume |
//! | `volumes[].gcePersistentDisk`, `.awsElasticBlockStore`, `.azureDisk`, `.cinder` | attach limits (NodeVolumeLimits) are not implemented |
//!
//! `volumes[].persistentVolumeClaim` goes to VolumeBinding, VolumeZone and
//! VolumeRestrictions (bound claims only: the others are refused there,
//! naming the claim); `.rbd` and `.iscsi` to VolumeRestrictions' disk
//! conflicts (kube-scheduler counts no attach limit for them).
//!
//! A refused pod waits: no cluster event helps it (`events_to_register` is
//! empty); an update of the pod (a gate removed) queues it again.
//! Pods that use none of these — nearly all — are skipped with a handful of
//! `Option` checks.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Volume};

use crate::framework::{
    CycleContext, CycleState, EventKinds, ExtensionPoints, Plugin, PodInfo, PreFilter,
    PreFilterOutcome, Rejection,
};
use crate::registry::PluginArgsError;

/// The plugin's registered name.
pub const NAME: &str = "PlacementFieldGuard";

/// kube-scheduler's wording for a gated pod (its `SchedulingGated` status).
pub const GATED: &str = "waiting for schedulingGates";

/// The volume sources kolo-scheduler cannot place yet, with their JSON
/// names and what is missing.
/// (JSON name, whether a volume uses it, why it is refused).
type RefusedVolume = (&'static str, fn(&Volume) -> bool, &'static str);

const REFUSED_VOLUMES: &[RefusedVolume] = &[
    ("ephemeral", |v| v.ephemeral.is_some(), BINDING),
    ("gcePersistentDisk", |v| v.gce_persistent_disk.is_some(), LIMITS),
    ("awsElasticBlockStore", |v| v.aws_elastic_block_store.is_some(), LIMITS),
    ("azureDisk", |v| v.azure_disk.is_some(), LIMITS),
    ("cinder", |v| v.cinder.is_some(), LIMITS),
];

const BINDING: &str =
    "generic ephemeral volumes need volume binding, which kolo-scheduler does not do";
const LIMITS: &str = "volume attach limits are not implemented by kolo-scheduler";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct PlacementFieldGuard;

impl PlacementFieldGuard {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(PlacementFieldGuard))
    }
}

/// The first refused field the pod uses, as a rejection naming it; `None`
/// when it uses none.
pub fn refusal(pod: &Pod) -> Option<Rejection> {
    let spec = pod.spec.as_ref()?;
    let refuse = |reason: String| Some(Rejection::unresolvable(reason));
    if let Some(gates) = spec.scheduling_gates.as_ref().filter(|g| !g.is_empty()) {
        let names: Vec<&str> = gates.iter().map(|g| g.name.as_str()).collect();
        return Some(Rejection::unresolvable(GATED).with_detail(names.join(", ")));
    }
    if spec.resource_claims.as_ref().is_some_and(|c| !c.is_empty()) {
        return refuse(format!("spec.resourceClaims: {DRA}"));
    }
    let containers = spec.containers.iter().chain(spec.init_containers.iter().flatten());
    for c in containers {
        if c.resources.as_ref().and_then(|r| r.claims.as_ref()).is_some_and(|c| !c.is_empty()) {
            return Some(
                Rejection::unresolvable(format!("spec.containers[].resources.claims: {DRA}"))
                    .with_detail(format!("container {}", c.name)),
            );
        }
    }
    for (i, volume) in spec.volumes.iter().flatten().enumerate() {
        if let Some((field, _, why)) = REFUSED_VOLUMES.iter().find(|(_, uses, _)| uses(volume)) {
            return Some(
                Rejection::unresolvable(format!("spec.volumes[].{field}: {why}"))
                    .with_detail(format!("spec.volumes[{i}] ({})", volume.name)),
            );
        }
    }
    None
}

const DRA: &str = "dynamic resource allocation is not implemented by kolo-scheduler";

impl Plugin for PlacementFieldGuard {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).pre_filter().into()
    }
    fn events_to_register(&self) -> EventKinds {
        // Only the pod's own update can help, and that queues it anyway.
        EventKinds::NONE
    }
    fn supports_equivalence(&self) -> bool {
        // No Filter or Score.
        true
    }
    fn node_updates_are_local(&self) -> bool {
        true
    }
}

impl PreFilter for PlacementFieldGuard {
    fn pre_filter(&self, _: &CycleContext, _: &mut CycleState, pod: &PodInfo) -> PreFilterOutcome {
        match refusal(pod.pod()) {
            Some(rejection) => PreFilterOutcome::Reject(rejection),
            None => PreFilterOutcome::Skip,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ctx, pod_from_yaml};

    fn reason(spec: &str) -> Option<String> {
        let pod = pod_from_yaml(&format!("metadata: {{name: p}}\nspec: {{{spec}}}\n"));
        let info = PodInfo::new(pod).unwrap();
        match PlacementFieldGuard.pre_filter(&ctx(), &mut CycleState::new(), &info) {
            PreFilterOutcome::Skip => None,
            PreFilterOutcome::Reject(r) => {
                assert_eq!(r.code, crate::framework::Code::UnschedulableAndUnresolvable);
                Some(r.reason.into_owned())
            }
            PreFilterOutcome::Proceed => panic!("never proceeds"),
        }
    }

    #[test]
    fn refusal_table() {
        let c = "containers: [{name: c}]";
        let cases = [
            (c.to_string(), None),
            (format!("{c}, schedulingGates: []"), None),
            (format!("{c}, schedulingGates: [{{name: g}}]"), Some(GATED.to_string())),
            (
                format!("{c}, resourceClaims: [{{name: gpu, resourceClaimName: x}}]"),
                Some(format!("spec.resourceClaims: {DRA}")),
            ),
            (
                "containers: [{name: c, resources: {claims: [{name: gpu}]}}]".to_string(),
                Some(format!("spec.containers[].resources.claims: {DRA}")),
            ),
            (
                format!(
                    "{c}, volumes: [{{name: a, emptyDir: {{}}}}, {{name: d, persistentVolumeClaim: {{claimName: data}}}}]"
                ),
                // Bound claims are placed by VolumeBinding and VolumeZone.
                None,
            ),
            (
                format!(
                    "{c}, volumes: [{{name: e, ephemeral: {{volumeClaimTemplate: {{spec: {{}}}}}}}}]"
                ),
                Some(format!("spec.volumes[].ephemeral: {BINDING}")),
            ),
            (
                format!(
                    "{c}, volumes: [{{name: a, emptyDir: {{}}}}, {{name: s, secret: {{secretName: x}}}}]"
                ),
                None,
            ),
            (
                format!("{c}, volumes: [{{name: d, rbd: {{monitors: [m], image: i}}}}]"),
                // Disk conflicts: VolumeRestrictions.
                None,
            ),
            (
                format!("{c}, volumes: [{{name: d, awsElasticBlockStore: {{volumeID: v}}}}]"),
                Some(format!("spec.volumes[].awsElasticBlockStore: {LIMITS}")),
            ),
            (
                format!("{c}, runtimeClassName: kata"),
                // Honoured: RuntimeClass admission merged its scheduling
                // constraints and overhead into the pod.
                None,
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(reason(&spec), want, "{spec}");
        }
    }
}
