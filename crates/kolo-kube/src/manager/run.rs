//! The manager's controllers: reflectors in, the pass in the middle, API
//! writes out.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kolo_api::crd::{NodeMetric, NodeSLO};
use kolo_core::clock::Timestamp;
use kolo_manager::config::SloConfigStore;
use kolo_manager::pass::{MANAGED_BY, ManagerAction, Pass, StoreState};
use kolo_scheduler::plugins::elastic_quota::args::ElasticQuotaArgs;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use super::metrics::ManagerMetrics;
use crate::error::KubeError;
use crate::health::Health;
use crate::leader::Leadership;
use crate::reflect::{reflect, reflect_optional};

use super::jobs::{JobControllers, JobStores};

/// How the controllers run.
#[derive(Debug, Clone)]
pub struct ManagerOptions {
    /// Namespace of the `slo-controller-config` ConfigMap.
    pub config_namespace: String,
    /// Its name.
    pub config_name: String,
    /// A pass runs at least this often (time-driven decisions: stale
    /// NodeMetrics degrade batch resources, the update interval elapses).
    pub resync: Duration,
    /// Only nodes matching this label selector are managed (all when
    /// `None`): to shard nodes between managers, or to keep a test to its
    /// own nodes.
    pub node_selector: Option<String>,
    /// After a change, wait this long for more before a pass (a burst of
    /// pod events makes one pass, not hundreds).
    pub debounce: Duration,
    /// The ElasticQuota plugin's arguments for the quota controller
    /// (`monitorAllQuotas` turns revocation on, `delayEvictTime`,
    /// `revokePodInterval`, the system and default quotas' max...).
    pub quota_args: ElasticQuotaArgs,
}

impl Default for ManagerOptions {
    fn default() -> ManagerOptions {
        ManagerOptions {
            config_namespace: kolo_manager::config::DEFAULT_CONFIG_NAMESPACE.into(),
            config_name: kolo_manager::config::DEFAULT_CONFIG_NAME.into(),
            resync: Duration::from_secs(30),
            node_selector: None,
            debounce: Duration::from_millis(200),
            quota_args: ElasticQuotaArgs::default(),
        }
    }
}

/// The stores the controllers read, filled by reflectors.
struct Stores {
    nodes: Store<Node>,
    pods: Store<Pod>,
    metrics: Store<NodeMetric>,
    slos: Store<NodeSLO>,
    config: Store<ConfigMap>,
    /// What the job controllers read besides pods and nodes.
    jobs: JobStores,
}

/// The manager's SLO controllers.
pub struct Controller {
    client: Client,
    options: ManagerOptions,
    health: Arc<Health>,
    config: SloConfigStore,
    config_version: Option<String>,
    /// The decisions, and what the manager wrote.
    pass: Pass,
    /// PodGroup and ElasticQuota status, quota revocation.
    jobs: JobControllers,
    metrics: Arc<ManagerMetrics>,
}

impl Controller {
    /// Controllers writing through `client`.
    pub fn new(client: Client, options: ManagerOptions, health: Arc<Health>) -> Controller {
        Controller {
            metrics: ManagerMetrics::new(&health),
            jobs: JobControllers::new(client.clone(), health.clone(), options.quota_args.clone()),
            client,
            options,
            health,
            config: SloConfigStore::new(),
            config_version: None,
            pass: Pass::new(),
        }
    }

    /// Watches the cluster and runs passes until leadership is lost (when
    /// `leadership` is given) or the process ends.
    pub async fn run(mut self, leadership: Option<Leadership>) -> Result<(), KubeError> {
        let changed = Arc::new(Notify::new());
        let c = &self.client;
        let cm_selector = format!("metadata.name={}", self.options.config_name);
        let mut node_config = watcher::Config::default();
        if let Some(selector) = &self.options.node_selector {
            node_config = node_config.labels(selector);
        }
        let nodes = reflect(Api::all(c.clone()), node_config, changed.clone());
        let pods = reflect(Api::all(c.clone()), watcher::Config::default(), changed.clone());
        let jobs = JobStores {
            pods: pods.clone(),
            nodes: nodes.clone(),
            quotas: reflect_optional(
                Api::all(c.clone()),
                watcher::Config::default(),
                changed.clone(),
            ),
            groups: reflect_optional(
                Api::all(c.clone()),
                watcher::Config::default(),
                changed.clone(),
            ),
        };
        let stores = Stores {
            nodes,
            pods,
            metrics: reflect(Api::all(c.clone()), watcher::Config::default(), changed.clone()),
            slos: reflect(Api::all(c.clone()), watcher::Config::default(), changed.clone()),
            config: reflect(
                Api::namespaced(c.clone(), &self.options.config_namespace),
                watcher::Config::default().fields(&cm_selector),
                changed.clone(),
            ),
            jobs,
        };
        tokio::select! {
            e = Leadership::lost_if_held(leadership) => Err(e),
            () = self.passes(&stores, &changed) => Ok(()),
        }
    }

    async fn passes(&mut self, stores: &Stores, changed: &Notify) {
        for (kind, ready) in [
            ("nodes", stores.nodes.wait_until_ready().await),
            ("pods", stores.pods.wait_until_ready().await),
            ("nodemetrics", stores.metrics.wait_until_ready().await),
            ("nodeslos", stores.slos.wait_until_ready().await),
            ("configmap", stores.config.wait_until_ready().await),
        ] {
            if ready.is_err() {
                tracing::error!(kind, "reflector stopped before its first list");
            }
        }
        tracing::info!("caches synced; manager controllers running");
        self.health.set_ready(true);
        loop {
            self.pass(stores).await;
            self.jobs.pass(&stores.jobs).await;
            // Revocation runs every revokePodInterval; the SLO pass then
            // runs too, and writes nothing when nothing changed.
            let wake = self
                .jobs
                .wake_interval()
                .map_or(self.options.resync, |w| w.min(self.options.resync));
            tokio::select! {
                () = changed.notified() => {}
                () = tokio::time::sleep(wake) => {}
            }
            tokio::time::sleep(self.options.debounce).await;
        }
    }

