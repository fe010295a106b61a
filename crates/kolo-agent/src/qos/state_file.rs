//! The node state file of `kolo agent plan`: a node's capacity and usage,
//! its pods (ordinary Pod objects plus their usage), the BE cgroup's current
//! values and the NodeSLO spec — everything the strategies look at, written
//! by hand or dumped from a node. Documented in `docs/cli.md`.
//!
//! ```yaml
//! now: "2026-11-23T10:00:00Z"          # optional
//! node:
//!   capacity: {cpu: "16", memory: 64Gi}
//!   allocatable: {cpu: "15", memory: 60Gi, kubernetes.io/batch-cpu: "8000"}
//!   reserved: {cpu: "1", memory: 2Gi}   # optional
//!   usage: {cpu: "7", memory: 40Gi}
//!   beCpus: "0-15"                      # optional: default every CPU of the capacity
//!   cpuCores: {0: [0, 0], 1: [0, 1], 8: [0, 0]}   # optional: CPU → [socket, core] (cpuset placement)
//!   cgroupVersion: v1                   # v1 (default) or v2
//!   cgroupDriver: cgroupfs              # cgroupfs (default) or systemd
//!   features: {cpuIdle: true, cfsBurst: true}   # also bvtWarpNs, memoryQos, eevdf
//!   be: {cpuset: "0-15", cfsQuotaUs: -1} # the BE QoS cgroup now
//!   beUsageWindow: {seconds: 60, cpu: 3800m, coveredSeconds: 60}  # optional: cpuEvict's window
//! pods:
//! - pod: {apiVersion: v1, kind: Pod, metadata: {...}, spec: {...}, status: {...}}
//!   usage: {cpu: 500m, memory: 1Gi}
//!   containers: {main: {cpu: 300m, memory: 700Mi}}
//!   cfs:                                # optional: CFS quotas (cfsQuotaBurst)
//!     pod: {quotaUs: 200000}
//!     containers: {main: {quotaUs: 200000, throttledRatio: 0.3}}
//! nodeSLO: {resourceUsedThresholdWithBE: {enable: true}}   # a NodeSLO spec
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kolo_api::crd::NodeSLOSpec;
use kolo_core::clock::Timestamp;
use kolo_core::cpuset::CpuSet;
use kolo_core::resources::{ResourceName, ResourceVector};
use serde::Deserialize;

use super::{
    BeGroupState, BeUsageWindow, CfsState, EvictionHistory, Features, NodeState, PodState, Probe,
    QosLoop, RoundPlan, default_strategies,
};
use crate::cgroup::{CgroupDir, CgroupDriver, CgroupVersion, PodPaths};
use kolo_core::CpuMem;

type ResourceList = BTreeMap<String, KubeQuantity>;

/// A state file that could not be read; the message names the field.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct StateFileError {
    /// JSON path of the offending field (`$` for the whole file).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

