//! Watching the node's NodeSLO.

use futures::StreamExt;
use kolo_api::crd::{NodeSLO, NodeSLOSpec};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::watch;

/// Watches the NodeSLO named after `node` (and nothing else: a field
/// selector keeps the agent's watch to its own object). The receiver holds
/// the current spec, `None` while there is none; it keeps the last good
/// spec while the API server is unreachable (the watcher retries with
/// backoff).
pub fn watch_node_slo(client: Client, node: &str) -> watch::Receiver<Option<NodeSLOSpec>> {
    let (tx, rx) = watch::channel(None);
    let api: Api<NodeSLO> = Api::all(client);
    let config = watcher::Config::default().fields(&format!("metadata.name={node}"));
    let node = node.to_string();
    tokio::spawn(async move {
        let stream = watcher(api, config).default_backoff();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::Apply(slo) | watcher::Event::InitApply(slo)) => {
                    tracing::info!(%node, "NodeSLO updated");
                    let _ = tx.send(Some(slo.spec));
                }
                Ok(watcher::Event::Delete(_)) => {
                    tracing::info!(%node, "NodeSLO deleted; using the defaults");
                    let _ = tx.send(None);
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(%node, error = %e, "NodeSLO watch failed; retrying"),
            }
        }
    });
    rx
}
