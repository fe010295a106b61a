//! What the scheduler tells the cluster about a pod: Events and the
//! `PodScheduled` condition.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client};

use crate::error::KubeError;
use crate::health::Health;

/// A pod as the reports name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

impl PodRef {
    /// From a `namespace/name` key and a UID.
    pub fn from_key(key: &str, uid: &str) -> PodRef {
        let (namespace, name) = key.split_once('/').unwrap_or(("default", key));
        PodRef { namespace: namespace.into(), name: name.into(), uid: uid.into() }
    }

    fn object_reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some(self.namespace.clone()),
            name: Some(self.name.clone()),
            uid: Some(self.uid.clone()),
            ..ObjectReference::default()
        }
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
        let note = format!("Successfully assigned {}/{} to {node}", pod.namespace, pod.name);
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
            let e =
                KubeError::api("patch status of", format!("Pod/{}/{}", pod.namespace, pod.name), e);
            tracing::warn!(error = %e, "could not set the PodScheduled condition");
        }
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
        let result = self.recorder.publish(&event, &pod.object_reference()).await;
        self.health.count("event", &result);
        if let Err(e) = result {
            tracing::warn!(pod = %format!("{}/{}", pod.namespace, pod.name), reason, error = %e, "could not record Event");
        }
    }
}
