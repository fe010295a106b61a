//! Evicting pods through the Eviction API (`pods/eviction`), which honours
//! PodDisruptionBudgets and graceful termination, instead of killing their
//! processes.
//!
//! `policy/v1` Eviction exists from Kubernetes 1.22; older servers only know
//! `policy/v1beta1`. The evictor asks with `policy/v1` first and, when the
//! server does not know it, falls back to `policy/v1beta1` and remembers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kolo_agent::evict::{EvictError, Evictor};
use kolo_agent::qos::PodState;
use kube::Client;
use tokio::runtime::Handle;

use crate::error::KubeError;
use crate::health::Health;

/// The Eviction group version a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictionVersion {
    /// `policy/v1` (Kubernetes 1.22+).
    V1,
    /// `policy/v1beta1` (older servers).
    V1beta1,
}

impl EvictionVersion {
    fn api_version(self) -> &'static str {
        match self {
            EvictionVersion::V1 => "policy/v1",
            EvictionVersion::V1beta1 => "policy/v1beta1",
        }
    }
}

/// The Eviction object for a pod.
pub fn eviction_body(namespace: &str, name: &str, version: EvictionVersion) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": version.api_version(),
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    })
}

/// Whether an error says the server does not know this Eviction version
/// (as opposed to refusing the eviction itself).
pub(crate) fn version_unknown(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => {
            let m = s.message.to_ascii_lowercase();
            matches!(s.code, 400 | 404 | 415 | 500)
                && (m.contains("no kind")
                    || m.contains("not registered")
                    || m.contains("policy/v1"))
                && !m.contains("not found")
        }
        _ => false,
    }
}

async fn post(
    client: &Client,
    namespace: &str,
    name: &str,
    version: EvictionVersion,
) -> Result<(), kube::Error> {
    post_eviction(client, namespace, name, &eviction_body(namespace, name, version)).await
}

/// POSTs the Eviction `body` for `namespace/name` (the descheduler adds a
/// UID precondition to the body).
pub(crate) async fn post_eviction(
    client: &Client,
    namespace: &str,
    name: &str,
    body: &serde_json::Value,
) -> Result<(), kube::Error> {
    let uri = format!("/api/v1/namespaces/{namespace}/pods/{name}/eviction");
    let body = serde_json::to_vec(body).map_err(kube::Error::SerdeError)?;
    let request = http::Request::post(uri)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .map_err(kube::Error::HttpError)?;
    client.request::<serde_json::Value>(request).await.map(drop)
}

/// Evicts `namespace/name`, starting with `policy/v1` unless `v1beta1_only`
/// says the server lacks it (set here when that is found out). A pod that
/// is already gone counts as evicted. Returns the version that worked.
pub async fn evict(
    client: &Client,
    namespace: &str,
    name: &str,
    v1beta1_only: &AtomicBool,
) -> Result<EvictionVersion, KubeError> {
    let object = format!("Pod/{namespace}/{name}");
    let mut version = if v1beta1_only.load(Ordering::Relaxed) {
        EvictionVersion::V1beta1
    } else {
        EvictionVersion::V1
    };
    loop {
        match post(client, namespace, name, version).await {
            Ok(()) => return Ok(version),
            Err(kube::Error::Api(s))
                if s.code == 404 && !version_unknown(&kube::Error::Api(s.clone())) =>
            {
                return Ok(version);
            }
            Err(e) if version == EvictionVersion::V1 && version_unknown(&e) => {
                tracing::info!(error = %e, "the API server lacks policy/v1 Eviction; using policy/v1beta1");
                v1beta1_only.store(true, Ordering::Relaxed);
                version = EvictionVersion::V1beta1;
            }
            // 429: a PodDisruptionBudget forbids it now.
            Err(e) => return Err(KubeError::api("evict", object, e)),
        }
    }
}

/// An [`Evictor`] for the agent's QoS strategies that goes through the API
/// server. The strategies run on a plain thread; each eviction is one
/// blocking call on the runtime `runtime`.
pub struct ApiEvictor {
    client: Client,
    runtime: Handle,
    v1beta1_only: Arc<AtomicBool>,
    health: Arc<Health>,
}

impl ApiEvictor {
    /// An evictor calling through `client` on `runtime`.
    pub fn new(client: Client, runtime: Handle, health: Arc<Health>) -> ApiEvictor {
        ApiEvictor { client, runtime, v1beta1_only: Arc::new(AtomicBool::new(false)), health }
    }
}

impl Evictor for ApiEvictor {
    fn evict(&mut self, pod: &PodState, reason: &str) -> Result<(), EvictError> {
        let (namespace, name) = (&pod.pod.id.namespace, &pod.pod.id.name);
        if !pod.is_be() {
            return Err(EvictError {
                pod: pod.pod.id.key(),
                message: format!("refusing to evict a {:?} pod", pod.pod.qos),
            });
        }
        tracing::warn!(pod = %pod.pod.id.key(), %reason, "evicting through the Eviction API");
        let result =
            self.runtime.block_on(evict(&self.client, namespace, name, &self.v1beta1_only));
        self.health.count("evict", &result);
        result.map(drop).map_err(|e| EvictError { pod: pod.pod.id.key(), message: e.to_string() })
    }
}
