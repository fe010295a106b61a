//! The state machine of one job (spec §10.4, Koordinator's `doMigrate`).
//!
//! | state read | what the job becomes (actions) |
//! |---|---|
//! | paused, over (Succeeded/Failed/Aborted), or another controller's | nothing |
//! | `ttl` elapsed since creation | Failed/`Timeout` (DeleteReservation, Event) |
//! | Pending, not passed arbitration | nothing |
//! | Pending, passed; pod missing | Failed/`MissingPod` |
//! | Pending, passed | Running (podRef UID filled: SetJobSpec) and on |
//! | EvictDirectly | evict (below), then Succeeded "Pod … has been evicted" |
//! | ReservationFirst, no reservation | CreateReservation + SetJobSpec (reservationRef); when the pod gives no owner, condition ReservationCreated=False/`FailedCreateReservation` |
//! | the driver reported the creation failed | ReservationCreated=False, Failed/`FailedCreateReservation` |
//! | reservation missing | Failed/`MissingReservation` |
//! | reservation pending | waits; ReservationScheduled=False/`Unschedulable` when the scheduler found no node |
//! | reservation expired | Failed/`ReservationExpired` |
//! | reservation failed otherwise | Failed/`Unschedulable` |
//! | reservation scheduled | ReservationScheduled=True, `nodeName` |
//! | pending pod migrated (owner: the pod) | waits for PodScheduled, then Succeeded "Assign Pod …" |
//! | reservation on the pod's node | Failed/`ForbiddenMigratePod` |
//! | evict: no token | waits |
//! | evict | Evict, Eviction=False/`Evicting` |
//! | eviction refused (reported) | Eviction=False/`FailedEvict`, Failed/`FailedEvict` |
//! | pod gone after eviction | Eviction=True/`EvictComplete` |
//! | pod gone before eviction | Failed/`MissingPod` |
//! | reservation taken by another pod before eviction | Failed/`ForbiddenMigratePod` |
//! | no pod bound to the reservation | PodBoundReservation=False/`WaitForPodBindReservation` |
//! | bound pod not Ready | BoundPodReady=False/`WaitForBoundPodReady` |
//! | bound pod Ready | Succeeded, status `Complete`, podRef the new pod, "Bind Pod … in Reservation …" |
//!
//! Waiting is returning no action: the next pass looks again.

use k8s_openapi::api::core::v1::ObjectReference;
use kolo_api::crd::pod_migration_job::{
    PMJ_PHASE_FAILED, PMJ_PHASE_PENDING, PMJ_PHASE_RUNNING, PMJ_PHASE_SUCCEEDED,
    PodMigrateReservationOptions, PodMigrationJobSpec, PodMigrationJobStatus,
};
use kolo_api::crd::reservation::ReservationTemplateSpec;
use kolo_api::crd::{PodMigrationJob, Reservation};
use kolo_api::names::annotation::JOB_CREATED_BY;
use kolo_core::clock::Timestamp;
use kolo_core::{HasMeta, PodRef};
use kolo_scheduler::framework::PodInfo;
use kube::ResourceExt;

use super::MigrationController;
use super::arbitration::pod_of;
use super::job::*;
use super::limits::pod_available;
use super::reservation::{
    ReservationState, bound_pod, migrates_pending_pod, reservation_from_pod, state,
};
use crate::cluster::Cluster;
use crate::plan::{Action, Event, ObjectKey};

/// Whether `job` carries another controller's `job-created-by`.
pub fn created_by_other(job: &PodMigrationJob, identity: &str) -> bool {
    job.annotations().get(JOB_CREATED_BY).is_some_and(|by| by != identity)
}

/// An Event about `job`.
pub fn job_event(job: &PodMigrationJob, warning: bool, reason: &str, message: String) -> Action {
    Action::Event(Event {
        regarding: ObjectKey {
            kind: "PodMigrationJob",
            namespace: String::new(),
            name: job.name_any(),
            uid: job.uid().unwrap_or_default(),
        },
        warning,
        reason: reason.into(),
        message,
    })
}

/// Whether a step finished or the job must wait (or is over).
enum Step {
    Done,
    Wait,
}

/// One job's pass: its copies of spec and status, and what to ask for.
struct Work<'a> {
    job: &'a PodMigrationJob,
    name: String,
    spec: PodMigrationJobSpec,
    status: PodMigrationJobStatus,
    writes: Vec<Action>,
    events: Vec<Action>,
    cluster: &'a Cluster,
    now: Timestamp,
}

impl<'a> Work<'a> {
    fn event(&mut self, warning: bool, reason: &str, message: String) {
        self.events.push(job_event(self.job, warning, reason, message));
    }

