//! Every QoS strategy that writes, run by the agent's own loop (its
//! collectors, the QoS loop of the default strategies, the executor) on the
//! machine's real cgroups — whichever version and driver they are: v1 with
//! the cgroupfs names on this machine; cgroup v2 with the cgroupfs and the
//! systemd drivers' names and v1 on a CFS kernel in the VM `scripts/vm`
//! boots. The files are read back from the kernel in their own version's
//! names (`cpu.weight`, `cpu.max`, `memory.max`, `cpuset.cpus.effective`,
//! ...), so a wrong conversion or a write the kernel refuses fails here.
//!
//! Skips loudly without root, or without the controllers it needs.

mod common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use common::{TestCgroups, Workload, skip, test_container_id, test_uid};
use kolo_agent::agent::{Agent, AgentConfig};
use kolo_agent::cgroup::{CgroupVersion, CpuSet, Resource, Subsystem, Value};
use kolo_agent::kernel::{self, FairScheduler};
use kolo_agent::pods::file::FileSource;
use kolo_agent::pods::{Fetched, PodSource, PodSourceError};
use kolo_agent::qos::{Probe, QosLoop, default_strategies};
use kolo_api::crd::NodeSLOSpec;
use kolo_api::kube_qos::KubeQoSClass;
use kolo_core::clock::Timestamp;
use serde_json::{Value as Json, json};

const MIB: i64 = 1 << 20;

/// The LS pod: Burstable, one container (request 500m / 64Mi, limit 1 CPU /
/// 128Mi) holding 16 MiB.
const LS: u64 = 1;
/// The BE pod: BestEffort, one container (batch-cpu 500 / 1000, batch-memory
/// 128Mi) spinning a CPU.
const BE: u64 = 2;

/// A node of two pods on the real cgroups, and the agent's loop over it.
struct Node {
    t: TestCgroups,
    agent: Agent<Pods>,
    pods: std::path::PathBuf,
    qos: QosLoop,
    ls_pod: String,
    ls_container: String,
    be_pod: String,
    be_container: String,
    _dir: tempfile::TempDir,
}

impl Node {
    /// The two pods' cgroups, processes and pods file, and an agent with
    /// `node_slo`; `None` after a loud skip.
    fn start(test: &str, node_slo: Json) -> Option<Node> {
        Node::start_with(test, node_slo, false)
    }

    /// [`Node::start`] with the pods file standing for the kubelet when
    /// `kubelet` is set.
    fn start_with(test: &str, node_slo: Json, kubelet: bool) -> Option<Node> {
        let mut t = match TestCgroups::new() {
            Ok(t) => t,
            Err(reason) => {
                skip(test, &reason);
                return None;
            }
        };
        eprintln!("{test}: cgroup {}, {} driver", t.version(), t.driver());
        let ls_pod = t.add_pod(KubeQoSClass::Burstable, &test_uid(LS));
        let ls_container = t.add_container(&ls_pod, &test_container_id(LS));
        let be_pod = t.add_pod(KubeQoSClass::BestEffort, &test_uid(BE));
        let be_container = t.add_container(&be_pod, &test_container_id(BE));
        t.spawn(&ls_container, Workload::Memory { mib: 16 }).expect("the LS process starts");
        t.spawn(&be_container, Workload::Spin).expect("the BE process starts");
        let dir = tempfile::tempdir().unwrap();
        let pods = dir.path().join("pods.json");
        fs::write(&pods, pods_list().to_string()).unwrap();
        // The node's capacity is the machine's (`/proc`).
        let mut config = AgentConfig::new("test-node");
        config.cgroups = t.layout_config();
        config.sync_pods_every_tick = true;
        let source = Pods { file: FileSource::new(&pods), kubelet };
        let agent = Agent::new(config, source).expect("the agent starts");
        let mut qos = QosLoop::new(default_strategies().into(), Duration::from_secs(60));
        let slo: NodeSLOSpec = serde_json::from_value(node_slo).expect("a valid NodeSLO spec");
        qos.set_node_slo(Some(slo));
        Some(Node { t, agent, pods, qos, ls_pod, ls_container, be_pod, be_container, _dir: dir })
    }

