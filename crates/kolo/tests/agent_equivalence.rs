//! One scripted history of a node — pods, usage, NodeSLO changes, time,
//! slow and fast rounds — run through the real node's round path
//! (`kolo_kube::agent::round_step`: a node state as the collectors would
//! give it, the plan written by the real cgroup executor into a directory
//! tree shaped like cgroupfs and the BE cgroup read back from it, evictions
//! through an evictor) and through the simulator's (`kolo_sim::agent::round`
//! on a simulated node) gives the same plans, write for write and eviction
//! for eviction, held-back evictions and collector settings included.
//!
//! Both drivers run the strategies the simulator models (the real agent
//! runs more; their writes go to cgroups the node model does not have).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kolo_agent::agent::be_group_state;
use kolo_agent::cgroup::{CgroupVersion, Cgroups, LayoutConfig};
use kolo_agent::evict::{EvictError, Evictor};
use kolo_agent::qos::{NodeState, PodState, Probe, QosLoop, RoundPlan};
use kolo_api::crd::NodeSLOSpec;
use kolo_core::CpuMem;
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kolo_core::resources::ResourceVector;
use kolo_kube::agent::{CgroupSink, round_step};
use kolo_sim::agent::{AgentSide, pod_paths, pod_uid, read_started, round};
use kolo_sim::node::{NodePod, NodeStep, SimNode, Work};
use kolo_sim::objects::{self, BATCH_NAMESPACE, LS_NAMESPACE, PodClass};

const GIB: i64 = 1 << 30;
const CPUS: u32 = 8;
const CAPACITY: CpuMem = CpuMem::new(CPUS as i64 * 1000, 32 * GIB);
const SYSTEM: (f64, f64) = (500.0, GIB as f64);

/// Pods: id → (class, CPU request milli, memory request).
const PODS: [(u32, PodClass, i64, i64); 6] = [
    (1, PodClass::Ls, 2000, 4 * GIB),
    (2, PodClass::Ls, 2000, 4 * GIB),
    (3, PodClass::Batch, 1000, 2 * GIB),
    (4, PodClass::Batch, 1000, 2 * GIB),
    (5, PodClass::Batch, 1000, 2 * GIB),
    (6, PodClass::Batch, 1000, 2 * GIB),
];

/// One step of the script.
struct Step {
    /// Seconds since the start.
    t: i64,
    probe: Probe,
    /// CPU of each LS and each BE pod, milli.
    cpu: (f64, f64),
    /// Memory of each BE pod, bytes (LS pods use 8 GiB each).
    be_memory: f64,
    /// A new NodeSLO from this step on.
    slo: Option<NodeSLOSpec>,
}

fn slo(yaml: &str) -> NodeSLOSpec {
    serde_saphyr::from_str(yaml).unwrap()
}

fn script() -> Vec<Step> {
    let step = |t, probe, cpu, be_memory| Step { t, probe, cpu, be_memory, slo: None };
    let gib = GIB as f64;
    vec![
        // Quiet: BE gets every CPU.
        step(10, Probe::Slow, (500.0, 500.0), gib),
        // LS busy: the BE cpuset shrinks.
        step(20, Probe::Slow, (1500.0, 500.0), gib),
        // A surge between rounds: a fast round tightens further…
        step(21, Probe::Fast, (2200.0, 500.0), gib),
        // …and a fast round never gives back.
        step(22, Probe::Fast, (600.0, 500.0), gib),
        // Memory pressure: BE pods evicted, three at most.
        step(30, Probe::Slow, (600.0, 500.0), 6.5 * gib),
        // Still high, past memoryEvict's cool-down: the rate limit holds
        // the last one back.
        step(40, Probe::Slow, (600.0, 500.0), 6.5 * gib),
        // The NodeSLO moves suppression to the CFS quota.
        Step {
            slo: Some(slo(
                "resourceUsedThresholdWithBE: {enable: true, cpuSuppressPolicy: cfsQuota, cpuSuppressThresholdPercent: 50, memoryEvictThresholdPercent: 70}",
            )),
            ..step(50, Probe::Slow, (1000.0, 500.0), 6.5 * gib)
        },
        step(51, Probe::Fast, (1600.0, 500.0), 6.5 * gib),
        // A minute after the first evictions the last one goes.
        step(95, Probe::Slow, (1000.0, 500.0), 6.5 * gib),
        step(105, Probe::Slow, (1000.0, 500.0), gib),
    ]
}

fn first_slo() -> NodeSLOSpec {
    slo(
        "resourceUsedThresholdWithBE: {enable: true, cpuSuppressThresholdPercent: 65, memoryEvictThresholdPercent: 70}",
    )
}

