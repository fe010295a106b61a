//! The pod / container collector (spec §1.3): CPU = Δ cumulative CPU time /
//! Δ wall time from `cpuacct.usage` (v2: `cpu.stat` `usage_usec`), memory =
//! `memory.stat` anon + unevictable (without page cache; the page-cache
//! variant is reported too). A pod's or container's first sighting only
//! records the CPU baseline; pods and containers that disappear are
//! forgotten, so memory stays bounded by the current pod list.
//!
//! Paths are resolved (and UIDs / IDs validated) once per pod and
//! container, and every file is read through one reused buffer.

use std::collections::HashMap;
use std::sync::Arc;

use kolo_api::kube_qos::KubeQoSClass;
use kolo_core::clock::Timestamp;

use crate::agent_pod::AgentPod;
use crate::cgroup::reader::{self, OpenFile, ReadBuf};
use crate::cgroup::{
    CgroupDir, CgroupError, CgroupVersion, Cgroups, ContainerId, MemoryStat, Resource,
};
use crate::sample::{ContainerSample, PodSample, PsiSample};

/// One container's pressure.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerPsi {
    /// Container name.
    pub name: String,
    /// Runtime ID (without the `runtime://` prefix).
    pub id: String,
    /// Its PSI.
    pub psi: PsiSample,
}

/// One pod's pressure (from its cgroup's PSI files).
#[derive(Debug, Clone, PartialEq)]
pub struct PodPsi {
    /// When it was taken.
    pub at: Timestamp,
    /// Pod UID.
    pub uid: String,
    /// The pod's PSI.
    pub psi: PsiSample,
    /// Its containers' PSI.
    pub containers: Vec<ContainerPsi>,
}

/// Resolved files of one cgroup.
#[derive(Debug)]
struct Files {
    dir: CgroupDir,
    cpu: OpenFile,
    memory: OpenFile,
}

impl Files {
    fn new(cgroups: &Cgroups, dir: CgroupDir) -> Result<Files, CgroupError> {
        Ok(Files {
            cpu: OpenFile::new(cgroups.read_path(&dir, Resource::CpuacctUsage)?),
            memory: OpenFile::new(cgroups.read_path(&dir, Resource::MemoryStat)?),
            dir,
        })
    }

    fn open_count(&self) -> usize {
        usize::from(self.cpu.is_open()) + usize::from(self.memory.is_open())
    }
}

/// The last cumulative CPU reading.
#[derive(Debug, Clone, Copy)]
struct Last {
    cpu_ns: u64,
    at_ns: i128,
}

#[derive(Debug)]
struct ContainerState {
    /// The raw `runtime://id` (what the pod list says).
    raw_id: String,
    /// The bare ID, for samples.
    id: String,
    /// `None`: invalid ID (reported once).
    files: Option<Files>,
    last: Option<Last>,
    /// The last `memory.stat` usage read (see `container_memory_every`).
    memory: Option<u64>,
    seen: u64,
}

impl ContainerState {
    fn open_count(&self) -> usize {
        self.files.as_ref().map_or(0, Files::open_count)
    }
}

#[derive(Debug)]
struct PodState {
    qos: KubeQoSClass,
    /// `None`: invalid UID (reported once).
    files: Option<Files>,
    last: Option<Last>,
    containers: Vec<ContainerState>,
    seen: u64,
}

impl PodState {
    fn open_count(&self) -> usize {
        self.files.as_ref().map_or(0, Files::open_count)
            + self.containers.iter().map(ContainerState::open_count).sum::<usize>()
    }
}

/// What one read of a cgroup gave.
struct Reading {
    cpu_ns: u64,
    memory: MemoryStat,
}

/// How many cgroup files may stay open between rounds.
#[derive(Debug)]
struct Budget {
    open: usize,
    max: usize,
}