    /// Runs `rounds` collection rounds a second apart, each writing its
    /// plan; panics on any write the kernel refused.
    fn run(&mut self, rounds: usize) {
        self.run_with(rounds, false);
    }

    /// [`Node::run`], tolerating a failing pod source when `source_down`.
    fn run_with(&mut self, rounds: usize, source_down: bool) {
        for round in 0..rounds {
            std::thread::sleep(Duration::from_secs(1));
            let now = Timestamp::now();
            let tick = self.agent.tick(now);
            assert!(
                source_down || tick.errors.is_empty(),
                "round {round}: collection errors {:?}",
                tick.errors
            );
            let mut node = self.agent.node_state(now);
            let plan = self.qos.round(&mut node, now, Probe::Slow);
            let writes: Vec<_> = plan.plan.writes.iter().map(|w| w.write.clone()).collect();
            let report = self.agent.cgroups().executor().apply(&writes);
            assert!(
                report.errors.is_empty(),
                "round {round}: the kernel refused writes: {:?}\nplan: {:#?}",
                report.errors,
                plan.plan.writes
            );
        }
    }

    fn version(&self) -> CgroupVersion {
        self.t.version()
    }

    /// A resource of `rel`, in the v1 domain.
    fn read(&self, rel: &str, resource: Resource) -> Value {
        self.t
            .read_resource(rel, resource)
            .unwrap_or_else(|e| panic!("reading {} of {rel}: {e}", resource.name()))
    }

    /// Asserts that `rel`'s file of `resource` holds what the v1-domain
    /// value `want` is in this version's file (`cpu.shares` 512 is
    /// `cpu.weight` 20 on v2, and 20 reads back as 500 shares: the
    /// conversion is not one to one, so the file's own domain is compared).
    fn assert_file(&self, rel: &str, resource: Resource, want: Value) {
        let version = self.version();
        let file = resource.read_file(version).expect("a file on this version");
        let text = self.t.read(resource.subsystem(), rel, file).unwrap();
        let got = resource.parse_file(version, &text).unwrap();
        assert_eq!(got, resource.to_file_value(version, want), "{rel}/{file}: {text:?}");
    }

    /// A file of `rel` as the kernel shows it, in this version's name.
    fn raw(&self, rel: &str, v1: &str, v2: &str) -> String {
        let (subsystem, file) = match self.version() {
            CgroupVersion::V1 => (subsystem_of(v1), v1),
            CgroupVersion::V2 => (Subsystem::Cpu, v2),
        };
        self.t.read(subsystem, rel, file).unwrap_or_else(|e| panic!("reading {rel}/{file}: {e}"))
    }

    fn supported(&self, resource: Resource) -> bool {
        self.agent.cgroups().is_supported(resource)
    }
}

/// The pods file; with `kubelet` set it stands for the node's kubelet
/// (whose failures mean a kubelet away or restarting), which no machine the
/// tests run on has at hand.
struct Pods {
    file: FileSource,
    kubelet: bool,
}

impl PodSource for Pods {
    fn name(&self) -> &str {
        self.file.name()
    }

    fn is_kubelet(&self) -> bool {
        self.kubelet
    }

    fn fetch(&mut self) -> Result<Fetched, PodSourceError> {
        self.file.fetch()
    }
}

/// The v1 hierarchy a v1 file lives in.
fn subsystem_of(file: &str) -> Subsystem {
    let prefix = file.split('.').next().unwrap_or_default();
    Subsystem::parse(prefix).unwrap_or(Subsystem::Cpu)
}

