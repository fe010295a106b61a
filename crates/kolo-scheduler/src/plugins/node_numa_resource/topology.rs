//! The CPU topology of a node ([`CpuTopology`]) and everything else the
//! plugin needs from a node, resolved once per node change
//! ([`NodeTopology`], spec §6.3).

use std::collections::BTreeMap;

use kolo_api::names::{annotation, label};
use kolo_core::node::NodeView;
use kolo_core::resources::{ResourceName, ResourceVector};

use super::annotations::{
    AnnotationError, CpuTopologyAnnotation, CpuTopologyEntry, KUBELET_CPU_MANAGER_POLICY,
    KubeletCpuManagerPolicy, NodeCpuBindPolicy, NumaAllocateStrategy, NumaNodeResources,
    NumaTopologyPolicy, SystemQosResource, parse_label, parse_node_reservation_cpus,
    parse_pod_cpu_allocs,
};
use super::cpuset::{CpuSet, MAX_CPU_ID};
use kolo_core::HasMeta;

/// One logical CPU with its place in the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CpuInfo {
    /// Logical CPU id.
    pub cpu: u32,
    /// kolo's core id: `socket << 16 | core`, unique across sockets (§10.14;
    /// hardware core ids restart at 0 on every socket).
    pub core: u32,
    /// Socket id.
    pub socket: u32,
    /// NUMA node id.
    pub node: u32,
}

/// A CPU topology entry kolo cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// The same CPU id is listed twice.
    #[error("cpu {0} is listed more than once")]
    DuplicateCpu(u32),
    /// A CPU id above [`MAX_CPU_ID`].
    #[error("cpu id {0} is above the supported maximum {MAX_CPU_ID}")]
    CpuIdTooLarge(u32),
    /// A core or socket id that does not fit in 16 bits, so the combined
    /// core id would collide.
    #[error("cpu {cpu}: core {core} / socket {socket} must both be below 65536")]
    IdTooLarge {
        /// The CPU.
        cpu: u32,
        /// Its core id.
        core: u32,
        /// Its socket id.
        socket: u32,
    },
}

const NO_CPU: u32 = u32::MAX;

/// A node's CPUs: which core, NUMA node and socket each belongs to, with
/// the groupings the allocator walks precomputed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuTopology {
    /// Sorted by CPU id.
    cpus: Vec<CpuInfo>,
    /// CPU id → position in `cpus`, [`NO_CPU`] for ids the node lacks.
    index: Vec<u32>,
    all: CpuSet,
    /// `(node, cpus)` sorted by node id.
    nodes: Vec<(u32, CpuSet)>,
    /// `(socket, cpus)` sorted by socket id.
    sockets: Vec<(u32, CpuSet)>,
    num_cores: usize,
    /// Distinct (socket, node) pairs (§6.3: NUMA nodes counted per socket).
    num_nodes: usize,
}

impl CpuTopology {
    /// Builds a topology from per-CPU entries with hardware core ids.
    pub fn new(
        entries: impl IntoIterator<Item = CpuTopologyEntry>,
    ) -> Result<CpuTopology, TopologyError> {
        let mut cpus = Vec::new();
        for e in entries {
            if e.id > MAX_CPU_ID {
                return Err(TopologyError::CpuIdTooLarge(e.id));
            }
            if e.core > 0xFFFF || e.socket > 0xFFFF {
                return Err(TopologyError::IdTooLarge {
                    cpu: e.id,
                    core: e.core,
                    socket: e.socket,
                });
            }
            cpus.push(CpuInfo {
                cpu: e.id,
                core: e.socket << 16 | e.core,
                socket: e.socket,
                node: e.node,
            });
        }
        cpus.sort_by_key(|c| c.cpu);
        if let Some(w) = cpus.windows(2).find(|w| w[0].cpu == w[1].cpu) {
            return Err(TopologyError::DuplicateCpu(w[0].cpu));
        }
        let mut index = vec![NO_CPU; cpus.last().map_or(0, |c| c.cpu as usize + 1)];
        let mut nodes: BTreeMap<u32, CpuSet> = BTreeMap::new();
        let mut sockets: BTreeMap<u32, CpuSet> = BTreeMap::new();
        let mut cores = std::collections::BTreeSet::new();
        let mut socket_nodes = std::collections::BTreeSet::new();
        for (i, c) in cpus.iter().enumerate() {
            index[c.cpu as usize] = i as u32;
            nodes.entry(c.node).or_default().insert(c.cpu);
            sockets.entry(c.socket).or_default().insert(c.cpu);
            cores.insert(c.core);
            socket_nodes.insert((c.socket, c.node));
        }
        Ok(CpuTopology {
            all: cpus.iter().map(|c| c.cpu).collect(),
            cpus,
            index,
            nodes: nodes.into_iter().collect(),
            sockets: sockets.into_iter().collect(),
            num_cores: cores.len(),
            num_nodes: socket_nodes.len(),
        })
    }

