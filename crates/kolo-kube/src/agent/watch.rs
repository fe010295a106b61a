//! Watching one cluster-scoped object named after the node (its NodeSLO,
//! its NodeMetric) and handing its spec to the agent's loop.

use std::fmt::Debug;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

/// Watches the `K` named `node` (and nothing else: a field selector keeps
/// the agent's watch to its own object) and sends `spec` of it whenever
/// that changes (a NodeMetric changes with every status the agent writes;
/// its spec does not). The receiver holds the current spec, `None` while there is no
/// object; it keeps the last good spec while the API server is unreachable
/// (the watcher retries with backoff). Must be called inside a Tokio
/// runtime.
pub fn watch_own<K, T>(client: Client, node: &str, spec: fn(K) -> T) -> watch::Receiver<Option<T>>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + 'static,
    T: PartialEq + Send + Sync + 'static,
{
    let (tx, rx) = watch::channel(None);
    let api: Api<K> = Api::all(client);
    let config = watcher::Config::default().fields(&format!("metadata.name={node}"));
    let node = node.to_string();
    let kind = K::kind(&());
    tokio::spawn(async move {
        let stream = watcher(api, config).default_backoff();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                    if replace(&tx, Some(spec(object))) {
                        tracing::info!(%node, %kind, "{kind} updated");
                    }
                }
                Ok(watcher::Event::Delete(_)) => {
                    if replace(&tx, None) {
                        tracing::info!(%node, %kind, "{kind} deleted; using the defaults");
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(%node, %kind, error = %e, "{kind} watch failed; retrying"),
            }
        }
    });
    rx
}

/// Sends `value` unless the channel holds it already; whether it did.
fn replace<T: PartialEq>(tx: &watch::Sender<Option<T>>, value: Option<T>) -> bool {
    tx.send_if_modified(|current| {
        let changed = *current != value;
        if changed {
            *current = value;
        }
        changed
    })
}