/// The pods file: the LS and the BE pod, as the kubelet lists them.
fn pods_list() -> Json {
    let pod = |n: u64, qos: &str, kube_qos: &str, resources: Json| {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("pod-{n}"), "namespace": "kolo-test", "uid": test_uid(n),
                         "labels": {"koordinator.sh/qosClass": qos}},
            "spec": {"containers": [{"name": "main", "image": "none", "resources": resources}]},
            "status": {"phase": "Running", "qosClass": kube_qos, "containerStatuses": [{
                "name": "main", "containerID": format!("containerd://{}", test_container_id(n)),
                "image": "none", "imageID": "", "ready": true, "restartCount": 0}]},
        })
    };
    json!({"apiVersion": "v1", "kind": "List", "items": [
        pod(LS, "LS", "Burstable", json!({
            "requests": {"cpu": "500m", "memory": "64Mi"},
            "limits": {"cpu": "1", "memory": "128Mi"}})),
        pod(BE, "BE", "BestEffort", json!({
            "requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "128Mi"},
            "limits": {"kubernetes.io/batch-cpu": "1000", "kubernetes.io/batch-memory": "128Mi"}})),
    ]})
}

#[test]
fn be_isolation_and_batch_limits() {
    let test = "be_isolation_and_batch_limits";
    let Some(mut node) = Node::start(test, json!({})) else { return };
    node.run(3);
    let be_qos = node.t.qos_rel(KubeQoSClass::BestEffort);

    // BE isolation: cpu.idle on the BE QoS dir on CFS kernels (< 6.6),
    // the minimal weight on EEVDF kernels or without cpu.idle.
    let scheduler = kernel::detect(Path::new("/proc"), Path::new("/sys"));
    let idle =
        node.supported(Resource::CpuIdle) && node.read(&be_qos, Resource::CpuIdle) == Value::Int(1);
    let want_idle = node.supported(Resource::CpuIdle) && scheduler == Some(FairScheduler::Cfs);
    assert_eq!(idle, want_idle, "cpu.idle on the BE QoS dir with the {scheduler:?} scheduler");
    if !idle {
        node.assert_file(&be_qos, Resource::CpuShares, Value::Int(2));
        if node.version() == CgroupVersion::V2 {
            assert_eq!(node.raw(&be_qos, "cpu.shares", "cpu.weight"), "1");
        }
    }
    eprintln!(
        "{test}: {scheduler:?} kernel: BE isolated by {}",
        if idle { "cpu.idle = 1" } else { "the minimal weight" }
    );

    // batchResource: shares from batch-cpu requests (500 → 512), quota
    // from limits (1000 → 100000 µs), memory.limit from batch-memory.
    for rel in [&node.be_pod, &node.be_container] {
        node.assert_file(rel, Resource::CpuShares, Value::Int(512));
        assert_eq!(node.read(rel, Resource::CpuCfsQuota), Value::Int(100_000), "{rel} quota");
        assert_eq!(node.read(rel, Resource::MemoryLimit), Value::Int(128 * MIB), "{rel} memory");
    }
    if node.version() == CgroupVersion::V2 {
        let c = &node.be_container;
        assert_eq!(node.raw(c, "cpu.shares", "cpu.max"), "100000 100000");
        assert_eq!(node.raw(c, "memory.limit_in_bytes", "memory.max"), (128 * MIB).to_string());
        // 512 shares as the kubelet converts them: 1 + 510 × 9999 / 262142.
        assert_eq!(node.raw(c, "cpu.shares", "cpu.weight"), "20");
    }
    // The LS pod is not the batch strategy's: its files are the kernel's
    // defaults (the harness wrote none).
    assert_eq!(node.read(&node.ls_container, Resource::CpuCfsQuota), Value::Max);
}

