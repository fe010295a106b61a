//! Writing the node's NodeMetric `status`.

use kolo_api::crd::{NodeMetric, NodeMetricSpec};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};

use crate::error::KubeError;

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
