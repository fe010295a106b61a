//! What the scheduler tells the cluster about a pod: Events and the
//! `PodScheduled` condition.
//!
//! Events must not cost a bind: they go through a bounded queue that at
//! most [`EVENT_WRITERS`] requests drain at once (so they never take more
//! than that many of the client's connections), and only while no bind is
//! in flight ([`BindsInFlight`]): on a busy API server every write costs
//! the others, so a burst of binds goes through first and its Events
//! follow. An Event that finds the queue full is dropped and counted
//! (`kolo_scheduler_actions_total{action="event",result="dropped"}`), as
//! kube-scheduler's event broadcaster drops under pressure.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::jiff::Timestamp;
use kolo_core::PodRef;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client};
use tokio::sync::{Notify, Semaphore, mpsc};

use crate::error::KubeError;
use crate::health::{ActionLabels, Health};

/// Events waiting to be written; more are dropped, as client-go's event
/// broadcaster (kube-scheduler's) drops beyond its 1,000 queued events.
/// The writers' requests wait for the client's request permits behind the
/// binds already waiting, so during a burst of binds the queue fills and
/// is written once the binds are through.
pub const EVENT_QUEUE: usize = 1024;

/// Events written at once.
pub const EVENT_WRITERS: usize = 2;

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

/// The binds in flight, which Event writers wait out.
#[derive(Clone, Default)]
pub struct BindsInFlight(Arc<(AtomicUsize, Notify)>);

/// One bind in flight, until dropped.
pub struct BindInFlight(BindsInFlight);

impl BindsInFlight {
    /// Counts a bind until the returned guard is dropped.
    pub fn start(&self) -> BindInFlight {
        self.0.0.fetch_add(1, Ordering::SeqCst);
        BindInFlight(self.clone())
    }

    /// Returns once no bind is in flight.
    async fn idle(&self) {
        loop {
            // Created before the check: a bind ending in between still
            // wakes it (`notify_waiters` reaches every `Notified` made).
            let ended = self.0.1.notified();
            if self.0.0.load(Ordering::SeqCst) == 0 {
                return;
            }
            ended.await;
        }
    }
}

impl Drop for BindInFlight {
    fn drop(&mut self) {
        if self.0.0.0.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.0.1.notify_waiters();
        }
    }
}

/// An Event waiting in the queue, and the pod it is about.
type QueuedEvent = (PodRef, Event);

/// Records Events as `reporter` (`kolo-scheduler` and this instance) and
/// patches pod conditions.
#[derive(Clone)]
pub struct Reports {
    client: Client,
    events: mpsc::Sender<QueuedEvent>,
    binds: BindsInFlight,
    health: Arc<Health>,
}

impl Reports {
    /// Reports written through `client`; starts the Event writer on the
    /// current tokio runtime.
    pub fn new(client: Client, controller: &str, instance: &str, health: Arc<Health>) -> Reports {
        let reporter = Reporter { controller: controller.into(), instance: Some(instance.into()) };
        let recorder = Recorder::new(client.clone(), reporter);
        let (events, queue) = mpsc::channel(EVENT_QUEUE);
        let binds = BindsInFlight::default();
        tokio::spawn(write_events(recorder, queue, binds.clone(), health.clone()));
        Reports { client, events, binds, health }
    }

    /// Counts a bind in flight until the guard is dropped: Events wait.
    pub fn bind_started(&self) -> BindInFlight {
        self.binds.start()
    }

    /// Queues the `Scheduled` Event of a bound pod.
    pub fn scheduled(&self, pod: &PodRef, node: &str) {
        let note = format!("Successfully assigned {pod} to {node}");
        self.event(pod, EventType::Normal, "Scheduled", "Binding", note);
    }