fn start() -> Timestamp {
    kolo_sim::engine::START.parse().unwrap()
}

fn at(t: i64) -> Timestamp {
    start().checked_add(k8s_openapi::jiff::SignedDuration::from_secs(t)).unwrap()
}

/// The bound Pod objects.
fn pods() -> Vec<(u32, Pod)> {
    PODS.iter()
        .map(|&(id, class, cpu, memory)| {
            let namespace = if class == PodClass::Ls { LS_NAMESPACE } else { BATCH_NAMESPACE };
            let name = format!("pod-{id}");
            let mut pod =
                objects::pod_object(namespace, &name, &pod_uid(id), class, cpu, memory, start());
            objects::bind(&mut pod, "node-1");
            (id, pod)
        })
        .collect()
}

fn usage(class: PodClass, step: &Step) -> (f64, f64) {
    match class {
        PodClass::Ls => (step.cpu.0, 8.0 * GIB as f64),
        _ => (step.cpu.1, step.be_memory),
    }
}

fn class_of(id: u32) -> PodClass {
    PODS.iter().find(|p| p.0 == id).map(|p| p.1).unwrap()
}

/// The simulator's side: a node model with the pods.
fn sim_node() -> SimNode {
    let cores: BTreeMap<u32, (u32, u32)> = (0..CPUS).map(|c| (c, (0, c % 4))).collect();
    let mut node = SimNode::new(
        "node-1".into(),
        BTreeMap::new(),
        CAPACITY,
        CAPACITY,
        cores,
        NodeView::new("node-1"),
        SYSTEM,
    );
    let paths = pod_paths();
    let agent = AgentSide::new(
        &node,
        (first_slo(), None),
        kolo_sim::agent::strategies(),
        Duration::from_secs(60),
        &paths,
        start(),
    );
    node.agent = Some(agent);
    for (id, pod) in pods() {
        let view = PodView::from_pod(&pod).unwrap();
        let work = match class_of(id) {
            PodClass::Ls => Work::Ls {
                curve: kolo_sim::usage::Curve {
                    mean: 1000.0,
                    amplitude: 0.0,
                    peak_second: 0.0,
                    noise: 0.0,
                    noise_period: 60.0,
                    key: 0,
                },
                memory: 0.0,
                memory_amplitude: 0.0,
            },
            _ => Work::Be { demand: 1000.0, left: 1e12, memory: 0.0 },
        };
        let pod_model = NodePod::new(id, Box::new(view), 1000.0, work);
        node.start(pod_model, Some(Arc::new(pod)));
    }
    read_started(&mut node, &paths).unwrap();
    node
}

fn sim_round(node: &mut SimNode, step: &Step) -> RoundPlan {
    if let Some(slo) = &step.slo {
        node.agent.as_mut().unwrap().qos.set_node_slo(Some(slo.clone()));
    }
    let (mut ls, mut be) = (0.0, 0.0);
    for p in &mut node.pods {
        let (cpu, memory) = usage(class_of(p.id), step);
        (p.cpu, p.memory) = (cpu, memory);
        if p.is_be() { be += cpu } else { ls += cpu }
    }
    node.last = NodeStep { system: SYSTEM.0, ls, be, ..NodeStep::default() };
    let plan = round(node, at(step.t), step.probe).unwrap();
    for e in &plan.plan.evictions {
        node.remove(kolo_sim::agent::pod_id(&e.uid).unwrap());
    }
    plan
}

/// The real node's side: a cgroup v2 tree (systemd driver) with the BE
/// QoS cgroup, the pods as the kubelet lists them.
struct RealNode {
    tree: tempfile::TempDir,
    cgroups: Arc<Cgroups>,
    pods: Vec<(u32, Pod)>,
    qos: QosLoop,
}

fn write(dir: &Path, file: &str, content: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), content).unwrap();
}

fn real_node() -> RealNode {
    let tree = tempfile::tempdir().unwrap();
    write(tree.path(), "cgroup.controllers", "cpuset cpu io memory pids\n");
    let be = tree.path().join("kubepods.slice/kubepods-besteffort.slice");
    for dir in [tree.path().join("kubepods.slice"), be.clone()] {
        write(&dir, "cpu.max", "max 100000\n");
        write(&dir, "cpuset.cpus", "0-7\n");
        write(&dir, "cpuset.cpus.effective", "0-7\n");
        write(&dir, "cgroup.procs", "");
    }
    let cgroups = Arc::new(Cgroups::detect(&LayoutConfig::new(tree.path())).unwrap());
    assert_eq!(cgroups.version(), CgroupVersion::V2);
    let mut qos = QosLoop::new(kolo_sim::agent::strategies(), Duration::from_secs(60));
    qos.start(start());
    qos.set_node_slo(Some(first_slo()));
    RealNode { tree, cgroups, pods: pods(), qos }
}