    fn fail(&mut self, reason: &str, message: String) -> Step {
        self.status.phase = Some(PMJ_PHASE_FAILED.into());
        self.status.reason = Some(reason.into());
        self.status.message = Some(message.clone());
        self.event(true, reason, message);
        Step::Wait
    }

    fn condition(&mut self, kind: &str, value: bool, reason: &str, message: &str) -> bool {
        set_condition(&mut self.status, kind, value, reason, message, self.now)
    }

    fn pod_key(&self) -> String {
        let (ns, name, _) = pod_ref(self.job).unwrap_or_default();
        format!("{ns}/{name}")
    }

    fn pod(&self) -> Option<&'a PodInfo> {
        pod_of(self.cluster, self.job)
    }

    fn finish(mut self) -> Vec<Action> {
        let mut out = std::mem::take(&mut self.writes);
        if self.spec != self.job.spec {
            out.push(Action::SetJobSpec { job: self.name.clone(), spec: Box::new(self.spec) });
        }
        if self.status != self.job.status.clone().unwrap_or_default() {
            out.push(Action::SetJobStatus {
                job: self.name.clone(),
                status: Box::new(self.status),
            });
        }
        out.extend(self.events);
        out
    }
}

/// Advances `job` one pass (see the module documentation); `passed`:
/// arbitration let it start.
pub fn reconcile_job(
    ctl: &mut MigrationController,
    cluster: &Cluster,
    now: Timestamp,
    job: &PodMigrationJob,
    passed: bool,
) -> Vec<Action> {
    if job.spec.paused == Some(true) || !is_active(job) || created_by_other(job, &ctl.identity) {
        return Vec::new();
    }
    let mut w = Work {
        job,
        name: name(job),
        spec: job.spec.clone(),
        status: job.status.clone().unwrap_or_default(),
        writes: Vec::new(),
        events: Vec::new(),
        cluster,
        now,
    };
    if timed_out(ctl, &mut w) {
        return w.finish();
    }
    if phase(job) == PMJ_PHASE_PENDING {
        if !passed {
            return Vec::new();
        }
        if let Step::Wait = start(&mut w) {
            return w.finish();
        }
    }
    if evicts_directly(job) {
        if let Step::Done = evict(ctl, &mut w, None) {
            w.status.phase = Some(PMJ_PHASE_SUCCEEDED.into());
            w.status.status = Some("Complete".into());
            w.status.reason = None;
            w.status.message = Some(format!("Pod {:?} has been evicted", w.pod_key()));
        }
        return w.finish();
    }
    reservation_first(ctl, &mut w);
    w.finish()
}

/// Step 2: the job's TTL has run out since its creation.
fn timed_out(ctl: &mut MigrationController, w: &mut Work<'_>) -> bool {
    let (Some(ttl), Some(created)) = (ttl(w.job), created(w.job)) else { return false };
    let elapsed = w.now.as_nanosecond() - created.as_nanosecond();
    if elapsed < i128::try_from(ttl.as_nanos()).unwrap_or(i128::MAX) {
        return false;
    }
    let remembered = ctl.memory.reservations.get(&w.name).cloned();
    if let Some(r) = reservation_ref(w.job).map(str::to_string).or(remembered) {
        w.writes.push(Action::DeleteReservation { name: r });
    }
    w.fail(REASON_TIMEOUT, "Abort job caused by timeout".into());
    true
}

/// Step 3: a Pending job that passed arbitration starts (its pod's UID
/// recorded).
fn start(w: &mut Work<'_>) -> Step {
    let Some((_, _, uid)) = pod_ref(w.job) else {
        return w.fail("InvalidPodRef", "Abort job caused by invalid podRef".into());
    };
    let Some(pod) = w.pod() else {
        return w.fail(
            REASON_MISSING_POD,
            format!("Abort job caused by missing Pod {:?}", w.pod_key()),
        );
    };
    if uid.is_empty()
        && let Some(r) = w.spec.pod_ref.as_mut()
    {
        r.uid = Some(pod.view().uid().to_string());
    }
    w.status.phase = Some(PMJ_PHASE_RUNNING.into());
    Step::Done
}