    /// Reads the ConfigMap into the configuration store when it changed.
    fn refresh_config(&mut self, stores: &Stores) {
        let key = ObjectRef::new(&self.options.config_name).within(&self.options.config_namespace);
        let cm = stores.config.get(&key);
        let version = cm.as_ref().map(|c| c.metadata.resource_version.clone().unwrap_or_default());
        if self.config_version.is_some() && version == self.config_version {
            return;
        }
        self.config.update(cm.as_ref().map(|c| c.data.clone().unwrap_or_default()).as_ref());
        let status = self.config.status();
        if !status.config_map_present {
            tracing::warn!(configmap = %key, "ConfigMap not found: co-location is off (defaults)");
        }
        for error in &status.errors {
            tracing::error!(configmap = %key, %error, "ConfigMap key rejected; keeping its last good value");
        }
        self.metrics.config(status.errors.len(), status.config_map_present);
        self.pass.config_status(status);
        self.config_version = version.or(Some(String::new()));
    }

    /// One pass: decide, then write, then record what was written.
    async fn pass(&mut self, stores: &Stores) {
        self.refresh_config(stores);
        let state = StoreState {
            nodes: stores.nodes.state(),
            pods: stores.pods.state(),
            metrics: stores.metrics.state(),
            slos: stores.slos.state(),
        };
        let now = Timestamp::now();
        let started = std::time::Instant::now();
        let plan = self.pass.plan(&state, &self.config.config(), now);
        self.metrics.pass(started.elapsed(), &plan);
        for warning in plan.all_warnings() {
            tracing::warn!("{warning}");
        }
        for action in plan.into_actions() {
            match self.act(&action).await {
                Ok(()) => self.pass.applied(&action, now),
                Err(e) => tracing::warn!(error = %e, "write failed; the next pass retries"),
            }
        }
    }

    async fn act(&self, action: &ManagerAction) -> Result<(), KubeError> {
        let c = self.client.clone();
        let (what, result) = match action {
            ManagerAction::PatchNodeStatus { node, write } => {
                let api: Api<Node> = Api::all(c);
                let patch = Patch::Merge(write.resources.status_patch());
                let r = api.patch_status(node, &PatchParams::default(), &patch).await;
                if r.is_ok() {
                    let (reason, resources) = (&write.reason, &write.resources);
                    tracing::info!(%node, %reason, ?resources, "patched node batch / mid allocatable");
                }
                let r = r
                    .map(drop)
                    .map_err(|e| KubeError::api("patch status of", format!("Node/{node}"), e));
                ("patch_node_status", r)
            }
            ManagerAction::PutNodeMetric { node, write } => {
                let mut object = NodeMetric::new(node, (*write.spec).clone());
                object.metadata.labels = Some(managed_by());
                ("put_nodemetric", put(Api::all(c), node, &object, write.create).await)
            }
            ManagerAction::PutNodeSlo { node, write } => {
                let mut object = NodeSLO::new(node, (*write.spec).clone());
                object.metadata.labels = Some(managed_by());
                ("put_nodeslo", put(Api::all(c), node, &object, write.create).await)
            }
            ManagerAction::DeleteNodeMetric { node } => {
                ("delete_nodemetric", delete::<NodeMetric>(Api::all(c), node).await)
            }
            ManagerAction::DeleteNodeSlo { node } => {
                ("delete_nodeslo", delete::<NodeSLO>(Api::all(c), node).await)
            }
        };
        self.health.count(what, &result);
        result
    }
}

/// The labels of the objects the manager creates.
fn managed_by() -> std::collections::BTreeMap<String, String> {
    [(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())].into()
}

/// The `Kind/name` of an object for errors and logs.
fn describe<K: Resource<DynamicType = ()>>(name: &str) -> String {
    format!("{}/{name}", K::kind(&()))
}

/// Creates `object`, or replaces its `spec` (a JSON patch, so fields the
/// new spec lacks are removed, which a merge patch would keep).
async fn put<K>(api: Api<K>, name: &str, object: &K, create: bool) -> Result<(), KubeError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + serde::Serialize + Debug,
{
    let result = if create {
        api.create(&PostParams::default(), object).await.map(drop)
    } else {
        let spec = serde_json::to_value(object)
            .ok()
            .and_then(|mut v| v.get_mut("spec").map(std::mem::take))
            .unwrap_or_default();
        let patch: json_patch::Patch = serde_json::from_value(serde_json::json!([
            { "op": "add", "path": "/spec", "value": spec }
        ]))
        .unwrap_or_default();
        api.patch(name, &PatchParams::default(), &Patch::Json::<()>(patch)).await.map(drop)
    };
    if result.is_ok() {
        tracing::info!(object = %describe::<K>(name), create, "wrote spec");
    }
    result.map_err(|e| {
        KubeError::api(if create { "create" } else { "update" }, describe::<K>(name), e)
    })
}

/// Deletes an object; one already gone is fine.
async fn delete<K>(api: Api<K>, name: &str) -> Result<(), KubeError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {
            tracing::info!(object = %describe::<K>(name), "deleted (its node is gone)");
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(KubeError::api("delete", describe::<K>(name), e)),
    }
}
