//! Watchers feeding the scheduling thread.

use std::fmt::Debug;
use std::sync::mpsc::Sender;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::NodeMetric;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::driver::Update;
use crate::mirror::{Change, Mirror};

/// Starts one watcher per kind the scheduler needs. Each retries with
/// kube-runtime's default exponential backoff after errors (an API server
/// that is down means a few quiet retries, not a busy loop) and relists
/// when its watch cannot resume; the [`Mirror`] turns the relist into the
/// deletes the watch missed.
pub fn spawn_watchers(client: &Client, updates: &Sender<Update>) {
    spawn::<Node>(Api::all(client.clone()), updates.clone(), |c| Update::Node(Box::new(c)));
    spawn::<Pod>(Api::all(client.clone()), updates.clone(), |c| Update::Pod(Box::new(c)));
    spawn::<NodeMetric>(Api::all(client.clone()), updates.clone(), |c| {
        Update::NodeMetric(Box::new(c))
    });
}

fn spawn<K>(api: Api<K>, updates: Sender<Update>, wrap: fn(Change<K>) -> Update)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let kind = K::kind(&()).to_string();
    tokio::spawn(async move {
        let mut mirror = Mirror::new();
        let stream = watcher(api, watcher::Config::default()).default_backoff();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => {
                    for change in mirror.handle(event) {
                        if updates.send(wrap(change)).is_err() {
                            return; // the scheduling thread is gone
                        }
                    }
                }
                Err(e) => tracing::warn!(%kind, error = %e, "watch failed; retrying with backoff"),
            }
        }
    });
}