/// Steps 6–12 for a ReservationFirst job.
fn reservation_first(ctl: &mut MigrationController, w: &mut Work<'_>) {
    let remembered = ctl.memory.reservations.get(&w.name).cloned();
    let Some(r_name) = reservation_ref(w.job).map(str::to_string).or(remembered.clone()) else {
        create_reservation(ctl, w);
        return;
    };
    if let Some(e) = ctl.memory.failed_reservations.remove(&w.name) {
        let message = format!("Failed to create Reservation caused by {e}");
        w.condition(COND_RESERVATION_CREATED, false, REASON_FAILED_CREATE_RESERVATION, &message);
        w.fail(REASON_FAILED_CREATE_RESERVATION, message);
        return;
    }
    w.condition(COND_RESERVATION_CREATED, true, "", "");
    let Some(r) = w.cluster.reservation(&r_name) else {
        if remembered.is_none() {
            w.fail(
                REASON_MISSING_RESERVATION,
                format!("Abort job caused by missing Reservation {r_name:?}"),
            );
        }
        return;
    };
    let st = state(r);
    if let ReservationState::Pending { unschedulable: Some(message) } = &st
        && !condition_true(&w.status, COND_RESERVATION_SCHEDULED)
        && w.condition(COND_RESERVATION_SCHEDULED, false, REASON_UNSCHEDULABLE, message)
    {
        w.event(true, REASON_UNSCHEDULABLE, message.clone());
    }
    let node = match st {
        ReservationState::Pending { .. } => return,
        ReservationState::Expired => {
            w.fail(REASON_RESERVATION_EXPIRED, "Reservation expired".into());
            return;
        }
        ReservationState::Unschedulable { message } => {
            w.fail(REASON_UNSCHEDULABLE, message);
            return;
        }
        ReservationState::Scheduled { node, .. } => node,
    };
    if w.status.node_name.is_none() {
        w.status.node_name = Some(node.clone());
        w.condition(COND_RESERVATION_SCHEDULED, true, "", "");
        w.event(
            false,
            COND_RESERVATION_SCHEDULED,
            format!("Assigned Reservation {r_name:?} to node {node:?}"),
        );
    }
    if migrates_pending_pod(r) {
        wait_for_pending_pod(w, r);
        return;
    }
    if w.pod().is_some_and(|p| p.view().node_name() == Some(node.as_str())) {
        w.fail(
            REASON_FORBIDDEN,
            format!("Scheduler assigned the Reservation {r_name:?} on the same node as the Pod"),
        );
        return;
    }
    if let Step::Done = evict(ctl, w, Some(r)) {
        wait_for_bound_pod(w, r);
    }
}

/// Step 6: creates the reservation from the pod.
fn create_reservation(ctl: &mut MigrationController, w: &mut Work<'_>) {
    let Some(pod) = w.pod() else {
        w.fail(REASON_MISSING_POD, format!("Abort job caused by missing Pod {:?}", w.pod_key()));
        return;
    };
    let template = w.spec.reservation_options.as_ref().and_then(|o| o.template.as_ref());
    match reservation_from_pod(&w.name, pod, w.spec.ttl.as_deref(), template, w.now) {
        Err(e) => {
            let message = format!("Failed to create Reservation caused by {e}");
            if w.condition(
                COND_RESERVATION_CREATED,
                false,
                REASON_FAILED_CREATE_RESERVATION,
                &message,
            ) {
                w.event(true, REASON_FAILED_CREATE_RESERVATION, message);
            }
        }
        Ok(r) => {
            let r_name = r.name_any();
            let options = w
                .spec
                .reservation_options
                .get_or_insert_with(PodMigrateReservationOptions::default);
            options.reservation_ref = Some(ObjectReference {
                api_version: Some("scheduling.koordinator.sh/v1alpha1".into()),
                kind: Some("Reservation".into()),
                name: Some(r_name.clone()),
                ..Default::default()
            });
            options.template = Some(ReservationTemplateSpec {
                metadata: Some(r.metadata.clone()),
                spec: Some(r.spec.clone()),
            });
            ctl.memory.reservations.insert(w.name.clone(), r_name.clone());
            w.writes.push(Action::CreateReservation(Box::new(r)));
            w.event(
                false,
                COND_RESERVATION_CREATED,
                format!("Successfully create Reservation {r_name:?}"),
            );
        }
    }
}

/// Step 9: the migrated pod was pending; done once it is scheduled.
fn wait_for_pending_pod(w: &mut Work<'_>, r: &Reservation) {
    let Some(pod) = w.pod() else {
        w.fail(REASON_MISSING_POD, format!("Abort job caused by missing Pod {:?}", w.pod_key()));
        return;
    };
    let scheduled = pod.view().node_name().is_some();
    if !scheduled {
        if let ReservationState::Scheduled { succeeded: true, .. } = state(r)
            && bound_pod(r, w.cluster).and_then(|b| b.uid) != Some(pod.view().uid().to_string())
        {
            w.fail(REASON_FORBIDDEN, "Reservation is already bound by another Pod".into());
            return;
        }
        w.condition(COND_POD_SCHEDULED, false, REASON_UNSCHEDULABLE, "");
        return;
    }
    let node = pod.view().node_name().unwrap_or_default().to_string();
    w.condition(COND_POD_SCHEDULED, true, "", "");
    complete(w, format!("Assign Pod {:?} to node {node:?}", w.pod_key()));
}

