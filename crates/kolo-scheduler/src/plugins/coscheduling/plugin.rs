//! The `Coscheduling` plugin: the framework adapter over [`Gangs`]. It
//! reads which gang a pod names, feeds the cluster's changes to the state
//! and asks it at each extension point. A pod in no gang costs a few label
//! and annotation lookups per point and never takes the lock.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kolo_core::HasMeta;

use super::args::CoschedulingArgs;
use super::facts::GangFacts;
use super::gang::{Defined, GangFieldError, GangName, from_pod, from_pod_group, gang_of, nanos};
use super::state::Gangs;
use crate::binder::BindRequest;
use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, ExtensionPoints,
    Facts, NodeInfo, ObjectEvent, ObjectKind, Permit, PermitOutcome, Plugin, PodInfo, PostFilter,
    PostFilterCluster, PostFilterOutcome, PreBind, PreFilter, PreFilterOutcome, QueueKey,
    QueueSort, Rejected, Rejection, ReportFacts, Reserve, SchedulingObject, WaitingVerdict,
};
use crate::registry::{PluginArgsError, decode_args};

/// The plugin's registered name.
pub const NAME: &str = "Coscheduling";

/// PreBind: the group a pod was bound with.
pub const BIND_GANG_GROUP_ID: &str = "internal.scheduling.koordinator.sh/bind-gang-group-id";
/// PreBind: how many members were bound together.
pub const BIND_GANG_MEMBER_COUNT: &str =
    "internal.scheduling.koordinator.sh/bind-gang-member-count";
/// Deprecated twin of [`BIND_GANG_GROUP_ID`].
pub const BIND_GANG_GROUP_ID_DEPRECATED: &str = "scheduling.koordinator.sh/bind-gang-group-id";
/// Deprecated twin of [`BIND_GANG_MEMBER_COUNT`].
pub const BIND_GANG_MEMBER_COUNT_DEPRECATED: &str =
    "scheduling.koordinator.sh/bind-gang-member-count";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Coscheduling {
    args: CoschedulingArgs,
    state: Mutex<Gangs>,
}

impl Coscheduling {
    /// Builds the plugin from its arguments (`CoschedulingArgs`).
    pub fn build(args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        let args: CoschedulingArgs = decode_args(args, "CoschedulingArgs")?;
        args.validate().map_err(PluginArgsError::from_validation)?;
        Ok(Arc::new(Coscheduling::new(args)))
    }

    /// The plugin with these arguments.
    pub fn new(args: CoschedulingArgs) -> Coscheduling {
        Coscheduling { args, state: Mutex::default() }
    }

    fn lock(&self) -> MutexGuard<'_, Gangs> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads the gang state (for explanations and tests).
    pub fn with_state<R>(&self, f: impl FnOnce(&Gangs) -> R) -> R {
        f(&self.lock())
    }

    /// An annotation gang's rules, read from this pod.
    fn define_from(&self, id: &str, pod: &PodInfo) -> Result<Defined, GangFieldError> {
        let view = pod.view();
        let created = view.creation_timestamp().map(nanos);
        from_pod(id, pod.key(), created, |k| view.label(k), |k| view.annotation(k), &self.args)
    }
}

/// The gang a pod names, if any.
pub fn gang_name(pod: &PodInfo) -> Option<GangName> {
    let view = pod.view();
    gang_of(view.namespace(), |k| view.label(k), |k| view.annotation(k))
}

/// A stable tag for a gang id in queue keys (FNV-1a): members of one gang
/// share it, so gangs created at the same time do not interleave.
fn tag(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

impl Plugin for Coscheduling {
    fn name(&self) -> &'static str {
        NAME
    }

    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self)
            .queue_sort()
            .pre_filter()
            .post_filter()
            .reserve()
            .permit()
            .pre_bind()
            .event_handler()
            .report_facts()
            .into()
    }

    /// A gang pod refused at PreFilter waits for a member or its PodGroup
    /// to arrive, or for a member to be assumed (the group's next attempt).
    fn events_to_register(&self) -> EventKinds {
        EventKinds::POD_PENDING | EventKinds::POD_GROUP | EventKinds::POD_ADD
    }
}

impl QueueSort for Coscheduling {
    /// Priority first, then the gang's creation time (the pod's own for a
    /// pod in no gang, or while its gang has no rules), then the gang, then
    /// the pod's time: a pod in no gang sorts as with PrioritySort.
    fn sort_key(&self, pod: &PodInfo) -> QueueKey {
        let view = pod.view();
        let priority = -i64::from(view.priority());
        // Undated pods go after dated ones, as with PrioritySort.
        let time = view.creation_timestamp().map_or(i64::MAX, nanos);
        let Some(gang) = gang_name(pod) else { return QueueKey::new(priority, time) };
        let group_time = self.lock().gang_time(&gang.id).unwrap_or(time);
        QueueKey { priority, group_time, group: tag(&gang.id), time }
    }

    fn take_stale_keys(&self) -> Vec<Box<str>> {
        std::mem::take(&mut self.lock().stale_keys)
    }
}

