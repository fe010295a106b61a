//! The bench's side of the API server: its nodes and pods, the watch that
//! times binds, the API server's request counter, and the processes'
//! CPU and connections from `/proc`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use serde_json::json;

use super::BoxError;

/// Requests the bench itself keeps in flight while creating objects.
const CREATE_CONCURRENCY: usize = 16;

/// The label on the bench's nodes and pods (its value: the bench's id), so
/// pods only go to the bench's nodes on a shared API server.
pub const LABEL: &str = "kolo-bench";

/// The label naming the run a pending pod belongs to.
pub const RUN_LABEL: &str = "kolo-bench-run";

/// Runs `count` futures made by `make`, `CREATE_CONCURRENCY` at a time.
async fn for_each<F, Fut>(count: usize, make: F) -> Result<(), BoxError>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<(), kube::Error>>,
{
    let mut results =
        futures::stream::iter((0..count).map(make)).buffer_unordered(CREATE_CONCURRENCY);
    while let Some(result) = results.next().await {
        result?;
    }
    Ok(())
}

/// Creates `count` nodes `<id>-n<i>` (4 CPU, 32 GiB, 110 pods, Ready, as
/// kube-scheduler's `scheduler_perf` nodes), without the `not-ready` taint
/// the API server adds (there is no node lifecycle controller).
pub async fn create_nodes(client: &Client, id: &str, count: usize) -> Result<(), BoxError> {
    let api: Api<Node> = Api::all(client.clone());
    for_each(count, |i| {
        let api = api.clone();
        let name = format!("{id}-n{i}");
        async move {
            let node: Node = serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {LABEL: id, "kubernetes.io/hostname": name}},
            }))
            .expect("a valid Node");
            api.create(&PostParams::default(), &node).await?;
            let list = json!({"cpu": "4", "memory": "32Gi", "pods": "110"});
            let status = json!({"status": {
                "capacity": list, "allocatable": list,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "lastHeartbeatTime": null, "lastTransitionTime": null}],
            }});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status)).await?;
            let taints = json!({"spec": {"taints": null}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(taints)).await?;
            Ok(())
        }
    })
    .await
}

/// A pod of the bench: 100m CPU and 100 MiB, only for the bench's nodes;
/// bound to `node` if given, else pending for `scheduler`.
fn pod(id: &str, name: &str, run: &str, scheduler: &str, node: Option<&str>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {LABEL: id, RUN_LABEL: run}},
        "spec": {
            "schedulerName": scheduler,
            "nodeName": node,
            "nodeSelector": {LABEL: id},
            "containers": [{"name": "c", "image": "registry.invalid/pause",
                            "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}}}],
        },
    }))
    .expect("a valid Pod")
}

/// Creates `count` pods of run `run` in namespace `id`: bound round-robin
/// to the `nodes` nodes when `scheduler` is `None`, else pending for it.
pub async fn create_pods(
    client: &Client,
    id: &str,
    run: &str,
    scheduler: Option<&str>,
    count: usize,
    nodes: usize,
) -> Result<(), BoxError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), id);
    for_each(count, |i| {
        let api = api.clone();
        let name = format!("{run}-{i}");
        let node = format!("{id}-n{}", i % nodes.max(1));
        let object = match scheduler {
            Some(s) => pod(id, &name, run, s, None),
            None => pod(id, &name, run, "default-scheduler", Some(&node)),
        };
        async move { api.create(&PostParams::default(), &object).await.map(|_| ()) }
    })
    .await
}

/// Deletes the pods of run `run` at once (no kubelet would confirm a
/// graceful deletion) and waits until they are gone.
pub async fn delete_pods(client: &Client, id: &str, run: &str) -> Result<(), BoxError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), id);
    delete_all(&api, &ListParams::default().labels(&format!("{RUN_LABEL}={run}"))).await
}