/// Steps 10: evicts the pod, once; `Done` when it is gone.
fn evict(ctl: &mut MigrationController, w: &mut Work<'_>, r: Option<&Reservation>) -> Step {
    if condition_true(&w.status, COND_EVICTION) {
        return Step::Done;
    }
    let key = w.pod_key();
    let evicting = ctl.memory.evicted.contains(&w.name)
        || condition(&w.status, COND_EVICTION)
            .is_some_and(|c| c.reason.as_deref() == Some(REASON_EVICTING));
    let Some(pod) = w.pod() else {
        if !evicting && w.status.status.as_deref() != Some(COND_EVICTION) {
            return w.fail(REASON_MISSING_POD, format!("Abort job caused by missing Pod {key:?}"));
        }
        w.condition(COND_EVICTION, true, REASON_EVICT_COMPLETE, "");
        w.event(false, REASON_EVICT_COMPLETE, format!("Pod {key:?} has been evicted"));
        return Step::Done;
    };
    if let Some(message) = ctl.memory.refused.remove(&w.name) {
        w.condition(COND_EVICTION, false, REASON_FAILED_EVICT, &message);
        return w
            .fail(REASON_FAILED_EVICT, format!("Failed evict Pod {key:?} caused by {message}"));
    }
    if evicting {
        return Step::Wait;
    }
    if let Some(r) = r
        && let ReservationState::Scheduled { succeeded: true, .. } = state(r)
    {
        return w.fail(REASON_FORBIDDEN, "Reservation is already bound by another Pod".into());
    }
    if !ctl.bucket.try_take(w.now) {
        return Step::Wait;
    }
    let view = pod.view();
    w.writes.push(Action::Evict {
        pod: PodRef::new(view.namespace(), view.name(), view.uid()),
        job: Some(w.name.clone()),
        reason: w
            .job
            .annotations()
            .get(kolo_api::names::annotation::EVICT_REASON)
            .cloned()
            .unwrap_or_else(|| "migration".into()),
    });
    ctl.memory.evicted.insert(w.name.clone());
    let message = format!("Try to evict Pod {key:?}");
    w.condition(COND_EVICTION, false, REASON_EVICTING, &message);
    w.event(false, REASON_EVICTING, message);
    Step::Wait
}

/// Steps 11–12: waits for the replacement pod to take the reservation and
/// be Ready.
fn wait_for_bound_pod(w: &mut Work<'_>, r: &Reservation) {
    let Some(bound) = bound_pod(r, w.cluster) else {
        w.condition(COND_POD_BOUND_RESERVATION, false, REASON_WAIT_BIND, "");
        return;
    };
    let bound_key = format!(
        "{}/{}",
        bound.namespace.as_deref().unwrap_or_default(),
        bound.name.as_deref().unwrap_or_default()
    );
    let message = format!("Bind Pod {bound_key:?} in Reservation {:?}", r.name_any());
    w.condition(COND_POD_BOUND_RESERVATION, true, "", &message);
    if !w.cluster.pod(&bound_key).is_some_and(pod_available) {
        w.condition(COND_BOUND_POD_READY, false, REASON_WAIT_READY, "");
        return;
    }
    w.condition(COND_BOUND_POD_READY, true, "", "");
    w.status.pod_ref = Some(bound);
    complete(w, message);
}

