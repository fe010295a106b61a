//! What ElasticQuota knew of a pod's quota, for explanations (`kolo
//! schedule -o json`, `facts.ElasticQuota`): which quota, and its used,
//! runtime, min and max against the pod's request.

use serde::Serialize;

use super::args::ElasticQuotaArgs;
use super::check::check_pod;
use super::tree::{PodFacts, QuotaTree};

/// A pod's quota as the plugin saw it in the pod's cycle. Resource lists
/// read `cpu=2 memory=1Gi` (an empty one reads `(empty)`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaFacts {
    /// The quota the pod is charged to (`koordinator-default-quota` when
    /// none maps it).
    pub quota: String,
    /// What the quota's assigned pods use, this pod included once placed.
    pub used: String,
    /// The quota's runtime: its fair share now (`max` when runtime quota
    /// is off).
    pub runtime: String,
    /// The quota's min.
    pub min: String,
    /// The quota's max.
    pub max: String,
    /// The pod's request, masked to the quota's max.
    pub pod_request: String,
    /// Whether the pod passed the quota's checks (used + request within
    /// the runtime, non-preemptible and parent checks): true for a placed
    /// pod.
    pub fits: bool,
}

impl QuotaFacts {
    /// The facts for `pod` in `tree`; `placed` once the pod is counted in
    /// its quota's used (it passed the checks then).
    pub fn of(
        tree: &mut QuotaTree,
        args: &ElasticQuotaArgs,
        pod: &PodFacts,
        placed: bool,
    ) -> QuotaFacts {
        let check = check_pod(tree, args, pod);
        let node = tree.node(check.quota);
        let runtime = check.levels.first().map_or(node.max, |level| level.limit);
        QuotaFacts {
            quota: node.name.clone(),
            used: node.used.to_string(),
            runtime: runtime.to_string(),
            min: node.min.to_string(),
            max: node.max.to_string(),
            pod_request: check.pod_request.to_string(),
            fits: placed || check.passes(),
        }
    }
}
