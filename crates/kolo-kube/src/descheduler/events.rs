//! The descheduler's Events (on pods, PodMigrationJobs, nodes and
//! Reservations), written by a background task so a slow API server never
//! holds up a round. A full queue drops the Event and counts it
//! (`kolo_descheduler_actions_total{action="event",result="dropped"}`).
//!
//! Events about pods go through kube's recorder (a repeat within minutes
//! becomes a series on the first Event). Events about cluster-scoped
//! objects (jobs, nodes, reservations) are written to `kube-system`: the
//! only namespace Kubernetes 1.20 accepts an `events.k8s.io/v1` Event
//! about a cluster-scoped object in (kube's recorder writes them to
//! `default`, which 1.20 refuses); newer servers accept it too.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as EventObject;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kolo_descheduler::{Event, ObjectKey};
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder, Reporter};
use kube::{Api, Client};
use tokio::sync::mpsc;

use crate::health::{ActionLabels, Health};

/// Events waiting to be written; more are dropped.
pub const EVENT_QUEUE: usize = 1024;

/// Where Events about cluster-scoped objects go.
pub const CLUSTER_EVENT_NAMESPACE: &str = "kube-system";

/// What an Event is written as.
const ACTION: &str = "Descheduling";

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
        let writer = Writer {
            recorder: Recorder::new(client.clone(), reporter.clone()),
            cluster_events: Api::namespaced(client, CLUSTER_EVENT_NAMESPACE),
            reporter,
        };
        let (queue, receiver) = mpsc::channel(EVENT_QUEUE);
        tokio::spawn(write(writer, receiver, health.clone()));
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

/// How Events are written.
struct Writer {
    recorder: Recorder,
    cluster_events: Api<EventObject>,
    reporter: Reporter,
}

impl Writer {
    async fn write(&self, event: &Event) -> Result<(), kube::Error> {
        let reference = object_reference(&event.regarding);
        // Events carry at most 1 kB of note.
        let note: String = event.message.chars().take(1000).collect();
        if reference.namespace.is_some() {
            let kube_event = KubeEvent {
                type_: if event.warning { EventType::Warning } else { EventType::Normal },
                reason: event.reason.clone(),
                note: Some(note),
                action: ACTION.into(),
                secondary: None,
            };
            return self.recorder.publish(&kube_event, &reference).await;
        }
        let object = cluster_event(event, reference, note, &self.reporter, Timestamp::now());
        self.cluster_events.create(&PostParams::default(), &object).await.map(drop)
    }
}

/// The Event about a cluster-scoped object, in [`CLUSTER_EVENT_NAMESPACE`].
pub fn cluster_event(
    event: &Event,
    regarding: ObjectReference,
    note: String,
    reporter: &Reporter,
    now: Timestamp,
) -> EventObject {
    EventObject {
        metadata: ObjectMeta {
            name: Some(format!("{}.{:x}", event.regarding.name, now.as_nanosecond())),
            namespace: Some(CLUSTER_EVENT_NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(now)),
        action: Some(ACTION.into()),
        reason: Some(event.reason.clone()),
        note: Some(note),
        regarding: Some(regarding),
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: reporter.instance.clone(),
        type_: Some(if event.warning { "Warning" } else { "Normal" }.into()),
        ..EventObject::default()
    }
}

/// Writes the queued Events one at a time until every [`Events`] is gone.
async fn write(writer: Writer, mut queue: mpsc::Receiver<Event>, health: Arc<Health>) {
    while let Some(event) = queue.recv().await {
        let result = writer.write(&event).await;
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

    #[test]
    fn events_about_cluster_objects_go_to_kube_system_without_a_regarding_namespace() {
        let event = Event {
            regarding: ObjectKey {
                kind: "PodMigrationJob",
                namespace: String::new(),
                name: "j1".into(),
                uid: String::new(),
            },
            warning: true,
            reason: "FailedEvict".into(),
            message: "refused".into(),
        };
        let reporter =
            Reporter { controller: "kolo-descheduler".into(), instance: Some("i".into()) };
        let now = Timestamp::from_second(1_000).unwrap();
        let object = cluster_event(
            &event,
            object_reference(&event.regarding),
            "refused".into(),
            &reporter,
            now,
        );
        assert_eq!(object.metadata.namespace.as_deref(), Some("kube-system"));
        assert_eq!(object.regarding.as_ref().and_then(|r| r.namespace.clone()), None);
        assert_eq!(object.type_.as_deref(), Some("Warning"));
        assert_eq!(object.reporting_instance.as_deref(), Some("i"));
        assert!(object.metadata.name.as_deref().is_some_and(|n| n.starts_with("j1.")));
    }
}
