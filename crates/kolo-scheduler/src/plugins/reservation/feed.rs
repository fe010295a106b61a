//! The driver's two calls: hand a Reservation to the scheduler, or take it
//! away. Each is the object to the plugins
//! ([`Scheduler::apply_object`]) plus its reserve pod to the cache and
//! queue ([`Scheduler::apply_pod_info`]), so a driver cannot do one and
//! forget the other.

use std::sync::Arc;

use kolo_api::crd::Reservation;
use kolo_core::clock::Timestamp;

use super::ReservationError;
use super::reserve_pod::{reserve_pod, reserve_pod_key};
use crate::framework::{ObjectKind, ObjectRef, SchedulingObject};
use crate::scheduler::Scheduler;

/// Hands a created or changed reservation to the scheduler: a pending one
/// is queued, a scheduled one counted on its node (holding what is not
/// allocated), an over or expired one forgotten. Call it on every watch
/// event and again at the reservation's expiry
/// ([`super::spec::expiry`]). A refused reservation (the error names the
/// field) keeps its last good state.
pub fn apply_reservation(
    scheduler: &mut Scheduler,
    reservation: Arc<Reservation>,
    now: Timestamp,
) -> Result<(), ReservationError> {
    let pod = reserve_pod(&reservation, now);
    scheduler.apply_object(SchedulingObject::Reservation(reservation), now);
    scheduler.apply_pod_info(Arc::new(pod?), now);
    Ok(())
}

/// Takes a deleted reservation away: the plugins forget it, its reserve
/// pod stops holding anything.
pub fn remove_reservation(scheduler: &mut Scheduler, name: &str, now: Timestamp) {
    scheduler.remove_object(&ObjectRef { kind: ObjectKind::Reservation, key: name.into() }, now);
    scheduler.remove_pod(&reserve_pod_key(name), now);
}
