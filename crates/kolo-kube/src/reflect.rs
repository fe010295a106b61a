//! A reflector whose store the caller reads whole, with a ping on every
//! change: the input side of the level-triggered controllers (the manager's
//! passes, the webhook's admission state).

use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use crate::optional_crd::{CrdPresence, PresenceNote};

/// Starts a reflector for `api` that pings `changed` on every event. The
/// watcher retries with kube-runtime's default exponential backoff, so a
/// lost API server means quiet retries, not a busy loop; after a relist the
/// store holds exactly the listed objects.
pub fn reflect<K>(api: Api<K>, config: watcher::Config, changed: Arc<Notify>) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let kind = K::kind(&()).to_string();
    let stream = reflector::reflector(writer, watcher(api, config)).default_backoff();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(_) => changed.notify_one(),
                Err(e) => tracing::warn!(%kind, error = %e, "watch failed; retrying"),
            }
        }
    });
    reader
}

/// [`reflect`] for a CRD that may not be installed: while it is missing
/// the store stays empty (and never ready), the log says so once, and the
/// watch keeps retrying so installing the CRD later is picked up.
pub fn reflect_optional<K>(api: Api<K>, config: watcher::Config, changed: Arc<Notify>) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let kind = K::kind(&()).to_string();
    let stream = reflector::reflector(writer, watcher(api, config)).default_backoff();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let mut presence = CrdPresence::new();
        while let Some(event) = stream.next().await {
            match presence.note(event.as_ref().map(drop)) {
                PresenceNote::NowMissing => {
                    tracing::warn!(%kind, "CRD not installed: its controller idles; retrying the watch")
                }
                PresenceNote::NowInstalled => tracing::info!(%kind, "CRD now installed"),
                PresenceNote::OtherError => {
                    if let Err(e) = &event {
                        tracing::warn!(%kind, error = %e, "watch failed; retrying");
                    }
                }
                PresenceNote::Quiet => {}
            }
            if event.is_ok() {
                changed.notify_one();
            }
        }
    });
    reader
}