fn error(path: impl Into<String>, message: impl std::fmt::Display) -> StateFileError {
    StateFileError { path: path.into(), message: message.to_string() }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StateFile {
    #[serde(default)]
    now: Option<String>,
    node: NodeSection,
    #[serde(default)]
    pods: Vec<PodSection>,
    #[serde(default, rename = "nodeSLO")]
    node_slo: Option<NodeSLOSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeSection {
    capacity: ResourceList,
    #[serde(default)]
    allocatable: ResourceList,
    #[serde(default)]
    reserved: ResourceList,
    usage: ResourceList,
    #[serde(default)]
    be_cpus: Option<String>,
    #[serde(default)]
    cpu_cores: BTreeMap<u32, (u32, u32)>,
    #[serde(default)]
    cgroup_version: Option<String>,
    #[serde(default)]
    cgroup_driver: Option<String>,
    #[serde(default)]
    features: Features,
    #[serde(default)]
    be: Option<BeSection>,
    #[serde(default)]
    started: Option<String>,
    #[serde(default)]
    last_cpu_eviction: Option<String>,
    #[serde(default)]
    last_memory_eviction: Option<String>,
    #[serde(default)]
    be_usage_window: Option<BeUsageWindowSection>,
    #[serde(default)]
    kubelet_down: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BeUsageWindowSection {
    seconds: u64,
    cpu: KubeQuantity,
    covered_seconds: u64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BeSection {
    #[serde(default)]
    cpuset: Option<String>,
    #[serde(default)]
    cfs_quota_us: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PodSection {
    pod: Pod,
    #[serde(default)]
    usage: Option<ResourceList>,
    #[serde(default)]
    containers: BTreeMap<String, ResourceList>,
    #[serde(default)]
    cfs: Option<PodCfsSection>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PodCfsSection {
    #[serde(default)]
    pod: Option<CfsSection>,
    #[serde(default)]
    containers: BTreeMap<String, CfsSection>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CfsSection {
    quota_us: i64,
    #[serde(default)]
    throttled_ratio: Option<f64>,
}

/// A parsed state file: the node state and the NodeSLO spec.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanInput {
    /// The node.
    pub node: NodeState,
    /// The NodeSLO spec (empty: every default).
    pub slo: NodeSLOSpec,
}

impl PlanInput {
    /// What the agent's loop would do on this node now: a slow round of
    /// the default strategies with the file's NodeSLO and eviction history
    /// (and a rate limit with nothing evicted yet).
    pub fn plan(&mut self) -> RoundPlan {
        let mut qos = QosLoop::new(default_strategies().into(), Duration::from_secs(60));
        qos.set_node_slo(Some(self.slo.clone()));
        qos.restore_history(self.node.evictions);
        let now = self.node.now;
        qos.round(&mut self.node, now, Probe::Slow)
    }
}

/// Reads the text of a `--node-slo` file: a NodeSLO object (`kubectl get
/// nodeslo NAME -o yaml`), a document with just its `spec:`, or the spec
/// itself, YAML or JSON. Anything else (an object of another kind, a spec
/// field of the wrong type, a text that is not a mapping) is an error
/// naming the field: a malformed NodeSLO must not silently become the
/// default one.
pub fn node_slo_spec(text: &str) -> Result<NodeSLOSpec, String> {
    let value: serde_json::Value =
        serde_saphyr::from_str(text).map_err(|e| kolo_core::yaml_error::describe(&e))?;
    if !value.is_object() {
        return Err("not a NodeSLO or a NodeSLO spec (a mapping)".to_string());
    }
    if let Some(kind) = value.get("kind").filter(|k| k.as_str() != Some("NodeSLO")) {
        return Err(format!("kind: {kind} is not NodeSLO"));
    }
    let spec = match value.get("spec") {
        Some(spec) => spec.clone(),
        None if value.get("kind").is_some() => serde_json::Value::Null,
        None => value,
    };
    let spec = if spec.is_null() { serde_json::json!({}) } else { spec };
    serde_path_to_error::deserialize(spec).map_err(|e| format!("spec.{}: {}", e.path(), e.inner()))
}

/// Reads a state file (YAML or JSON). `now` is used when the file has no
/// `now`.
pub fn parse_state(text: &str, now: Timestamp) -> Result<PlanInput, StateFileError> {
    let value: serde_json::Value = serde_saphyr::from_str(text).map_err(|e| {
        error("$", format!("not valid YAML: {}", kolo_core::yaml_error::describe(&e)))
    })?;
    let file: StateFile = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        error(format!("$.{path}").trim_end_matches('.'), e.into_inner())
    })?;
    let time = |path: &str, t: &Option<String>| -> Result<Option<Timestamp>, StateFileError> {
        t.as_deref()
            .map(|s| s.parse::<Timestamp>().map_err(|e| error(path, format!("{s:?}: {e}"))))
            .transpose()
    };
    let now = time("$.now", &file.now)?.unwrap_or(now);
    let n = &file.node;
    let capacity = cpu_mem("$.node.capacity", &n.capacity)?;
    let version = match n.cgroup_version.as_deref() {
        None | Some("v1") => CgroupVersion::V1,
        Some("v2") => CgroupVersion::V2,
        Some(other) => {
            return Err(error("$.node.cgroupVersion", format!("{other:?} is not v1 or v2")));
        }
    };
    let driver = match n.cgroup_driver.as_deref() {
        None => CgroupDriver::Cgroupfs,
        Some(d) => CgroupDriver::parse(d).ok_or_else(|| {
            error("$.node.cgroupDriver", format!("{d:?} is not cgroupfs or systemd"))
        })?,
    };
    let paths = PodPaths::new(driver, &CgroupDir::root());
    let be_cpus = match &n.be_cpus {
        Some(s) => CpuSet::parse(s).map_err(|e| error("$.node.beCpus", e))?,
        None => {
            let cpus = u32::try_from((capacity.cpu / 1000).max(1)).unwrap_or(1);
            CpuSet::from_range(0, cpus - 1)
        }
    };
    if let Some(cpu) =
        be_cpus.iter().find(|c| !n.cpu_cores.is_empty() && !n.cpu_cores.contains_key(c))
    {
        return Err(error("$.node.cpuCores", format!("BE CPU {cpu} has no [socket, core]")));
    }
    let be = match &n.be {
        None => BeGroupState::default(),
        Some(b) => BeGroupState {
            cpuset: b
                .cpuset
                .as_deref()
                .map(|s| CpuSet::parse(s).map_err(|e| error("$.node.be.cpuset", e)))
                .transpose()?,
            cfs_quota_us: b.cfs_quota_us,
        },
    };
    let be_usage_window = match &n.be_usage_window {
        None => None,
        Some(w) => {
            let cpu = ResourceList::from([("cpu".to_string(), w.cpu.clone())]);
            Some(BeUsageWindow {
                window: Duration::from_secs(w.seconds),
                avg_milli: cpu_mem("$.node.beUsageWindow.cpu", &cpu)?.cpu,
                covered: Duration::from_secs(w.covered_seconds),
            })
        }
    };
    let mut pods = Vec::with_capacity(file.pods.len());
    let mut cfs = BTreeMap::new();
    for (i, section) in file.pods.iter().enumerate() {
        let at = format!("$.pods[{i}]");
        let pod = pod_state(&at, section, &paths)?;
        if let Some(c) = &section.cfs {
            cfs_state(&at, c, &pod, &mut cfs)?;
        }
        pods.push(pod);
    }
    let node = NodeState {
        now,
        capacity,
        allocatable: vector("$.node.allocatable", &n.allocatable)?,
        reserved: cpu_mem("$.node.reserved", &n.reserved)?,
        usage: cpu_mem("$.node.usage", &n.usage)?,
        be_cpus,
        cpu_cores: n.cpu_cores.clone(),
        be_dir: paths.qos_dir(kolo_api::kube_qos::KubeQoSClass::BestEffort).clone(),
        be,
        pods,
        features: n.features,
        version,
        evictions: EvictionHistory {
            started: time("$.node.started", &n.started)?,
            last_cpu: time("$.node.lastCpuEviction", &n.last_cpu_eviction)?,
            last_memory: time("$.node.lastMemoryEviction", &n.last_memory_eviction)?,
        },
        cfs,
        be_usage_window,
        kubelet_down: n.kubelet_down,
    };
    Ok(PlanInput { node, slo: file.node_slo.unwrap_or_default() })
}

fn vector(path: &str, list: &ResourceList) -> Result<ResourceVector, StateFileError> {
    ResourceVector::from_object_list(list).map_err(|e| error(path, e))
}

fn cpu_mem(path: &str, list: &ResourceList) -> Result<CpuMem, StateFileError> {
    let v = vector(path, list)?;
    Ok(CpuMem::new(v.get(ResourceName::Cpu).unwrap_or(0), v.get(ResourceName::Memory).unwrap_or(0)))
}

fn pod_state(at: &str, s: &PodSection, paths: &PodPaths) -> Result<PodState, StateFileError> {
    let mut usages = BTreeMap::new();
    for (name, list) in &s.containers {
        usages.insert(name.clone(), cpu_mem(&format!("{at}.containers.{name}"), list)?);
    }
    let usage = s.usage.as_ref().map(|u| cpu_mem(&format!("{at}.usage"), u)).transpose()?;
    let pod = PodState::from_pod(&s.pod, paths, usage, &usages)
        .map_err(|e| error(format!("{at}.pod.{}", e.field), e.message))?;
    if let Some(unknown) = usages.keys().find(|k| !pod.containers.iter().any(|c| &c.name == *k)) {
        return Err(error(format!("{at}.containers.{unknown}"), "no such container in the pod"));
    }
    Ok(pod)
}

/// A pod's `cfs` section into [`NodeState::cfs`].
fn cfs_state(
    at: &str,
    section: &PodCfsSection,
    pod: &PodState,
    cfs: &mut BTreeMap<CgroupDir, CfsState>,
) -> Result<(), StateFileError> {
    let state =
        |c: &CfsSection| CfsState { quota_us: c.quota_us, throttled_ratio: c.throttled_ratio };
    if let Some(p) = &section.pod {
        cfs.insert(pod.dir.clone(), state(p));
    }
    for (name, c) in &section.containers {
        let at = format!("{at}.cfs.containers.{name}");
        let container = pod
            .containers
            .iter()
            .find(|k| &k.name == name)
            .ok_or_else(|| error(&at, "no such container in the pod"))?;
        let dir = container.dir.clone().ok_or_else(|| {
            error(&at, "the container has no containerID in the pod's status (no cgroup)")
        })?;
        if c.throttled_ratio.is_some_and(|r| !(0.0..=1.0).contains(&r)) {
            return Err(error(format!("{at}.throttledRatio"), "must be within 0..=1"));
        }
        cfs.insert(dir, state(c));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATE: &str = r#"
now: "2026-11-23T10:00:00Z"
node:
  capacity: {cpu: "16", memory: 64Gi}
  allocatable: {cpu: "15", memory: 60Gi, kubernetes.io/batch-cpu: "8000"}
  usage: {cpu: "7", memory: 40Gi}
  features: {cpuIdle: true}
  be: {cpuset: "0-15", cfsQuotaUs: -1}
pods:
- pod:
    apiVersion: v1
    kind: Pod
    metadata: {name: spark-1, namespace: batch, uid: 0000aaaa-0000-4000-8000-000000000001, labels: {koordinator.sh/qosClass: BE}}
    spec:
      priority: 5500
      containers:
      - name: main
        image: spark
        resources:
          requests: {kubernetes.io/batch-cpu: "2000", kubernetes.io/batch-memory: 4Gi}
          limits: {kubernetes.io/batch-cpu: "4000", kubernetes.io/batch-memory: 4Gi}
    status:
      qosClass: BestEffort
      containerStatuses:
      - {name: main, containerID: "containerd://abc123", image: spark, imageID: "", ready: true, restartCount: 0}
  usage: {cpu: "3", memory: 3Gi}
  containers: {main: {cpu: "3", memory: 3Gi}}
nodeSLO: {resourceUsedThresholdWithBE: {enable: true}}
"#;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn reads_a_node_with_a_be_pod() {
        let input = parse_state(STATE, now()).unwrap();
        let n = &input.node;
        assert_eq!(n.now, "2026-11-23T10:00:00Z".parse::<Timestamp>().unwrap());
        assert_eq!(n.capacity, CpuMem::new(16_000, 64 << 30));
        assert_eq!(n.usage.cpu, 7000);
        assert_eq!(n.be_cpus, CpuSet::from_range(0, 15), "default: every CPU of the capacity");
        assert_eq!(n.be.cfs_quota_us, Some(-1));
        assert!(n.features.cpu_idle && !n.features.cfs_burst);
        assert_eq!(n.be_dir.as_path(), std::path::Path::new("kubepods/besteffort"));
        let p = &n.pods[0];
        assert!(p.is_be());
        assert_eq!(p.priority, Some(5500));
        assert_eq!(
            p.dir.as_path(),
            std::path::Path::new("kubepods/besteffort/pod0000aaaa-0000-4000-8000-000000000001")
        );
        let c = &p.containers[0];
        assert_eq!(c.requests.get(ResourceName::BatchCpu), Some(2000));
        assert_eq!(c.limits.get(ResourceName::BatchMemory), Some(4 << 30));
        assert_eq!(c.dir.as_ref().unwrap().as_path().file_name().unwrap(), "abc123");
        assert_eq!(c.usage, Some(CpuMem::new(3000, 3 << 30)));
        assert_eq!(input.slo.resource_used_threshold_with_be.unwrap().enable, Some(true));
        assert!(n.cfs.is_empty(), "no cfs sections");
    }

    #[test]
    fn reads_the_be_usage_window() {
        let text = STATE.replace(
            "  features: {cpuIdle: true}",
            "  features: {cpuIdle: true}\n  beUsageWindow: {seconds: 60, cpu: 3800m, coveredSeconds: 45}",
        );
        let n = parse_state(&text, now()).unwrap().node;
        assert_eq!(
            n.be_usage_window,
            Some(BeUsageWindow {
                window: std::time::Duration::from_secs(60),
                avg_milli: 3800,
                covered: std::time::Duration::from_secs(45),
            })
        );
        let bad = STATE.replace(
            "  features: {cpuIdle: true}",
            "  features: {cpuIdle: true}\n  beUsageWindow: {seconds: 60, cpu: lots, coveredSeconds: 45}",
        );
        let err = parse_state(&bad, now()).unwrap_err();
        assert!(err.path.starts_with("$.node.beUsageWindow"), "{err}");
    }

    #[test]
    fn reads_cfs_state() {
        let text = STATE.replace(
            "nodeSLO:",
            "  cfs: {pod: {quotaUs: 400000}, containers: {main: {quotaUs: 200000, throttledRatio: 0.25}}}\nnodeSLO:",
        );
        let n = parse_state(&text, now()).unwrap().node;
        let p = &n.pods[0];
        assert_eq!(n.cfs[&p.dir], CfsState { quota_us: 400_000, throttled_ratio: None });
        let c = p.containers[0].dir.as_ref().unwrap();
        assert_eq!(n.cfs[c], CfsState { quota_us: 200_000, throttled_ratio: Some(0.25) });
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (STATE.replace("cpu: \"16\"", "cpu: sixteen"), "$.node.capacity"),
            (
                STATE
                    .replace("cgroupVersion", "x")
                    .replace("features:", "cgroupVersion: v3\n  features:"),
                "$.node.cgroupVersion",
            ),
            (
                STATE
                    .replace("beCpus", "x")
                    .replace("usage: {cpu: \"7\"", "beCpus: \"3-1\"\n  usage: {cpu: \"7\""),
                "$.node.beCpus",
            ),
            (
                STATE.replace("containers: {main:", "containers: {sidecar:"),
                "$.pods[0].containers.sidecar",
            ),
            (
                STATE.replace("uid: 0000aaaa-0000-4000-8000-000000000001", "uid: ../../etc"),
                "$.pods[0].pod.metadata.uid",
            ),
            (STATE.replace("nodeSLO:", "nodeSlo:"), "$"),
            (
                STATE.replace(
                    "nodeSLO:",
                    "  cfs: {containers: {sidecar: {quotaUs: 1000}}}\nnodeSLO:",
                ),
                "$.pods[0].cfs.containers.sidecar",
            ),
            (
                STATE.replace(
                    "nodeSLO:",
                    "  cfs: {containers: {main: {quotaUs: 1000, throttledRatio: 2}}}\nnodeSLO:",
                ),
                "$.pods[0].cfs.containers.main.throttledRatio",
            ),
        ];
        for (text, path) in cases {
            let err = parse_state(&text, now()).unwrap_err();
            assert!(err.path.starts_with(path), "{path}: got {err}");
        }
    }
}