    /// Parses the node annotation `node.koordinator.sh/cpu-topology`.
    pub fn from_annotation(json: &str) -> Result<CpuTopology, AnnotationError> {
        let parsed = CpuTopologyAnnotation::parse(json)?;
        CpuTopology::new(parsed.detail).map_err(|e| AnnotationError {
            key: annotation::NODE_CPU_TOPOLOGY,
            field: "detail",
            reason: e.to_string(),
        })
    }

    /// A regular machine: `sockets` × `nodes_per_socket` NUMA nodes ×
    /// `cores_per_node` cores × `threads` hyper-threads, with the threads of
    /// a core on adjacent ids (cpus 0,1 are core 0 when `threads == 2`),
    /// NUMA nodes numbered globally and core ids restarting per socket. For
    /// tests and the simulator.
    pub fn synthetic(
        sockets: u32,
        nodes_per_socket: u32,
        cores_per_node: u32,
        threads: u32,
    ) -> CpuTopology {
        let mut entries = Vec::new();
        for s in 0..sockets {
            for n in 0..nodes_per_socket {
                for c in 0..cores_per_node {
                    for t in 0..threads {
                        let node = s * nodes_per_socket + n;
                        entries.push(CpuTopologyEntry {
                            id: (node * cores_per_node + c) * threads + t,
                            core: n * cores_per_node + c,
                            socket: s,
                            node,
                        });
                    }
                }
            }
        }
        // Ids are distinct and small by construction.
        CpuTopology::new(entries).unwrap_or_else(|_| CpuTopology::empty())
    }

    fn empty() -> CpuTopology {
        CpuTopology {
            cpus: Vec::new(),
            index: Vec::new(),
            all: CpuSet::new(),
            nodes: Vec::new(),
            sockets: Vec::new(),
            num_cores: 0,
            num_nodes: 0,
        }
    }

    /// Koordinator's validity check: at least one CPU, core, NUMA node and
    /// socket. kolo adds nothing stricter, so heterogeneous machines (fewer
    /// threads on some cores) still get cpusets.
    pub fn is_valid(&self) -> bool {
        !self.cpus.is_empty()
            && self.num_cores > 0
            && self.num_nodes > 0
            && !self.sockets.is_empty()
    }

    /// Where `cpu` sits, if the node has it.
    pub fn info(&self, cpu: u32) -> Option<&CpuInfo> {
        let i = *self.index.get(cpu as usize)?;
        self.cpus.get(i as usize)
    }

    /// Every CPU, ascending.
    pub fn cpus(&self) -> &[CpuInfo] {
        &self.cpus
    }

    /// All CPU ids.
    pub fn all_cpus(&self) -> &CpuSet {
        &self.all
    }

    /// The number of logical CPUs.
    pub fn num_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// The number of physical cores.
    pub fn num_cores(&self) -> usize {
        self.num_cores
    }

    /// The number of NUMA nodes (counted per socket).
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// The number of sockets.
    pub fn num_sockets(&self) -> usize {
        self.sockets.len()
    }

    /// `NumCPUs / NumCores` (0 for an invalid topology).
    pub fn cpus_per_core(&self) -> usize {
        self.cpus.len().checked_div(self.num_cores).unwrap_or(0)
    }

    /// `NumCPUs / NumNodes` (0 for an invalid topology).
    pub fn cpus_per_node(&self) -> usize {
        self.cpus.len().checked_div(self.num_nodes).unwrap_or(0)
    }

    /// `NumCPUs / NumSockets` (0 for an invalid topology).
    pub fn cpus_per_socket(&self) -> usize {
        self.cpus.len().checked_div(self.sockets.len()).unwrap_or(0)
    }

