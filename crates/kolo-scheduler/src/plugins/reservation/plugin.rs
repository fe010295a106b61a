//! The Reservation plugin: the framework's side of reservations (see the
//! module documentation of [`super`]).

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use kolo_api::names::{annotation, label};
use kolo_core::HasMeta;

use super::affinity::ReservationAffinity;
use super::decide::{Nominee, nominate};
use super::reserve_pod::reservation_of;
use super::spec::ReservationSpec;
use super::tracker::Tracker;
use crate::binder::{BindRequest, BindTarget};
use crate::framework::{
    Bind, BindOutcome, ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds,
    ExtensionPoints, Filter, NodeId, NodeInfo, NodeOverlay, ObjectEvent, Plugin, PodInfo, PreBind,
    PreFilter, PreFilterOutcome, PreScore, PreScoreOutcome, Rejection, Reserve, SchedulingObject,
    Score, Verdict, default_normalize,
};
use crate::registry::PluginArgsError;

/// The plugin's registered name.
pub const NAME: &str = "Reservation";

/// Why a pod with a reservation affinity fits nowhere.
pub const NO_MATCHING_RESERVATION: &str = "no reservation matches the pod's reservation-affinity";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct ReservationPlugin {
    tracker: RwLock<Tracker>,
}

/// What PreFilter decided for an owner pod: the reservation it would use
/// on each node (sorted by node), and whether it must use one.
#[derive(Debug)]
struct PodState {
    nominees: Vec<Nominee>,
    required: bool,
}

impl PodState {
    fn on(&self, node: NodeId) -> Option<&Nominee> {
        let i = self.nominees.binary_search_by_key(&node, |n| n.node).ok()?;
        self.nominees.get(i)
    }
}

impl ReservationPlugin {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(ReservationPlugin::default()))
    }

    fn read(&self) -> RwLockReadGuard<'_, Tracker> {
        self.tracker.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Tracker> {
        self.tracker.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl Plugin for ReservationPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self)
            .pre_filter()
            .filter()
            .pre_score()
            .score()
            .reserve()
            .pre_bind()
            .bind()
            .event_handler()
            .into()
    }

    /// Whenever this plugin's Filter or Score runs for a pod, its PreFilter
    /// also wrote a [`NodeOverlay`] (the nominees' holds), and an overlay
    /// makes the framework bypass the equivalence cache: for every pod the
    /// cache may serve, this plugin passes trivially.
    fn trivially_passes(&self, _pod: &PodInfo) -> bool {
        true
    }

    fn events_to_register(&self) -> EventKinds {
        EventKinds::ALL | EventKinds::RESERVATION
    }
}

impl PreFilter for ReservationPlugin {
    fn pre_filter(
        &self,
        ctx: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        if reservation_of(pod).is_some() {
            return PreFilterOutcome::Skip;
        }
        let affinity = match ReservationAffinity::of(pod) {
            Ok(a) => a,
            Err(e) => return PreFilterOutcome::Reject(Rejection::unresolvable(e.to_string())),
        };
        let tracker = self.read();
        if tracker.no_holds() {
            return match affinity {
                Some(_) => {
                    PreFilterOutcome::Reject(Rejection::unresolvable(NO_MATCHING_RESERVATION))
                }
                None => PreFilterOutcome::Skip,
            };
        }
        if affinity.is_none() && pod.view().label(label::RESERVATION_IGNORED) == Some("true") {
            // Free to use what every reservation holds; takes nothing from
            // any (Koordinator's reservation-ignored pods).
            NodeOverlay::extend(state, tracker.holds().map(|h| (h.node, h.pod.clone())));
            return PreFilterOutcome::Skip;
        }
        let wanted = |spec: &ReservationSpec| {
            affinity.as_ref().is_none_or(|a| a.matches(&spec.name, &spec.labels))
                && spec.owners.matches(pod)
        };
        let usable = tracker.candidates(wanted).filter(|(c, _)| c.available(ctx.now));
        let nominees = nominate(pod.view().requests(), usable.map(|(c, _)| c));
        if nominees.is_empty() {
            return match affinity {
                Some(_) => {
                    PreFilterOutcome::Reject(Rejection::unresolvable(NO_MATCHING_RESERVATION))
                }
                None => PreFilterOutcome::Skip,
            };
        }
        let lifted = nominees
            .iter()
            .filter_map(|n| tracker.held(&n.name).map(|h| (h.node, h.pod.clone())))
            .collect::<Vec<_>>();
        drop(tracker);
        NodeOverlay::extend(state, lifted);
        let required = affinity.is_some();
        state.write(PodState { nominees, required });
        if required { PreFilterOutcome::Proceed } else { PreFilterOutcome::Skip }
    }
}

