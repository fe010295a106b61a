//! Watchers feeding the descheduler driver: nodes, pods, NodeMetrics,
//! PodMigrationJobs, Reservations (optional CRD) and the workloads the
//! migration limits count replicas of (ReplicaSets, StatefulSets, Jobs).
//!
//! Deployments are not watched: a Deployment's pods are owned by its
//! ReplicaSets, whose `spec.replicas` the limits read. PodDisruptionBudgets
//! are not watched either: the Eviction API enforces them.

use std::fmt::Debug;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc::UnboundedSender;

use super::stores::Update;
use crate::mirror::{Change, Mirror};
use crate::optional_crd::{CrdPresence, PresenceNote};

/// Which objects the driver watches.
#[derive(Debug, Clone, Default)]
pub struct WatchScope {
    /// Only pods (and their workloads) of this namespace; all when `None`.
    pub namespace: Option<String>,
    /// Only nodes matching this label selector; all when `None`.
    pub node_selector: Option<String>,
}

impl WatchScope {
    fn namespaced<K>(&self, client: &Client) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        match &self.namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }
}

/// Starts one watcher per kind; each retries with kube-runtime's backoff
/// and relists when its watch cannot resume (the [`Mirror`] turns a relist
/// into the deletes the watch missed).
pub fn spawn_watchers(client: &Client, scope: &WatchScope, updates: &UnboundedSender<Update>) {
    let all = watcher::Config::default();
    let mut nodes = watcher::Config::default();
    if let Some(selector) = &scope.node_selector {
        nodes = nodes.labels(selector);
    }
    spawn(Api::all(client.clone()), nodes, updates, |c| Update::Node(Box::new(c)), false);
    spawn(scope.namespaced(client), all.clone(), updates, |c| Update::Pod(Box::new(c)), false);
    spawn(
        Api::all(client.clone()),
        all.clone(),
        updates,
        |c| Update::NodeMetric(Box::new(c)),
        false,
    );
    spawn(Api::all(client.clone()), all.clone(), updates, |c| Update::Job(Box::new(c)), false);
    spawn(
        Api::all(client.clone()),
        all.clone(),
        updates,
        |c| Update::Reservation(Box::new(c)),
        true,
    );
    spawn(
        scope.namespaced(client),
        all.clone(),
        updates,
        |c| Update::ReplicaSet(Box::new(c)),
        false,
    );
    spawn(
        scope.namespaced(client),
        all.clone(),
        updates,
        |c| Update::StatefulSet(Box::new(c)),
        false,
    );
    spawn(scope.namespaced(client), all, updates, |c| Update::BatchJob(Box::new(c)), false);
}

/// Watches `api`; `optional` when its CRD may be missing (only the
/// Reservation's: the driver then says so once and goes on without).
fn spawn<K>(
    api: Api<K>,
    config: watcher::Config,
    updates: &UnboundedSender<Update>,
    wrap: fn(Change<K>) -> Update,
    optional: bool,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let kind = K::kind(&()).to_string();
    let updates = updates.clone();
    tokio::spawn(async move {
        let mut mirror = Mirror::new();
        let mut presence = CrdPresence::new();
        let stream = watcher(api, config).default_backoff();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let note = presence.note(event.as_ref().map(drop));
            let changes = match event {
                Ok(event) => {
                    if note == PresenceNote::NowInstalled {
                        tracing::info!(%kind, "CRD now installed; watching it");
                    }
                    mirror.handle(event).into_iter().map(wrap).collect()
                }
                Err(_) if optional && note == PresenceNote::NowMissing => {
                    tracing::warn!(
                        %kind,
                        "CRD not installed: ReservationFirst migrations cannot progress \
                         (EvictDirectly ones can); retrying the watch"
                    );
                    vec![Update::ReservationCrdMissing]
                }
                Err(_) if optional && note == PresenceNote::Quiet => Vec::new(),
                Err(e) => {
                    tracing::warn!(%kind, error = %e, "watch failed; retrying with backoff");
                    Vec::new()
                }
            };
            for update in changes {
                if updates.send(update).is_err() {
                    return; // the driver is gone
                }
            }
        }
    });
}
