//! The manager's job-scheduling controllers, run by the leader after each
//! SLO pass on the same stores: the PodGroup status controller
//! ([`super::podgroup_status`]) and the ElasticQuota status and over-use
//! revocation controller ([`super::quota_status`]).
//!
//! Both CRDs are optional: while one is not installed its store stays empty
//! and its controller has nothing to do.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kolo_api::crd::{ElasticQuota, PodGroup};
use kolo_core::clock::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::{Api, Client, ResourceExt};

use super::podgroup_status::{count_members, status_patch, status_to_write};
use crate::error::KubeError;
use crate::health::Health;

/// The stores the job controllers read.
pub(super) struct JobStores {
    /// Every pod (shared with the SLO pass).
    pub pods: Store<Pod>,
    /// The managed nodes (shared with the SLO pass).
    pub nodes: Store<Node>,
    /// ElasticQuotas (empty while the CRD is missing).
    pub quotas: Store<ElasticQuota>,
    /// PodGroups (empty while the CRD is missing).
    pub groups: Store<PodGroup>,
}

/// The job controllers' state between passes.
pub(super) struct JobControllers {
    client: Client,
    health: Arc<Health>,
    /// The server lacks `policy/v1` Eviction (found out on the first one).
    v1beta1_only: Arc<AtomicBool>,
}

impl JobControllers {
    /// Controllers writing through `client`.
    pub fn new(client: Client, health: Arc<Health>) -> JobControllers {
        JobControllers { client, health, v1beta1_only: Arc::new(AtomicBool::new(false)) }
    }

    /// One pass of every job controller.
    pub async fn pass(&mut self, stores: &JobStores) {
        let pods = stores.pods.state();
        self.pod_groups(&stores.groups.state(), &pods).await;
    }

    /// Writes each PodGroup's status where it changed.
    async fn pod_groups(&self, groups: &[Arc<PodGroup>], pods: &[Arc<Pod>]) {
        if groups.is_empty() {
            return;
        }
        let members = count_members(pods.iter().map(|p| &**p));
        let now = Time(Timestamp::now());
        for group in groups {
            let namespace = group.namespace().unwrap_or_default();
            let key = (namespace.clone(), group.name_any());
            let counts = members.get(&key).copied().unwrap_or_default();
            let Some(status) = status_to_write(group, counts, &now) else { continue };
            let api: Api<PodGroup> = Api::namespaced(self.client.clone(), &namespace);
            let object = format!("PodGroup/{namespace}/{}", key.1);
            let patch = Patch::Merge(status_patch(&status));
            let result = api
                .patch(&key.1, &PatchParams::default(), &patch)
                .await
                .map(drop)
                .map_err(|e| KubeError::api("patch status of", &object, e));
            self.health.count("patch_podgroup_status", &result);
            match result {
                Ok(()) => tracing::info!(podgroup = %object, phase = ?status.phase,
                    scheduled = ?status.scheduled, "wrote PodGroup status"),
                Err(e) => tracing::warn!(error = %e, "write failed; the next pass retries"),
            }
        }
    }
}
