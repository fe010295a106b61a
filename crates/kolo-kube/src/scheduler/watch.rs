//! Watchers feeding the scheduling thread.

use std::fmt::Debug;
use std::sync::mpsc::Sender;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::{ElasticQuota, NodeMetric, PodGroup, Reservation};
use kolo_scheduler::framework::ObjectKind;
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
    spawn::<Node>(Api::all(client.clone()), updates.clone(), |c| Update::Node(Box::new(c)), None);
    spawn::<Pod>(Api::all(client.clone()), updates.clone(), |c| Update::Pod(Box::new(c)), None);
    spawn::<NodeMetric>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Update::NodeMetric(Box::new(c)),
        None,
    );
    spawn::<ElasticQuota>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Update::Quota(Box::new(c)),
        Some(ObjectKind::ElasticQuota),
    );
    spawn::<PodGroup>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Update::PodGroup(Box::new(c)),
        Some(ObjectKind::PodGroup),
    );
    spawn::<Reservation>(
        Api::all(client.clone()),
        updates.clone(),
        |c| Update::Reservation(Box::new(c)),
        Some(ObjectKind::Reservation),
    );
}

/// Watches `api`; `optional` names the kind when its CRD may be missing.
fn spawn<K>(
    api: Api<K>,
    updates: Sender<Update>,
    wrap: fn(Change<K>) -> Update,
    optional: Option<ObjectKind>,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let kind = K::kind(&()).to_string();
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
                    mirror.handle(event).into_iter().map(wrap).collect()
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
