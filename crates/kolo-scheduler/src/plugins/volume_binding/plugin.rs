//! The VolumeBinding plugin: the framework adapter of [`super::decide`].

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use super::claims::{Claims, Volume, claim_names, uses_claims};
use super::decide::{NODE_CONFLICT, bound_volumes, node_fits};
use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, ExtensionPoints,
    Filter, NodeInfo, ObjectEvent, Plugin, PodInfo, PreFilter, PreFilterOutcome, Rejection,
    Verdict,
};
use crate::registry::PluginArgsError;

/// The plugin's registered name (kube-scheduler's).
pub const NAME: &str = "VolumeBinding";

/// See the [module documentation](super).
#[derive(Debug, Default)]
pub struct VolumeBinding {
    claims: RwLock<Claims>,
}

/// The volumes of the pod being scheduled that restrict nodes, found at
/// PreFilter.
struct Restricting(Vec<Arc<Volume>>);

impl VolumeBinding {
    /// Builds the plugin. kube-scheduler's `VolumeBindingArgs`
    /// (`bindTimeoutSeconds`, `shape`) are accepted and ignored: they are
    /// about binding, which kolo-scheduler does not do.
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(VolumeBinding::default()))
    }

    fn read(&self) -> RwLockReadGuard<'_, Claims> {
        self.claims.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The pod's bound volumes that have a node affinity, or the rejection
    /// naming its first unusable claim.
    fn restricting(&self, pod: &PodInfo) -> Result<Vec<Arc<Volume>>, Rejection> {
        let volumes = bound_volumes(&self.read(), pod.view().namespace(), claim_names(pod.pod()))
            .map_err(|problem| problem.rejection())?;
        Ok(volumes.into_iter().filter(|v| v.affinity.is_some()).collect())
    }
}

impl Plugin for VolumeBinding {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).pre_filter().filter().event_handler().into()
    }
    fn events_to_register(&self) -> EventKinds {
        // A claim bound or a volume created; a node that matches a
        // volume's affinity.
        EventKinds::VOLUME | EventKinds::NODE_ADD | EventKinds::NODE_UPDATE
    }
    fn trivially_passes(&self, pod: &PodInfo) -> bool {
        // Its results read the claims and volumes, which no node
        // generation tracks: only pods without claims may use the cache.
        !uses_claims(pod.pod())
    }
}

impl PreFilter for VolumeBinding {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        if !uses_claims(pod.pod()) {
            return PreFilterOutcome::Skip;
        }
        match self.restricting(pod) {
            Err(rejection) => PreFilterOutcome::Reject(rejection),
            Ok(volumes) if volumes.is_empty() => PreFilterOutcome::Skip,
            Ok(volumes) => {
                state.write(Restricting(volumes));
                PreFilterOutcome::Proceed
            }
        }
    }
}

impl Filter for VolumeBinding {
    fn filter(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        let fits = match state.read::<Restricting>() {
            Some(r) => node_fits(&r.0, node.view()),
            // Called without PreFilter (preemption's what-if asks Filter
            // alone): read the claims again.
            None => self.restricting(pod).is_ok_and(|v| node_fits(&v, node.view())),
        };
        if fits { Ok(()) } else { Err(Rejection::unresolvable(NODE_CONFLICT)) }
    }
}

impl ClusterEventHandler for VolumeBinding {
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
    use crate::framework::{Code, SchedulingObject};
    use crate::testing::{ctx, node_from_yaml, node_info, pod_from_yaml};

    fn apply(plugin: &VolumeBinding, yaml: &str) {
        let object = if yaml.contains("kind: PersistentVolumeClaim") {
            SchedulingObject::PersistentVolumeClaim(Arc::new(serde_saphyr::from_str(yaml).unwrap()))
        } else {
            SchedulingObject::PersistentVolume(Arc::new(serde_saphyr::from_str(yaml).unwrap()))
        };
        plugin.on_object(&ObjectEvent::Applied(&object));
    }

