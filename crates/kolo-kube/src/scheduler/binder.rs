//! Binding through the `pods/binding` subresource, on the async runtime,
//! while the scheduling thread goes on with the next cycles.

use std::sync::Arc;
use std::sync::mpsc::Sender;

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use kolo_api::crd::Reservation;
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::{BindCompletion, BindRequest, BindTarget, Binder};
use kolo_scheduler::plugins::reservation::status::{Observed, next_status};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use tokio::runtime::Handle;

use super::driver::Update;
use kolo_core::PodRef;

use super::report::Reports;
use crate::error::KubeError;
use crate::health::Health;

/// Binds pods through the API server.
pub struct KubeBinder {
    client: Client,
    runtime: Handle,
    reports: Reports,
    health: Arc<Health>,
    wake: Sender<Update>,
}

impl KubeBinder {
    /// A binder that runs its calls on `runtime` and wakes the scheduling
    /// thread through `wake` when a bind ends (a failed bind must be
    /// retried even if nothing else happens in the cluster).
    pub fn new(
        client: Client,
        runtime: Handle,
        reports: Reports,
        health: Arc<Health>,
        wake: Sender<Update>,
    ) -> KubeBinder {
        KubeBinder { client, runtime, reports, health, wake }
    }
}

/// The `Binding` kube-scheduler posts: the pod's name and UID (so a pod
/// re-created under the same name is not bound by mistake) and the node.
pub fn binding(request: &BindRequest, pod: &PodRef) -> Binding {
    Binding {
        metadata: ObjectMeta {
            name: Some(pod.name.clone()),
            namespace: Some(pod.namespace.clone()),
            uid: Some(request.uid.clone()),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(request.node.clone()),
            ..ObjectReference::default()
        },
    }
}

async fn bind(client: Client, request: &BindRequest, pod: &PodRef) -> Result<(), KubeError> {
    if let BindTarget::Reservation { name } = &request.target {
        return bind_reservation(client, name, &request.node).await;
    }
    let object = format!("Pod/{}", request.pod);
    let api: Api<Pod> = Api::namespaced(client, &pod.namespace);
    if !request.annotations.is_empty() {
        let patch = serde_json::json!({"metadata": {"annotations": request.annotations}});
        api.patch(&pod.name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map_err(|e| KubeError::api("annotate", &object, e))?;
    }
    api.create_subresource::<_, serde_json::Value>(
        "binding",
        &pod.name,
        &PostParams::default(),
        &binding(request, pod),
    )
    .await
    .map_err(|e| KubeError::api("bind", format!("{object} to Node/{}", request.node), e))?;
    Ok(())
}

/// How often a reservation bind retries after a conflict (the object
/// changed between its read and its write).
const RESERVATION_BIND_ATTEMPTS: usize = 3;

/// Binds a reservation's reserve pod: writes the Reservation's status as
/// scheduled on `node` (`nodeName`, phase `Available`, conditions,
/// allocatable: the Reservation plugin's `next_status`), through the
/// status subresource with the `resourceVersion` just read, retrying a
/// conflict.
async fn bind_reservation(client: Client, name: &str, node: &str) -> Result<(), KubeError> {
    let object = format!("Reservation/{name}");
    let api: Api<Reservation> = Api::all(client);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut r = api.get(name).await.map_err(|e| KubeError::api("get", &object, e))?;
        let observed = Observed { node: Some(node), ..Observed::default() };
        let status = next_status(&r, &observed, Timestamp::now())
            .map_err(|e| KubeError::Reservation { name: name.into(), message: e.to_string() })?;
        r.status = Some(status);
        match api.replace_status(name, &PostParams::default(), &r).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < RESERVATION_BIND_ATTEMPTS => {}
            Err(e) => return Err(KubeError::api("update status of", object, e)),
        }
    }
}

impl Binder for KubeBinder {
    fn bind(&self, completion: BindCompletion) {
        let client = self.client.clone();
        let reports = self.reports.clone();
        let health = self.health.clone();
        let wake = self.wake.clone();
        self.runtime.spawn(async move {
            let request = completion.request().clone();
            let pod = PodRef::from_key(&request.pod, &request.uid);
            let in_flight = reports.bind_started();
            let result = bind(client, &request, &pod).await;
            drop(in_flight);
            health.count("bind", &result);
            match &result {
                Ok(()) => match &request.target {
                    BindTarget::Pod => {
                        tracing::info!(pod = %request.pod, node = %request.node, "bound");
                        reports.scheduled(&pod, &request.node);
                    }
                    BindTarget::Reservation { name } => {
                        tracing::info!(reservation = %name, node = %request.node, "reservation bound");
                    }
                },
                // A pod someone else bound (409), or deleted (404), is
                // forgotten and its watch event corrects the cache.
                Err(e) => tracing::warn!(error = %e, "bind failed"),
            }
            completion.finish(result.map_err(|e| e.to_string()));
            let _ = wake.send(Update::Wake);
        });
    }
}
