//! What `kolo agent plan --node-policy katalyst` prints: the pools, their
//! sizes and why — the advisor's inputs and outputs — for a node state
//! file ([`crate::qos::state_file`]).
//!
//! The state file has no NUMA layout, per-CPU usage or checkpoint, so:
//! each socket of `cpuCores` is taken as one NUMA node (without
//! `cpuCores`, one node of `capacity.cpu` CPUs); memory is split evenly
//! over the nodes; the reserve pool is the node's reserved CPU rounded up;
//! every CPU is taken as busy at the node's average (`usage.cpu` /
//! #CPUs); reclaimed pods' usage is split evenly over the nodes; there is
//! no previous cycle (no regulator history, no checkpoint). The report
//! ends with the CNR status the node would write ([`super::cnr`]).

use std::collections::BTreeMap;

use kolo_api::crd::CustomNodeResourceStatus;
use kolo_api::katalyst::KatalystAnnotationError;
use kolo_core::cpuset::CpuSet;
use serde::Serialize;

use super::advisor::assembler::Assembly;
use super::advisor::cpu_headroom::{CpuHeadroom, CpuMeasurements};
use super::advisor::memory_headroom::MemoryHeadroom;
use super::advisor::{Advice, AdvisorInput, AdvisorState, RegionAdvice, advise};
use super::cnr::cnr_status;
use super::config::KatalystConfig;
use super::machine::{Machine, Numa};
use super::pod::KPod;
use crate::qos::NodeState;

/// One pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolReport {
    /// `reserve`, `dedicated/<pod>`, `share/<pool>`, `reclaim`.
    pub name: String,
    /// Its CPUs.
    pub cpus: String,
    /// How many.
    pub size: usize,
    /// Why this size.
    pub why: String,
}

/// The Katalyst policy's plan for a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KatalystReport {
    /// Always `katalyst`.
    pub node_policy: &'static str,
    /// The pools (a partition of the CPUs).
    pub pools: Vec<PoolReport>,
    /// CPUs of shared and dedicated pools reclaimed pods may also use.
    pub reclaim_overlap: String,
    /// The advisor's regions.
    pub regions: Vec<RegionAdvice>,
    /// The assembler's figures.
    pub assembly: Assembly,
    /// CPU headroom (`reclaimed_millicpu`).
    pub cpu_headroom: CpuHeadroom,
    /// Memory headroom (`reclaimed_memory`).
    pub memory_headroom: MemoryHeadroom,
    /// Each pod's cpuset, by `namespace/name`.
    pub pod_cpusets: BTreeMap<String, String>,
    /// Each pod's memory nodes (`cpuset.mems`), by `namespace/name`.
    pub pod_mems: BTreeMap<String, String>,
    /// Dedicated pods refused, with why.
    pub refused: BTreeMap<String, String>,
    /// The `CustomNodeResource` status the node would report
    /// ([`cnr_status`]).
    pub cnr_status: CustomNodeResourceStatus,
}

/// The machine a node state describes (see the module docs).
pub fn machine_from_node(node: &NodeState) -> Machine {
    let mut by_socket: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for (cpu, (socket, _)) in &node.cpu_cores {
        by_socket.entry(*socket).or_default().insert(*cpu);
    }
    if by_socket.is_empty() {
        let n = u32::try_from(node.capacity.cpu.max(1000) / 1000).unwrap_or(1);
        by_socket.insert(0, CpuSet::from_range(0, n - 1));
    }
    let memory = u64::try_from(node.capacity.memory).unwrap_or(0) / by_socket.len() as u64;
    Machine {
        numa: by_socket
            .into_iter()
            .map(|(id, cpus)| Numa { id, cpus, memory_bytes: memory })
            .collect(),
        cores: node.cpu_cores.clone(),
    }
}

/// Plans the node with the Katalyst policy. A pod whose Katalyst
/// annotations do not parse is an error naming the annotation.
pub fn report_for_node(
    node: &NodeState,
    cfg: &KatalystConfig,
) -> Result<KatalystReport, KatalystAnnotationError> {
    let machine = machine_from_node(node);
    let cfg = KatalystConfig {
        reserved_cpus: usize::try_from(node.reserved.cpu.max(0)).unwrap_or(0).div_ceil(1000),
        ..cfg.clone()
    };
    let running = node.pods.iter().filter(|p| !p.pod.terminated);
    let pods: Vec<KPod> = running.map(KPod::from_pod_state).collect::<Result<_, _>>()?;
    let cpus = machine.cpus();
    let ratio = (node.usage.cpu as f64 / 1000.0 / cpus.len().max(1) as f64).clamp(0.0, 1.0);
    let reclaimed: f64 = pods.iter().filter(|p| p.is_reclaimed()).filter_map(|p| p.usage.cpu).sum();
    let per_numa = reclaimed / machine.numa.len().max(1) as f64;
    let measurements = CpuMeasurements {
        cpu_usage: cpus.iter().map(|c| (c, ratio)).collect(),
        reclaimed_usage: machine.numa.iter().map(|n| (n.id, per_numa)).collect(),
        reclaimed_quota: None,
    };
    let advice = advise(AdvisorInput {
        machine: &machine,
        cfg: &cfg,
        pods: &pods,
        measurements: &measurements,
        previous: &AdvisorState::default(),
        now: node.now,
    });
    Ok(build_report(&machine, &cfg, &pods, &advice))
}