/// Collects pod and container CPU and memory from cgroups.
///
/// The two files read per cgroup every round (CPU usage and
/// `memory.stat`) are kept open and re-read with `pread`, up to a budget
/// of file descriptors (default: a quarter of the soft `RLIMIT_NOFILE`,
/// at most 16384); beyond it files are opened per read. Opening a cgroup
/// file costs more than reading it.
#[derive(Debug)]
pub struct PodCollector {
    cgroups: Arc<Cgroups>,
    pods: HashMap<String, PodState>,
    buf: ReadBuf,
    round: u64,
    errors: Vec<CgroupError>,
    budget: Budget,
    container_memory_every: u64,
}

/// Container `memory.stat` is read every this many rounds by default.
///
/// On cgroup v1 the kernel builds `memory.stat` on every read, about ten
/// times the cost of `cpuacct.usage`; at 150 pods × 2 containers reading
/// it for every container every second alone takes about half the agent's
/// 5 ms/s budget. Nothing kolo reports or decides uses container memory at
/// a one-second grain (NodeMetric and the eviction order use pod memory,
/// read every round), so containers' memory is refreshed every 10 rounds
/// and carried over in between. Koordinator reads it every round.
pub const DEFAULT_CONTAINER_MEMORY_EVERY: u64 = 10;

impl PodCollector {
    /// A collector over the node's cgroups.
    pub fn new(cgroups: Arc<Cgroups>) -> PodCollector {
        PodCollector {
            cgroups,
            pods: HashMap::new(),
            buf: ReadBuf::new(),
            round: 0,
            errors: Vec::new(),
            budget: Budget { open: 0, max: default_max_open_files() },
            container_memory_every: DEFAULT_CONTAINER_MEMORY_EVERY,
        }
    }

    /// Reads container `memory.stat` every `rounds` rounds (1: every
    /// round, as Koordinator); in between, a container's sample carries
    /// the last value read.
    pub fn with_container_memory_every(mut self, rounds: u64) -> PodCollector {
        self.container_memory_every = rounds.max(1);
        self
    }

    /// Sets how many cgroup files may stay open between rounds (0: open
    /// every file for every read).
    pub fn with_max_open_files(mut self, max: usize) -> PodCollector {
        self.budget.max = max;
        self
    }

