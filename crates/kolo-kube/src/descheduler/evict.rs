//! The descheduler's evictions: through the Eviction API (so
//! PodDisruptionBudgets and graceful termination hold), guarded by the
//! pod's UID (a replacement with the same name is never evicted), and
//! classified so a budget's refusal (429) is told apart from a failure.
//!
//! The request goes through a client without kube's retry layer: that
//! layer retries a 429 for minutes, while a refusal here is an expected
//! answer the migration controller records on its job (`FailedEvict`).
//! `policy/v1` is asked first; a server that lacks it (Kubernetes 1.20)
//! gets `policy/v1beta1`, remembered in `v1beta1_only`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kolo_core::PodRef;
use kube::Client;

use crate::agent::eviction::{EvictionVersion, eviction_body, post_eviction, version_unknown};

/// How long one eviction may take before it counts as failed.
pub const EVICTION_TIMEOUT: Duration = Duration::from_secs(10);

/// How an eviction ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvictionOutcome {
    /// The API server accepted it: the pod terminates.
    Evicted,
    /// The pod was already gone (404).
    Gone,
    /// A PodDisruptionBudget forbids it now (429), with the server's words.
    Refused(String),
    /// Anything else: the pod was replaced (UID precondition, 409), the
    /// request failed or timed out.
    Failed(String),
}

impl EvictionOutcome {
    /// The `result` label of `kolo_descheduler_evictions_total`.
    pub fn label(&self) -> &'static str {
        match self {
            EvictionOutcome::Evicted => "evicted",
            EvictionOutcome::Gone => "gone",
            EvictionOutcome::Refused(_) => "refused",
            EvictionOutcome::Failed(_) => "error",
        }
    }

    /// What the migration controller is told: `Ok` when the pod is going
    /// (or gone), else why not.
    pub fn result(&self) -> Result<(), String> {
        match self {
            EvictionOutcome::Evicted | EvictionOutcome::Gone => Ok(()),
            EvictionOutcome::Refused(m) | EvictionOutcome::Failed(m) => Err(m.clone()),
        }
    }
}

/// The Eviction object for `pod`, with a UID precondition when the UID is
/// known.
pub fn guarded_eviction_body(pod: &PodRef, version: EvictionVersion) -> serde_json::Value {
    let mut body = eviction_body(&pod.namespace, &pod.name, version);
    if !pod.uid.is_empty() {
        body["deleteOptions"] = serde_json::json!({"preconditions": {"uid": pod.uid}});
    }
    body
}

async fn post(client: &Client, pod: &PodRef, version: EvictionVersion) -> Result<(), kube::Error> {
    let body = guarded_eviction_body(pod, version);
    post_eviction(client, &pod.namespace, &pod.name, &body).await
}

/// Classifies the answer to one eviction request.
pub fn classify(pod: &PodRef, result: Result<(), kube::Error>) -> EvictionOutcome {
    match result {
        Ok(()) => EvictionOutcome::Evicted,
        Err(kube::Error::Api(s)) if s.code == 404 => EvictionOutcome::Gone,
        Err(kube::Error::Api(s)) if s.code == 429 => {
            EvictionOutcome::Refused(format!("evict Pod/{pod}: {}", s.message))
        }
        Err(e) => EvictionOutcome::Failed(format!("evict Pod/{pod}: {e}")),
    }
}

/// Evicts `pod` through `client` (which should not retry 429s), within
/// [`EVICTION_TIMEOUT`].
pub async fn evict_pod(
    client: &Client,
    pod: &PodRef,
    v1beta1_only: &AtomicBool,
) -> EvictionOutcome {
    let attempt = async {
        let mut version = if v1beta1_only.load(Ordering::Relaxed) {
            EvictionVersion::V1beta1
        } else {
            EvictionVersion::V1
        };
        loop {
            match post(client, pod, version).await {
                Err(e) if version == EvictionVersion::V1 && version_unknown(&e) => {
                    tracing::info!(error = %e, "the API server lacks policy/v1 Eviction; using policy/v1beta1");
                    v1beta1_only.store(true, Ordering::Relaxed);
                    version = EvictionVersion::V1beta1;
                }
                result => return classify(pod, result),
            }
        }
    };
    match tokio::time::timeout(EVICTION_TIMEOUT, attempt).await {
        Ok(outcome) => outcome,
        Err(_) => {
            EvictionOutcome::Failed(format!("evict Pod/{pod}: no answer in {EVICTION_TIMEOUT:?}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    fn api(code: u16, message: &str) -> Result<(), kube::Error> {
        Err(kube::Error::Api(Status::failure(message, "x").with_code(code).boxed()))
    }

    #[test]
    fn answers_are_classified_and_reported() {
        let pod = PodRef::new("ns", "web", "u1");
        let budget = "Cannot evict pod as it would violate the pod's disruption budget.";
        let cases = [
            (Ok(()), "evicted", Ok(())),
            (api(404, "not found"), "gone", Ok(())),
            (api(429, budget), "refused", Err(format!("evict Pod/ns/web: {budget}"))),
            (api(409, "uid mismatch"), "error", Err("evict Pod/ns/web: ".to_string())),
        ];
        for (answer, label, want) in cases {
            let outcome = classify(&pod, answer);
            assert_eq!(outcome.label(), label, "{outcome:?}");
            match (outcome.result(), want) {
                (Err(got), Err(want)) => assert!(got.starts_with(&want), "{got} vs {want}"),
                (got, want) => assert_eq!(got, want),
            }
        }
    }

    #[test]
    fn the_body_carries_the_uid_precondition_when_known() {
        let body = guarded_eviction_body(&PodRef::new("ns", "web", "u1"), EvictionVersion::V1beta1);
        assert_eq!(body["apiVersion"], "policy/v1beta1");
        assert_eq!(body["metadata"]["name"], "web");
        assert_eq!(body["deleteOptions"]["preconditions"]["uid"], "u1");
        let bare = guarded_eviction_body(&PodRef::new("ns", "web", ""), EvictionVersion::V1);
        assert!(bare.get("deleteOptions").is_none());
    }
}