    fn pod(claims: &[&str]) -> PodInfo {
        let volumes: Vec<String> = claims
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{{name: v{i}, persistentVolumeClaim: {{claimName: {c}}}}}"))
            .collect();
        PodInfo::new(pod_from_yaml(&format!(
            "metadata: {{name: p, namespace: ns}}\nspec: {{containers: [{{name: c}}], volumes: [{}]}}",
            volumes.join(", ")
        )))
        .unwrap()
    }

    /// PreFilter, then Filter on nodes `a` and `b`: `Err(reason)` when
    /// PreFilter rejects, else whether each node fits (`None`: skipped).
    fn run(plugin: &VolumeBinding, pod: &PodInfo) -> Result<Option<[bool; 2]>, String> {
        let mut state = CycleState::new();
        match plugin.pre_filter(&ctx(), &mut state, pod) {
            PreFilterOutcome::Skip => Ok(None),
            PreFilterOutcome::Reject(r) => {
                assert_eq!(r.code, Code::UnschedulableAndUnresolvable);
                Err(r.reason.into_owned())
            }
            PreFilterOutcome::Proceed => Ok(Some(["a", "b"].map(|name| {
                let node = node_info(node_from_yaml(&format!(
                    "metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}"
                )));
                let verdict = plugin.filter(&ctx(), &state, pod, &node);
                let without_state = plugin.filter(&ctx(), &CycleState::new(), pod, &node);
                assert_eq!(verdict, without_state);
                verdict.is_ok()
            }))),
        }
    }

    #[test]
    fn bound_claims_restrict_nodes_and_unbound_ones_are_refused() {
        let plugin = VolumeBinding::default();
        apply(
            &plugin,
            "kind: PersistentVolume\nmetadata: {name: pv-b}\nspec: {nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [b]}]}]}}}",
        );
        apply(&plugin, "kind: PersistentVolume\nmetadata: {name: pv-any}\nspec: {}");
        for (claim, volume) in [("data", "pv-b"), ("logs", "pv-any"), ("lost", "pv-gone")] {
            apply(
                &plugin,
                &format!(
                    "kind: PersistentVolumeClaim\nmetadata: {{name: {claim}, namespace: ns, annotations: {{pv.kubernetes.io/bind-completed: 'yes'}}}}\nspec: {{volumeName: {volume}}}"
                ),
            );
        }
        apply(
            &plugin,
            "kind: PersistentVolumeClaim\nmetadata: {name: fresh, namespace: ns}\nspec: {storageClassName: standard}",
        );
        // (claims, PreFilter's reason or the fit of nodes a and b).
        type Case<'a> = (&'a [&'a str], Result<Option<[bool; 2]>, &'a str>);
        let cases: [Case<'_>; 6] = [
            (&[], Ok(None)),
            (&["data"], Ok(Some([false, true]))),
            // A volume without node affinity restricts nothing.
            (&["logs"], Ok(None)),
            (&["logs", "data"], Ok(Some([false, true]))),
            (
                &["logs", "fresh"],
                Err(
                    "persistentvolumeclaim \"fresh\" is not bound; kolo-scheduler does not bind volumes",
                ),
            ),
            (
                &["lost"],
                Err("persistentvolume \"pv-gone\" of persistentvolumeclaim \"lost\" not found"),
            ),
        ];
        for (claims, want) in cases {
            assert_eq!(run(&plugin, &pod(claims)), want.map_err(str::to_string), "{claims:?}");
        }
        assert!(plugin.trivially_passes(&pod(&[])));
        assert!(!plugin.trivially_passes(&pod(&["logs"])));
        // The claim binds: the pod passes.
        apply(
            &plugin,
            "kind: PersistentVolumeClaim\nmetadata: {name: fresh, namespace: ns, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}\nspec: {volumeName: pv-b}",
        );
        assert_eq!(run(&plugin, &pod(&["fresh"])), Ok(Some([false, true])));
        let removed = crate::framework::ObjectRef {
            kind: crate::framework::ObjectKind::PersistentVolumeClaim,
            key: "ns/fresh".into(),
        };
        plugin.on_object(&ObjectEvent::Removed(&removed));
        assert_eq!(
            run(&plugin, &pod(&["fresh"])),
            Err("persistentvolumeclaim \"fresh\" not found".into())
        );
    }
}
