//! Acting on a preemption the scheduler decided: evict the victims through
//! the Eviction API (which honours PodDisruptionBudgets and graceful
//! termination), record the nomination in the preemptor's
//! `status.nominatedNodeName`, and say so in Events.
//!
//! The scheduler keeps the nomination itself and counts the preemptor on
//! the node for pods of lower priority; the victims' deletions come back
//! through the pod watch and retry the preemptor.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kolo_core::PodRef;
use kolo_scheduler::report::Victim;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};

use super::report::Reports;
use crate::agent::eviction::evict;
use crate::error::KubeError;
use crate::health::Health;

/// How long an eviction may take before it counts as refused.
pub const EVICTION_TIMEOUT: Duration = Duration::from_secs(10);

/// One preemption to carry out.
#[derive(Debug, Clone)]
pub struct Preemption {
    /// The pod that preempts.
    pub preemptor: PodRef,
    /// The node it is nominated to.
    pub node: String,
    /// The pods to evict there.
    pub victims: Vec<Victim>,
}

/// The merge patch that sets a pod's `status.nominatedNodeName`.
pub fn nomination_patch(node: &str) -> serde_json::Value {
    serde_json::json!({"status": {"nominatedNodeName": node}})
}

/// The merge patch that removes a pod's `status.nominatedNodeName`.
pub fn clear_nomination_patch() -> serde_json::Value {
    serde_json::json!({"status": {"nominatedNodeName": null}})
}

/// Removes the preemptor's `status.nominatedNodeName` once the scheduler
/// holds no nomination for it any more (kube-scheduler clears it when
/// preemption finds no candidate), so the API does not show a node the
/// pod is no longer waiting for. A failure is logged and counted.
pub async fn clear_nomination(client: Client, health: Arc<Health>, pod: PodRef) {
    let api: Api<Pod> = Api::namespaced(client, &pod.namespace);
    let patch = Patch::Merge(clear_nomination_patch());
    let result = api.patch_status(&pod.name, &PatchParams::default(), &patch).await;
    health.count("clear_nomination", &result);
    match result {
        Ok(_) => tracing::info!(pod = %pod, "nominatedNodeName cleared"),
        Err(e) => {
            let e = KubeError::api("patch status of", format!("Pod/{pod}"), e);
            tracing::warn!(error = %e, "could not clear nominatedNodeName");
        }
    }
}

/// What the Events say: `Preempted by ns/name on node n` on each victim.
pub fn preempted_note(preemptor: &PodRef, node: &str) -> String {
    format!("Preempted by {preemptor} on node {node}")
}

/// Carries out `preemption`: every victim evicted (a failure is logged and
/// counted), then the nomination patched on the preemptor. Returns whether
/// every eviction went through; if not, the caller drops the nomination so
/// the preemptor does not wait for victims that stay (a
/// PodDisruptionBudget refused, 429). `v1beta1_only` remembers that the
/// server lacks `policy/v1` Eviction (v1.20 test servers).
pub async fn preempt(
    client: Client,
    reports: Reports,
    health: Arc<Health>,
    v1beta1_only: Arc<AtomicBool>,
    preemption: Preemption,
) -> bool {
    let Preemption { preemptor, node, victims } = preemption;
    let note = preempted_note(&preemptor, &node);
    let mut all_evicted = true;
    for victim in &victims {
        let target = PodRef::from_key(&victim.pod, &victim.uid);
        // The client retries a 429 (a budget refusing) for minutes; the
        // preemptor should not wait that long to try elsewhere.
        let eviction = evict(&client, &target.namespace, &target.name, &v1beta1_only);
        let result = match tokio::time::timeout(EVICTION_TIMEOUT, eviction).await {
            Ok(result) => result.map(drop).map_err(|e| e.to_string()),
            Err(_) => Err(format!(
                "evict Pod/{}: no answer in {EVICTION_TIMEOUT:?} (a PodDisruptionBudget refusing?)",
                victim.pod
            )),
        };
        health.count("preempt_evict", &result);
        match result {
            Ok(_) => {
                tracing::info!(victim = %victim.pod, preemptor = %preemptor, %node, "preempted");
                reports.preempted(&target, &note);
            }
            Err(e) => {
                tracing::warn!(error = %e, preemptor = %preemptor, "could not evict victim");
                all_evicted = false;
            }
        }
    }
    if !all_evicted {
        // Nominating a node whose victims stay would only hold it.
        return false;
    }
    let api: Api<Pod> = Api::namespaced(client, &preemptor.namespace);
    let patch = Patch::Merge(nomination_patch(&node));
    let result = api.patch_status(&preemptor.name, &PatchParams::default(), &patch).await;
    health.count("nominate", &result);
    if let Err(e) = result {
        let e = KubeError::api("patch status of", format!("Pod/{preemptor}"), e);
        tracing::warn!(error = %e, "could not set nominatedNodeName");
    }
    reports.preempting(&preemptor, &node, victims.len());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_and_note_say_what_kube_scheduler_writes() {
        assert_eq!(
            nomination_patch("node-1"),
            serde_json::json!({"status": {"nominatedNodeName": "node-1"}})
        );
        assert_eq!(
            clear_nomination_patch(),
            serde_json::json!({"status": {"nominatedNodeName": null}})
        );
        let preemptor = PodRef::from_key("ns/web", "u-web");
        assert_eq!(preempted_note(&preemptor, "node-1"), "Preempted by ns/web on node node-1");
    }
}
