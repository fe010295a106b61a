//! Rule 5: annotations only kolo itself may set.
//!
//! `scheduling.koordinator.sh/reserve-pod` marks the placeholder pods the
//! scheduler creates for Reservations; a user pod carrying it would be
//! treated as one. The reference's message names the wrong annotation
//! (`reservation-allocated`, which an older version also forbade); kolo
//! names the one found. `reservation-allocated` itself is not forbidden
//! (the current reference does not forbid it either): the scheduler records
//! it on the user pods it places on reservations.

use k8s_openapi::api::core::v1::Pod;
use kolo_api::names::annotation;

use super::ValidationError;

/// Appends the errors of rule 5.
pub fn check(pod: &Pod, errors: &mut Vec<ValidationError>) {
    let has = |key| pod.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(key));
    if has(annotation::RESERVE_POD) {
        errors.push(ValidationError::ReservePodAnnotation);
    }
}
