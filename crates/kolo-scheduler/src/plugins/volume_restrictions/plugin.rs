//! The VolumeRestrictions plugin: the framework adapter of
//! [`super::disks`], and the ReadWriteOncePod check.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use super::disks::{Disk, any_conflict, disks};
use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, ExtensionPoints,
    Filter, NodeId, NodeInfo, ObjectEvent, PerNode, Plugin, PodInfo, PreFilter, PreFilterOutcome,
    Rejection, Verdict,
};
use crate::plugins::volume_binding::claims::{Claims, claim_names, uses_claims};
use crate::registry::PluginArgsError;

/// The plugin's registered name (kube-scheduler's).
pub const NAME: &str = "VolumeRestrictions";

/// kube-scheduler's reason for a disk already in use on the node.
pub const DISK_CONFLICT: &str = "node(s) had no available disk";

/// What the plugin keeps from cluster events.
#[derive(Debug, Default)]
struct State {
    claims: Claims,
    /// Per node: the pods counted there that use in-line disks, with them.
    disks: PerNode<Vec<(Box<str>, Vec<Disk>)>>,
    /// Per claim (`namespace/name`): the pods counted on nodes that use it.
    users: HashMap<String, Vec<Box<str>>>,
}

impl State {
    fn forget(&mut self, pod: &PodInfo, node: NodeId) {
        if let Some(held) = self.disks.get_mut(node) {
            held.retain(|(k, _)| &**k != pod.key());
        }
        let namespace = pod.view().namespace();
        for name in claim_names(pod.pod()) {
            let key = format!("{namespace}/{name}");
            if let Some(users) = self.users.get_mut(&key) {
                users.retain(|k| &**k != pod.key());
                if users.is_empty() {
                    self.users.remove(&key);
                }
            }
        }
    }

    fn count(&mut self, pod: &PodInfo, node: NodeId) {
        self.forget(pod, node);
        let held = disks(pod.pod());
        if !held.is_empty() {
            self.disks.get_or_insert_with(node, Vec::new).push((pod.key().into(), held));
        }
        let namespace = pod.view().namespace();
        for name in claim_names(pod.pod()) {
            self.users.entry(format!("{namespace}/{name}")).or_default().push(pod.key().into());
        }
    }

    /// The first ReadWriteOncePod claim of the pod another pod already
    /// uses, as a rejection naming both.
    fn read_write_once_pod_conflict(&self, pod: &PodInfo) -> Option<Rejection> {
        let namespace = pod.view().namespace();
        claim_names(pod.pod()).find_map(|name| {
            let key = format!("{namespace}/{name}");
            self.claims.claim(&key).filter(|c| c.read_write_once_pod)?;
            let other = self.users.get(&key)?.iter().find(|k| &***k != pod.key())?;
            Some(Rejection::unresolvable(format!(
                "persistentvolumeclaim \"{name}\" has access mode ReadWriteOncePod and is used \
                 by pod {other}"
            )))
        })
    }

    /// Whether the node holds a disk conflicting with `wanted`, not
    /// counting the pods `removed`.
    fn conflicts(&self, wanted: &[Disk], node: &NodeInfo, removed: &[&PodInfo]) -> bool {
        self.disks.get(node.id()).is_some_and(|held| {
            held.iter()
                .filter(|(k, _)| !removed.iter().any(|r| r.key() == &**k))
                .any(|(_, disks)| any_conflict(wanted, disks))
        })
    }
}

/// Whether the plugin keeps track of a placed pod: it uses claims or
/// in-line disks.
fn tracked(pod: &PodInfo) -> bool {
    uses_claims(pod.pod()) || !disks(pod.pod()).is_empty()
}

/// See the [module documentation](super).
#[derive(Debug, Default)]
pub struct VolumeRestrictions {
    state: RwLock<State>,
}

/// The incoming pod's in-line disks, read at PreFilter.
struct Wanted(Vec<Disk>);

