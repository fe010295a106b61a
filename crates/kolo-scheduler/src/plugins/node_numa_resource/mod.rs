//! NodeNUMAResource (spec §6): cpusets and NUMA placement for
//! latency-sensitive pods, as pure decisions.
//!
//! * [`CpuSet`] (from `kolo_core::cpuset`) — and the Linux cpulist format.
//! * [`annotations`] — the pod and node annotations and the policy enums.
//! * [`args`] — [`NodeNUMAResourceArgs`].
//! * [`topology`] — [`CpuTopology`] and the per-node options
//!   [`NodeTopology`], built once per node change.
//! * [`allocation`] — [`NodeAllocation`], what pods hold on a node.
//! * [`cpu_accumulator`] — [`allocate_cpuset`] and [`take_cpus`], how a
//!   cpuset is chosen.
//! * [`hints`] — NUMA hints, the topology-manager admit and the even split.
//! * [`score`](mod@score) — the LeastAllocated / MostAllocated scorers.
//! * [`decide`] — PreFilter, Filter, Reserve, PreBind output and Score.
//! * [`facts`] — what Reserve took for a pod, as data for explanations.
//!
//! Nothing here does I/O or reads a clock; the framework adapter keeps the
//! per-node state and applies the results.
//!
//! Where kolo deliberately differs from Koordinator (each is explained at
//! the code): strict parsing of policy values; per-policy holder counts on
//! CPUs; the socket-level pass of FullPCPUs also after the NUMA-node pass
//! fails; total, stable orderings; the even split sorted by each node's
//! real availability; a malformed CPU-related node annotation disables
//! cpusets on that node instead of being ignored; per-NUMA allocatable
//! derived from the CPU topology (no NodeResourceTopology CRD).

pub mod allocation;
pub mod annotations;
pub mod args;
pub mod cpu_accumulator;
pub mod decide;
pub mod facts;
pub mod hints;
pub mod plugin;
pub mod score;
pub mod topology;

pub use allocation::{MAX_REF_COUNT, NodeAllocation, PodAllocation};
pub use annotations::{
    AnnotationError, CpuBindPolicy, CpuExclusivePolicy, NodeCpuBindPolicy, NumaAllocateStrategy,
    NumaNodeResources, NumaTopologyPolicy, ResourceSpec, ResourceStatus,
};
pub use args::{NodeNUMAResourceArgs, ScoringStrategy, ScoringStrategyType};
pub use cpu_accumulator::{AllocateError, CpuSetRequest, allocate_cpuset, take_cpus};
pub use decide::{
    FailureCode, FailureReason, NumaAllocationResult, NumaFailure, PodNumaRequest,
    check_amplified_cpu, filter, pod_allocation_from_status, reserve, resource_spec_write_back,
    resource_status_annotation, score,
};
pub use facts::{NumaAllocationFacts, NumaNodeFacts};
pub use kolo_core::cpuset::{self, CpuSet, CpuSetError};
pub use topology::{CpuInfo, CpuTopology, NodeTopology};
