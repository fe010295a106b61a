//! A Reservation as the scheduler uses it: read and checked once per
//! change, so that a malformed object is refused with the field named
//! (and the last good reading kept by the plugin) instead of being
//! half-honoured.
//!
//! Refused (not implemented; the reservation is not scheduled and no pod
//! may use it, instead of being treated as if the field were absent):
//! `spec.preAllocation: true`, `spec.preAllocationPolicy`, non-empty
//! `spec.taints` (they are tolerated through the reservation-affinity
//! `tolerations`, which kolo refuses too).

use std::collections::BTreeMap;
use std::time::Duration;

use kolo_api::crd::reservation::{
    ALLOCATE_POLICY_ALIGNED, ALLOCATE_POLICY_RESTRICTED, RESERVATION_PHASE_FAILED,
    RESERVATION_PHASE_SUCCEEDED,
};
use kolo_api::crd::{Reservation, parse_go_duration};
use kolo_api::names::label;
use kolo_core::clock::Timestamp;
use kolo_core::resources::ResourceVector;

use super::owners::Owners;
use super::reserve_pod::template_requests;

/// The default `spec.ttl` (Koordinator's): a day.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 3600);

/// Why a reservation (or a pod's reservation annotation) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReservationError {
    /// A field of a Reservation is malformed or not implemented.
    #[error("reservation {reservation}: {field}: {message}")]
    Invalid {
        /// The reservation's name.
        reservation: String,
        /// The field, as a path (`spec.ttl`).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A pod's reservation annotation is malformed or asks for what kolo
    /// does not implement.
    #[error("pod {pod}: {field}: {message}")]
    Pod {
        /// The pod, `namespace/name`.
        pod: String,
        /// The annotation and, inside it, the field.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// A reservation, read.
#[derive(Debug, Clone)]
pub struct ReservationSpec {
    /// `metadata.name`.
    pub name: Box<str>,
    /// `metadata.uid`.
    pub uid: Box<str>,
    /// Who may use it.
    pub owners: Owners,
    /// Only the first owner may allocate (`spec.allocateOnce`, default
    /// true).
    pub allocate_once: bool,
    /// `spec.allocatePolicy: Restricted`: an owner's requests of the
    /// reserved resources must fit in what is left of the reservation.
    pub restricted: bool,
    /// The label `reservation-order`, when set and non-zero.
    pub order: Option<i64>,
    /// `metadata.labels` (what a pod's `reservationSelector` matches).
    pub labels: BTreeMap<String, String>,
    /// When it expires (`spec.expires`, else creation + `spec.ttl`);
    /// `None`: never.
    pub expiry: Option<Timestamp>,
    /// `status.phase` is `Succeeded` or `Failed`: it is over.
    pub terminal: bool,
    /// `spec.unschedulable`: no new owner may use it.
    pub unschedulable: bool,
    /// What it reserves: the template's effective requests.
    pub allocatable: ResourceVector,
}

impl ReservationSpec {
    /// Reads a reservation; refuses malformed and unimplemented fields,
    /// naming them.
    pub fn read(r: &Reservation) -> Result<ReservationSpec, ReservationError> {
        let name = r.metadata.name.as_deref().unwrap_or_default();
        let invalid = |field: &str, message: &str| ReservationError::Invalid {
            reservation: name.to_string(),
            field: field.to_string(),
            message: message.to_string(),
        };
        if name.is_empty() {
            return Err(invalid("metadata.name", "required"));
        }
        let spec = &r.spec;
        if spec.pre_allocation == Some(true) {
            return Err(invalid("spec.preAllocation", "pre-allocation is not implemented"));
        }
        if spec.pre_allocation_policy.is_some() {
            return Err(invalid("spec.preAllocationPolicy", "pre-allocation is not implemented"));
        }
        if spec.taints.as_ref().is_some_and(|t| !t.is_empty()) {
            return Err(invalid("spec.taints", "reservation taints are not implemented"));
        }
        let restricted = match spec.allocate_policy.as_deref().unwrap_or_default() {
            "" | ALLOCATE_POLICY_ALIGNED => false,
            ALLOCATE_POLICY_RESTRICTED => true,
            _ => return Err(invalid("spec.allocatePolicy", "must be Aligned or Restricted")),
        };
        let labels = r.metadata.labels.clone().unwrap_or_default();
        let order = match labels.get(label::RESERVATION_ORDER) {
            None => None,
            Some(v) => match v.parse::<i64>() {
                Ok(0) => None,
                Ok(n) => Some(n),
                Err(_) => {
                    return Err(invalid(
                        &format!("metadata.labels[{}]", label::RESERVATION_ORDER),
                        "not an integer",
                    ));
                }
            },
        };
        let phase = r.status.as_ref().and_then(|s| s.phase.as_deref());
        Ok(ReservationSpec {
            name: name.into(),
            uid: r.metadata.uid.as_deref().unwrap_or_default().into(),
            owners: Owners::compile(name, spec.owners.as_deref())?,
            allocate_once: spec.allocate_once.unwrap_or(true),
            restricted,
            order,
            expiry: expiry(r)?,
            terminal: matches!(phase, Some(RESERVATION_PHASE_SUCCEEDED | RESERVATION_PHASE_FAILED)),
            unschedulable: spec.unschedulable == Some(true),
            allocatable: template_requests(r)?,
            labels,
        })
    }

    /// Whether it has expired at `now`.
    pub fn expired(&self, now: Timestamp) -> bool {
        self.expiry.is_some_and(|at| now >= at)
    }
}

/// When a reservation expires: `spec.expires` if set; else its creation
/// time plus `spec.ttl` (default [`DEFAULT_TTL`]; `0` disables expiry);
/// `None` also when it has no creation time yet (the API server always
/// sets one).
pub fn expiry(r: &Reservation) -> Result<Option<Timestamp>, ReservationError> {
    if let Some(at) = &r.spec.expires {
        return Ok(Some(at.0));
    }
    let ttl = match r.spec.ttl.as_deref() {
        None => DEFAULT_TTL,
        Some(text) => parse_go_duration(text).ok_or_else(|| ReservationError::Invalid {
            reservation: r.metadata.name.clone().unwrap_or_default(),
            field: "spec.ttl".into(),
            message: format!("{text:?} is not a duration"),
        })?,
    };
    if ttl.is_zero() {
        return Ok(None);
    }
    let created = r.metadata.creation_timestamp.as_ref().map(|t| t.0);
    Ok(created.and_then(|c| c.checked_add(ttl).ok()))
}

#[cfg(test)]
mod tests {
    use super::super::testing::reservation;
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    #[test]
    fn expiry_follows_expires_then_ttl() {
        let cases: [(&str, Option<Timestamp>); 5] = [
            // Created at t(0); default TTL a day.
            ("", Some(t(86_400))),
            ("ttl: 1h", Some(t(3_600))),
            ("ttl: 1h30m", Some(t(5_400))),
            ("ttl: \"0\"", None),
            // `expires` wins over ttl.
            ("ttl: 1h\n  expires: \"2027-01-15T08:00:00Z\"", "2027-01-15T08:00:00Z".parse().ok()),
        ];
        for (extra, want) in cases {
            let r = reservation("r", "cpu: 1", extra);
            assert_eq!(expiry(&r).unwrap(), want, "{extra}");
        }
        let r = reservation("r", "cpu: 1", "ttl: soon");
        assert!(
            matches!(expiry(&r), Err(ReservationError::Invalid { field, .. }) if field == "spec.ttl")
        );
    }

    #[test]
    fn unimplemented_fields_are_refused_naming_them() {
        let field = |extra: &str| match ReservationSpec::read(&reservation("r", "cpu: 1", extra)) {
            Err(ReservationError::Invalid { field, .. }) => field,
            Err(other) => other.to_string(),
            Ok(_) => "accepted".into(),
        };
        assert_eq!(field(""), "accepted");
        assert_eq!(field("preAllocation: true"), "spec.preAllocation");
        assert_eq!(field("preAllocation: false"), "accepted");
        assert_eq!(field("taints: [{key: a, effect: NoSchedule}]"), "spec.taints");
        assert_eq!(field("allocatePolicy: Greedy"), "spec.allocatePolicy");
        assert_eq!(field("allocatePolicy: Restricted"), "accepted");
    }

    #[test]
    fn defaults_and_order() {
        let spec = ReservationSpec::read(&reservation("r", "cpu: 2", "")).unwrap();
        assert!(spec.allocate_once && !spec.restricted && !spec.terminal && spec.order.is_none());
        assert_eq!(spec.allocatable.cpu(), 2000);
        let mut r = reservation("r", "cpu: 2", "allocateOnce: false");
        r.metadata.labels = Some([(label::RESERVATION_ORDER.to_string(), "7".to_string())].into());
        let spec = ReservationSpec::read(&r).unwrap();
        assert_eq!((spec.allocate_once, spec.order), (false, Some(7)));
        r.metadata.labels = Some([(label::RESERVATION_ORDER.to_string(), "x".into())].into());
        assert!(ReservationSpec::read(&r).is_err());
    }
}