    /// One collection round at `now` (the caller's clock). Returns a sample
    /// for every running pod seen before whose cgroup could be read, with
    /// the containers also seen before. Terminated pods, pods whose cgroup
    /// does not exist (yet, or any more) and first sightings give no
    /// sample.
    pub fn collect(&mut self, pods: &[AgentPod], now: Timestamp) -> Vec<PodSample> {
        self.round += 1;
        self.errors.clear();
        let round = self.round;
        let now_ns = now.as_nanosecond();
        let version = self.cgroups.version();
        let memory_round = round.is_multiple_of(self.container_memory_every);
        let PodCollector { cgroups, pods: states, buf, errors, budget, .. } = self;
        let mut out = Vec::with_capacity(pods.len());
        for pod in pods.iter().filter(|p| !p.terminated) {
            let known = states.get(&pod.id.uid).is_some_and(|s| s.qos == pod.kube_qos);
            if !known {
                let files = cgroups
                    .pod_dir(pod.kube_qos, &pod.id.uid)
                    .map_err(CgroupError::from)
                    .and_then(|dir| Files::new(cgroups, dir));
                let files = files.map_err(|e| errors.push(e)).ok();
                let state = PodState {
                    qos: pod.kube_qos,
                    files,
                    last: None,
                    containers: Vec::new(),
                    seen: round,
                };
                if let Some(old) = states.insert(pod.id.uid.clone(), state) {
                    budget.open -= old.open_count();
                }
            }
            let Some(state) = states.get_mut(&pod.id.uid) else { continue };
            state.seen = round;
            let Some(files) = &mut state.files else { continue };
            let Some(reading) = read(buf, version, files, budget, errors) else {
                state.last = None;
                budget.open -=
                    state.containers.iter().map(ContainerState::open_count).sum::<usize>();
                state.containers.clear();
                continue;
            };
            let cpu = rate(&mut state.last, reading.cpu_ns, now_ns);

            let mut containers = Vec::with_capacity(pod.containers.len());
            for c in &pod.containers {
                let Some(raw_id) = c.id.as_deref() else { continue };
                let idx = match state.containers.iter().position(|s| s.raw_id == raw_id) {
                    Some(i) => i,
                    None => {
                        let resolved =
                            ContainerId::parse(raw_id).map_err(CgroupError::from).and_then(|id| {
                                let dir = cgroups.pod_paths().container_dir(&files.dir, &id)?;
                                Ok((id.id().to_string(), Files::new(cgroups, dir)?))
                            });
                        let (id, files) = match resolved {
                            Ok((id, files)) => (id, Some(files)),
                            Err(e) => {
                                errors.push(e);
                                (String::new(), None)
                            }
                        };
                        state.containers.push(ContainerState {
                            raw_id: raw_id.to_string(),
                            id,
                            files,
                            last: None,
                            memory: None,
                            seen: round,
                        });
                        state.containers.len() - 1
                    }
                };
                let cs = &mut state.containers[idx];
                cs.seen = round;
                let Some(cfiles) = &mut cs.files else { continue };
                let reading = match cs.memory {
                    Some(memory) if !memory_round => {
                        read_cpu(buf, version, cfiles, budget, errors).map(|cpu| (cpu, memory))
                    }
                    _ => read(buf, version, cfiles, budget, errors)
                        .map(|r| (r.cpu_ns, r.memory.usage())),
                };
                let Some((cpu_ns, memory)) = reading else {
                    cs.last = None;
                    cs.memory = None;
                    continue;
                };
                cs.memory = Some(memory);
                if let Some(cpu_cores) = rate(&mut cs.last, cpu_ns, now_ns) {
                    containers.push(ContainerSample {
                        name: c.name.clone(),
                        id: cs.id.clone(),
                        cpu_cores,
                        memory_bytes: memory,
                    });
                }
            }
            state.containers.retain(|c| {
                let keep = c.seen == round;
                if !keep {
                    budget.open -= c.open_count();
                }
                keep
            });

            if let Some(cpu_cores) = cpu {
                out.push(PodSample {
                    at: now,
                    uid: pod.id.uid.clone(),
                    cpu_cores,
                    memory_bytes: reading.memory.usage(),
                    memory_with_cache_bytes: reading.memory.usage_with_page_cache(),
                    containers,
                });
            }
        }
        states.retain(|_, s| {
            let keep = s.seen == round;
            if !keep {
                budget.open -= s.open_count();
            }
            keep
        });
        out
    }

    /// Pressure of the pods and containers seen by the last
    /// [`PodCollector::collect`] (spec §1.2: every 10 s). Empty where the
    /// kernel has no per-cgroup PSI files (cgroup v1 without the Anolis
    /// extension; logged once).
    pub fn collect_psi(&mut self, pods: &[AgentPod], now: Timestamp) -> Vec<PodPsi> {
        let cgroups = &self.cgroups;
        if !cgroups.is_supported(Resource::CpuPressure) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for pod in pods {
            let Some(state) = self.pods.get(&pod.id.uid) else { continue };
            let Some(files) = &state.files else { continue };
            let psi = match cgroups.psi_with(&mut self.buf, &files.dir) {
                Ok(psi) => psi,
                Err(e) => {
                    if !e.is_not_found() {
                        self.errors.push(e);
                    }
                    continue;
                }
            };
            let mut containers = Vec::new();
            for c in &pod.containers {
                let Some(raw_id) = c.id.as_deref() else { continue };
                let Some(cs) = state.containers.iter().find(|s| s.raw_id == raw_id) else {
                    continue;
                };
                let Some(cfiles) = &cs.files else { continue };
                match cgroups.psi_with(&mut self.buf, &cfiles.dir) {
                    Ok(psi) => containers.push(ContainerPsi {
                        name: c.name.clone(),
                        id: cs.id.clone(),
                        psi,
                    }),
                    Err(e) if e.is_not_found() => {}
                    Err(e) => self.errors.push(e),
                }
            }
            out.push(PodPsi { at: now, uid: pod.id.uid.clone(), psi, containers });
        }
        out
    }