/// The job succeeded.
fn complete(w: &mut Work<'_>, message: String) {
    w.status.phase = Some(PMJ_PHASE_SUCCEEDED.into());
    w.status.status = Some("Complete".into());
    w.status.reason = None;
    w.status.message = Some(message.clone());
    w.event(false, "Complete", message);
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::testing::*;
    use super::*;

    const J: &str = "j1";

    fn running(edit: impl FnOnce(&mut Value)) -> std::sync::Arc<PodMigrationJob> {
        job_with(J, "app", "p", "Running", 0, |v| {
            v["spec"]["reservationOptions"] = json!({"reservationRef": {"name": "r1"}});
            edit(v);
        })
    }

    fn scheduled_on(node: &str) -> std::sync::Arc<Reservation> {
        reservation(
            "r1",
            json!({"phase": "Available", "nodeName": node}),
            json!([{"controller": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid"}}]),
        )
    }

    fn has_evict(actions: &[Action]) -> bool {
        actions.iter().any(|a| matches!(a, Action::Evict { .. }))
    }

    fn cond(s: &PodMigrationJobStatus, kind: &str) -> (String, Option<String>) {
        let c = condition(s, kind).unwrap_or_else(|| panic!("no condition {kind}"));
        (c.status.clone(), c.reason.clone())
    }

    #[test]
    fn ignored_jobs_get_no_action() {
        let mut ctl = controller(|_| {});
        let p = pod("app", "p", "n1");
        for j in [
            job_with(J, "app", "p", "Running", 0, |v| v["spec"]["paused"] = json!(true)),
            job_with(J, "app", "p", "Succeeded", 0, |_| {}),
            job_with(J, "app", "p", "Aborted", 0, |_| {}),
            job_with(J, "app", "p", "Running", 0, |v| {
                v["metadata"]["annotations"] = json!({JOB_CREATED_BY: "someone-else"})
            }),
        ] {
            let c = cluster(vec![p.clone()], vec![j], vec![]);
            assert_eq!(ctl.reconcile(&c, t(10)), Vec::new());
        }
    }

    #[test]
    fn ttl_elapsed_fails_the_job_and_deletes_its_reservation() {
        let mut ctl = controller(|_| {});
        let c =
            cluster(vec![pod("app", "p", "n1")], vec![running(|_| {})], vec![scheduled_on("n2")]);
        assert!(
            !ctl.reconcile(&c.clone(), t(299))
                .iter()
                .any(|a| matches!(a, Action::DeleteReservation { .. }))
        );
        let actions = ctl.reconcile(&c, t(300));
        assert!(actions.contains(&Action::DeleteReservation { name: "r1".into() }));
        assert_eq!(phase_reason(&actions, J), (Some("Failed".into()), Some("Timeout".into())));
    }

    #[test]
    fn pending_job_starts_and_creates_its_reservation() {
        let mut ctl = controller(|_| {});
        let j = job_with(J, "app", "p", "Pending", 0, |v| v["spec"]["podRef"]["uid"] = json!(""));
        let c = cluster(vec![pod("app", "p", "n1")], vec![j], vec![]);
        let actions = ctl.reconcile(&c, t(1));
        let created = actions.iter().find_map(|a| match a {
            Action::CreateReservation(r) => Some(r.name_any()),
            _ => None,
        });
        assert_eq!(created.as_deref(), Some(J), "named after the job");
        let spec = actions.iter().find_map(|a| match a {
            Action::SetJobSpec { spec, .. } => Some(spec.clone()),
            _ => None,
        });
        let spec = spec.expect("spec written");
        assert_eq!(spec.pod_ref.unwrap().uid.as_deref(), Some("p-uid"), "podRef UID filled");
        let reference = spec.reservation_options.unwrap().reservation_ref.unwrap();
        assert_eq!(
            (reference.kind.as_deref(), reference.name.as_deref()),
            (Some("Reservation"), Some(J))
        );
        assert_eq!(phase_reason(&actions, J).0.as_deref(), Some("Running"));
        // The store has not caught up: the reservation is not created again,
        // nor is the job failed for missing it.
        let again = ctl.reconcile(&c, t(2));
        assert!(!again.iter().any(|a| matches!(a, Action::CreateReservation(_))), "{again:?}");
        assert_ne!(phase_reason(&again, J).0.as_deref(), Some("Failed"));
    }

    #[test]
    fn a_pending_job_held_back_by_a_limit_gets_no_action_until_room_frees() {
        let mut ctl = controller(|a| a.max_migrating_per_node = Some(1));
        let busy = job_with("j0", "app", "q", "Running", 0, |v| {
            v["spec"]["reservationOptions"] = json!({"reservationRef": {"name": "r0"}})
        });
        let waiting = job_with(J, "app", "p", "Pending", 1, |_| {});
        let pods = vec![pod("app", "p", "n1"), pod("app", "q", "n1")];
        let r0 = reservation("r0", json!({"phase": "Pending"}), json!([]));
        let c = cluster(pods.clone(), vec![busy, waiting.clone()], vec![r0]);
        let actions = ctl.reconcile(&c, t(2));
        assert_eq!(status_of(&actions, J), None, "{actions:?}");
        // j0 is over: the job starts in the same pass it passes arbitration.
        let over = job_with("j0", "app", "q", "Failed", 0, |_| {});
        let actions = ctl.reconcile(&cluster(pods, vec![over, waiting], vec![]), t(3));
        assert_eq!(phase_reason(&actions, J).0.as_deref(), Some("Running"));
        assert!(actions.iter().any(|a| matches!(a, Action::CreateReservation(_))));
    }

    #[test]
    fn pending_job_whose_pod_is_gone_fails() {
        let mut ctl = controller(|_| {});
        let c = cluster(vec![], vec![job_with(J, "app", "p", "Pending", 0, |_| {})], vec![]);
        let actions = ctl.reconcile(&c, t(1));
        assert_eq!(phase_reason(&actions, J), (Some("Failed".into()), Some("MissingPod".into())));
        // A pod replaced under the same name is not the job's pod.
        let replaced = pod_with("app", "p", Some("n1"), |v| v["metadata"]["uid"] = json!("new"));
        let c =
            cluster(vec![replaced], vec![job_with(J, "app", "p", "Pending", 0, |_| {})], vec![]);
        assert_eq!(phase_reason(&ctl.reconcile(&c, t(1)), J).1.as_deref(), Some("MissingPod"));
    }

    #[test]
    fn reservation_that_cannot_be_built_records_failed_create() {
        let mut ctl = controller(|_| {});
        let orphan = pod_with("app", "p", Some("n1"), |v| {
            v["metadata"]["ownerReferences"][0]["controller"] = json!(false)
        });
        let j = job_with(J, "app", "p", "Running", 0, |_| {});
        let actions = ctl.reconcile(&cluster(vec![orphan], vec![j], vec![]), t(1));
        let s = status_of(&actions, J).unwrap();
        assert_eq!(
            cond(s, COND_RESERVATION_CREATED),
            ("False".into(), Some(REASON_FAILED_CREATE_RESERVATION.into()))
        );
        assert_eq!(s.phase.as_deref(), Some("Running"), "the TTL ends it");
    }

    #[test]
    fn a_reservation_the_api_refused_fails_the_job() {
        let mut ctl = controller(|_| {});
        let c = cluster(
            vec![pod("app", "p", "n1")],
            vec![job_with(J, "app", "p", "Running", 0, |_| {})],
            vec![],
        );
        assert!(ctl.reconcile(&c, t(1)).iter().any(|a| matches!(a, Action::CreateReservation(_))));
        ctl.reservation_result(J, Err("admission webhook denied the request".into()));
        let actions = ctl.reconcile(&c, t(2));
        let s = status_of(&actions, J).unwrap();
        assert_eq!(
            (s.phase.as_deref(), s.reason.as_deref()),
            (Some("Failed"), Some(REASON_FAILED_CREATE_RESERVATION))
        );
        assert!(s.message.as_deref().unwrap().ends_with("admission webhook denied the request"));
        assert_eq!(
            cond(s, COND_RESERVATION_CREATED),
            ("False".into(), Some(REASON_FAILED_CREATE_RESERVATION.into()))
        );
    }

    #[test]
    fn reservation_outcomes() {
        let owners = json!([{"controller": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid"}}]);
        // (what, reservation status (None: missing), phase, reason)
        type Case = (&'static str, Option<Value>, Option<&'static str>, Option<&'static str>);
        let cases: Vec<Case> = vec![
            ("missing", None, Some("Failed"), Some(REASON_MISSING_RESERVATION)),
            (
                "expired",
                Some(
                    json!({"phase": "Failed", "conditions": [{"type": "Ready", "status": "False", "reason": "Expired"}]}),
                ),
                Some("Failed"),
                Some(REASON_RESERVATION_EXPIRED),
            ),
            (
                "failed",
                Some(json!({"phase": "Failed"})),
                Some("Failed"),
                Some(REASON_UNSCHEDULABLE),
            ),
            (
                "same node",
                Some(json!({"phase": "Available", "nodeName": "n1"})),
                Some("Failed"),
                Some(REASON_FORBIDDEN),
            ),
            (
                "unschedulable",
                Some(
                    json!({"phase": "Pending", "conditions": [{"type": "Scheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}]}),
                ),
                Some("Running"),
                Some(REASON_UNSCHEDULABLE),
            ),
        ];
        for (what, status, phase, reason) in cases {
            let mut ctl = controller(|_| {});
            let rs: Vec<_> =
                status.into_iter().map(|s| reservation("r1", s, owners.clone())).collect();
            let actions = ctl
                .reconcile(&cluster(vec![pod("app", "p", "n1")], vec![running(|_| {})], rs), t(1));
            let (p, r) = phase_reason(&actions, J);
            assert_eq!((p.as_deref(), r.as_deref()), (phase, reason), "{what}");
            assert!(!has_evict(&actions), "{what}");
        }
        // Pending without a message: nothing to write.
        let mut ctl = controller(|_| {});
        let pending = reservation("r1", json!({"phase": "Pending"}), owners);
        let actions = ctl.reconcile(
            &cluster(vec![pod("app", "p", "n1")], vec![running(|_| {})], vec![pending]),
            t(1),
        );
        assert!(!has_evict(&actions) && phase_reason(&actions, J).0.as_deref() == Some("Running"));
    }

    #[test]
    fn scheduled_reservation_evicts_once_then_waits_for_the_new_pod() {
        let mut ctl = controller(|_| {});
        let c =
            cluster(vec![pod("app", "p", "n1")], vec![running(|_| {})], vec![scheduled_on("n2")]);
        let actions = ctl.reconcile(&c, t(1));
        assert!(has_evict(&actions));
        let s = status_of(&actions, J).unwrap();
        assert_eq!(s.node_name.as_deref(), Some("n2"));
        assert_eq!(cond(s, COND_RESERVATION_SCHEDULED).0, "True");
        assert_eq!(cond(s, COND_EVICTION), ("False".into(), Some(REASON_EVICTING.into())));
        // Next pass, even before the store shows the status: no second eviction.
        assert!(!has_evict(&ctl.reconcile(&c, t(2))));
        // The pod is gone: eviction complete, waiting for the binding.
        let evicting = running(|v| v["status"] = serde_json::to_value(s).unwrap());
        let c = cluster(vec![], vec![evicting.clone()], vec![scheduled_on("n2")]);
        let actions = ctl.reconcile(&c, t(3));
        let s2 = status_of(&actions, J).unwrap();
        assert_eq!(cond(s2, COND_EVICTION), ("True".into(), Some(REASON_EVICT_COMPLETE.into())));
        assert_eq!(
            cond(s2, COND_POD_BOUND_RESERVATION),
            ("False".into(), Some(REASON_WAIT_BIND.into()))
        );
        // The replacement took the reservation, not Ready yet.
        let done = running(|v| v["status"] = serde_json::to_value(s2).unwrap());
        let taken = reservation(
            "r1",
            json!({"phase": "Succeeded", "nodeName": "n2", "currentOwners": [{"kind": "Pod", "namespace": "app", "name": "p2", "uid": "p2-uid"}]}),
            json!([]),
        );
        let unready = pod_with("app", "p2", Some("n2"), |v| {
            v["status"]["conditions"][0]["status"] = json!("False")
        });
        let actions =
            ctl.reconcile(&cluster(vec![unready], vec![done.clone()], vec![taken.clone()]), t(4));
        let s3 = status_of(&actions, J).unwrap();
        assert_eq!(cond(s3, COND_POD_BOUND_RESERVATION).0, "True");
        assert_eq!(
            cond(s3, COND_BOUND_POD_READY),
            ("False".into(), Some(REASON_WAIT_READY.into()))
        );
        // Ready: Succeeded.
        let actions =
            ctl.reconcile(&cluster(vec![pod("app", "p2", "n2")], vec![done], vec![taken]), t(5));
        let s4 = status_of(&actions, J).unwrap();
        assert_eq!(
            (s4.phase.as_deref(), s4.status.as_deref()),
            (Some("Succeeded"), Some("Complete"))
        );
        assert_eq!(s4.message.as_deref(), Some("Bind Pod \"app/p2\" in Reservation \"r1\""));
        assert_eq!(s4.pod_ref.as_ref().and_then(|r| r.name.as_deref()), Some("p2"));
    }

    #[test]
    fn refused_eviction_fails_the_job_with_the_api_message() {
        let mut ctl = controller(|_| {});
        let c =
            cluster(vec![pod("app", "p", "n1")], vec![running(|_| {})], vec![scheduled_on("n2")]);
        let first = ctl.reconcile(&c, t(1));
        assert!(has_evict(&first));
        ctl.eviction_result(
            J,
            Err("Cannot evict pod as it would violate the pod's disruption budget.".into()),
            t(1),
        );
        let s = status_of(&first, J).unwrap();
        let c = cluster(
            vec![pod("app", "p", "n1")],
            vec![running(|v| v["status"] = serde_json::to_value(s).unwrap())],
            vec![scheduled_on("n2")],
        );
        let actions = ctl.reconcile(&c, t(2));
        let s = status_of(&actions, J).unwrap();
        assert_eq!(
            (s.phase.as_deref(), s.reason.as_deref()),
            (Some("Failed"), Some(REASON_FAILED_EVICT))
        );
        assert!(s.message.as_deref().unwrap().contains("disruption budget"));
        assert_eq!(cond(s, COND_EVICTION), ("False".into(), Some(REASON_FAILED_EVICT.into())));
        assert!(!has_evict(&actions));
    }

    #[test]
    fn pod_gone_before_eviction_or_reservation_taken_fail() {
        let mut ctl = controller(|_| {});
        let c = cluster(vec![], vec![running(|_| {})], vec![scheduled_on("n2")]);
        assert_eq!(
            phase_reason(&ctl.reconcile(&c, t(1)), J).1.as_deref(),
            Some(REASON_MISSING_POD)
        );
        let taken = reservation(
            "r1",
            json!({"phase": "Succeeded", "nodeName": "n2", "currentOwners": [{"kind": "Pod", "namespace": "app", "name": "x"}]}),
            json!([]),
        );
        let c = cluster(vec![pod("app", "p", "n1")], vec![running(|_| {})], vec![taken]);
        let actions = ctl.reconcile(&c, t(1));
        assert_eq!(phase_reason(&actions, J).1.as_deref(), Some(REASON_FORBIDDEN));
        assert!(!has_evict(&actions));
    }

    #[test]
    fn evict_directly_is_rate_limited_and_succeeds_when_the_pod_is_gone() {
        let mut ctl = controller(|a| a.evict_qps = super::super::args::Qps(1.0));
        let direct = |name: &str, pod: &str| {
            job_with(name, "app", pod, "Running", 0, |v| v["spec"]["mode"] = json!("EvictDirectly"))
        };
        let c = cluster(
            vec![pod("app", "a", "n1"), pod("app", "b", "n2")],
            vec![direct("ja", "a"), direct("jb", "b")],
            vec![],
        );
        let actions = ctl.reconcile(&c, t(1));
        let evicted = actions.iter().filter(|a| matches!(a, Action::Evict { .. })).count();
        assert_eq!(evicted, 1, "burst 1");
        assert!(has_evict(&ctl.reconcile(&c, t(2))), "one token a second later");
        let gone = direct("ja", "a");
        let with_status = job_with("ja", "app", "a", "Running", 0, |v| {
            v["spec"]["mode"] = json!("EvictDirectly");
            v["status"] = serde_json::to_value(status_of(&actions, "ja").unwrap()).unwrap();
        });
        let _ = gone;
        let actions = ctl.reconcile(&cluster(vec![], vec![with_status], vec![]), t(3));
        let s = status_of(&actions, "ja").unwrap();
        assert_eq!(
            (s.phase.as_deref(), s.message.as_deref()),
            (Some("Succeeded"), Some("Pod \"app/a\" has been evicted"))
        );
    }

    #[test]
    fn a_pending_pod_migration_waits_for_the_pod_to_be_scheduled() {
        let mut ctl = controller(|_| {});
        let owners =
            json!([{"object": {"kind": "Pod", "namespace": "app", "name": "p", "uid": "p-uid"}}]);
        let r = reservation("r1", json!({"phase": "Available", "nodeName": "n2"}), owners);
        let unscheduled = pod_with(
            "app",
            "p",
            None,
            |v| v["status"] = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}),
        );
        let actions = ctl
            .reconcile(&cluster(vec![unscheduled], vec![running(|_| {})], vec![r.clone()]), t(1));
        let s = status_of(&actions, J).unwrap();
        assert_eq!(
            cond(s, COND_POD_SCHEDULED),
            ("False".into(), Some(REASON_UNSCHEDULABLE.into()))
        );
        assert!(!has_evict(&actions));
        let actions = ctl
            .reconcile(&cluster(vec![pod("app", "p", "n2")], vec![running(|_| {})], vec![r]), t(2));
        let s = status_of(&actions, J).unwrap();
        assert_eq!(s.phase.as_deref(), Some("Succeeded"));
        assert_eq!(s.message.as_deref(), Some("Assign Pod \"app/p\" to node \"n2\""));
    }

    #[test]
    fn the_scavenger_deletes_old_jobs_once() {
        let mut ctl = controller(|_| {});
        let old = running(|_| {}); // ttl 5m: deleted from 10 min
        let untimed =
            job_with("j2", "app", "q", "Succeeded", 0, |v| v["spec"]["ttl"] = Value::Null);
        let c = cluster(vec![], vec![old, untimed], vec![]);
        let at = |s| ctl.clone().reconcile(&c, t(s));
        assert!(!at(599).iter().any(|a| matches!(a, Action::DeleteJob { .. })));
        let actions = ctl.reconcile(&c, t(600));
        assert!(actions.contains(&Action::DeleteJob { job: J.into() }));
        assert!(actions.contains(&Action::DeleteReservation { name: "r1".into() }));
        assert!(!actions.contains(&Action::DeleteJob { job: "j2".into() }), "30 min without a TTL");
        assert!(
            !ctl.reconcile(&c, t(601)).contains(&Action::DeleteJob { job: J.into() }),
            "asked once"
        );
        assert!(ctl.reconcile(&c, t(1800)).contains(&Action::DeleteJob { job: "j2".into() }));
    }
}