#[test]
fn cpu_suppression_by_quota_then_by_cpuset() {
    let test = "cpu_suppression_by_quota_then_by_cpuset";
    let threshold = |policy: &str| {
        json!({"resourceUsedThresholdWithBE": {
            "enable": true, "cpuSuppressThresholdPercent": 30, "cpuSuppressPolicy": policy}})
    };
    let Some(mut node) = Node::start(test, threshold("cfsQuota")) else { return };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as i64;
    node.run(3);
    let be_qos = node.t.qos_rel(KubeQoSClass::BestEffort);
    // The budget (30 % of the node minus what non-BE work uses) is below
    // the node: the BE QoS dir gets a quota under it.
    let Value::Int(quota) = node.read(&be_qos, Resource::CpuCfsQuota) else {
        panic!("BE QoS dir left unlimited under cfsQuota suppression");
    };
    assert!((2_000..=cpus * 30_000).contains(&quota), "BE quota {quota} µs, {cpus} CPUs");
    if node.version() == CgroupVersion::V2 {
        assert_eq!(node.raw(&be_qos, "cpu.cfs_quota_us", "cpu.max"), format!("{quota} 100000"));
    }
    // batchResource leaves the BE pods' quotas to the suppressor then.
    assert_eq!(node.read(&node.be_pod, Resource::CpuCfsQuota), Value::Max);

    // Policy cpuset: the quota is recovered; with more CPUs than the two
    // the policy always leaves BE, the BE dirs get fewer CPUs, and the
    // kernel's effective set of the BE container follows.
    node.qos.set_node_slo(Some(serde_json::from_value(threshold("cpuset")).unwrap()));
    node.run(3);
    assert_eq!(node.read(&be_qos, Resource::CpuCfsQuota), Value::Max, "quota recovered");
    let Value::Cpuset(set) = node.read(&node.be_container, Resource::CpusetCpus) else {
        panic!("no cpuset")
    };
    let effective = effective_cpus(&node, &node.be_container);
    assert_eq!(effective, set, "the kernel's effective CPUs of the BE container");
    if cpus > 2 {
        assert!(set.len() < cpus as usize, "BE kept all {cpus} CPUs: {set}");
    } else {
        skip(test, &format!("{cpus} CPUs: the cpuset policy never leaves BE fewer than 2"));
    }
}

/// `cpuset.effective_cpus` (v1) / `cpuset.cpus.effective` (v2) of `rel`.
fn effective_cpus(node: &Node, rel: &str) -> CpuSet {
    let file = match node.version() {
        CgroupVersion::V1 => "cpuset.effective_cpus",
        CgroupVersion::V2 => "cpuset.cpus.effective",
    };
    let text = node.t.read(Subsystem::Cpuset, rel, file).unwrap();
    CpuSet::parse(&text).unwrap()
}

#[test]
fn memory_qos_protects_the_ls_pod() {
    let test = "memory_qos_protects_the_ls_pod";
    let slo = json!({"resourceQOSStrategy": {"lsClass": {"memoryQOS": {
        "enable": true, "minLimitPercent": 50, "lowLimitPercent": 100, "throttlingPercent": 80}}}});
    let Some(mut node) = Node::start(test, slo) else { return };
    if !node.supported(Resource::MemoryMin) {
        skip(test, &format!("cgroup {} has no memory.min on this kernel", node.version()));
        return;
    }
    node.run(2);
    // Request 64Mi: min 32Mi, low 64Mi; high = 64Mi + (128 − 64)Mi × 80 %.
    let c = &node.ls_container;
    assert_eq!(node.read(c, Resource::MemoryMin), Value::Int(32 * MIB));
    assert_eq!(node.read(c, Resource::MemoryLow), Value::Int(64 * MIB));
    let high = (64 * MIB + 64 * MIB * 80 / 100) / 4096 * 4096;
    assert_eq!(node.read(c, Resource::MemoryHigh), Value::Int(high));
    // The pod and its ancestors carry the protection (v2 caps a child's
    // by its parent's).
    assert_eq!(node.read(&node.ls_pod, Resource::MemoryMin), Value::Int(32 * MIB));
    let burstable = node.t.qos_rel(KubeQoSClass::Burstable);
    assert_eq!(node.read(&burstable, Resource::MemoryMin), Value::Int(32 * MIB));
}