    /// The NUMA node ids, ascending.
    pub fn numa_nodes(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        self.nodes.iter().map(|(n, _)| *n)
    }

    /// The CPUs of NUMA node `node` (empty if unknown).
    pub fn cpus_in_node(&self, node: u32) -> &CpuSet {
        static EMPTY: CpuSet = CpuSet::new();
        self.nodes.binary_search_by_key(&node, |(n, _)| *n).map_or(&EMPTY, |i| &self.nodes[i].1)
    }

    /// The CPUs of socket `socket` (empty if unknown).
    pub fn cpus_in_socket(&self, socket: u32) -> &CpuSet {
        static EMPTY: CpuSet = CpuSet::new();
        self.sockets
            .binary_search_by_key(&socket, |(s, _)| *s)
            .map_or(&EMPTY, |i| &self.sockets[i].1)
    }

    /// The number of distinct cores among `cpus` (CPUs the node lacks are
    /// ignored).
    pub fn count_cores(&self, cpus: &CpuSet) -> usize {
        let mut cores: Vec<u32> =
            cpus.iter().filter_map(|c| self.info(c)).map(|i| i.core).collect();
        cores.sort_unstable();
        cores.dedup();
        cores.len()
    }
}

/// Everything NodeNUMAResource needs from one node, resolved once per node
/// change so that the per-pod decisions never parse an annotation.
#[derive(Debug, Clone)]
pub struct NodeTopology {
    topology: Option<CpuTopology>,
    topology_usable: bool,
    reserved_cpus: CpuSet,
    cpu_bind_policy: NodeCpuBindPolicy,
    numa_policy: NumaTopologyPolicy,
    numa_allocate_strategy: Option<NumaAllocateStrategy>,
    numa_allocatable: Vec<NumaNodeResources>,
    allocatable: ResourceVector,
    cpu_amplification_ratio: Option<f64>,
    problems: Vec<AnnotationError>,
    plain: bool,
}

impl NodeTopology {
    /// Reads a node. Never fails: a malformed annotation is recorded in
    /// [`problems`](Self::problems) and handled conservatively.
    ///
    /// * A malformed CPU topology, `pod-cpu-allocs`, kubelet CPU manager
    ///   policy, node reservation or system-QoS annotation makes the
    ///   topology unusable: without them kolo cannot know which CPUs are
    ///   free, and handing out a CPU kubelet or the system already owns is
    ///   worse than refusing cpuset pods on that node ("node(s) invalid CPU
    ///   Topology") until the annotation is fixed.
    /// * A malformed label reads as unset.
    /// * Per-NUMA allocatable: Koordinator reads NodeResourceTopology zones,
    ///   a CRD kolo does not carry. kolo derives it: cpu is the node's CPUs
    ///   in that NUMA node minus the reserved ones (× 1000), memory is the
    ///   node's allocatable memory split evenly (the remainder going to the
    ///   lowest node ids).
    /// * The NUMA policy comes only from the label; the kubelet topology
    ///   manager policy Koordinator reads from the NRT is not available.
    pub fn from_node(node: &NodeView) -> NodeTopology {
        let mut problems = Vec::new();
        let annotated = node.annotation(annotation::NODE_CPU_TOPOLOGY);
        let topology = annotated
            .and_then(|json| CpuTopology::from_annotation(json).map_err(|e| problems.push(e)).ok());
        let held = HeldCpus::read(node, &mut problems);
        let bind_label = read_label(
            node,
            label::NODE_CPU_BIND_POLICY,
            NodeCpuBindPolicy::parse,
            NodeCpuBindPolicy::expected,
            &mut problems,
        );
        // kubelet's static policy with full-pcpus-only rejects anything but
        // whole cores, so it wins over a SpreadByPCPUs label.
        let cpu_bind_policy = if held.kubelet_full_pcpus {
            NodeCpuBindPolicy::FullPCPUsOnly
        } else {
            bind_label.unwrap_or(NodeCpuBindPolicy::None)
        };
        let numa_policy = read_label(
            node,
            label::NODE_NUMA_TOPOLOGY_POLICY,
            NumaTopologyPolicy::parse,
            NumaTopologyPolicy::expected,
            &mut problems,
        )
        .unwrap_or(NumaTopologyPolicy::None);
        let numa_allocate_strategy = read_label(
            node,
            label::NODE_NUMA_ALLOCATE_STRATEGY,
            NumaAllocateStrategy::parse,
            NumaAllocateStrategy::expected,
            &mut problems,
        );
        let cpu_amplification_ratio = cpu_amplification_ratio(node, &mut problems);

        let allocatable = *node.allocatable();
        let numa_allocatable = match &topology {
            Some(t) if t.is_valid() => split_allocatable(t, &held.cpus, &allocatable),
            _ => Vec::new(),
        };
        let topology_read = annotated.is_none() || topology.is_some();
        let topology_usable =
            topology_read && held.readable && topology.as_ref().is_some_and(CpuTopology::is_valid);
        NodeTopology {
            plain: cpu_bind_policy == NodeCpuBindPolicy::None
                && numa_policy == NumaTopologyPolicy::None,
            topology,
            topology_usable,
            reserved_cpus: held.cpus,
            cpu_bind_policy,
            numa_policy,
            numa_allocate_strategy,
            numa_allocatable,
            allocatable,
            cpu_amplification_ratio,
            problems,
        }
    }

