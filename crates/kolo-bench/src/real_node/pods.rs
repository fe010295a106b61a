//! The benchmark's objects on the real node, through the API server: its
//! namespace, the LS pod and the BE hog pods (bound to the node by name:
//! the one-node cluster has no scheduler), and where the kubelet put their
//! cgroups.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::BoxError;

/// How long a pod may take to run, and the namespace to go.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The local busybox image of `scripts/cluster` (never pulled).
const IMAGE: &str = "docker.io/local/busybox:1";

/// A connection to the cluster, with the runtime its calls run on.
pub(crate) struct Cluster {
    pub runtime: tokio::runtime::Runtime,
    pub client: Client,
}

/// A running pod: what locates its cgroups.
#[derive(Debug, Clone)]
pub(crate) struct RunningPod {
    /// `metadata.uid`: the pod cgroup is `pod<uid>`.
    pub uid: String,
    /// The first container's ID without its `containerd://` prefix: its
    /// cgroup's name.
    pub container_id: String,
}

impl Cluster {
    /// Connects with `kubeconfig`.
    pub fn connect(kubeconfig: &Path) -> Result<Cluster, BoxError> {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        let client = runtime.block_on(kolo_kube::client::connect(Some(kubeconfig)))?;
        Ok(Cluster { runtime, client })
    }

    /// Creates namespace `name`.
    pub fn create_namespace(&self, name: &str) -> Result<(), BoxError> {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        let api: Api<Namespace> = Api::all(self.client.clone());
        self.runtime.block_on(api.create(&PostParams::default(), &ns))?;
        Ok(())
    }

    /// Deletes namespace `name` (and so its pods) and waits until it is
    /// gone.
    pub fn delete_namespace(&self, name: &str) -> Result<(), BoxError> {
        self.runtime.block_on(delete_namespace(self.client.clone(), name, true))
    }

    /// Creates `pod` (a Pod as JSON) in `namespace` and waits until its
    /// container runs.
    pub fn run_pod(&self, namespace: &str, pod: serde_json::Value) -> Result<RunningPod, BoxError> {
        let pod: Pod = serde_json::from_value(pod)?;
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        self.runtime.block_on(async {
            api.create(&PostParams::default(), &pod).await?;
            let start = Instant::now();
            loop {
                if let Some(running) = running(&api.get(&name).await?) {
                    return Ok(running);
                }
                if start.elapsed() > TIMEOUT {
                    return Err(
                        format!("pod {namespace}/{name} not running after {TIMEOUT:?}").into()
                    );
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    }
}

/// Deletes namespace `name` (and so its pods) and, with `wait`, waits
/// until it is gone. Gone already is fine.
pub(crate) async fn delete_namespace(
    client: Client,
    name: &str,
    wait: bool,
) -> Result<(), BoxError> {
    let api: Api<Namespace> = Api::all(client);
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.is_not_found() => return Ok(()),
        Err(e) => return Err(e.into()),
    }
    if !wait {
        return Ok(());
    }
    let start = Instant::now();
    loop {
        match api.get_opt(name).await? {
            None => break,
            Some(_) if start.elapsed() > TIMEOUT => {
                return Err(format!("namespace {name} still there after {TIMEOUT:?}").into());
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    Ok(())
}

/// The pod's cgroup identity once it runs.
fn running(pod: &Pod) -> Option<RunningPod> {
    let status = pod.status.as_ref()?;
    let container = status.container_statuses.as_ref()?.first()?;
    container.state.as_ref()?.running.as_ref()?;
    let id = container.container_id.as_deref()?;
    let container_id = id.split_once("://").map_or(id, |(_, id)| id).to_string();
    Some(RunningPod { uid: pod.metadata.uid.clone()?, container_id })
}

/// The LS pod: Burstable (requests 1 CPU and 64 MiB, no limits),
/// `koordinator.sh/qosClass: LS`, a `sleep` container whose cgroups the
/// request loop joins.
pub(crate) fn ls_pod(node: &str) -> serde_json::Value {
    pod(
        "ls-server",
        "LS",
        node,
        "sleep 1000000",
        json!({"requests": {"cpu": "1", "memory": "64Mi"}}),
    )
}

/// BE hog pod `n`: BestEffort (no requests), `koordinator.sh/qosClass:
/// BE`, one busy loop.
pub(crate) fn be_pod(node: &str, n: usize) -> serde_json::Value {
    pod(&format!("be-hog-{n}"), "BE", node, "while :; do :; done", json!({}))
}

fn pod(
    name: &str,
    qos: &str,
    node: &str,
    script: &str,
    resources: serde_json::Value,
) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"koordinator.sh/qosClass": qos}},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": name, "image": IMAGE, "imagePullPolicy": "Never",
                "command": ["sh", "-c", script], "resources": resources,
            }],
        },
    })
}

/// A pod cgroup's directory in the `controller` hierarchy: the kubelet's
/// cgroupfs layout under its `--cgroup-root` (`kubepods/<qos>/pod<uid>`;
/// Guaranteed pods sit directly under `kubepods`, none here).
pub(crate) fn pod_dir(root: &str, controller: &str, qos: &str, uid: &str) -> PathBuf {
    Path::new(kolo_agent::sandbox::CGROUP_ROOT)
        .join(controller)
        .join(root.trim_start_matches('/'))
        .join("kubepods")
        .join(qos)
        .join(format!("pod{uid}"))
}