fn build_report(
    machine: &Machine,
    cfg: &KatalystConfig,
    pods: &[KPod],
    a: &Advice,
) -> KatalystReport {
    let p = &a.pools;
    let key =
        |uid: &str| pods.iter().find(|x| x.uid == uid).map_or(uid.to_string(), |x| x.key.clone());
    let pool = |name: String, cpus: &CpuSet, why: String| PoolReport {
        name,
        cpus: cpus.to_string(),
        size: cpus.len(),
        why,
    };
    let mut pools = vec![pool(
        "reserve".into(),
        &p.reserve,
        format!("reservedCpus = {} (the node's reserved CPU, rounded up)", cfg.reserved_cpus),
    )];
    for (uid, d) in &p.dedicated {
        let how = if d.exclusive {
            "numa_exclusive: every free CPU of the node"
        } else {
            "ceil(request) CPUs, whole cores first"
        };
        pools.push(pool(
            format!("dedicated/{}", d.pod),
            &d.cpus,
            format!(
                "dedicated_cores on NUMA {}: {how}; kept by the checkpoint (uid {uid})",
                d.numa
            ),
        ));
    }
    for (name, cpus) in &p.shared {
        let region = a.regions.iter().find(|r| r.name == format!("share-{name}"));
        let why = region.map_or_else(String::new, |r| {
            let g = &r.regulated;
            format!(
                "canonical requirement {:.2} + reservedForAllocate {:.2} = {:.2} → {} → bounds [{}, {}] → {}{}",
                r.requirement, r.reserved_for_allocate, g.with_reserve, g.rounded, r.lower, r.upper, g.size,
                if a.assembly.throttled { "; scaled down to fit" } else if a.assembly.expanded { "; stretched to fill the nodes" } else { "" }
            )
        });
        pools.push(pool(format!("share/{name}"), cpus, why));
    }
    pools.push(pool(
        "reclaim".into(),
        &p.reclaim,
        "every CPU left (reserved for reclaim: 4 CPUs split over the NUMA nodes)".into(),
    ));
    KatalystReport {
        node_policy: "katalyst",
        pools,
        reclaim_overlap: p.reclaim_overlap.to_string(),
        regions: a.regions.clone(),
        assembly: a.assembly.clone(),
        cpu_headroom: a.cpu.clone(),
        memory_headroom: a.memory,
        pod_cpusets: p
            .pod_cpusets(machine, pods)
            .into_iter()
            .map(|(uid, c)| (key(&uid), c.to_string()))
            .collect(),
        pod_mems: p
            .pod_mems(machine, pods)
            .into_iter()
            .map(|(uid, c)| (key(&uid), c.to_string()))
            .collect(),
        refused: a
            .dedicated
            .refused
            .iter()
            .map(|r| (r.pod.clone(), r.reason.to_string()))
            .collect(),
        cnr_status: cnr_status(machine, &a.cpu, &a.memory),
    }
}

impl KatalystReport {
    /// The report as text lines.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec!["node policy katalyst".to_string()];
        for p in &self.pools {
            out.push(format!("pool   {:<24} {:>3} CPUs  {:<16} {}", p.name, p.size, p.cpus, p.why));
        }
        if !self.reclaim_overlap.is_empty() {
            out.push(format!("reclaimed pods also run on {}", self.reclaim_overlap));
        }
        for (pod, cpus) in &self.pod_cpusets {
            let mems = self.pod_mems.get(pod).map_or("", String::as_str);
            out.push(format!("pod    {pod:<24} cpuset {cpus:<16} mems {mems}"));
        }
        for (pod, why) in &self.refused {
            out.push(format!("refused {pod}: {why}"));
        }
        out.push(format!(
            "reclaimed_millicpu = {}  reclaimed_memory = {}  (memory: {} total − {} reserved − {} estimated)",
            self.cpu_headroom.millicpu,
            self.memory_headroom.bytes,
            self.memory_headroom.total,
            self.memory_headroom.reserved,
            self.memory_headroom.estimated
        ));
        out
    }
}