impl Filter for ReservationPlugin {
    /// Runs only for a pod with a reservation affinity: a node without a
    /// reservation it may use is refused.
    fn filter(
        &self,
        _ctx: &CycleContext,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        match state.read::<PodState>() {
            Some(s) if s.required && s.on(node.id()).is_none() => {
                Err(Rejection::unresolvable(NO_MATCHING_RESERVATION))
            }
            _ => Ok(()),
        }
    }
}

impl PreScore for ReservationPlugin {
    fn pre_score(
        &self,
        _ctx: &CycleContext,
        state: &mut CycleState,
        _pod: &PodInfo,
    ) -> PreScoreOutcome {
        match state.read::<PodState>() {
            Some(_) => PreScoreOutcome::Proceed,
            None => PreScoreOutcome::Skip,
        }
    }
}

impl Score for ReservationPlugin {
    fn score(
        &self,
        _ctx: &CycleContext,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> i64 {
        state.read::<PodState>().and_then(|s| s.on(node.id())).map_or(0, |n| n.score)
    }

    fn normalizes(&self) -> bool {
        true
    }

    fn normalize(
        &self,
        _ctx: &CycleContext,
        _state: &CycleState,
        _pod: &PodInfo,
        _nodes: &[&NodeInfo],
        scores: &mut [i64],
    ) {
        default_normalize(100, false, scores);
    }
}

impl Reserve for ReservationPlugin {
    /// Takes the pod's part of the reservation nominated on its node; a
    /// reservation used up since PreFilter (another owner of an
    /// `allocateOnce` one) fails the cycle, to be retried.
    fn reserve(
        &self,
        ctx: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<(), Rejection> {
        let Some(nominee) = state.read::<PodState>().and_then(|s| s.on(node.id())) else {
            return Ok(());
        };
        let mut tracker = self.write();
        let usable = tracker.candidate(&nominee.name).is_some_and(|(c, _)| {
            c.node == node.id() && *c.spec.uid == *nominee.uid && c.available(ctx.now)
        });
        if !usable {
            return Err(Rejection::unschedulable(format!(
                "reservation {} is no longer available",
                nominee.name
            )));
        }
        tracker.allocate(&nominee.uid, pod.key(), *pod.view().requests());
        Ok(())
    }

    fn unreserve(&self, _ctx: &CycleContext, pod: &PodInfo, _node: &NodeInfo) {
        self.write().release(pod.key());
    }
}

impl PreBind for ReservationPlugin {
    /// Records the reservation used on the pod
    /// (`scheduling.koordinator.sh/reservation-allocated: {"name","uid"}`).
    fn pre_bind(
        &self,
        _ctx: &CycleContext,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
        request: &mut BindRequest,
    ) -> Result<(), Rejection> {
        if let Some(n) = state.read::<PodState>().and_then(|s| s.on(node.id())) {
            let value = serde_json::json!({ "name": &*n.name, "uid": &*n.uid });
            request.annotations.insert(annotation::RESERVATION_ALLOCATED.into(), value.to_string());
        }
        Ok(())
    }
}

impl Bind for ReservationPlugin {
    /// Takes reserve pods: their binding is the reservation's status.
    fn bind(
        &self,
        _ctx: &CycleContext,
        _state: &CycleState,
        pod: &PodInfo,
        _node: &NodeInfo,
        request: &mut BindRequest,
    ) -> BindOutcome {
        match reservation_of(pod) {
            Some(name) => {
                request.target = BindTarget::Reservation { name: name.to_string() };
                BindOutcome::Handled
            }
            None => BindOutcome::Skip,
        }
    }
}

/// The reservation a bound pod's `reservation-allocated` annotation names:
/// (name, uid); `None` when absent or malformed (kolo writes it itself).
fn allocated_from(pod: &PodInfo) -> Option<(String, String)> {
    let text = pod.view().annotation(annotation::RESERVATION_ALLOCATED)?;
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let field = |k: &str| value.get(k)?.as_str().map(str::to_string);
    Some((field("name").unwrap_or_default(), field("uid")?))
}

impl ClusterEventHandler for ReservationPlugin {
    fn on_event(&self, event: &ClusterEvent<'_>) {
        match *event {
            ClusterEvent::PodAdded { pod, node, .. } => {
                if let Some(name) = reservation_of(pod) {
                    self.write().hold(name, node.id(), Arc::new(pod.clone()));
                } else if let Some((_, uid)) = allocated_from(pod) {
                    self.write().allocate(&uid, pod.key(), *pod.view().requests());
                }
            }
            ClusterEvent::PodRemoved { pod, node } => match reservation_of(pod) {
                Some(name) => self.write().unhold(name, node),
                None => self.write().release(pod.key()),
            },
            _ => {}
        }
    }

    fn on_object(&self, event: &ObjectEvent<'_>) {
        match event {
            ObjectEvent::Applied(SchedulingObject::Reservation(r)) => self.write().apply(r),
            ObjectEvent::Removed(reference)
                if reference.kind == crate::framework::ObjectKind::Reservation =>
            {
                self.write().remove(&reference.key)
            }
            _ => {}
        }
    }
}
