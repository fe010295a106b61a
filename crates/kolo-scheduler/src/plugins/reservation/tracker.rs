//! What the Reservation plugin knows between cycles: the reservations
//! (read), where each one's reserve pod is counted, and which pods took a
//! part of which reservation. Kept from cluster events and the plugin's
//! own Reserve / Unreserve.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kolo_api::crd::Reservation;
use kolo_core::resources::ResourceVector;

use super::decide::{Candidate, allocated};
use super::spec::ReservationSpec;
use crate::framework::{NodeId, PodInfo};

/// A reserve pod as the scheduler counts it.
#[derive(Debug, Clone)]
pub struct Hold {
    /// Its node.
    pub node: NodeId,
    /// The pod exactly as counted (what an overlay must take out).
    pub pod: Arc<PodInfo>,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Tracker {
    /// The last good reading of each reservation, by name.
    specs: HashMap<Box<str>, Arc<ReservationSpec>>,
    /// Reserve pods counted on nodes, by reservation name.
    holds: BTreeMap<Box<str>, Hold>,
    /// Per reservation UID: the pods that took a part, with their
    /// requests.
    owners: HashMap<Box<str>, BTreeMap<Box<str>, ResourceVector>>,
    /// Pod key → the reservation UID it took from.
    owner_of: HashMap<Box<str>, Box<str>>,
}

impl Tracker {
    /// Whether no reserve pod is counted anywhere (no pod can use one).
    pub fn no_holds(&self) -> bool {
        self.holds.is_empty()
    }

    /// Reads a created or changed reservation; a refused one keeps its
    /// last good reading (the driver gets the refusal from
    /// [`super::feed::apply_reservation`]).
    pub fn apply(&mut self, r: &Reservation) {
        if let Ok(spec) = ReservationSpec::read(r) {
            self.specs.insert(spec.name.clone(), Arc::new(spec));
        }
    }

    /// Forgets a deleted reservation.
    pub fn remove(&mut self, name: &str) {
        if let Some(spec) = self.specs.remove(name)
            && let Some(owners) = self.owners.remove(&spec.uid)
        {
            owners.keys().for_each(|k| drop(self.owner_of.remove(k)));
        }
    }

    /// Records where reservation `name`'s reserve pod is counted.
    pub fn hold(&mut self, name: &str, node: NodeId, pod: Arc<PodInfo>) {
        self.holds.insert(name.into(), Hold { node, pod });
    }

    /// Forgets reservation `name`'s reserve pod on `node`.
    pub fn unhold(&mut self, name: &str, node: NodeId) {
        if self.holds.get(name).is_some_and(|h| h.node == node) {
            self.holds.remove(name);
        }
    }

    /// Where reservation `name`'s reserve pod is counted.
    pub fn held(&self, name: &str) -> Option<&Hold> {
        self.holds.get(name)
    }

    /// Records that pod `pod` took from the reservation with UID `uid`
    /// (replacing what it took before, from any).
    pub fn allocate(&mut self, uid: &str, pod: &str, requests: ResourceVector) {
        self.release(pod);
        self.owners.entry(uid.into()).or_default().insert(pod.into(), requests);
        self.owner_of.insert(pod.into(), uid.into());
    }

    /// Forgets what pod `pod` took, if anything.
    pub fn release(&mut self, pod: &str) {
        let Some(uid) = self.owner_of.remove(pod) else { return };
        if let Some(owners) = self.owners.get_mut(&uid) {
            owners.remove(pod);
            if owners.is_empty() {
                self.owners.remove(&uid);
            }
        }
    }

    /// The reservation whose reserve pod is counted on `node`, by name, as
    /// a pod may find it, with its hold.
    pub fn candidate(&self, name: &str) -> Option<(Candidate<'_>, &Hold)> {
        let hold = self.holds.get(name)?;
        let spec = self.specs.get(name)?;
        let owners = self.owners.get(&spec.uid);
        let taken = owners.map(|o| allocated(&spec.allocatable, o.values())).unwrap_or_default();
        let candidate = Candidate {
            spec,
            node: hold.node,
            allocated: taken,
            owners: owners.map_or(0, BTreeMap::len),
        };
        Some((candidate, hold))
    }

    /// Every reservation counted on a node that `wanted` accepts, in name
    /// order, with its hold (what its owners took is summed only for
    /// those).
    pub fn candidates<'a>(
        &'a self,
        wanted: impl Fn(&ReservationSpec) -> bool + 'a,
    ) -> impl Iterator<Item = (Candidate<'a>, &'a Hold)> + 'a {
        self.holds
            .keys()
            .filter(move |name| self.specs.get(*name).is_some_and(|s| wanted(s)))
            .filter_map(|name| self.candidate(name))
    }

    /// Every reserve pod counted on a node.
    pub fn holds(&self) -> impl Iterator<Item = &Hold> {
        self.holds.values()
    }
}