    /// A node with `topology`, no reserved CPUs, no labels and the given
    /// allocatable; adjust with the `with_*` methods. For tests and the
    /// simulator.
    pub fn new(topology: CpuTopology, allocatable: ResourceVector) -> NodeTopology {
        let numa_allocatable = if topology.is_valid() {
            split_allocatable(&topology, &CpuSet::new(), &allocatable)
        } else {
            Vec::new()
        };
        NodeTopology {
            topology_usable: topology.is_valid(),
            topology: Some(topology),
            reserved_cpus: CpuSet::new(),
            cpu_bind_policy: NodeCpuBindPolicy::None,
            numa_policy: NumaTopologyPolicy::None,
            numa_allocate_strategy: None,
            numa_allocatable,
            allocatable,
            cpu_amplification_ratio: None,
            problems: Vec::new(),
            plain: true,
        }
    }

    /// Sets the reserved CPUs (and recomputes per-NUMA cpu).
    #[must_use]
    pub fn with_reserved_cpus(mut self, reserved: CpuSet) -> NodeTopology {
        self.reserved_cpus = reserved;
        if let Some(t) = self.topology.as_ref().filter(|t| t.is_valid()) {
            self.numa_allocatable = split_allocatable(t, &self.reserved_cpus, &self.allocatable);
        }
        self
    }

    /// Sets the node's CPU bind policy.
    #[must_use]
    pub fn with_cpu_bind_policy(mut self, policy: NodeCpuBindPolicy) -> NodeTopology {
        self.cpu_bind_policy = policy;
        self.plain = self.cpu_bind_policy == NodeCpuBindPolicy::None
            && self.numa_policy == NumaTopologyPolicy::None;
        self
    }

    /// Sets the node's NUMA topology policy.
    #[must_use]
    pub fn with_numa_policy(mut self, policy: NumaTopologyPolicy) -> NodeTopology {
        self.numa_policy = policy;
        self.plain = self.cpu_bind_policy == NodeCpuBindPolicy::None
            && self.numa_policy == NumaTopologyPolicy::None;
        self
    }

    /// Sets the node's NUMA allocate strategy label.
    #[must_use]
    pub fn with_numa_allocate_strategy(mut self, strategy: NumaAllocateStrategy) -> NodeTopology {
        self.numa_allocate_strategy = Some(strategy);
        self
    }

    /// Sets the cpu amplification ratio (ignored unless > 1).
    #[must_use]
    pub fn with_cpu_amplification_ratio(mut self, ratio: f64) -> NodeTopology {
        self.cpu_amplification_ratio = Some(ratio).filter(|r| *r > 1.0 && r.is_finite());
        self
    }

    /// The CPU topology, if the node reports one (it may be invalid; see
    /// [`usable_topology`](Self::usable_topology)).
    pub fn topology(&self) -> Option<&CpuTopology> {
        self.topology.as_ref()
    }

    /// The topology when it is valid and every CPU-related annotation
    /// parsed: the condition for handing out cpusets on this node.
    pub fn usable_topology(&self) -> Option<&CpuTopology> {
        self.topology.as_ref().filter(|_| self.topology_usable)
    }