impl PreFilter for Coscheduling {
    fn pre_filter(&self, _: &CycleContext, _: &mut CycleState, pod: &PodInfo) -> PreFilterOutcome {
        let Some(gang) = gang_name(pod) else { return PreFilterOutcome::Skip };
        match self.lock().pre_filter(&gang.id, pod.key()) {
            Ok(()) => PreFilterOutcome::Skip,
            Err(rejection) => PreFilterOutcome::Reject(rejection),
        }
    }
}

impl PostFilter for Coscheduling {
    /// Fails the group's attempt (Strict mode) and leaves the pod to the
    /// next PostFilter plugin (DefaultPreemption).
    fn post_filter(
        &self,
        _: &CycleContext,
        _: &CycleState,
        pod: &PodInfo,
        _: &[(&NodeInfo, &Rejected)],
        _: &dyn PostFilterCluster,
    ) -> PostFilterOutcome {
        if let Some(gang) = gang_name(pod) {
            self.lock().post_filter(&gang.id);
        }
        PostFilterOutcome::Unchanged
    }
}

impl Reserve for Coscheduling {
    /// Nothing to claim: a member joins its gang's waiting set at Permit.
    fn reserve(
        &self,
        _: &CycleContext,
        _: &CycleState,
        _: &PodInfo,
        _: &NodeInfo,
    ) -> Result<(), Rejection> {
        Ok(())
    }

    fn unreserve(&self, _: &CycleContext, pod: &PodInfo, _: &NodeInfo) {
        if let Some(gang) = gang_name(pod) {
            self.lock().unreserve(&gang.id, pod.key());
        }
    }
}

impl Permit for Coscheduling {
    fn permit(
        &self,
        _: &CycleContext,
        _: &CycleState,
        pod: &PodInfo,
        _: &NodeInfo,
    ) -> PermitOutcome {
        match gang_name(pod) {
            None => PermitOutcome::Allow,
            Some(gang) => self.lock().permit(&gang.id, pod.key()),
        }
    }

    fn take_verdicts(&self) -> Vec<WaitingVerdict> {
        std::mem::take(&mut self.lock().verdicts)
    }
}

impl PreBind for Coscheduling {
    fn pre_bind(
        &self,
        _: &CycleContext,
        _: &CycleState,
        pod: &PodInfo,
        _: &NodeInfo,
        request: &mut BindRequest,
    ) -> Result<(), Rejection> {
        let Some(gang) = gang_name(pod) else { return Ok(()) };
        let Some((group, count)) = self.lock().binding_annotation(&gang.id, pod.key()) else {
            return Ok(());
        };
        let annotations = &mut request.annotations;
        for key in [BIND_GANG_GROUP_ID, BIND_GANG_GROUP_ID_DEPRECATED] {
            annotations.insert(key.to_string(), group.to_string());
        }
        for key in [BIND_GANG_MEMBER_COUNT, BIND_GANG_MEMBER_COUNT_DEPRECATED] {
            annotations.insert(key.to_string(), count.to_string());
        }
        Ok(())
    }
}

impl ClusterEventHandler for Coscheduling {
    /// A gang pod seen bound satisfies its group once; a bound one counted
    /// no more leaves its gang.
    fn on_event(&self, event: &ClusterEvent<'_>) {
        match event {
            ClusterEvent::PodAdded { pod, assumed: false, .. } => {
                let Some(gang) = gang_name(pod) else { return };
                let define = || self.define_from(&gang.id, pod);
                self.lock().pod_bound(&gang.id, gang.source, pod.key(), define);
            }
            ClusterEvent::PodRemoved { pod, .. } => {
                let Some(gang) = gang_name(pod) else { return };
                self.lock().pod_unbound(&gang.id, pod.key());
            }
            _ => {}
        }
    }

    fn on_object(&self, event: &ObjectEvent<'_>) {
        match event {
            ObjectEvent::Applied(object @ SchedulingObject::PodGroup(pg)) => {
                let id = object.reference().key;
                self.lock().apply_pod_group(&id, from_pod_group(pg, &self.args));
            }
            ObjectEvent::Removed(reference) if reference.kind == ObjectKind::PodGroup => {
                self.lock().remove_pod_group(&reference.key);
            }
            ObjectEvent::PendingPodAdded(pod) => {
                let Some(gang) = gang_name(pod) else { return };
                let define = || self.define_from(&gang.id, pod);
                self.lock().pod_pending(&gang.id, gang.source, pod.key(), define);
            }
            ObjectEvent::PendingPodRemoved(pod) => {
                let Some(gang) = gang_name(pod) else { return };
                self.lock().pod_not_pending(&gang.id, pod.key());
            }
            _ => {}
        }
    }
}

impl ReportFacts for Coscheduling {
    /// The pod's gang: its rules and members ([`GangFacts`]).
    fn pod_facts(
        &self,
        _: &CycleContext,
        _: &CycleState,
        pod: &PodInfo,
        _: Option<&NodeInfo>,
    ) -> Option<Facts> {
        let gang = gang_name(pod)?;
        GangFacts::of(&self.lock(), &gang.id).map(Facts::new)
    }
}
