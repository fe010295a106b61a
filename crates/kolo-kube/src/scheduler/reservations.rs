//! Reservations in the scheduling thread (the driver's side of the
//! Reservation plugin's contract, `kolo_scheduler::plugins::reservation`):
//!
//! * every watched Reservation is fed to the scheduler with its reserve
//!   pod ([`feed::apply_reservation`]), and again once it expires;
//! * its status is recomputed ([`status::next_status`]) whenever what it
//!   depends on changes — the object, its owner pods (pods annotated
//!   `reservation-allocated` with its UID, not finished), the scheduler's
//!   "no node" message for its reserve pod, its expiry — and written when
//!   it differs from the object's (probe times aside). The written object
//!   comes back through the watch and is fed again.
//!
//! The bind itself (the reserve pod placed: `status.nodeName`) is written
//! by the binder ([`super::binder`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kolo_api::crd::{Reservation, ReservationStatus};
use kolo_api::names::annotation;
use kolo_core::clock::Timestamp;
use kolo_core::pod::PodView;
use kolo_scheduler::plugins::reservation::feed::{apply_reservation, remove_reservation};
use kolo_scheduler::plugins::reservation::spec::expiry;
use kolo_scheduler::plugins::reservation::status::{Observed, Owner, next_status};
use kolo_scheduler::scheduler::Scheduler;
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};

use crate::error::KubeError;

/// What a pod's `reservation-allocated` annotation names.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Allocated {
    /// The reservation's name.
    pub name: String,
    /// Its UID.
    #[serde(default)]
    pub uid: String,
}

/// The reservation a pod uses, if it is an owner: annotated
/// `reservation-allocated` and not finished. An unreadable annotation
/// counts as none (the scheduler writes it; a hand-written bad one must
/// not stop the controller).
pub fn allocated_to(pod: &Pod) -> Option<Allocated> {
    let text = pod.annotations().get(annotation::RESERVATION_ALLOCATED)?;
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// Whether a status differs from another in anything but the conditions'
/// probe times (which `next_status` sets to "now" on every computation).
pub fn status_changed(old: Option<&ReservationStatus>, new: &ReservationStatus) -> bool {
    let strip = |s: &ReservationStatus| {
        let mut s = s.clone();
        for c in s.conditions.iter_mut().flatten() {
            c.last_probe_time = None;
        }
        s
    };
    old.map(strip) != Some(strip(new))
}

/// A status to write: the reservation as last seen (its
/// `resourceVersion`, so a write over a newer object — the binder's — is
/// refused with a conflict) with the new status.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusWrite {
    /// The reservation's name.
    pub name: String,
    /// The object to write through the status subresource.
    pub object: Reservation,
}

/// The reservations the scheduling thread knows, and their owners.
#[derive(Debug, Default)]
pub struct Reservations {
    /// By name, as last seen.
    objects: HashMap<String, Arc<Reservation>>,
    /// Owner pod key → (reservation name, owner).
    owners: HashMap<String, (String, Owner)>,
    /// Reservation name → the scheduler's last "no node" message.
    unschedulable: HashMap<String, String>,
    /// Reservation name → the status last written, until the watch shows
    /// it (so it is not written twice meanwhile).
    written: HashMap<String, ReservationStatus>,
    /// Expiry time → reservations, for [`Reservations::expire`].
    expiries: BTreeSet<(Timestamp, String)>,
}

impl Reservations {
    /// No reservations yet.
    pub fn new() -> Reservations {
        Reservations::default()
    }

    /// A reservation was created or changed: fed to the scheduler, and its
    /// status recomputed.
    pub fn apply(
        &mut self,
        r: Reservation,
        scheduler: &mut Scheduler,
        now: Timestamp,
    ) -> Option<StatusWrite> {
        let name = r.name_any();
        let r = Arc::new(r);
        if let Err(e) = apply_reservation(scheduler, r.clone(), now) {
            tracing::warn!(reservation = %name, error = %e, "reservation refused; keeping its last good state");
        }
        if let Ok(Some(at)) = expiry(&r) {
            self.expiries.insert((at, name.clone()));
        }
        if self.written.get(&name).is_some_and(|w| !status_changed(r.status.as_ref(), w)) {
            self.written.remove(&name);
        }
        self.objects.insert(name.clone(), r);
        self.plan(&name, now)
    }

    /// A reservation was deleted.
    pub fn remove(&mut self, name: &str, scheduler: &mut Scheduler, now: Timestamp) {
        remove_reservation(scheduler, name, now);
        self.objects.remove(name);
        self.unschedulable.remove(name);
        self.written.remove(name);
        self.expiries.retain(|(_, n)| n != name);
    }

    /// A pod changed: if it started or stopped owning a reservation, that
    /// reservation's status is recomputed.
    pub fn pod_changed(&mut self, key: &str, pod: &Pod, now: Timestamp) -> Vec<StatusWrite> {
        let before = self.owners.remove(key).map(|(name, _)| name);
        let after = allocated_to(pod).and_then(|a| {
            let owner = owner(pod)?;
            self.objects
                .get(&a.name)
                .filter(|r| a.uid.is_empty() || r.uid().as_deref() == Some(a.uid.as_str()))?;
            self.owners.insert(key.to_string(), (a.name.clone(), owner));
            Some(a.name)
        });
        let touched: BTreeSet<String> = before.into_iter().chain(after).collect();
        touched.iter().filter_map(|name| self.plan(name, now)).collect()
    }

