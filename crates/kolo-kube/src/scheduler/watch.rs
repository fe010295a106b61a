//! Watchers feeding the scheduling thread.

use std::fmt::Debug;
use std::sync::mpsc::Sender;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kolo_api::crd::{ElasticQuota, NodeMetric, PodGroup, Reservation};
use kolo_scheduler::framework::ObjectKind;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::driver::Update;
use crate::mirror::{Change, Mirror};
use crate::optional_crd::{CrdPresence, PresenceNote};

/// Starts one watcher per kind the scheduler needs. Each retries with
/// kube-runtime's default exponential backoff after errors (an API server
/// that is down means a few quiet retries, not a busy loop) and relists
/// when its watch cannot resume; the [`Mirror`] turns the relist into the
/// deletes the watch missed.
///
/// The job-scheduling CRDs (ElasticQuota, PodGroup, Reservation) are
/// optional: when one is not installed the watcher says so once
/// ([`Update::CrdMissing`]: the scheduler goes on as if there were none of
/// them) and keeps retrying, so installing the CRD later is picked up.
pub fn spawn_watchers(client: &Client, updates: &Sender<Update>) {
    spawn::<Node>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Some(Update::Node(Box::new(c))),
        None,
    );
    spawn::<Pod>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Some(Update::Pod(Box::new(c))),
        None,
    );
    spawn::<NodeMetric>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Some(Update::NodeMetric(Box::new(c))),
        None,
    );
    spawn::<ElasticQuota>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Some(Update::Quota(Box::new(c))),
        Some(ObjectKind::ElasticQuota),
    );
    spawn::<PodGroup>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Some(Update::PodGroup(Box::new(c))),
        Some(ObjectKind::PodGroup),
    );
    spawn::<Reservation>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Some(Update::Reservation(Box::new(c))),
        Some(ObjectKind::Reservation),
    );
    spawn_budgets(client.clone(), updates.clone());
    spawn_if_allowed::<PersistentVolumeClaim>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Some(Update::Claim(Box::new(c))),
        ObjectKind::PersistentVolumeClaim,
    );
    spawn_if_allowed::<PersistentVolume>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Some(Update::Volume(Box::new(c))),
        ObjectKind::PersistentVolume,
    );
}

/// Watches a core kind the scheduler can do without (claims and volumes:
/// VolumeBinding then finds no claim and refuses pods that have one,
/// naming it). A server refusing the list (RBAC without the rule, an old
/// ClusterRole) counts as listed, empty, with a warning, rather than
/// keeping every pod from being scheduled.
fn spawn_if_allowed<K>(
    api: Api<K>,
    updates: Sender<Update>,
    wrap: fn(Change<K>) -> Option<Update>,
    kind: ObjectKind,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    tokio::spawn(async move {
        let probe = api.list_metadata(&ListParams::default().limit(1)).await;
        if let Err(kube::Error::Api(s)) = &probe
            && s.code == 403
        {
            let plural = K::plural(&()).to_string();
            tracing::warn!(
                "not allowed to list {plural}: pods using PersistentVolumeClaims stay \
                 unschedulable (grant get/list/watch on {plural} to fix)"
            );
            let _ = updates.send(Update::CrdMissing(kind));
            return;
        }
        spawn(api, updates, wrap, None);
    });
}

/// Watches PodDisruptionBudgets for preemption: `policy/v1` where the
/// server has it, else `policy/v1beta1` (Kubernetes before 1.21), read
/// into the `policy/v1` type (preemption reads the same fields of both).
/// A server refusing the list (RBAC without the rule) is treated like a
/// missing CRD: preemption goes on counting no budget violations, and the
/// API server still refuses evictions a budget forbids.
fn spawn_budgets(client: Client, updates: Sender<Update>) {
    tokio::spawn(async move {
        let v1 = Api::<PodDisruptionBudget>::all(client.clone());
        let served = v1.list_metadata(&ListParams::default().limit(1)).await;
        let version = match served {
            Err(kube::Error::Api(s)) if s.code == 404 => "v1beta1",
            Err(kube::Error::Api(s)) if s.code == 403 => {
                tracing::warn!(
                    "not allowed to list PodDisruptionBudgets: preemption counts no budget \
                     violations (grant list/watch on poddisruptionbudgets to fix)"
                );
                let _ = updates.send(Update::CrdMissing(ObjectKind::PodDisruptionBudget));
                return;
            }
            _ => "v1",
        };
        let gvk = GroupVersionKind::gvk("policy", version, "PodDisruptionBudget");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "poddisruptionbudgets");
        let api = Api::<DynamicObject>::all_with(client, &resource);
        spawn_with(
            api,
            updates,
            budget_update,
            Some(ObjectKind::PodDisruptionBudget),
            "PodDisruptionBudget".into(),
        );
    });
}

/// A budget change as the scheduling thread takes it; one that does not
/// read as a `policy/v1` budget is skipped with a warning naming it.
fn budget_update(change: Change<DynamicObject>) -> Option<Update> {
    let change = match change {
        Change::Apply(object) => {
            let name = crate::mirror::key(&object);
            let mut value = serde_json::to_value(object).ok()?;
            value["apiVersion"] = "policy/v1".into();
            match serde_json::from_value::<PodDisruptionBudget>(value) {
                Ok(budget) => Change::Apply(budget),
                Err(e) => {
                    tracing::warn!(poddisruptionbudget = %name, error = %e, "unreadable; ignored");
                    return None;
                }
            }
        }
        Change::Delete(key) => Change::Delete(key),
        Change::Synced => Change::Synced,
    };
    Some(Update::Budget(Box::new(change)))
}

/// Watches `api`; `optional` names the kind when its CRD may be missing.
fn spawn<K>(
    api: Api<K>,
    updates: Sender<Update>,
    wrap: fn(Change<K>) -> Option<Update>,
    optional: Option<ObjectKind>,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let kind = K::kind(&()).to_string();
    spawn_with(api, updates, wrap, optional, kind);
}

/// [`spawn`] for any resource, its kind named for the log.
fn spawn_with<K>(
    api: Api<K>,
    updates: Sender<Update>,
    wrap: fn(Change<K>) -> Option<Update>,
    optional: Option<ObjectKind>,
    kind: String,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    tokio::spawn(async move {
        let mut mirror = Mirror::new();
        let mut presence = CrdPresence::new();
        let stream = watcher(api, watcher::Config::default()).default_backoff();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let note = presence.note(event.as_ref().map(drop));
            let changes = match (event, optional) {
                (Ok(event), _) => {
                    if note == PresenceNote::NowInstalled {
                        tracing::info!(%kind, "CRD now installed; watching it");
                    }
                    mirror.handle(event).into_iter().filter_map(wrap).collect()
                }
                (Err(_), Some(object)) if note == PresenceNote::NowMissing => {
                    tracing::warn!(
                        %kind,
                        "CRD not installed: scheduling without it; retrying the watch"
                    );
                    vec![Update::CrdMissing(object)]
                }
                (Err(_), Some(_)) if note == PresenceNote::Quiet => Vec::new(),
                (Err(e), _) => {
                    tracing::warn!(%kind, error = %e, "watch failed; retrying with backoff");
                    Vec::new()
                }
            };
            for update in changes {
                if updates.send(update).is_err() {
                    return; // the scheduling thread is gone
                }
            }
        }
    });
}
