//! The status the driver writes on a Reservation: a pure function of the
//! object, what the driver observed (the node the scheduler bound it to,
//! its owner pods, the scheduler's last "no node" message) and the time.
//!
//! * Over (`Succeeded` or `Failed`): left as it is — a phase never leaves
//!   the terminal states.
//! * Expired (`spec.expires`, else creation + `ttl`): `Failed`, `Ready`
//!   false with reason `Expired`.
//! * Scheduled, `allocateOnce` (the default) and an owner took it:
//!   `Succeeded`, `Ready` false with reason `Succeeded` (its reserve pod
//!   is then finished: the owner is counted instead).
//! * Scheduled: `Available`; `Scheduled` and `Ready` true; `nodeName`,
//!   `allocatable` (the template's requests), `allocated` (the owners'
//!   requests, capped per resource at what is reserved) and
//!   `currentOwners`.
//! * Not scheduled: `Pending`; when the scheduler found no node,
//!   `Scheduled` false with reason `Unschedulable` and its message.
//!
//! A condition keeps its `lastTransitionTime` while its status stays the
//! same, and is left as it is (`lastProbeTime` too) while its status,
//! reason and message do: recomputing from the same observations gives
//! the status already written, and the driver writes only a status that
//! differs (re-feeding a pending reservation queues it again).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kolo_api::crd::reservation::{
    RESERVATION_PHASE_AVAILABLE, RESERVATION_PHASE_FAILED, RESERVATION_PHASE_PENDING,
    RESERVATION_PHASE_SUCCEEDED,
};
use kolo_api::crd::{Reservation, ReservationCondition, ReservationStatus};
use kolo_core::clock::Timestamp;
use kolo_core::resources::ResourceVector;

use super::ReservationError;
use super::decide::allocated;
use super::spec::ReservationSpec;

/// Condition type `Scheduled`.
pub const CONDITION_SCHEDULED: &str = "Scheduled";
/// Condition type `Ready`.
pub const CONDITION_READY: &str = "Ready";

/// A pod using a reservation (annotated `reservation-allocated` with its
/// UID, not finished), as the driver saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Owner {
    /// The pod (`kind: Pod`, namespace, name, uid).
    pub reference: ObjectReference,
    /// Its effective requests.
    pub requests: ResourceVector,
}

/// What the driver observed of a reservation, besides the object.
#[derive(Debug, Clone, Copy, Default)]
pub struct Observed<'a> {
    /// The node the scheduler bound it to (a bind request targeting it),
    /// if not yet in `status.nodeName`.
    pub node: Option<&'a str>,
    /// Its owners.
    pub owners: &'a [Owner],
    /// The message of the scheduler's last cycle for it, when that cycle
    /// found no node.
    pub unschedulable: Option<&'a str>,
}

/// The status to write (see the module documentation).
pub fn next_status(
    r: &Reservation,
    observed: &Observed<'_>,
    now: Timestamp,
) -> Result<ReservationStatus, ReservationError> {
    let spec = ReservationSpec::read(r)?;
    let prev = r.status.clone().unwrap_or_default();
    if spec.terminal {
        return Ok(prev);
    }
    let mut next = prev.clone();
    let node = observed.node.map(str::to_string).or(prev.node_name.clone());
    let scheduled = node.as_deref().is_some_and(|n| !n.is_empty());
    let set = |next: &mut ReservationStatus, kind, status: bool, reason: &str, message: &str| {
        set_condition(next, &prev, kind, status, reason, message, now);
    };
    next.node_name = node.filter(|n| !n.is_empty());
    next.allocatable = Some(spec.allocatable.to_resource_list());
    if observed.owners.is_empty() {
        next.allocated = None;
        next.current_owners = None;
    } else {
        let taken = allocated(&spec.allocatable, observed.owners.iter().map(|o| &o.requests));
        next.allocated = Some(taken.to_resource_list());
        next.current_owners = Some(observed.owners.iter().map(|o| o.reference.clone()).collect());
    }
    if spec.expired(now) {
        next.phase = Some(RESERVATION_PHASE_FAILED.into());
        set(&mut next, CONDITION_READY, false, "Expired", "the reservation expired");
    } else if scheduled && spec.allocate_once && !observed.owners.is_empty() {
        next.phase = Some(RESERVATION_PHASE_SUCCEEDED.into());
        set(&mut next, CONDITION_READY, false, "Succeeded", "allocated once to its owner");
    } else if scheduled {
        next.phase = Some(RESERVATION_PHASE_AVAILABLE.into());
        set(&mut next, CONDITION_SCHEDULED, true, "Scheduled", "");
        set(&mut next, CONDITION_READY, true, "Available", "");
    } else {
        next.phase = Some(RESERVATION_PHASE_PENDING.into());
        if let Some(message) = observed.unschedulable {
            set(&mut next, CONDITION_SCHEDULED, false, "Unschedulable", message);
        }
    }
    Ok(next)
}

