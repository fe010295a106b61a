//! What the scheduler tells the cluster about a pod: Events and the
//! `PodScheduled` condition.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::jiff::Timestamp;
use kolo_core::PodRef;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client};

use crate::error::KubeError;
use crate::health::Health;

/// The object an Event about `pod` is about.
fn object_reference(pod: &PodRef) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(pod.namespace.clone()),
        name: Some(pod.name.clone()),
        uid: Some(pod.uid.clone()),
        ..ObjectReference::default()
    }
}

/// Records Events as `reporter` (`kolo-scheduler` and this instance) and
/// patches pod conditions.
#[derive(Clone)]
pub struct Reports {
    client: Client,
    recorder: Recorder,
    health: Arc<Health>,
}

impl Reports {
    /// Reports written through `client`.
    pub fn new(client: Client, controller: &str, instance: &str, health: Arc<Health>) -> Reports {
        let reporter = Reporter { controller: controller.into(), instance: Some(instance.into()) };
        Reports { recorder: Recorder::new(client.clone(), reporter), client, health }
    }

    /// The `Scheduled` Event of a bound pod.
    pub async fn scheduled(&self, pod: &PodRef, node: &str) {
        let note = format!("Successfully assigned {pod} to {node}");
        self.event(pod, EventType::Normal, "Scheduled", "Binding", note).await;
    }

    /// The `FailedScheduling` Event with the explanation, and the pod's
    /// `PodScheduled=False` condition (reason `Unschedulable`, or
    /// `SchedulerError` for errors) with the same message, as kube-scheduler
    /// writes them.
    pub async fn failed(&self, pod: &PodRef, unschedulable: bool, message: &str) {
        self.event(pod, EventType::Warning, "FailedScheduling", "Scheduling", message.into()).await;
        let reason = if unschedulable { "Unschedulable" } else { "SchedulerError" };
        let patch = serde_json::json!({"status": {"conditions": [{
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": null,
            "lastTransitionTime": Timestamp::now().to_string(),
        }]}});
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
        // A strategic merge patch merges conditions by type, keeping the
        // others.
        let result =
            api.patch_status(&pod.name, &PatchParams::default(), &Patch::Strategic(patch)).await;
        self.health.count("pod_condition", &result);
        if let Err(e) = result {
            let e = KubeError::api("patch status of", format!("Pod/{pod}"), e);
            tracing::warn!(error = %e, "could not set the PodScheduled condition");
        }
    }

    /// The `Preempted` Event on a victim (`Preempted by ns/name on node n`,
    /// kube-scheduler's wording).
    pub async fn preempted(&self, victim: &PodRef, note: &str) {
        self.event(victim, EventType::Normal, "Preempted", "Preempting", note.into()).await;
    }

    /// The `Preempting` Event on the preemptor: which node, how many
    /// victims.
    pub async fn preempting(&self, preemptor: &PodRef, node: &str, victims: usize) {
        let note = format!("Preempting {victims} pod(s) on node {node}; nominated node: {node}");
        self.event(preemptor, EventType::Normal, "Preempting", "Preempting", note).await;
    }

    async fn event(
        &self,
        pod: &PodRef,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let event = Event {
            type_,
            reason: reason.into(),
            // Events carry at most 1 kB of note.
            note: Some(note.chars().take(1000).collect()),
            action: action.into(),
            secondary: None,
        };
        let result = self.recorder.publish(&event, &object_reference(pod)).await;
        self.health.count("event", &result);
        if let Err(e) = result {
            tracing::warn!(pod = %pod, reason, error = %e, "could not record Event");
        }
    }
}
