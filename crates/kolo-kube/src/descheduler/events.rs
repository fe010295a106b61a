//! The descheduler's Events (on pods, PodMigrationJobs, nodes and
//! Reservations), written by a background task so a slow API server never
//! holds up a round. A full queue drops the Event and counts it
//! (`kolo_descheduler_actions_total{action="event",result="dropped"}`).
//! Events about cluster-scoped objects (jobs, nodes, reservations) go to
//! the `default` namespace, as client-go's recorder puts them.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kolo_descheduler::{Event, ObjectKey};
use kube::Client;
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder, Reporter};
use tokio::sync::mpsc;

use crate::health::{ActionLabels, Health};

/// Events waiting to be written; more are dropped.
pub const EVENT_QUEUE: usize = 1024;

/// The object reference of an Event's subject.
pub fn object_reference(key: &ObjectKey) -> ObjectReference {
    let api_version = match key.kind {
        "PodMigrationJob" | "Reservation" => "scheduling.koordinator.sh/v1alpha1",
        _ => "v1",
    };
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(key.kind.into()),
        namespace: non_empty(&key.namespace),
        name: Some(key.name.clone()),
        uid: non_empty(&key.uid),
        ..ObjectReference::default()
    }
}

/// Where the driver queues Events.
#[derive(Clone)]
pub struct Events {
    queue: mpsc::Sender<Event>,
    health: Arc<Health>,
}

impl Events {
    /// Events reported as `controller` (instance `instance`) through
    /// `client`; starts the writer on the current runtime.
    pub fn new(client: Client, controller: &str, instance: &str, health: Arc<Health>) -> Events {
        let reporter = Reporter { controller: controller.into(), instance: Some(instance.into()) };
        let recorder = Recorder::new(client, reporter);
        let (queue, receiver) = mpsc::channel(EVENT_QUEUE);
        tokio::spawn(write(recorder, receiver, health.clone()));
        Events { queue, health }
    }

    /// Queues `event`, or drops and counts it when the queue is full.
    pub fn record(&self, event: Event) {
        if self.queue.try_send(event).is_err() {
            let labels = ActionLabels { action: "event".into(), result: "dropped".into() };
            self.health.actions.get_or_create(&labels).inc();
        }
    }
}

/// Writes the queued Events one at a time until every [`Events`] is gone.
async fn write(recorder: Recorder, mut queue: mpsc::Receiver<Event>, health: Arc<Health>) {
    while let Some(event) = queue.recv().await {
        let reference = object_reference(&event.regarding);
        let kube_event = KubeEvent {
            type_: if event.warning { EventType::Warning } else { EventType::Normal },
            reason: event.reason.clone(),
            // Events carry at most 1 kB of note.
            note: Some(event.message.chars().take(1000).collect()),
            action: "Descheduling".into(),
            secondary: None,
        };
        let result = recorder.publish(&kube_event, &reference).await;
        health.count("event", &result);
        if let Err(e) = result {
            tracing::warn!(
                kind = event.regarding.kind, name = %event.regarding.name,
                reason = %event.reason, error = %e, "could not record Event"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_the_group_and_leave_cluster_objects_unnamespaced() {
        let job = ObjectKey {
            kind: "PodMigrationJob",
            namespace: String::new(),
            name: "j1".into(),
            uid: "u1".into(),
        };
        let r = object_reference(&job);
        assert_eq!(r.api_version.as_deref(), Some("scheduling.koordinator.sh/v1alpha1"));
        assert_eq!((r.namespace, r.uid.as_deref()), (None, Some("u1")));
        let pod =
            ObjectKey { kind: "Pod", namespace: "ns".into(), name: "p".into(), uid: String::new() };
        let r = object_reference(&pod);
        assert_eq!((r.api_version.as_deref(), r.namespace.as_deref()), (Some("v1"), Some("ns")));
        assert_eq!(r.uid, None);
    }
}