    /// The `FailedScheduling` Event with the explanation, and the pod's
    /// `PodScheduled=False` condition (reason `Unschedulable`, or
    /// `SchedulerError` for errors) with the same message, as kube-scheduler
    /// writes them.
    pub async fn failed(&self, pod: &PodRef, unschedulable: bool, message: &str) {
        self.event(pod, EventType::Warning, "FailedScheduling", "Scheduling", message.into());
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

    /// Queues the `Preempted` Event on a victim (`Preempted by ns/name on
    /// node n`, kube-scheduler's wording).
    pub fn preempted(&self, victim: &PodRef, note: &str) {
        self.event(victim, EventType::Normal, "Preempted", "Preempting", note.into());
    }

    /// Queues the `Preempting` Event on the preemptor: which node, how many
    /// victims.
    pub fn preempting(&self, preemptor: &PodRef, node: &str, victims: usize) {
        let note = format!("Preempting {victims} pod(s) on node {node}; nominated node: {node}");
        self.event(preemptor, EventType::Normal, "Preempting", "Preempting", note);
    }

    /// Queues an Event, or drops and counts it when the queue is full.
    fn event(&self, pod: &PodRef, type_: EventType, reason: &str, action: &str, note: String) {
        let event = Event {
            type_,
            reason: reason.into(),
            // Events carry at most 1 kB of note.
            note: Some(note.chars().take(1000).collect()),
            action: action.into(),
            secondary: None,
        };
        if self.events.try_send((pod.clone(), event)).is_err() {
            let labels = ActionLabels { action: "event".into(), result: "dropped".into() };
            self.health.actions.get_or_create(&labels).inc();
            tracing::debug!(pod = %pod, reason, "Event queue full; Event dropped");
        }
    }
}

/// Writes the queued Events, [`EVENT_WRITERS`] at a time and only while
/// no bind is in flight, until every [`Reports`] is gone.
async fn write_events(
    recorder: Recorder,
    mut queue: mpsc::Receiver<QueuedEvent>,
    binds: BindsInFlight,
    health: Arc<Health>,
) {
    let writers = Arc::new(Semaphore::new(EVENT_WRITERS));
    while let Some((pod, event)) = queue.recv().await {
        binds.idle().await;
        let Ok(permit) = writers.clone().acquire_owned().await else { return };
        let (recorder, health) = (recorder.clone(), health.clone());
        tokio::spawn(async move {
            let result = recorder.publish(&event, &object_reference(&pod)).await;
            drop(permit);
            health.count("event", &result);
            if let Err(e) = result {
                tracing::warn!(pod = %pod, reason = %event.reason, error = %e, "could not record Event");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client whose requests never get an answer.
    fn silent_client() -> Client {
        let service = tower::service_fn(|_: http::Request<kube::client::Body>| {
            std::future::pending::<Result<http::Response<kube::client::Body>, tower::BoxError>>()
        });
        Client::new(service, "default")
    }

    #[tokio::test]
    async fn events_beyond_the_queue_are_dropped_and_counted() {
        let health = Health::new("scheduler");
        let reports = Reports::new(silent_client(), "kolo-scheduler", "test", health.clone());
        let pod = PodRef::from_key("ns/p", "uid-1");
        // The writer task does not run between these calls (one thread, no
        // await), so exactly EVENT_QUEUE fit and the other 10 are dropped.
        for _ in 0..EVENT_QUEUE + 10 {
            reports.scheduled(&pod, "node-1");
        }
        let dropped = ActionLabels { action: "event".into(), result: "dropped".into() };
        assert_eq!(health.actions.get_or_create(&dropped).get(), 10);
    }

    #[tokio::test]
    async fn events_wait_until_no_bind_is_in_flight() {
        let binds = BindsInFlight::default();
        let (first, second) = (binds.start(), binds.start());
        let waiter = tokio::spawn({
            let binds = binds.clone();
            async move { binds.idle().await }
        });
        drop(first);
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "one bind is still in flight");
        drop(second);
        tokio::time::timeout(std::time::Duration::from_secs(10), waiter)
            .await
            .expect("the last bind's end wakes the writer")
            .unwrap();
        // Idle already: returns at once.
        binds.idle().await;
    }
}