    /// CPUs never allocated: kubelet-managed pods' CPUs, kubelet's and the
    /// node reservation's `reservedCPUs`, the exclusive system-QoS cpuset.
    pub fn reserved_cpus(&self) -> &CpuSet {
        &self.reserved_cpus
    }

    /// The node's forced CPU bind policy (label, or kubelet full-pcpus-only).
    pub fn cpu_bind_policy(&self) -> NodeCpuBindPolicy {
        self.cpu_bind_policy
    }

    /// The node's NUMA topology policy.
    pub fn numa_policy(&self) -> NumaTopologyPolicy {
        self.numa_policy
    }

    /// The node's NUMA allocate strategy label, if set.
    pub fn numa_allocate_strategy(&self) -> Option<NumaAllocateStrategy> {
        self.numa_allocate_strategy
    }

    /// Allocatable per NUMA node, by ascending node id.
    pub fn numa_allocatable(&self) -> &[NumaNodeResources] {
        &self.numa_allocatable
    }

    /// The node's allocatable.
    pub fn allocatable(&self) -> &ResourceVector {
        &self.allocatable
    }

    /// `resource-amplification-ratio.cpu` when it is above 1.
    pub fn cpu_amplification_ratio(&self) -> Option<f64> {
        self.cpu_amplification_ratio
    }

    /// Malformed annotations and labels found while reading the node.
    pub fn problems(&self) -> &[AnnotationError] {
        &self.problems
    }

    /// No NUMA policy and no forced bind policy: pods that need no cpuset
    /// and set no NUMA policy pass Filter here without any work.
    pub fn is_plain(&self) -> bool {
        self.plain
    }
}

/// Per-NUMA allocatable (see [`NodeTopology::from_node`]).
fn split_allocatable(
    topology: &CpuTopology,
    reserved: &CpuSet,
    allocatable: &ResourceVector,
) -> Vec<NumaNodeResources> {
    let n = topology.nodes.len() as i64;
    let memory = allocatable.memory();
    topology
        .nodes
        .iter()
        .enumerate()
        .map(|(i, (node, cpus))| {
            let free = (cpus.len() - cpus.intersection_len(reserved)) as i64;
            let mut share = memory / n;
            if (i as i64) < memory % n {
                share += 1;
            }
            NumaNodeResources {
                node: *node,
                resources: ResourceVector::EMPTY
                    .with(ResourceName::Cpu, free * 1000)
                    .with(ResourceName::Memory, share),
            }
        })
        .collect()
}

/// The CPUs others hold on a node, by its annotations: kubelet's static
/// CPU manager (its pods' CPUs and its reserved CPUs), the node
/// reservation, the system-QoS exclusive cpuset.
struct HeldCpus {
    cpus: CpuSet,
    /// kubelet's static policy with `full-pcpus-only`.
    kubelet_full_pcpus: bool,
    /// Every such annotation could be read (otherwise kolo cannot know
    /// which CPUs are free).
    readable: bool,
}

impl HeldCpus {
    fn read(node: &NodeView, problems: &mut Vec<AnnotationError>) -> HeldCpus {
        let mut held = HeldCpus { cpus: CpuSet::new(), kubelet_full_pcpus: false, readable: true };
        let mut note = |r: Result<CpuSet, AnnotationError>| match r {
            Ok(cpus) => held.cpus.union_with(&cpus),
            Err(e) => {
                problems.push(e);
                held.readable = false;
            }
        };
        if let Some(json) = node.annotation(annotation::NODE_POD_CPU_ALLOCS) {
            note(parse_pod_cpu_allocs(json).map(|allocs| {
                allocs
                    .iter()
                    .filter(|a| a.managed_by_kubelet)
                    .fold(CpuSet::new(), |acc, a| acc.union(&a.cpuset))
            }));
        }
        let mut kubelet_full_pcpus = false;
        if let Some(json) = node.annotation(KUBELET_CPU_MANAGER_POLICY) {
            note(KubeletCpuManagerPolicy::parse(json).map(|k| {
                kubelet_full_pcpus = k.full_pcpus_only();
                k.reserved_cpus
            }));
        }
        if let Some(json) = node.annotation(annotation::NODE_RESERVATION) {
            note(parse_node_reservation_cpus(json));
        }
        if let Some(json) = node.annotation(annotation::NODE_SYSTEM_QOS_RESOURCE) {
            note(
                SystemQosResource::parse(json)
                    .map(|s| if s.cpuset_exclusive { s.cpuset } else { CpuSet::new() }),
            );
        }
        held.kubelet_full_pcpus = kubelet_full_pcpus;
        held
    }
}