/// Sets condition `kind` in `next`, keeping its transition time from
/// `prev` when the status did not change.
fn set_condition(
    next: &mut ReservationStatus,
    prev: &ReservationStatus,
    kind: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    let status = if status { "True" } else { "False" };
    let find = |s: &ReservationStatus| {
        s.conditions.iter().flatten().find(|c| c.condition_type.as_deref() == Some(kind)).cloned()
    };
    let old = find(prev);
    let message = (!message.is_empty()).then(|| message.to_string());
    let same = |c: &ReservationCondition| {
        c.status.as_deref() == Some(status)
            && c.reason.as_deref() == Some(reason)
            && c.message == message
    };
    if let Some(old) = old.as_ref().filter(|c| same(c)) {
        // Unchanged: the status computed is the status written, so the
        // driver has nothing to write (an update of a pending reservation
        // would queue it again).
        let conditions = next.conditions.get_or_insert_with(Vec::new);
        if !conditions.iter().any(|c| c.condition_type.as_deref() == Some(kind)) {
            conditions.push(old.clone());
        }
        return;
    }
    let transition = match old {
        Some(old) if old.status.as_deref() == Some(status) => old.last_transition_time,
        _ => Some(Time(now)),
    };
    let condition = ReservationCondition {
        condition_type: Some(kind.into()),
        status: Some(status.into()),
        reason: Some(reason.into()),
        message,
        last_probe_time: Some(Time(now)),
        last_transition_time: transition,
    };
    let conditions = next.conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.condition_type.as_deref() == Some(kind)) {
        Some(slot) => *slot = condition,
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::reservation;
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    fn owner(name: &str, cpu: i64) -> Owner {
        Owner {
            reference: ObjectReference {
                kind: Some("Pod".into()),
                namespace: Some("default".into()),
                name: Some(name.into()),
                uid: Some(format!("uid-{name}")),
                ..ObjectReference::default()
            },
            requests: ResourceVector::cpu_memory(cpu, 0),
        }
    }

    fn condition<'a>(s: &'a ReservationStatus, kind: &str) -> Option<&'a ReservationCondition> {
        s.conditions.iter().flatten().find(|c| c.condition_type.as_deref() == Some(kind))
    }

    #[test]
    fn the_life_of_a_reservation() {
        let mut r = reservation("r", "cpu: 4", "allocateOnce: false\n  ttl: 1h");
        // Created, not yet tried: Pending, no conditions.
        let s = next_status(&r, &Observed::default(), t(0)).unwrap();
        assert_eq!(s.phase.as_deref(), Some("Pending"));
        assert!(s.conditions.is_none());
        // No node could take it.
        let s = next_status(
            &r,
            &Observed { unschedulable: Some("0/3 nodes"), ..Default::default() },
            t(1),
        )
        .unwrap();
        let c = condition(&s, "Scheduled").unwrap();
        assert_eq!(
            (c.status.as_deref(), c.reason.as_deref(), c.message.as_deref()),
            (Some("False"), Some("Unschedulable"), Some("0/3 nodes"))
        );
        r.status = Some(s);
        // The same observation later: nothing to write.
        let again = Observed { unschedulable: Some("0/3 nodes"), ..Default::default() };
        assert_eq!(next_status(&r, &again, t(30)).unwrap(), *r.status.as_ref().unwrap());
        // Bound to n1.
        let s =
            next_status(&r, &Observed { node: Some("n1"), ..Default::default() }, t(2)).unwrap();
        assert_eq!((s.phase.as_deref(), s.node_name.as_deref()), (Some("Available"), Some("n1")));
        let scheduled = condition(&s, "Scheduled").unwrap();
        assert_eq!(scheduled.status.as_deref(), Some("True"));
        assert_eq!(scheduled.last_transition_time, Some(Time(t(2))));
        assert_eq!(condition(&s, "Ready").unwrap().status.as_deref(), Some("True"));
        assert_eq!(s.allocatable.as_ref().unwrap()["cpu"].0, "4");
        r.status = Some(s);
        // Two owners take 3 + 2 CPU: allocated capped at 4.
        let owners = [owner("a", 3000), owner("b", 2000)];
        let s = next_status(&r, &Observed { owners: &owners, ..Default::default() }, t(3)).unwrap();
        assert_eq!(s.phase.as_deref(), Some("Available"));
        assert_eq!(s.allocated.as_ref().unwrap()["cpu"].0, "4");
        assert_eq!(s.current_owners.as_ref().unwrap().len(), 2);
        // Unchanged status keeps its transition time.
        assert_eq!(condition(&s, "Scheduled").unwrap().last_transition_time, Some(Time(t(2))));
        r.status = Some(s);
        // An hour after creation: Failed, and it stays so.
        let s = next_status(&r, &Observed::default(), t(3_600)).unwrap();
        assert_eq!(s.phase.as_deref(), Some("Failed"));
        assert_eq!(condition(&s, "Ready").unwrap().reason.as_deref(), Some("Expired"));
        r.status = Some(s.clone());
        assert_eq!(
            next_status(&r, &Observed { node: Some("n2"), ..Default::default() }, t(9)).unwrap(),
            s
        );
    }

    #[test]
    fn allocate_once_succeeds_with_its_first_owner() {
        let mut r = reservation("r", "cpu: 4", "");
        r.status = Some(ReservationStatus { node_name: Some("n1".into()), ..Default::default() });
        let owners = [owner("a", 1000)];
        let s = next_status(&r, &Observed { owners: &owners, ..Default::default() }, t(5)).unwrap();
        assert_eq!(s.phase.as_deref(), Some("Succeeded"));
        assert_eq!(condition(&s, "Ready").unwrap().reason.as_deref(), Some("Succeeded"));
        assert_eq!(s.allocated.as_ref().unwrap()["cpu"].0, "1");
    }
}
