//! The manager's job-scheduling controllers, run by the leader after each
//! SLO pass on the same stores: the PodGroup status controller
//! ([`super::podgroup_status`]) and the ElasticQuota status and over-use
//! revocation controller ([`super::quota_status`]).
//!
//! Both CRDs are optional: while one is not installed its store stays empty
//! and its controller has nothing to do.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kolo_api::crd::{ElasticQuota, PodGroup};
use kolo_core::clock::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::{Api, Client, ResourceExt};

use kolo_scheduler::plugins::elastic_quota::args::ElasticQuotaArgs;
use kolo_scheduler::plugins::elastic_quota::status::{OverUseClock, revoke_enabled};

use super::podgroup_status::{count_members, status_patch, status_to_write};
use super::quota_status::{QuotaInputs, plan};
use crate::agent::eviction::evict;
use crate::error::KubeError;
use crate::health::Health;
use crate::scheduler::preempt::EVICTION_TIMEOUT;

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
    /// The ElasticQuota plugin's arguments (revocation, runtime quota, the
    /// system and default quotas' max).
    quota_args: ElasticQuotaArgs,
    /// Since when each quota is over its runtime.
    over_use: OverUseClock,
    /// The server lacks `policy/v1` Eviction (found out on the first one).
    v1beta1_only: Arc<AtomicBool>,
}

impl JobControllers {
    /// Controllers writing through `client`.
    pub fn new(
        client: Client,
        health: Arc<Health>,
        quota_args: ElasticQuotaArgs,
    ) -> JobControllers {
        JobControllers {
            client,
            health,
            quota_args,
            over_use: OverUseClock::default(),
            v1beta1_only: Arc::new(AtomicBool::new(false)),
        }
    }

    /// How often the loop must wake for these controllers even without a
    /// change: the revoke interval when revocation is on.
    pub fn wake_interval(&self) -> Option<std::time::Duration> {
        revoke_enabled(&self.quota_args).then_some(self.quota_args.revoke_pod_interval)
    }

    /// One pass of every job controller.
    pub async fn pass(&mut self, stores: &JobStores) {
        let pods = stores.pods.state();
        self.pod_groups(&stores.groups.state(), &pods).await;
        self.quotas(&stores.quotas.state(), &pods, &stores.nodes.state()).await;
    }

    /// Writes each ElasticQuota's status and annotations where they
    /// changed; revokes over-used quotas' pods when that is on.
    async fn quotas(
        &mut self,
        quotas: &[Arc<ElasticQuota>],
        pods: &[Arc<Pod>],
        nodes: &[Arc<Node>],
    ) {
        if quotas.is_empty() {
            return;
        }
        let inputs = QuotaInputs { quotas, pods, nodes };
        let plan = plan(&self.quota_args, &inputs, &mut self.over_use, Timestamp::now());
        for refused in &plan.refused {
            tracing::warn!(%refused, "left out of the quota tree");
        }
        for write in &plan.writes {
            let api: Api<ElasticQuota> = Api::namespaced(self.client.clone(), &write.namespace);
            let object = format!("ElasticQuota/{}/{}", write.namespace, write.name);
            let result = api
                .patch(&write.name, &PatchParams::default(), &Patch::Merge(&write.patch))
                .await
                .map(drop)
                .map_err(|e| KubeError::api("patch", &object, e));
            self.health.count("patch_elasticquota_status", &result);
            match result {
                Ok(()) => {
                    tracing::info!(quota = %object, patch = %write.patch, "wrote ElasticQuota status")
                }
                Err(e) => tracing::warn!(error = %e, "write failed; the next pass retries"),
            }
        }
        let terminating: HashSet<String> = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_some())
            .map(|p| format!("{}/{}", p.namespace().unwrap_or_default(), p.name_any()))
            .collect();
        for (pod, quota) in plan.evictions.iter().filter(|(p, _)| !terminating.contains(p)) {
            self.revoke(pod, quota).await;
        }
    }

    /// Evicts one pod of an over-used quota through the Eviction API.
    async fn revoke(&self, pod: &str, quota: &str) {
        let Some((namespace, name)) = pod.split_once('/') else { return };
        let eviction = evict(&self.client, namespace, name, &self.v1beta1_only);
        let result = match tokio::time::timeout(EVICTION_TIMEOUT, eviction).await {
            Ok(result) => result.map(drop).map_err(|e| e.to_string()),
            Err(_) => Err(format!("evict Pod/{pod}: no answer in {EVICTION_TIMEOUT:?}")),
        };
        self.health.count("quota_revoke_evict", &result);
        match result {
            Ok(()) => tracing::info!(%pod, %quota, "evicted: its quota is over its runtime"),
            Err(e) => tracing::warn!(error = %e, %quota, "could not revoke"),
        }
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
