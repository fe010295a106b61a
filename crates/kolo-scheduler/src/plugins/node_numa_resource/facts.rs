//! What NodeNUMAResource decided for a pod, as data (`kolo schedule -o
//! json`): the cpuset and NUMA resources Reserve took, which PreBind writes
//! into the pod's `scheduling.koordinator.sh/resource-status` annotation.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{CpuBindPolicy, CpuExclusivePolicy, NumaAllocationResult};

/// The allocation Reserve made for the pod on its node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NumaAllocationFacts {
    /// The bound CPUs in Linux cpulist form (`0-3,8`); empty without a
    /// cpuset.
    pub cpuset: String,
    /// The same CPUs, one id each, ascending.
    pub cpus: Vec<u32>,
    /// The resources taken from each NUMA node (empty without a NUMA
    /// policy).
    pub numa_node_resources: Vec<NumaNodeFacts>,
    /// The bind policy the cpuset was chosen with (`null` without one).
    pub cpu_bind_policy: Option<CpuBindPolicy>,
    /// Whether the node's bind-policy label forced it.
    pub node_forced: bool,
    /// The pod's exclusive policy.
    pub cpu_exclusive_policy: CpuExclusivePolicy,
}

/// The resources taken from one NUMA node: cpu in milli-cores, memory in
/// bytes, by resource name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NumaNodeFacts {
    /// The NUMA node id.
    pub node: u32,
    /// The amounts.
    pub resources: BTreeMap<&'static str, i64>,
}

impl NumaAllocationFacts {
    /// The facts of a reservation.
    pub fn new(result: &NumaAllocationResult) -> NumaAllocationFacts {
        NumaAllocationFacts {
            cpuset: result.cpuset.to_string(),
            cpus: result.cpuset.iter().collect(),
            numa_node_resources: result
                .numa_resources
                .iter()
                .map(|n| NumaNodeFacts {
                    node: n.node,
                    resources: n.resources.iter().map(|(name, v)| (name.as_str(), v)).collect(),
                })
                .collect(),
            cpu_bind_policy: result.bind_policy,
            node_forced: result.node_forced,
            cpu_exclusive_policy: result.exclusive_policy,
        }
    }
}
