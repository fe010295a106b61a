//! The node's NodeMetric: its spec (the manager's collect policy) is
//! watched, its `status` written.

use kolo_api::crd::{NodeMetric, NodeMetricSpec};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use tokio::sync::watch;

use super::watch::watch_own;
use crate::error::KubeError;

/// Watches the NodeMetric named after `node` ([`watch_own`]): the receiver
/// holds its spec as the manager wrote it, `None` while there is no
/// NodeMetric.
pub fn watch_node_metric(client: Client, node: &str) -> watch::Receiver<Option<NodeMetricSpec>> {
    watch_own(client, node, |metric: NodeMetric| metric.spec)
}

/// Writes one node's NodeMetric status (the manager owns the spec).
#[derive(Clone)]
pub struct NodeMetricWriter {
    api: Api<NodeMetric>,
    node: String,
}

impl NodeMetricWriter {
    /// A writer for `node`'s NodeMetric.
    pub fn new(client: Client, node: &str) -> NodeMetricWriter {
        NodeMetricWriter { api: Api::all(client), node: node.into() }
    }

    /// Replaces the status with `metric`'s. When the NodeMetric does not
    /// exist yet (the manager has not created it, or is not running), it is
    /// created with an empty spec first, so the scheduler and the manager
    /// get the node's usage either way.
    pub async fn write(&self, metric: &NodeMetric) -> Result<(), KubeError> {
        let object = format!("NodeMetric/{}", self.node);
        let patch = serde_json::json!({ "status": metric.status });
        let pp = PatchParams::default();
        match self.api.patch_status(&self.node, &pp, &Patch::Merge(&patch)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(KubeError::api("patch status of", object, e)),
        }
        let empty = NodeMetric::new(&self.node, NodeMetricSpec::default());
        match self.api.create(&PostParams::default(), &empty).await {
            Ok(_) => {}
            // The manager created it meanwhile.
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(KubeError::api("create", object, e)),
        }
        self.api
            .patch_status(&self.node, &pp, &Patch::Merge(&patch))
            .await
            .map(drop)
            .map_err(|e| KubeError::api("patch status of", object, e))
    }
}