    /// Errors of the last round: unreadable or garbage cgroup files, and
    /// invalid pod UIDs / container IDs (reported once, in the round they
    /// first appear). Missing cgroup directories are not errors.
    pub fn errors(&self) -> &[CgroupError] {
        &self.errors
    }

    /// Number of pods whose state is kept (the pods of the last round).
    pub fn tracked_pods(&self) -> usize {
        self.pods.len()
    }

    /// Number of containers whose state is kept.
    pub fn tracked_containers(&self) -> usize {
        self.pods.values().map(|p| p.containers.len()).sum()
    }

    /// Number of cgroup files held open.
    pub fn open_files(&self) -> usize {
        self.budget.open
    }
}

/// A quarter of the soft open-file limit, at most 16384 (512 if unknown).
fn default_max_open_files() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits").ok().and_then(|limits| {
        let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse::<usize>().ok()
    });
    soft.map_or(512, |n| (n / 4).min(16_384))
}

/// Reads one file within the descriptor budget.
fn read_one<T>(
    buf: &mut ReadBuf,
    file: &mut OpenFile,
    budget: &mut Budget,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, CgroupError> {
    let was_open = file.is_open();
    let keep_open = was_open || budget.open < budget.max;
    let result = buf.parse_open(file, keep_open, parse);
    match (was_open, file.is_open()) {
        (false, true) => budget.open += 1,
        (true, false) => budget.open -= 1,
        _ => {}
    }
    result
}

/// Reads CPU and memory of one cgroup; `None` on any failure (recorded
/// unless the cgroup is simply not there).
fn read(
    buf: &mut ReadBuf,
    version: CgroupVersion,
    files: &mut Files,
    budget: &mut Budget,
    errors: &mut Vec<CgroupError>,
) -> Option<Reading> {
    let result = read_one(buf, &mut files.cpu, budget, |t| reader::parse_cpu_usage(version, t))
        .and_then(|cpu_ns| {
            let memory = read_one(buf, &mut files.memory, budget, |t| {
                reader::parse_memory_stat(version, t)
            })?;
            Ok(Reading { cpu_ns, memory })
        });
    match result {
        Ok(r) => Some(r),
        Err(e) => {
            if !e.is_not_found() {
                errors.push(e);
            }
            None
        }
    }
}

/// Like [`read`], CPU usage only.
fn read_cpu(
    buf: &mut ReadBuf,
    version: CgroupVersion,
    files: &mut Files,
    budget: &mut Budget,
    errors: &mut Vec<CgroupError>,
) -> Option<u64> {
    match read_one(buf, &mut files.cpu, budget, |t| reader::parse_cpu_usage(version, t)) {
        Ok(cpu_ns) => Some(cpu_ns),
        Err(e) => {
            if !e.is_not_found() {
                errors.push(e);
            }
            None
        }
    }
}

/// Cores since the last reading, and the new baseline. `None` on a first
/// sighting, a non-advancing clock or a counter that went backwards (a
/// recreated cgroup).
fn rate(last: &mut Option<Last>, cpu_ns: u64, at_ns: i128) -> Option<f64> {
    let prev = last.replace(Last { cpu_ns, at_ns })?;
    let dt = at_ns - prev.at_ns;
    if dt <= 0 || cpu_ns < prev.cpu_ns {
        return None;
    }
    Some((cpu_ns - prev.cpu_ns) as f64 / dt as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent_pod::ContainerRef;
    use crate::cgroup::CgroupDriver;
    use crate::cgroup::tree_tests::{Tree, UID};
    use kolo_api::{PriorityClass, QoSClass};
    use kolo_core::resources::ResourceVector;

    pub(crate) fn agent_pod(
        uid: &str,
        qos: KubeQoSClass,
        containers: &[(&str, Option<&str>)],
    ) -> AgentPod {
        AgentPod {
            id: kolo_core::PodRef {
                namespace: "default".into(),
                name: format!("pod-{}", &uid[..uid.len().min(8)]),
                uid: uid.to_string(),
            },
            kube_qos: qos,
            qos: QoSClass::LS,
            qos_source: kolo_api::qos::QoSSource::KoordinatorLabel,
            priority_class: PriorityClass::Prod,
            requests: ResourceVector::default(),
            limits: ResourceVector::default(),
            terminated: false,
            deleting: false,
            created: None,
            containers: containers
                .iter()
                .map(|(name, id)| ContainerRef {
                    name: name.to_string(),
                    id: id.map(str::to_string),
                })
                .collect(),
        }
    }

    fn t(secs: f64) -> Timestamp {
        Timestamp::from_nanosecond((1_700_000_000.0e9 + secs * 1e9) as i128).unwrap()
    }

    fn v1_stat(anon: u64, file: u64) -> String {
        format!(
            "cache {file}\nrss {anon}\ntotal_cache {file}\ntotal_rss {anon}\ntotal_inactive_anon 0\ntotal_active_anon {anon}\ntotal_inactive_file {file}\ntotal_active_file 0\ntotal_unevictable 0\n"
        )
    }

    fn v2_stat(anon: u64, file: u64) -> String {
        format!(
            "anon {anon}\nfile {file}\ninactive_anon 0\nactive_anon {anon}\ninactive_file {file}\nactive_file 0\nunevictable 0\n"
        )
    }

    /// A v1 cgroupfs tree with one burstable pod and two containers.
    fn v1_tree() -> (Tree, String, [String; 2]) {
        let tree = Tree::v1(CgroupDriver::Cgroupfs);
        let pod = format!("kubepods/burstable/pod{UID}");
        let ctrs = [format!("{pod}/aaa"), format!("{pod}/bbb")];
        (tree, pod, ctrs)
    }

    fn set_v1(tree: &Tree, dir: &str, cpu_ns: u64, anon: u64) {
        tree.file_v1("cpuacct", dir, "cpuacct.usage", &format!("{cpu_ns}\n"));
        tree.file_v1("memory", dir, "memory.stat", &v1_stat(anon, 1 << 20));
    }

    #[test]
    fn v1_cpu_and_memory_with_baseline_first() {
        let (tree, pod, ctrs) = v1_tree();
        let cg = Arc::new(tree.cgroups());
        let mut col = PodCollector::new(cg).with_container_memory_every(1);
        let pods = [agent_pod(
            UID,
            KubeQoSClass::Burstable,
            &[("a", Some("containerd://aaa")), ("b", Some("containerd://bbb"))],
        )];
        set_v1(&tree, &pod, 1_000_000_000, 100 << 20);
        set_v1(&tree, &ctrs[0], 900_000_000, 60 << 20);
        set_v1(&tree, &ctrs[1], 100_000_000, 40 << 20);
        assert!(col.collect(&pods, t(0.0)).is_empty(), "first sighting: baseline only");
        assert_eq!((col.tracked_pods(), col.tracked_containers()), (1, 2));
        assert_eq!(col.open_files(), 6, "cpu + memory.stat of 3 cgroups kept open");

        set_v1(&tree, &pod, 2_500_000_000, 110 << 20);
        set_v1(&tree, &ctrs[0], 2_400_000_000, 70 << 20);
        set_v1(&tree, &ctrs[1], 100_000_000, 40 << 20);
        let samples = col.collect(&pods, t(2.0));
        assert!(col.errors().is_empty(), "{:?}", col.errors());
        assert_eq!(samples.len(), 1);
        let s = &samples[0];
        assert_eq!(s.uid, UID);
        assert_eq!(s.at, t(2.0));
        assert!((s.cpu_cores - 0.75).abs() < 1e-9, "{}", s.cpu_cores);
        assert_eq!(s.memory_bytes, 110 << 20);
        assert_eq!(s.memory_with_cache_bytes, (110 << 20) + (1 << 20));
        let c: Vec<_> = s
            .containers
            .iter()
            .map(|c| (c.name.as_str(), c.id.as_str(), c.cpu_cores, c.memory_bytes))
            .collect();
        assert_eq!(c, vec![("a", "aaa", 0.75, 70 << 20), ("b", "bbb", 0.0, 40 << 20)]);
        col.collect(&[], t(3.0));
        assert_eq!(col.open_files(), 0, "descriptors of vanished pods are closed");
    }

    #[test]
    fn container_memory_is_refreshed_every_n_rounds_and_pod_memory_every_round() {
        let (tree, pod, ctrs) = v1_tree();
        let mut col = PodCollector::new(Arc::new(tree.cgroups())).with_container_memory_every(3);
        let pods = [agent_pod(UID, KubeQoSClass::Burstable, &[("a", Some("containerd://aaa"))])];
        let memory = |col: &mut PodCollector, at: f64| {
            let s = col.collect(&pods, t(at));
            (s[0].memory_bytes >> 20, s[0].containers[0].memory_bytes >> 20)
        };
        set_v1(&tree, &pod, 1, 100 << 20);
        set_v1(&tree, &ctrs[0], 1, 60 << 20);
        assert!(col.collect(&pods, t(1.0)).is_empty(), "round 1: baseline, memory read");
        set_v1(&tree, &pod, 2, 110 << 20);
        set_v1(&tree, &ctrs[0], 2, 70 << 20);
        assert_eq!(memory(&mut col, 2.0), (110, 60), "round 2: the container's is carried over");
        assert_eq!(memory(&mut col, 3.0), (110, 70), "round 3: refreshed");
        set_v1(&tree, &pod, 3, 120 << 20);
        set_v1(&tree, &ctrs[0], 3, 80 << 20);
        assert_eq!(memory(&mut col, 4.0), (120, 70), "round 4: carried over again");
    }

    #[test]
    fn descriptor_budget_is_respected_and_results_do_not_depend_on_it() {
        let (tree, pod, ctrs) = v1_tree();
        let pods = [agent_pod(
            UID,
            KubeQoSClass::Burstable,
            &[("a", Some("containerd://aaa")), ("b", Some("containerd://bbb"))],
        )];
        let mut results = Vec::new();
        for max in [0, 3, 100] {
            let mut col = PodCollector::new(Arc::new(tree.cgroups())).with_max_open_files(max);
            set_v1(&tree, &pod, 1_000, 5 << 20);
            set_v1(&tree, &ctrs[0], 1_000, 3 << 20);
            set_v1(&tree, &ctrs[1], 0, 2 << 20);
            col.collect(&pods, t(0.0));
            set_v1(&tree, &pod, 1_000 + 400_000_000, 6 << 20);
            set_v1(&tree, &ctrs[0], 1_000 + 300_000_000, 4 << 20);
            let s = col.collect(&pods, t(1.0));
            assert!(col.open_files() <= max, "{} > {max}", col.open_files());
            results.push(s);
        }
        assert_eq!(results[0], results[1]);
        assert_eq!(results[0], results[2]);
        assert!((results[0][0].cpu_cores - 0.4).abs() < 1e-9);
    }

    #[test]
    fn v2_systemd_tree() {
        let tree = Tree::v2(CgroupDriver::Systemd);
        for f in ["cpu.stat", "memory.stat"] {
            tree.file("kubepods.slice", f, "");
        }
        let cg = Arc::new(tree.cgroups());
        let pod_dir = cg.pod_dir(KubeQoSClass::Guaranteed, UID).unwrap();
        let pod = pod_dir.as_path().to_str().unwrap().to_string();
        assert_eq!(pod, "kubepods.slice/kubepods-pod6f1e2b9c_3d4a_4b5c_8d7e_0123456789ab.slice");
        let ctr = format!("{pod}/cri-containerd-abc.scope");
        let set = |dir: &str, usec: u64, anon: u64| {
            tree.file(dir, "cpu.stat", &format!("usage_usec {usec}\nuser_usec 0\nsystem_usec 0\n"));
            tree.file(dir, "memory.stat", &v2_stat(anon, 4096));
        };
        set(&pod, 1_000_000, 8 << 20);
        set(&ctr, 1_000_000, 8 << 20);
        let pods = [agent_pod(UID, KubeQoSClass::Guaranteed, &[("app", Some("containerd://abc"))])];
        let mut col = PodCollector::new(cg);
        assert!(col.collect(&pods, t(0.0)).is_empty());
        set(&pod, 1_500_000, 9 << 20);
        set(&ctr, 1_400_000, 9 << 20);
        let s = col.collect(&pods, t(1.0));
        assert_eq!(s.len(), 1);
        assert!((s[0].cpu_cores - 0.5).abs() < 1e-9);
        assert!((s[0].containers[0].cpu_cores - 0.4).abs() < 1e-9);
        assert_eq!(s[0].memory_bytes, 9 << 20);
        assert_eq!(s[0].memory_with_cache_bytes, (9 << 20) + 4096);
    }

    #[test]
    fn new_containers_restarts_and_vanished_pods() {
        let (tree, pod, ctrs) = v1_tree();
        let mut col = PodCollector::new(Arc::new(tree.cgroups()));
        set_v1(&tree, &pod, 0, 1);
        set_v1(&tree, &ctrs[0], 0, 1);
        set_v1(&tree, &ctrs[1], 0, 1);
        // Container b not created yet (no ID).
        let mut pods = vec![agent_pod(
            UID,
            KubeQoSClass::Burstable,
            &[("a", Some("containerd://aaa")), ("b", None)],
        )];
        col.collect(&pods, t(0.0));
        let s = col.collect(&pods, t(1.0));
        assert_eq!(s[0].containers.len(), 1);
        // b appears: baseline only this round.
        pods[0].containers[1].id = Some("containerd://bbb".into());
        let s = col.collect(&pods, t(2.0));
        assert_eq!(s[0].containers.len(), 1);
        let s = col.collect(&pods, t(3.0));
        assert_eq!(s[0].containers.len(), 2);
        // a restarts with a new ID whose cgroup does not exist yet: no
        // sample, no error, old state dropped.
        pods[0].containers[0].id = Some("containerd://ccc".into());
        let s = col.collect(&pods, t(4.0));
        assert_eq!(s[0].containers.len(), 1);
        assert!(col.errors().is_empty());
        assert_eq!(col.tracked_containers(), 2);
        // The pod goes away: forgotten.
        col.collect(&[], t(5.0));
        assert_eq!((col.tracked_pods(), col.tracked_containers()), (0, 0));
        // Terminated pods are not measured or kept.
        pods[0].terminated = true;
        assert!(col.collect(&pods, t(6.0)).is_empty());
        assert_eq!(col.tracked_pods(), 0);
    }

    #[test]
    fn missing_cgroups_counter_resets_and_garbage() {
        let (tree, pod, _) = v1_tree();
        let mut col = PodCollector::new(Arc::new(tree.cgroups()));
        let pods = [agent_pod(UID, KubeQoSClass::Burstable, &[])];
        // Not created yet: nothing, no error.
        assert!(col.collect(&pods, t(0.0)).is_empty());
        assert!(col.errors().is_empty());
        set_v1(&tree, &pod, 5_000, 1);
        col.collect(&pods, t(1.0));
        // Counter went backwards (cgroup recreated): re-baseline.
        set_v1(&tree, &pod, 1_000, 1);
        assert!(col.collect(&pods, t(2.0)).is_empty());
        set_v1(&tree, &pod, 1_000 + 500_000_000, 1);
        assert_eq!(col.collect(&pods, t(3.0)).len(), 1);
        // Garbage memory.stat: an error naming the file, no sample.
        tree.file_v1("memory", &pod, "memory.stat", "total_active_anon NaN\n");
        assert!(col.collect(&pods, t(4.0)).is_empty());
        let err = col.errors()[0].to_string();
        assert!(err.contains("memory.stat") && err.contains("NaN"), "{err}");
        // Same clock twice: no division by zero.
        set_v1(&tree, &pod, 2_000_000_000, 1);
        col.collect(&pods, t(5.0));
        assert!(col.collect(&pods, t(5.0)).is_empty());
    }

    #[test]
    fn hostile_ids_are_reported_once_and_never_read() {
        let (tree, pod, _) = v1_tree();
        set_v1(&tree, &pod, 0, 1);
        let mut col = PodCollector::new(Arc::new(tree.cgroups()));
        let pods = [
            agent_pod("../../../../etc", KubeQoSClass::Burstable, &[]),
            agent_pod(
                UID,
                KubeQoSClass::Burstable,
                &[("x", Some("containerd://../../../etc")), ("y", Some("kata://abc"))],
            ),
        ];
        col.collect(&pods, t(0.0));
        let errs: Vec<_> = col.errors().iter().map(|e| e.to_string()).collect();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].contains("invalid pod UID"), "{errs:?}");
        assert!(errs[1].contains("invalid container ID"), "{errs:?}");
        let s = col.collect(&pods, t(1.0));
        assert!(col.errors().is_empty(), "reported once: {:?}", col.errors());
        assert_eq!(s.len(), 1);
        assert!(s[0].containers.is_empty());
    }

    #[test]
    fn psi_unsupported_on_v1_and_read_on_v2() {
        let (tree, pod, _) = v1_tree();
        set_v1(&tree, &pod, 0, 1);
        let mut col = PodCollector::new(Arc::new(tree.cgroups()));
        let pods = [agent_pod(UID, KubeQoSClass::Burstable, &[])];
        col.collect(&pods, t(0.0));
        assert!(col.collect_psi(&pods, t(0.0)).is_empty());

        let tree = Tree::v2(CgroupDriver::Cgroupfs);
        let pod = format!("kubepods/besteffort/pod{UID}");
        let line =
            "some avg10=3.00 avg60=0 avg300=0 total=1\nfull avg10=1.00 avg60=0 avg300=0 total=1\n";
        for f in ["cpu.stat", "memory.stat", "cpu.pressure", "memory.pressure", "io.pressure"] {
            tree.file("kubepods", f, "");
        }
        for f in ["cpu.pressure", "memory.pressure", "io.pressure"] {
            tree.file(&pod, f, line);
        }
        tree.file(&pod, "cpu.stat", "usage_usec 1\n");
        tree.file(&pod, "memory.stat", &v2_stat(1, 1));
        let mut col = PodCollector::new(Arc::new(tree.cgroups()));
        let pods = [agent_pod(UID, KubeQoSClass::BestEffort, &[])];
        col.collect(&pods, t(0.0));
        let psi = col.collect_psi(&pods, t(0.0));
        assert_eq!(psi.len(), 1);
        assert_eq!(psi[0].psi.io.some_avg10, 3.0);
        assert_eq!(psi[0].psi.cpu.full_avg10, Some(1.0));
    }
}