/// A policy label of a node, read strictly: a malformed value is a
/// problem and reads as unset.
fn read_label<T>(
    node: &NodeView,
    key: &'static str,
    parse: fn(&str) -> Option<T>,
    expected: fn() -> String,
    problems: &mut Vec<AnnotationError>,
) -> Option<T> {
    parse_label(key, node.label(key), parse, expected).map_err(|e| problems.push(e)).ok().flatten()
}

/// The node's cpu amplification ratio, if above 1 (a malformed annotation
/// is a problem and reads as none).
fn cpu_amplification_ratio(node: &NodeView, problems: &mut Vec<AnnotationError>) -> Option<f64> {
    let json = node.annotation(annotation::NODE_RESOURCE_AMPLIFICATION_RATIO)?;
    match serde_json::from_str::<BTreeMap<String, f64>>(json) {
        Ok(ratios) => ratios.get("cpu").copied().filter(|r| *r > 1.0 && r.is_finite()),
        Err(e) => {
            problems.push(AnnotationError {
                key: annotation::NODE_RESOURCE_AMPLIFICATION_RATIO,
                field: "(json)",
                reason: e.to_string(),
            });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kolo_core::pod::StringMap;

    const GI: i64 = 1 << 30;

    #[test]
    fn synthetic_counts() {
        let t = CpuTopology::synthetic(2, 2, 4, 2);
        assert_eq!(t.num_cpus(), 32);
        assert_eq!(t.num_cores(), 16);
        assert_eq!(t.num_nodes(), 4);
        assert_eq!(t.num_sockets(), 2);
        assert_eq!((t.cpus_per_core(), t.cpus_per_node(), t.cpus_per_socket()), (2, 8, 16));
        assert_eq!(t.cpus_in_node(1).to_string(), "8-15");
        assert_eq!(t.cpus_in_socket(1).to_string(), "16-31");
        // Socket 1's hardware core 0 is cpus 16,17; its internal id is 1<<16.
        assert_eq!(t.info(17).unwrap().core, 1 << 16);
        assert_eq!(t.info(3).unwrap().core, 1);
        assert!(t.info(32).is_none());
        assert_eq!(t.count_cores(&CpuSet::parse("0-3,16").unwrap()), 3);
        assert!(t.is_valid());
    }

    #[test]
    fn core_ids_unique_across_sockets() {
        // Both sockets report core 0: without socket<<16 they would merge.
        let t = CpuTopology::from_annotation(
            r#"{"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":0,"socket":1,"node":1}]}"#,
        )
        .unwrap();
        assert_eq!(t.num_cores(), 2);
        assert_eq!(t.cpus_per_core(), 1);
    }

    #[test]
    fn topology_errors() {
        let dup = r#"{"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":0,"core":1,"socket":0,"node":0}]}"#;
        let err = CpuTopology::from_annotation(dup).unwrap_err();
        assert_eq!(err.field, "detail");
        assert!(err.reason.contains("cpu 0 is listed more than once"));
        let big = r#"{"detail":[{"id":99999,"core":0,"socket":0,"node":0}]}"#;
        assert!(CpuTopology::from_annotation(big).is_err());
        let empty = CpuTopology::from_annotation(r#"{"detail":[]}"#).unwrap();
        assert!(!empty.is_valid());
        assert_eq!(empty.cpus_per_core(), 0);
    }

    fn topology_json(t: &CpuTopology) -> String {
        let detail: Vec<_> = t
            .cpus()
            .iter()
            .map(|c| CpuTopologyEntry {
                id: c.cpu,
                core: c.core & 0xFFFF,
                socket: c.socket,
                node: c.node,
            })
            .collect();
        serde_json::to_string(&CpuTopologyAnnotation { detail }).unwrap()
    }

    #[test]
    fn node_topology_from_node() {
        let t = CpuTopology::synthetic(2, 2, 4, 2);
        let node = NodeView::new("n1")
            .with_resources(
                ResourceVector::cpu_memory(32_000, 64 * GI),
                ResourceVector::cpu_memory(32_000, 64 * GI),
            )
            .with_labels(
                [
                    (label::NODE_CPU_BIND_POLICY, "SpreadByPCPUs"),
                    (label::NODE_NUMA_ALLOCATE_STRATEGY, "MostAllocated"),
                ]
                .into_iter()
                .collect(),
            )
            .with_annotations(
                [
                    (annotation::NODE_CPU_TOPOLOGY, topology_json(&t)),
                    (
                        annotation::NODE_POD_CPU_ALLOCS,
                        r#"[{"namespace":"a","name":"k","cpuset":"2-3","managedByKubelet":true},
                            {"namespace":"a","name":"kolo","cpuset":"4-5"}]"#
                            .to_owned(),
                    ),
                    (
                        KUBELET_CPU_MANAGER_POLICY,
                        r#"{"policy":"static","reservedCPUs":"0"}"#.to_owned(),
                    ),
                    (annotation::NODE_RESERVATION, r#"{"reservedCPUs":"8"}"#.to_owned()),
                    (annotation::NODE_SYSTEM_QOS_RESOURCE, r#"{"cpuset":"30-31"}"#.to_owned()),
                    (annotation::NODE_RESOURCE_AMPLIFICATION_RATIO, r#"{"cpu":1.5}"#.to_owned()),
                ]
                .into_iter()
                .collect::<StringMap>(),
            );
        let nt = NodeTopology::from_node(&node);
        assert!(nt.problems().is_empty(), "{:?}", nt.problems());
        assert_eq!(nt.reserved_cpus().to_string(), "0,2-3,8,30-31");
        assert_eq!(nt.cpu_bind_policy(), NodeCpuBindPolicy::SpreadByPCPUs);
        assert_eq!(nt.numa_allocate_strategy(), Some(NumaAllocateStrategy::MostAllocated));
        assert_eq!(nt.numa_policy(), NumaTopologyPolicy::None);
        assert!(!nt.is_plain());
        assert!(nt.usable_topology().is_some());
        assert_eq!(nt.cpu_amplification_ratio(), Some(1.5));
        let cpus: Vec<i64> = nt.numa_allocatable().iter().map(|n| n.resources.cpu()).collect();
        assert_eq!(cpus, vec![5000, 7000, 8000, 6000]);
        assert!(nt.numa_allocatable().iter().all(|n| n.resources.memory() == 16 * GI));
    }

    #[test]
    fn kubelet_full_pcpus_only_and_bad_annotations() {
        let t = CpuTopology::synthetic(1, 1, 2, 2);
        let node = NodeView::new("n").with_labels(
            [
                (label::NODE_CPU_BIND_POLICY, "SpreadByPCPUs"),
                (label::NODE_NUMA_TOPOLOGY_POLICY, "Sometimes"),
            ]
            .into_iter()
            .collect(),
        );
        let good = node.clone().with_annotations(
            [
                (annotation::NODE_CPU_TOPOLOGY, topology_json(&t)),
                (
                    KUBELET_CPU_MANAGER_POLICY,
                    r#"{"policy":"static","options":{"full-pcpus-only":"true"}}"#.to_owned(),
                ),
            ]
            .into_iter()
            .collect(),
        );
        let nt = NodeTopology::from_node(&good);
        assert_eq!(nt.cpu_bind_policy(), NodeCpuBindPolicy::FullPCPUsOnly);
        assert_eq!(nt.numa_policy(), NumaTopologyPolicy::None, "bad label reads as unset");
        assert_eq!(nt.problems().len(), 1);
        assert!(nt.problems()[0].to_string().contains("Sometimes"));
        assert!(nt.usable_topology().is_some());

        let bad = node.with_annotations(
            [
                (annotation::NODE_CPU_TOPOLOGY, topology_json(&t)),
                (annotation::NODE_POD_CPU_ALLOCS, "[{".to_owned()),
            ]
            .into_iter()
            .collect(),
        );
        let nt = NodeTopology::from_node(&bad);
        assert!(nt.topology().is_some());
        assert!(nt.usable_topology().is_none(), "unknown kubelet CPUs: no cpusets here");

        let none = NodeTopology::from_node(&NodeView::new("bare"));
        assert!(none.topology().is_none() && none.usable_topology().is_none());
        assert!(none.is_plain() && none.problems().is_empty());
    }
}
