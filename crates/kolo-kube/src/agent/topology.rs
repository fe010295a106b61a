//! Publishing the node's CPU topology for the scheduler: the node
//! annotation `node.koordinator.sh/cpu-topology`, which kolo's
//! NodeNUMAResource plugin needs before it can bind an LSE / LSR pod to
//! CPUs (Koordinator's koordlet reports the same detail through its
//! NodeResourceTopology object, a CRD kolo does not carry).
//!
//! The topology is read from sysfs under the agent's sys root and written
//! when the agent starts; it is checked again every few minutes, so an
//! annotation someone removed or changed is put back, and a failed write
//! is retried.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kolo_agent::collect::topology::CpuTopology;
use kolo_api::names::annotation;
use kolo_scheduler::plugins::node_numa_resource::annotations::{
    CpuTopologyAnnotation, CpuTopologyEntry,
};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};

use crate::error::KubeError;

/// How often the annotation is checked once written.
pub const RECHECK: Duration = Duration::from_secs(300);

/// After a failed read or write, the next try comes this much later.
const RETRY: Duration = Duration::from_secs(10);

/// The annotation's value for `topology`:
/// `{"detail":[{"id":0,"core":0,"socket":0,"node":0},…]}`, CPUs by id.
pub fn annotation_value(topology: &CpuTopology) -> String {
    let detail = topology
        .cpus
        .iter()
        .map(|c| CpuTopologyEntry {
            id: c.id,
            core: c.core_id,
            socket: c.socket_id,
            node: c.numa_node,
        })
        .collect();
    serde_json::to_string(&CpuTopologyAnnotation { detail })
        .expect("a CPU topology always serializes")
}

/// Keeps `node`'s CPU topology annotation equal to what sysfs under
/// `sys_root` says, forever. Must be spawned on a Tokio runtime.
pub async fn publish_cpu_topology(client: Client, node: String, sys_root: PathBuf) {
    let api: Api<Node> = Api::all(client);
    loop {
        let wait = match publish_once(&api, &node, &sys_root).await {
            Ok(true) => {
                tracing::info!(%node, "CPU topology annotation written");
                RECHECK
            }
            Ok(false) => RECHECK,
            Err(e) => {
                tracing::warn!(%node, error = %e, "publishing the CPU topology failed; retrying");
                RETRY
            }
        };
        tokio::time::sleep(wait).await;
    }
}

/// Why one publication failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// sysfs could not be read.
    #[error(transparent)]
    Topology(#[from] kolo_agent::collect::topology::TopologyError),
    /// The node could not be read or patched.
    #[error(transparent)]
    Kube(#[from] KubeError),
}

/// Writes the annotation if it differs; `true` when it wrote.
pub async fn publish_once(
    api: &Api<Node>,
    node: &str,
    sys_root: &std::path::Path,
) -> Result<bool, PublishError> {
    let value = annotation_value(&CpuTopology::read(sys_root)?);
    let object = format!("Node/{node}");
    let current = api.get(node).await.map_err(|e| KubeError::api("get", object.clone(), e))?;
    let annotations = current.metadata.annotations.unwrap_or_default();
    if annotations.get(annotation::NODE_CPU_TOPOLOGY) == Some(&value) {
        return Ok(false);
    }
    let patch = serde_json::json!({
        "metadata": {"annotations": {annotation::NODE_CPU_TOPOLOGY: value}}
    });
    api.patch(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| KubeError::api("patch", object, e))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use kolo_agent::collect::topology::CpuInfo;
    use kolo_scheduler::plugins::node_numa_resource::CpuTopology as SchedulerTopology;

    use super::*;

    #[test]
    fn the_scheduler_reads_back_what_the_agent_writes() {
        let cpu = |id, core_id, socket_id, numa_node| CpuInfo {
            id,
            core_id,
            socket_id,
            numa_node,
            siblings: Default::default(),
        };
        let topology = CpuTopology {
            cpus: vec![cpu(0, 0, 0, 0), cpu(1, 0, 0, 0), cpu(2, 1, 1, 1), cpu(3, 1, 1, 1)],
            numa_nodes: Vec::new(),
        };
        let value = annotation_value(&topology);
        assert_eq!(
            value,
            r#"{"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":0,"socket":0,"node":0},{"id":2,"core":1,"socket":1,"node":1},{"id":3,"core":1,"socket":1,"node":1}]}"#
        );
        let parsed = SchedulerTopology::from_annotation(&value).expect("the scheduler parses it");
        assert_eq!(parsed.num_cpus(), 4);
        assert_eq!(parsed.num_sockets(), 2);
    }
}