/// Deletes the objects `selector` picks at once (grace 0) and waits until
/// they are gone. Deleting thousands takes the API server longer than its
/// request timeout (60 s): it answers 500 "context deadline exceeded" and
/// keeps deleting, so a timed-out call is repeated.
async fn delete_all<K>(api: &Api<K>, selector: &ListParams) -> Result<(), BoxError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::default() };
    for attempt in 1..=20 {
        match api.delete_collection(&params, selector).await {
            Ok(_) => break,
            Err(kube::Error::Api(status)) if matches!(status.code, 500 | 504) && attempt < 20 => {
                tracing::info!(attempt, "a collection delete timed out on the API server; again");
            }
            Err(e) => return Err(e.into()),
        }
    }
    while !api.list_metadata(&selector.clone().limit(1)).await?.items.is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Deletes the bench's namespace (its pods first, at once) and nodes.
pub async fn clean_up(client: &Client, id: &str) -> Result<(), BoxError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), id);
    delete_all(&pods, &ListParams::default()).await?;
    let nodes: Api<Node> = Api::all(client.clone());
    delete_all(&nodes, &ListParams::default().labels(&format!("{LABEL}={id}"))).await?;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces.delete(id, &DeleteParams::default()).await?;
    // The namespace controller's last step (a test API server has none):
    // the namespace is empty, so its `kubernetes` finalizer may go.
    let mut ns = namespaces.get(id).await?;
    ns.spec = Some(k8s_openapi::api::core::v1::NamespaceSpec { finalizers: Some(Vec::new()) });
    namespaces.replace_subresource("finalize", id, &PostParams::default(), &ns).await?;
    Ok(())
}

/// Creates namespace `id` and kolo's CRDs if missing (kolo's scheduler
/// waits for its NodeMetric watch), and waits until NodeMetrics are served.
pub async fn prepare(client: &Client, id: &str) -> Result<(), BoxError> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": id}}))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in kolo_api::crd::all_crds() {
        match crds.create(&PostParams::default(), &crd).await {
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            other => drop(other?),
        }
    }
    let metrics: Api<kolo_api::crd::NodeMetric> = Api::all(client.clone());
    for _ in 0..300 {
        if metrics.list_metadata(&ListParams::default().limit(1)).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err("NodeMetrics are not served 30 s after creating kolo's CRDs".into())
}

/// When each pod of a run was first seen bound, from a watch.
#[derive(Clone, Default)]
pub struct Binds(Arc<Mutex<HashMap<String, Instant>>>);

impl Binds {
    /// The bind times so far.
    pub fn times(&self) -> Vec<Instant> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).values().copied().collect()
    }

    /// Pods bound so far.
    pub fn count(&self) -> usize {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }
}

/// Watches run `run`'s pods, recording when each gets a node; returns
/// once the watch's initial list is in.
pub async fn watch_binds(
    client: &Client,
    id: &str,
    run: &str,
) -> Result<(Binds, tokio::task::JoinHandle<()>), BoxError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), id);
    let config = watcher::Config::default().labels(&format!("{RUN_LABEL}={run}"));
    let binds = Binds::default();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let record = binds.clone();
    let task = tokio::spawn(async move {
        let mut ready = Some(ready_tx);
        let mut events = std::pin::pin!(watcher(api, config));
        while let Some(event) = events.next().await {
            let pod = match event {
                Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => pod,
                Ok(watcher::Event::InitDone) => {
                    ready.take().map(|tx| tx.send(()));
                    continue;
                }
                _ => continue,
            };
            if pod.spec.as_ref().is_some_and(|s| s.node_name.is_some()) {
                let name = pod.metadata.name.unwrap_or_default();
                let mut map = record.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                map.entry(name).or_insert_with(Instant::now);
            }
        }
    });
    ready_rx.await.map_err(|_| "the pod watch ended before its first list")?;
    Ok((binds, task))
}

/// The sum of the API server's `apiserver_request_total` counters.
pub async fn apiserver_requests(client: &Client) -> Result<f64, BoxError> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}