impl VolumeRestrictions {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(VolumeRestrictions::default()))
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn check(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        removed: &[&PodInfo],
    ) -> Verdict {
        let mut owned = None;
        let wanted = state.read_or(&mut owned, || Wanted(disks(pod.pod())));
        if self.read().conflicts(&wanted.0, node, removed) {
            Err(Rejection::unschedulable(DISK_CONFLICT))
        } else {
            Ok(())
        }
    }
}

impl Plugin for VolumeRestrictions {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).pre_filter().filter().event_handler().into()
    }
    fn events_to_register(&self) -> EventKinds {
        // A disk or a ReadWriteOncePod claim is freed when its pod goes.
        EventKinds::POD_DELETE | EventKinds::VOLUME
    }
    fn trivially_passes(&self, pod: &PodInfo) -> bool {
        // Its results read claims and pods on the node that the signature
        // does not describe: only pods without claims and disks may use
        // the cache.
        !tracked(pod)
    }
}

impl PreFilter for VolumeRestrictions {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        if uses_claims(pod.pod())
            && let Some(rejection) = self.read().read_write_once_pod_conflict(pod)
        {
            return PreFilterOutcome::Reject(rejection);
        }
        let wanted = disks(pod.pod());
        if wanted.is_empty() {
            return PreFilterOutcome::Skip;
        }
        state.write(Wanted(wanted));
        PreFilterOutcome::Proceed
    }
}

impl Filter for VolumeRestrictions {
    fn filter(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        self.check(state, pod, node, &[])
    }

    fn filter_without(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        removed: &[&PodInfo],
    ) -> Verdict {
        // A victim's disk is free once it is gone.
        self.check(state, pod, node, removed)
    }
}

impl ClusterEventHandler for VolumeRestrictions {
    fn on_event(&self, event: &ClusterEvent<'_>) {
        let write = || self.state.write().unwrap_or_else(PoisonError::into_inner);
        match *event {
            // Only pods with claims or disks are kept (volumes are
            // immutable: an update does not change that).
            ClusterEvent::PodAdded { pod, node, .. } if tracked(pod) => {
                write().count(pod, node.id());
            }
            ClusterEvent::PodRemoved { pod, node } if tracked(pod) => write().forget(pod, node),
            ClusterEvent::NodeRemoved { id, .. } => write().disks.remove(id),
            _ => {}
        }
    }

    fn on_node_metrics(
        &self,
        _updates: &[(&NodeInfo, &Arc<kolo_core::usage_report::NodeUsageReport>)],
    ) {
    }

