//! Reading and writing a PodMigrationJob: its phase, times, pod and
//! reservation, conditions, and the names kolo gives new jobs.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kolo_api::crd::parse_go_duration;
use kolo_api::crd::pod_migration_job::{
    PMJ_MODE_EVICT_DIRECTLY, PMJ_PHASE_PENDING, PMJ_PHASE_RUNNING, PodMigrationJob,
    PodMigrationJobCondition, PodMigrationJobSpec, PodMigrationJobStatus,
};
use kolo_core::HasMeta;
use kolo_core::clock::Timestamp;
use kolo_scheduler::framework::PodInfo;
use kube::ResourceExt;

/// Condition `ReservationCreated`.
pub const COND_RESERVATION_CREATED: &str = "ReservationCreated";
/// Condition `ReservationScheduled`.
pub const COND_RESERVATION_SCHEDULED: &str = "ReservationScheduled";
/// Condition `Eviction`.
pub const COND_EVICTION: &str = "Eviction";
/// Condition `PodScheduled`.
pub const COND_POD_SCHEDULED: &str = "PodScheduled";
/// Condition `PodBoundReservation`.
pub const COND_POD_BOUND_RESERVATION: &str = "PodBoundReservation";
/// Condition `BoundPodReady`.
pub const COND_BOUND_POD_READY: &str = "BoundPodReady";

/// Reason `Timeout`.
pub const REASON_TIMEOUT: &str = "Timeout";
/// Reason `FailedCreateReservation`.
pub const REASON_FAILED_CREATE_RESERVATION: &str = "FailedCreateReservation";
/// Reason `ReservationExpired`.
pub const REASON_RESERVATION_EXPIRED: &str = "ReservationExpired";
/// Reason `Unschedulable`.
pub const REASON_UNSCHEDULABLE: &str = "Unschedulable";
/// Reason `ForbiddenMigratePod`.
pub const REASON_FORBIDDEN: &str = "ForbiddenMigratePod";
/// Reason `MissingPod`.
pub const REASON_MISSING_POD: &str = "MissingPod";
/// Reason `MissingReservation`.
pub const REASON_MISSING_RESERVATION: &str = "MissingReservation";
/// Reason `Evicting`.
pub const REASON_EVICTING: &str = "Evicting";
/// Reason `FailedEvict`.
pub const REASON_FAILED_EVICT: &str = "FailedEvict";
/// Reason `EvictComplete`.
pub const REASON_EVICT_COMPLETE: &str = "EvictComplete";
/// Reason `WaitForPodBindReservation`.
pub const REASON_WAIT_BIND: &str = "WaitForPodBindReservation";
/// Reason `WaitForBoundPodReady`.
pub const REASON_WAIT_READY: &str = "WaitForBoundPodReady";

/// The name kolo gives the job migrating `pod` at `now`:
/// `pmj-<pod uid>-<unix ms>` (the UID lower-cased, anything outside
/// `[a-z0-9-]` dropped, at most 63 characters; a pod without a UID uses
/// a 16-hex-digit FNV hash of its key instead). At most 88 characters,
/// starts with a letter and ends with a digit: a valid DNS subdomain.
/// Deterministic (no randomness in pure code); unique because a pod gets
/// a second job only once its first is over, in a later millisecond.
pub fn job_name(pod: &PodInfo, now: Timestamp) -> String {
    let uid: String = pod
        .view()
        .uid()
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .take(63)
        .collect();
    let id = if uid.trim_matches('-').is_empty() {
        format!("{:016x}", fnv1a(pod.key().as_bytes()))
    } else {
        uid.trim_matches('-').to_string()
    };
    format!("pmj-{id}-{}", now.as_millisecond().max(0))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
}

/// `status.phase`, `Pending` when unset.
pub fn phase(job: &PodMigrationJob) -> &str {
    job.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .filter(|p| !p.is_empty())
        .unwrap_or(PMJ_PHASE_PENDING)
}

/// Whether the job is still to run or running (Pending or Running).
pub fn is_active(job: &PodMigrationJob) -> bool {
    matches!(phase(job), PMJ_PHASE_PENDING | PMJ_PHASE_RUNNING)
}

/// Whether `spec.mode` is `EvictDirectly` (anything else is
/// ReservationFirst, the default).
pub fn evicts_directly(job: &PodMigrationJob) -> bool {
    job.spec.mode.as_deref() == Some(PMJ_MODE_EVICT_DIRECTLY)
}