#[test]
fn cpu_burst_on_the_ls_container() {
    let test = "cpu_burst_on_the_ls_container";
    let slo = json!({"cpuBurstStrategy": {"policy": "cpuBurstOnly", "cpuBurstPercent": 50}});
    let Some(mut node) = Node::start(test, slo) else { return };
    if !node.supported(Resource::CpuCfsBurst) {
        skip(test, &format!("cgroup {} has no CPU burst file on this kernel", node.version()));
        return;
    }
    // The kubelet's quota for the 1-CPU limit (what the burst is capped by).
    for rel in [&node.ls_pod, &node.ls_container] {
        node.t.write_resource(rel, Resource::CpuCfsQuota, Value::Int(100_000)).unwrap();
    }
    node.run(2);
    // 1 CPU × 50 % = 50000 µs per period.
    assert_eq!(node.read(&node.ls_container, Resource::CpuCfsBurst), Value::Int(50_000));
    assert_eq!(node.read(&node.ls_pod, Resource::CpuCfsBurst), Value::Int(50_000));
    if node.version() == CgroupVersion::V2 {
        assert_eq!(node.raw(&node.ls_container, "cpu.cfs_burst_us", "cpu.max.burst"), "50000");
    }
}

#[test]
fn collectors_measure_the_pods() {
    let test = "collectors_measure_the_pods";
    let Some(mut node) = Node::start(test, json!({})) else { return };
    node.run(3);
    let state = node.agent.node_state(Timestamp::now());
    let be = state.pods.iter().find(|p| p.pod.id.uid == test_uid(BE)).expect("the BE pod");
    // One spinning loop: most of a CPU (the VM's emulated CPUs included).
    let usage = be.usage.expect("the BE pod was measured");
    let cores = usage.cpu as f64 / 1000.0;
    assert!(cores > 0.3, "BE pod measured at {cores} cores");
    // memory.stat is read: the LS pod holds 16 MiB.
    let ls = state.pods.iter().find(|p| p.pod.id.uid == test_uid(LS)).expect("the LS pod");
    let memory = ls.usage.expect("the LS pod was measured").memory;
    assert!(memory >= 16 * MIB, "LS pod memory {memory} bytes");
    // Per-cgroup PSI: every v2 cgroup has it; v1 only with psi=1 and the
    // cgroup1 interface.
    let dir = node.agent.cgroups().pod_dir(KubeQoSClass::BestEffort, &test_uid(BE)).unwrap();
    match node.agent.cgroups().psi(&dir) {
        Ok(psi) => eprintln!("{test}: BE pod PSI {psi:?}"),
        Err(e) if node.version() == CgroupVersion::V1 => {
            skip(test, &format!("per-cgroup PSI on v1: {e}"))
        }
        Err(e) => panic!("per-cgroup PSI on v2: {e}"),
    }
}

#[test]
fn a_restarting_kubelet_can_write_the_be_qos_weight() {
    let test = "a_restarting_kubelet_can_write_the_be_qos_weight";
    // cpu.idle on every kernel that has it (by default only CFS kernels
    // get it), so the trap is shown wherever it can be.
    let slo = json!({"resourceQOSStrategy": {"beClass": {"cpuQOS": {"schedIdle": 1}}}});
    let Some(mut node) = Node::start_with(test, slo, true) else { return };
    if !node.supported(Resource::CpuIdle) {
        skip(test, "no cpu.idle on this kernel: the kubelet's write cannot fail");
        return;
    }
    node.run(2);
    let be_qos = node.t.qos_rel(KubeQoSClass::BestEffort);
    assert_eq!(node.read(&be_qos, Resource::CpuIdle), Value::Int(1), "BE QoS dir idle");
    // The trap: what a starting kubelet writes to the BE QoS dir (its
    // minimal CPU weight), the kernel refuses on an idle group; the
    // kubelet then exits, and restarts, and exits.
    let refused = node.t.write_resource(&be_qos, Resource::CpuShares, Value::Int(2));
    eprintln!(
        "{test}: cgroup {}: the kubelet's write on an idle BE group: {refused:?}",
        node.version()
    );
    assert!(refused.is_err(), "the kernel took a weight on an idle group: no trap here");

    // The kubelet goes away: the agent lifts cpu.idle, and the write the
    // starting kubelet makes succeeds.
    fs::remove_file(&node.pods).unwrap();
    node.run_with(2, true);
    assert_eq!(node.read(&be_qos, Resource::CpuIdle), Value::Int(0), "cpu.idle lifted");
    node.t
        .write_resource(&be_qos, Resource::CpuShares, Value::Int(2))
        .expect("a starting kubelet's write succeeds once cpu.idle is lifted");
}