/// The node state the real agent's collectors would give: the pods'
/// usage from their cgroups, the BE QoS cgroup's values from its files.
fn collected(node: &RealNode, sim: &SimNode, step: &Step) -> NodeState {
    let paths = pod_paths();
    let mut memory = SYSTEM.1;
    let mut cpu = SYSTEM.0;
    let pods = node
        .pods
        .iter()
        .map(|(id, pod)| {
            let (c, m) = usage(class_of(*id), step);
            (cpu, memory) = (cpu + c, memory + m);
            let usage = Some(CpuMem::new(c.round() as i64, m.round() as i64));
            PodState::from_pod(pod, &paths, usage, &BTreeMap::new()).unwrap()
        })
        .collect();
    let be_dir = paths.qos_dir(kolo_api::kube_qos::KubeQoSClass::BestEffort).clone();
    let template = &sim.agent.as_ref().unwrap().state;
    NodeState {
        now: at(step.t),
        capacity: CAPACITY,
        allocatable: ResourceVector::cpu_memory(CAPACITY.cpu, CAPACITY.memory),
        reserved: CpuMem::default(),
        usage: CpuMem::new(cpu.round() as i64, memory.round() as i64),
        be_cpus: kolo_core::cpuset::CpuSet::from_range(0, CPUS - 1),
        cpu_cores: sim.cores.clone(),
        be: be_group_state(&node.cgroups, &be_dir),
        be_dir,
        pods,
        // What the kernel offers is detected on a real node; here it is
        // the node model's (cpu.idle, CFS burst, memory QoS; CFS).
        features: template.features,
        version: CgroupVersion::V2,
        evictions: Default::default(),
        cfs: BTreeMap::new(),
        be_usage_window: None,
        kubelet_down: false,
    }
}

fn real_round(node: &mut RealNode, sim: &SimNode, step: &Step) -> RoundPlan {
    if let Some(slo) = &step.slo {
        node.qos.set_node_slo(Some(slo.clone()));
    }
    let mut state = collected(node, sim, step);
    let mut sink = CgroupSink::new(Arc::clone(&node.cgroups), Box::new(AlwaysEvicts));
    let plan = round_step(&mut node.qos, &mut state, at(step.t), step.probe, &mut sink, None);
    // The kernel's part: the BE cgroup's effective CPUs follow its cpuset.
    let be = node.tree.path().join("kubepods.slice/kubepods-besteffort.slice");
    std::fs::copy(be.join("cpuset.cpus"), be.join("cpuset.cpus.effective")).unwrap();
    // Evicted pods leave the kubelet's list.
    node.pods.retain(|(id, _)| !plan.plan.evictions.iter().any(|e| e.uid == pod_uid(*id)));
    plan
}

/// An evictor whose evictions succeed.
struct AlwaysEvicts;

impl Evictor for AlwaysEvicts {
    fn evict(&mut self, _pod: &PodState, _reason: &str) -> Result<(), EvictError> {
        Ok(())
    }
}

#[test]
fn the_real_and_the_simulated_driver_make_the_same_plans() {
    let mut sim = sim_node();
    let mut real = real_node();
    let mut evicted = 0;
    let mut held = 0;
    let mut fast_writes = 0;
    for step in script() {
        // The real node's collectors see the BE cgroup as the last plan
        // left it; the simulated node's state carries it over.
        let real_plan = real_round(&mut real, &sim, &step);
        let sim_plan = sim_round(&mut sim, &step);
        assert_eq!(real_plan, sim_plan, "t = {} s", step.t);
        let sim_be = &sim.agent.as_ref().unwrap().state.be;
        let be_dir = pod_paths().qos_dir(kolo_api::kube_qos::KubeQoSClass::BestEffort).clone();
        assert_eq!(&be_group_state(&real.cgroups, &be_dir), sim_be, "t = {} s", step.t);
        evicted += sim_plan.plan.evictions.len();
        held += sim_plan.held_back.len();
        if step.probe == Probe::Fast {
            fast_writes += sim_plan.plan.writes.len();
            assert!(sim_plan.plan.evictions.is_empty(), "t = {} s", step.t);
        }
    }
    // The script exercised what it is for.
    assert_eq!(evicted, 4, "every BE pod evicted in the end");
    assert!(held > 0, "the rate limit held some back");
    assert!(fast_writes > 0, "a fast round tightened");
    assert_eq!(real.pods.len(), sim.pods.len());
}