/// `metadata.creationTimestamp`.
pub fn created(job: &PodMigrationJob) -> Option<Timestamp> {
    job.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

/// `spec.ttl`, `None` when unset, zero or unreadable.
pub fn ttl(job: &PodMigrationJob) -> Option<Duration> {
    job.spec.ttl.as_deref().and_then(parse_go_duration).filter(|d| !d.is_zero())
}

/// `spec.podRef` as (namespace, name, uid); `None` without a name.
pub fn pod_ref(job: &PodMigrationJob) -> Option<(&str, &str, &str)> {
    let r = job.spec.pod_ref.as_ref()?;
    let name = r.name.as_deref().filter(|n| !n.is_empty())?;
    Some((r.namespace.as_deref().unwrap_or(""), name, r.uid.as_deref().unwrap_or("")))
}

/// The name of the reservation `spec.reservationOptions.reservationRef`
/// names.
pub fn reservation_ref(job: &PodMigrationJob) -> Option<&str> {
    spec_reservation(&job.spec)
}

/// The Reservation a job spec records (what a `SetJobSpec` action writes
/// when the controller has created the job's Reservation).
pub fn spec_reservation(spec: &PodMigrationJobSpec) -> Option<&str> {
    spec.reservation_options
        .as_ref()?
        .reservation_ref
        .as_ref()?
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
}

/// The job's name.
pub fn name(job: &PodMigrationJob) -> String {
    job.name_any()
}

/// Condition `kind` of `status`.
pub fn condition<'s>(
    status: &'s PodMigrationJobStatus,
    kind: &str,
) -> Option<&'s PodMigrationJobCondition> {
    status.conditions.iter().flatten().find(|c| c.condition_type == kind)
}

/// Whether condition `kind` is `True`.
pub fn condition_true(status: &PodMigrationJobStatus, kind: &str) -> bool {
    condition(status, kind).is_some_and(|c| c.status == "True")
}

/// Sets condition `kind` (Koordinator's `updateCondition`): the transition
/// time is `now` unless the status is unchanged; `status.status`,
/// `reason` and `message` follow the condition. Returns whether anything
/// changed.
pub fn set_condition(
    status: &mut PodMigrationJobStatus,
    kind: &str,
    value: bool,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    let text = if value { "True" } else { "False" };
    let reason = (!reason.is_empty()).then(|| reason.to_string());
    let message = (!message.is_empty()).then(|| message.to_string());
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let changed = match conditions.iter_mut().find(|c| c.condition_type == kind) {
        Some(c) if c.status == text && c.reason == reason && c.message == message => false,
        Some(c) => {
            if c.status != text {
                c.last_transition_time = Some(Time(now));
            }
            c.status = text.into();
            c.reason = reason.clone();
            c.message = message.clone();
            true
        }
        None => {
            conditions.push(PodMigrationJobCondition {
                condition_type: kind.into(),
                status: text.into(),
                last_probe_time: None,
                last_transition_time: Some(Time(now)),
                reason: reason.clone(),
                message: message.clone(),
            });
            true
        }
    };
    if changed {
        status.status = Some(kind.into());
        status.reason = reason;
        status.message = message;
    }
    changed
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kolo_core::pod::PodView;

    use super::*;

    #[test]
    fn job_names_are_bounded_valid_and_deterministic() {
        let at = Timestamp::from_millisecond(1_700_000_000_123).unwrap();
        let with_uid = PodInfo::from_parts(
            Arc::new(Default::default()),
            PodView::new("ns", "p").with_uid("0F3A-77_b!c"),
        );
        assert_eq!(job_name(&with_uid, at), "pmj-0f3a-77bc-1700000000123");
        let long = PodInfo::from_parts(
            Arc::new(Default::default()),
            PodView::new("ns", "p").with_uid(&"a".repeat(300)),
        );
        let name = job_name(&long, at);
        assert_eq!(name.len(), 4 + 63 + 1 + 13);
        let bare = PodInfo::from_parts(Arc::new(Default::default()), PodView::new("ns", "p"));
        let name = job_name(&bare, at);
        assert_eq!(name, job_name(&bare, at));
        assert!(name.starts_with("pmj-") && name.len() == 4 + 16 + 1 + 13, "{name}");
        assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
    }

    #[test]
    fn conditions_keep_their_transition_time_while_unchanged() {
        let t = |s| Timestamp::from_second(s).unwrap();
        let mut status = PodMigrationJobStatus::default();
        assert!(set_condition(&mut status, COND_EVICTION, false, REASON_EVICTING, "m", t(1)));
        assert!(!set_condition(&mut status, COND_EVICTION, false, REASON_EVICTING, "m", t(2)));
        assert!(set_condition(&mut status, COND_EVICTION, false, REASON_FAILED_EVICT, "x", t(3)));
        let c = condition(&status, COND_EVICTION).unwrap();
        assert_eq!(c.last_transition_time, Some(Time(t(1))), "status stayed False");
        assert!(set_condition(&mut status, COND_EVICTION, true, REASON_EVICT_COMPLETE, "", t(4)));
        let c = condition(&status, COND_EVICTION).unwrap();
        assert_eq!((c.last_transition_time.clone(), c.message.clone()), (Some(Time(t(4))), None));
        assert_eq!(status.status.as_deref(), Some(COND_EVICTION));
        assert_eq!(status.reason.as_deref(), Some(REASON_EVICT_COMPLETE));
        assert!(condition_true(&status, COND_EVICTION));
    }
}