    fn on_object(&self, event: &ObjectEvent<'_>) {
        if event.kind() == EventKinds::VOLUME {
            self.state.write().unwrap_or_else(PoisonError::into_inner).claims.on_object(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::SchedulingObject;
    use crate::testing::{ctx, node, pod_from_yaml};
    use kolo_core::clock::Timestamp;

    fn pod(name: &str, volumes: &str) -> PodInfo {
        PodInfo::new(pod_from_yaml(&format!(
            "metadata: {{name: {name}, namespace: ns}}\nspec: {{containers: [{{name: c}}], volumes: [{volumes}]}}"
        )))
        .unwrap()
    }

    fn node_info(id: u32) -> NodeInfo {
        let n = node(&format!("n{id}"), &[("cpu", "4")]);
        let view = kolo_core::node::NodeView::from_node(&n).unwrap();
        NodeInfo::new(NodeId(id), Arc::new(n), view)
    }

    fn add(plugin: &VolumeRestrictions, pod: &PodInfo, node: &NodeInfo) {
        let at = Timestamp::UNIX_EPOCH;
        plugin.on_event(&ClusterEvent::PodAdded { pod, node, assumed: false, at });
    }

    /// PreFilter then Filter: `Err(reason)` for a PreFilter rejection,
    /// `Ok(None)` when skipped, else the Filter verdict.
    fn run(
        plugin: &VolumeRestrictions,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<Option<bool>, String> {
        let mut state = CycleState::new();
        match plugin.pre_filter(&ctx(), &mut state, pod) {
            PreFilterOutcome::Skip => Ok(None),
            PreFilterOutcome::Reject(r) => Err(r.reason.into_owned()),
            PreFilterOutcome::Proceed => Ok(Some(plugin.filter(&ctx(), &state, pod, node).is_ok())),
        }
    }

    #[test]
    fn disks_in_use_on_the_node_conflict_and_free_up() {
        let plugin = VolumeRestrictions::default();
        let (n0, n1) = (node_info(0), node_info(1));
        let holder = pod("holder", "{name: d, gcePersistentDisk: {pdName: pd1}}");
        add(&plugin, &holder, &n0);
        let same = pod("same", "{name: d, gcePersistentDisk: {pdName: pd1, readOnly: true}}");
        let other = pod("other", "{name: d, gcePersistentDisk: {pdName: pd2}}");
        let plain = pod("plain", "{name: e, emptyDir: {}}");
        assert_eq!(run(&plugin, &same, &n0), Ok(Some(false)));
        assert_eq!(run(&plugin, &same, &n1), Ok(Some(true)));
        assert_eq!(run(&plugin, &other, &n0), Ok(Some(true)));
        assert_eq!(run(&plugin, &plain, &n0), Ok(None));
        assert!(plugin.trivially_passes(&plain));
        assert!(!plugin.trivially_passes(&same));
        // Preemption's what-if: without the holder, the disk is free.
        let state = CycleState::new();
        assert!(plugin.filter_without(&ctx(), &state, &same, &n0, &[&holder]).is_ok());
        assert!(plugin.filter_without(&ctx(), &state, &same, &n0, &[&other]).is_err());
        plugin.on_event(&ClusterEvent::PodRemoved { pod: &holder, node: n0.id() });
        assert_eq!(run(&plugin, &same, &n0), Ok(Some(true)));
    }

    #[test]
    fn a_read_write_once_pod_claim_has_one_user_in_the_cluster() {
        let plugin = VolumeRestrictions::default();
        let claim = |name: &str, mode: &str| {
            SchedulingObject::PersistentVolumeClaim(Arc::new(
                serde_saphyr::from_str(&format!(
                    "metadata: {{name: {name}, namespace: ns}}\nspec: {{accessModes: [{mode}]}}"
                ))
                .unwrap(),
            ))
        };
        plugin.on_object(&ObjectEvent::Applied(&claim("solo", "ReadWriteOncePod")));
        plugin.on_object(&ObjectEvent::Applied(&claim("shared", "ReadWriteOnce")));
        let uses = |name: &str, claim: &str| {
            pod(name, &format!("{{name: v, persistentVolumeClaim: {{claimName: {claim}}}}}"))
        };
        let (n0, n1) = (node_info(0), node_info(1));
        add(&plugin, &uses("first", "solo"), &n0);
        add(&plugin, &uses("first-shared", "shared"), &n0);
        let cases = [
            (
                uses("second", "solo"),
                Err("persistentvolumeclaim \"solo\" has access mode ReadWriteOncePod and is used by pod ns/first".to_string()),
            ),
            // The user itself (an update of an assigned pod) is no conflict.
            (uses("first", "solo"), Ok(None)),
            (uses("second", "shared"), Ok(None)),
            (uses("second", "unknown"), Ok(None)),
        ];
        for (p, want) in cases {
            assert_eq!(run(&plugin, &p, &n1), want, "{}", p.key());
        }
        plugin.on_event(&ClusterEvent::PodRemoved { pod: &uses("first", "solo"), node: n0.id() });
        assert_eq!(run(&plugin, &uses("second", "solo"), &n1), Ok(None));
    }
}