    /// A pod was deleted.
    pub fn pod_removed(&mut self, key: &str, now: Timestamp) -> Option<StatusWrite> {
        let (name, _) = self.owners.remove(key)?;
        self.plan(&name, now)
    }

    /// The scheduler found no node for reservation `name`'s reserve pod.
    pub fn unschedulable(
        &mut self,
        name: &str,
        message: &str,
        now: Timestamp,
    ) -> Option<StatusWrite> {
        self.unschedulable.insert(name.to_string(), message.to_string());
        self.plan(name, now)
    }

    /// The reservations whose expiry has come: fed again (their reserve pod
    /// is forgotten) and their status recomputed (`Failed`).
    pub fn expire(&mut self, scheduler: &mut Scheduler, now: Timestamp) -> Vec<StatusWrite> {
        let mut due = Vec::new();
        while let Some(first) = self.expiries.first().cloned() {
            if first.0 > now {
                break;
            }
            self.expiries.remove(&first);
            due.push(first.1);
        }
        due.iter()
            .filter_map(|name| {
                let r = self.objects.get(name)?.clone();
                if let Err(e) = apply_reservation(scheduler, r, now) {
                    tracing::warn!(reservation = %name, error = %e, "reservation refused");
                }
                self.plan(name, now)
            })
            .collect()
    }

    /// The status to write for `name`, if it changed.
    fn plan(&mut self, name: &str, now: Timestamp) -> Option<StatusWrite> {
        let r = self.objects.get(name)?;
        let owners: Vec<Owner> =
            self.owners.values().filter(|(n, _)| n == name).map(|(_, o)| o.clone()).collect();
        let observed = Observed {
            node: None,
            owners: &owners,
            unschedulable: self.unschedulable.get(name).map(String::as_str),
        };
        let status = match next_status(r, &observed, now) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(reservation = %name, error = %e, "no status computed");
                return None;
            }
        };
        let current = self.written.get(name).or(r.status.as_ref());
        if !status_changed(current, &status) {
            return None;
        }
        self.written.insert(name.to_string(), status.clone());
        let mut object = (**r).clone();
        object.status = Some(status);
        Some(StatusWrite { name: name.to_string(), object })
    }

    /// Forgets a write that failed, so the next change retries it.
    pub fn write_failed(&mut self, name: &str) {
        self.written.remove(name);
    }
}

/// A pod as a reservation owner: its reference and effective requests.
fn owner(pod: &Pod) -> Option<Owner> {
    let view = PodView::from_pod(pod).ok()?;
    Some(Owner {
        reference: ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.namespace(),
            name: Some(pod.name_any()),
            uid: pod.uid(),
            ..ObjectReference::default()
        },
        requests: *view.requests(),
    })
}

/// Writes a reservation's status (the status subresource, with the
/// object's `resourceVersion`).
pub async fn write_status(client: Client, write: &StatusWrite) -> Result<(), KubeError> {
    let api: Api<Reservation> = Api::all(client);
    api.replace_status(&write.name, &PostParams::default(), &write.object)
        .await
        .map(drop)
        .map_err(|e| KubeError::api("update status of", format!("Reservation/{}", write.name), e))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kolo_api::crd::ReservationCondition;
    use kube::api::ObjectMeta;

    use super::*;

    fn pod(annotation: Option<&str>, phase: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                annotations: annotation.map(|a| {
                    [(annotation::RESERVATION_ALLOCATED.to_string(), a.to_string())].into()
                }),
                ..ObjectMeta::default()
            },
            status: Some(PodStatus { phase: Some(phase.into()), ..PodStatus::default() }),
            ..Pod::default()
        }
    }

    #[test]
    fn owners_are_annotated_unfinished_pods() {
        let annotated = Some(r#"{"name":"r1","uid":"u1"}"#);
        let want = Some(Allocated { name: "r1".into(), uid: "u1".into() });
        // (annotation, phase, owner of)
        let table = [
            (annotated, "Pending", want.clone()),
            (annotated, "Running", want),
            (annotated, "Succeeded", None),
            (annotated, "Failed", None),
            (None, "Running", None),
            (Some("not json"), "Running", None),
            (
                Some(r#"{"name":"r2"}"#),
                "Running",
                Some(Allocated { name: "r2".into(), uid: String::new() }),
            ),
        ];
        for (i, (a, phase, want)) in table.into_iter().enumerate() {
            assert_eq!(allocated_to(&pod(a, phase)), want, "row {i}");
        }
    }

    fn status(phase: &str, probe: i64, transition: i64) -> ReservationStatus {
        let t = |s: i64| Some(Time(Timestamp::from_second(s).unwrap()));
        ReservationStatus {
            phase: Some(phase.into()),
            conditions: Some(vec![ReservationCondition {
                condition_type: Some("Ready".into()),
                status: Some("True".into()),
                last_probe_time: t(probe),
                last_transition_time: t(transition),
                ..ReservationCondition::default()
            }]),
            ..ReservationStatus::default()
        }
    }

    #[test]
    fn only_probe_times_do_not_count_as_a_change() {
        let old = status("Available", 10, 5);
        assert!(!status_changed(Some(&old), &status("Available", 99, 5)));
        assert!(status_changed(Some(&old), &status("Available", 10, 6)));
        assert!(status_changed(Some(&old), &status("Succeeded", 10, 5)));
        assert!(status_changed(None, &old));
    }
}
