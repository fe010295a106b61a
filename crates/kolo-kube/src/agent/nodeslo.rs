//! Watching the node's NodeSLO.

use kolo_api::crd::{NodeSLO, NodeSLOSpec};
use kube::Client;
use tokio::sync::watch;

use super::watch::watch_own;

/// Watches the NodeSLO named after `node` ([`watch_own`]): the receiver
/// holds its spec, `None` while there is none.
pub fn watch_node_slo(client: Client, node: &str) -> watch::Receiver<Option<NodeSLOSpec>> {
    watch_own(client, node, |slo: NodeSLO| slo.spec)
}
