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
    /// The last sample (cores, memory bytes), carried over between the
    /// rounds that read the container (see [`Cadence::containers`]).
    sample: Option<(f64, u64)>,
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
    /// The last `memory.stat` read (see [`Cadence::pod_memory`]).
    memory: Option<MemoryStat>,
    containers: Vec<ContainerState>,
    seen: u64,
    /// Rounds this pod has been collected in.
    rounds: u64,
    /// Spreads the pods' less frequent reads over the rounds: a pod's turn
    /// comes when `(round + offset)` is a multiple of the cadence.
    offset: u64,
}

impl PodState {
    fn open_count(&self) -> usize {
        self.files.as_ref().map_or(0, Files::open_count)
            + self.containers.iter().map(ContainerState::open_count).sum::<usize>()
    }

    /// Whether this round is the pod's turn for a read done every `every`
    /// rounds. The first two rounds (the CPU baseline and the first rate)
    /// always are, so a new pod's first sample is fresh throughout.
    fn turn(&self, round: u64, every: u64) -> bool {
        self.rounds <= 2 || (round + self.offset).is_multiple_of(every)
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

/// How often the collector reads what no decision needs every second.
///
/// On cgroup v1 the kernel formats `memory.stat` (about 70 lines) on
/// every read, several times the cost of `cpuacct.usage`, and every read is
/// a system call: at 150 pods × 2 containers, reading every file every
/// second was most of the agent's CPU (`docs/benchmarks.md`). What must be
/// fresh every second is read every second: every pod's CPU (CPU
/// suppression, CPU eviction, NodeMetric) and the memory of BE pods (the
/// pods memory eviction picks from, ordered and counted by their memory).
/// The rest — containers (no strategy decides on a container's usage; they
/// are reported) and the memory of pods memory eviction never picks
/// (NodeMetric averages it over the report window; the predictor learns
/// its peaks) — is read every few rounds, each sample carrying the last
/// value in between, with the pods spread over the rounds. Koordinator
/// reads everything every round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cadence {
    /// Containers' CPU and `memory.stat`: every this many rounds (a
    /// container's CPU is then the average since its last read).
    pub containers: u64,
    /// `memory.stat` of the pods that are not BE: every this many rounds.
    pub pod_memory: u64,
}

impl Cadence {
    /// Everything every round (as Koordinator).
    pub const EVERY_ROUND: Cadence = Cadence { containers: 1, pod_memory: 1 };
}

impl Default for Cadence {
    /// Containers every 10 rounds, the memory of pods that are not BE every
    /// 5.
    fn default() -> Cadence {
        Cadence { containers: 10, pod_memory: 5 }
    }
}

/// Collects pod and container CPU and memory from cgroups.
///
/// The two files read per cgroup (CPU usage and `memory.stat`, at the
/// [`Cadence`]) are kept open and re-read with `pread`, up to a budget of
/// file descriptors (default: a quarter of the soft `RLIMIT_NOFILE`, at
/// most 16384); beyond it files are opened per read. Opening a cgroup file
/// costs more than reading it.
#[derive(Debug)]
pub struct PodCollector {
    cgroups: Arc<Cgroups>,
    pods: HashMap<String, PodState>,
    buf: ReadBuf,
    round: u64,
    errors: Vec<CgroupError>,
    budget: Budget,
    cadence: Cadence,
    /// Pods seen so far (the next new pod's read offset).
    pods_seen: u64,
}

/// One round's shared state, for the per-pod and per-container reads.
struct RoundCtx<'a> {
    cgroups: &'a Cgroups,
    buf: &'a mut ReadBuf,
    budget: &'a mut Budget,
    errors: &'a mut Vec<CgroupError>,
    version: CgroupVersion,
    round: u64,
    now_ns: i128,
    cadence: Cadence,
}

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
            cadence: Cadence::default(),
            pods_seen: 0,
        }
    }

    /// Reads at `cadence` instead of the default (a cadence of 0 counts as
    /// 1: every round).
    pub fn with_cadence(mut self, cadence: Cadence) -> PodCollector {
        self.cadence = Cadence {
            containers: cadence.containers.max(1),
            pod_memory: cadence.pod_memory.max(1),
        };
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
        let (round, cadence) = (self.round, self.cadence);
        let PodCollector { cgroups, pods: states, buf, errors, budget, pods_seen, .. } = self;
        let mut ctx = RoundCtx {
            cgroups,
            buf,
            budget,
            errors,
            version: cgroups.version(),
            round,
            now_ns: now.as_nanosecond(),
            cadence,
        };
        let mut out = Vec::with_capacity(pods.len());
        for pod in pods.iter().filter(|p| !p.terminated) {
            let known = states.get(&pod.id.uid).is_some_and(|s| s.qos == pod.kube_qos);
            if !known {
                let state = new_pod_state(&mut ctx, pod, *pods_seen);
                *pods_seen += 1;
                if let Some(old) = states.insert(pod.id.uid.clone(), state) {
                    ctx.budget.open -= old.open_count();
                }
            }
            let Some(state) = states.get_mut(&pod.id.uid) else { continue };
            if let Some(sample) = collect_pod(&mut ctx, pod, state, now) {
                out.push(sample);
            }
        }
        states.retain(|_, s| {
            let keep = s.seen == round;
            if !keep {
                ctx.budget.open -= s.open_count();
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

/// A pod's collector state at its first sighting (its files resolved once;
/// an invalid UID is reported now and the pod never read).
fn new_pod_state(ctx: &mut RoundCtx<'_>, pod: &AgentPod, offset: u64) -> PodState {
    let files = ctx
        .cgroups
        .pod_dir(pod.kube_qos, &pod.id.uid)
        .map_err(CgroupError::from)
        .and_then(|dir| Files::new(ctx.cgroups, dir));
    PodState {
        qos: pod.kube_qos,
        files: files.map_err(|e| ctx.errors.push(e)).ok(),
        last: None,
        memory: None,
        containers: Vec::new(),
        seen: ctx.round,
        rounds: 0,
        offset,
    }
}

/// Reads one pod and its containers at the [`Cadence`]; the pod's sample
/// once it has a CPU rate.
fn collect_pod(
    ctx: &mut RoundCtx<'_>,
    pod: &AgentPod,
    state: &mut PodState,
    now: Timestamp,
) -> Option<PodSample> {
    state.seen = ctx.round;
    state.rounds += 1;
    // Memory eviction picks BE pods by their memory: always fresh.
    let memory_turn = pod.is_be() || state.turn(ctx.round, ctx.cadence.pod_memory);
    let container_turn = state.turn(ctx.round, ctx.cadence.containers);
    let files = state.files.as_mut()?;
    let reading = match state.memory {
        Some(memory) if !memory_turn => {
            read_cpu(ctx, files).map(|cpu_ns| Reading { cpu_ns, memory })
        }
        _ => read(ctx, files),
    };
    let Some(reading) = reading else {
        state.last = None;
        state.memory = None;
        ctx.budget.open -= state.containers.iter().map(ContainerState::open_count).sum::<usize>();
        state.containers.clear();
        return None;
    };
    state.memory = Some(reading.memory);
    let cpu = rate(&mut state.last, reading.cpu_ns, ctx.now_ns);
    let mut containers = Vec::with_capacity(pod.containers.len());
    for c in &pod.containers {
        let Some(raw_id) = c.id.as_deref() else { continue };
        let cs = container_state(ctx, &mut state.containers, &files.dir, raw_id);
        if let Some(sample) = collect_container(ctx, cs, &c.name, container_turn) {
            containers.push(sample);
        }
    }
    let round = ctx.round;
    let budget = &mut *ctx.budget;
    state.containers.retain(|c| {
        let keep = c.seen == round;
        if !keep {
            budget.open -= c.open_count();
        }
        keep
    });
    Some(PodSample {
        at: now,
        uid: pod.id.uid.clone(),
        cpu_cores: cpu?,
        memory_bytes: reading.memory.usage(),
        memory_with_cache_bytes: reading.memory.usage_with_page_cache(),
        containers,
    })
}

/// The state of the container `raw_id` of the pod in `pod_dir`, created
/// (its ID validated and files resolved once) at its first sighting.
fn container_state<'s>(
    ctx: &mut RoundCtx<'_>,
    containers: &'s mut Vec<ContainerState>,
    pod_dir: &CgroupDir,
    raw_id: &str,
) -> &'s mut ContainerState {
    let idx = match containers.iter().position(|s| s.raw_id == raw_id) {
        Some(i) => i,
        None => {
            let cgroups = ctx.cgroups;
            let resolved = ContainerId::parse(raw_id).map_err(CgroupError::from).and_then(|id| {
                let dir = cgroups.pod_paths().container_dir(pod_dir, &id)?;
                Ok((id.id().to_string(), Files::new(cgroups, dir)?))
            });
            let (id, files) = match resolved {
                Ok((id, files)) => (id, Some(files)),
                Err(e) => {
                    ctx.errors.push(e);
                    (String::new(), None)
                }
            };
            containers.push(ContainerState {
                raw_id: raw_id.to_string(),
                id,
                files,
                last: None,
                sample: None,
                seen: ctx.round,
            });
            containers.len() - 1
        }
    };
    &mut containers[idx]
}

/// One container's sample: read on its `turn` (and until it has a CPU
/// rate), else the last one carried over.
fn collect_container(
    ctx: &mut RoundCtx<'_>,
    cs: &mut ContainerState,
    name: &str,
    turn: bool,
) -> Option<ContainerSample> {
    cs.seen = ctx.round;
    let files = cs.files.as_mut()?;
    if turn || cs.sample.is_none() {
        let Some(reading) = read(ctx, files) else {
            cs.last = None;
            cs.sample = None;
            return None;
        };
        cs.sample = rate(&mut cs.last, reading.cpu_ns, ctx.now_ns)
            .map(|cores| (cores, reading.memory.usage()));
    }
    let (cpu_cores, memory_bytes) = cs.sample?;
    Some(ContainerSample { name: name.to_string(), id: cs.id.clone(), cpu_cores, memory_bytes })
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
fn read(ctx: &mut RoundCtx<'_>, files: &mut Files) -> Option<Reading> {
    let version = ctx.version;
    let result =
        read_one(ctx.buf, &mut files.cpu, ctx.budget, |t| reader::parse_cpu_usage(version, t))
            .and_then(|cpu_ns| {
                let memory = read_one(ctx.buf, &mut files.memory, ctx.budget, |t| {
                    reader::parse_memory_stat(version, t)
                })?;
                Ok(Reading { cpu_ns, memory })
            });
    ctx.keep(result)
}

/// Like [`read`], CPU usage only.
fn read_cpu(ctx: &mut RoundCtx<'_>, files: &mut Files) -> Option<u64> {
    let version = ctx.version;
    let result =
        read_one(ctx.buf, &mut files.cpu, ctx.budget, |t| reader::parse_cpu_usage(version, t));
    ctx.keep(result)
}

impl RoundCtx<'_> {
    /// The value, or `None` with the error recorded (unless the cgroup is
    /// simply not there).
    fn keep<T>(&mut self, result: Result<T, CgroupError>) -> Option<T> {
        result
            .map_err(|e| {
                if !e.is_not_found() {
                    self.errors.push(e)
                }
            })
            .ok()
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
        let mut col = PodCollector::new(cg).with_cadence(Cadence::EVERY_ROUND);
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
    fn containers_and_ls_pod_memory_are_read_at_their_cadence_be_pod_memory_every_round() {
        /// What the files say (pod memory MiB, container CPU seconds,
        /// container memory MiB) and the samples wanted for an LS and a BE
        /// pod (pod memory MiB, container cores, container memory MiB).
        type Round = (u64, f64, u64, Option<(u64, f64, u64)>, Option<(u64, f64, u64)>);
        // Rounds at t = 1..=6 s; in each, what the files say (pod memory,
        // container CPU seconds, container memory) and what the samples
        // must show for an LS pod and a BE pod (pod memory MiB, container
        // cores, container memory MiB). Cadence: containers every 3
        // rounds, LS pod memory every 2; both always in the first two.
        #[rustfmt::skip]
        let rounds: [Round; 6] = [
            // files                 LS pod sample          BE pod sample
            (100, 1.0, 60,  None,                    None),                    // baseline
            (110, 1.5, 70,  Some((110, 0.5, 70)),    Some((110, 0.5, 70))),    // first rate: all fresh
            (120, 2.5, 80,  Some((110, 1.0, 80)),    Some((120, 1.0, 80))),    // containers' turn
            (130, 4.5, 90,  Some((130, 1.0, 80)),    Some((130, 1.0, 80))),    // LS memory's turn
            (140, 5.0, 95,  Some((130, 1.0, 80)),    Some((140, 1.0, 80))),    // nobody's turn
            (150, 5.5, 99,  Some((150, 1.0, 99)),    Some((150, 1.0, 99))),    // both: CPU over 3 s
        ];
        for be in [false, true] {
            let (tree, pod, ctrs) = v1_tree();
            let cadence = Cadence { containers: 3, pod_memory: 2 };
            let mut col = PodCollector::new(Arc::new(tree.cgroups())).with_cadence(cadence);
            let mut p = agent_pod(UID, KubeQoSClass::Burstable, &[("a", Some("containerd://aaa"))]);
            if be {
                p.qos = QoSClass::BE;
            }
            for (i, (pod_mib, ctr_secs, ctr_mib, ls, be_want)) in rounds.iter().enumerate() {
                let at = i as f64 + 1.0;
                set_v1(&tree, &pod, (at * 1e9) as u64, pod_mib << 20);
                set_v1(&tree, &ctrs[0], (ctr_secs * 1e9) as u64, ctr_mib << 20);
                let got = col.collect(std::slice::from_ref(&p), t(at)).first().map(|s| {
                    let c = &s.containers[0];
                    (s.memory_bytes >> 20, c.cpu_cores, c.memory_bytes >> 20)
                });
                let want = if be { be_want } else { ls };
                let close = match (got, want) {
                    (Some(g), Some(w)) => g.0 == w.0 && (g.1 - w.1).abs() < 1e-9 && g.2 == w.2,
                    (g, w) => g.is_none() && w.is_none(),
                };
                assert!(close, "BE {be}, round {}: got {got:?}, want {want:?}", i + 1);
            }
        }
    }

    #[test]
    fn pods_take_turns_over_the_rounds() {
        // Ten LS pods, pod memory every 5 rounds: after the first two
        // rounds each round reads the memory of two of them, not all ten
        // at once.
        let tree = Tree::v1(CgroupDriver::Cgroupfs);
        let uids: Vec<String> =
            (0..10).map(|i| format!("{}{i:02}", &UID[..UID.len() - 2])).collect();
        let pods: Vec<AgentPod> =
            uids.iter().map(|u| agent_pod(u, KubeQoSClass::Burstable, &[])).collect();
        let cadence = Cadence { containers: 10, pod_memory: 5 };
        let mut col = PodCollector::new(Arc::new(tree.cgroups())).with_cadence(cadence);
        let mut mib = 1u64;
        let mut changed_per_round = Vec::new();
        let mut last: Vec<u64> = Vec::new();
        for round in 1..=12u64 {
            mib += 1;
            for u in &uids {
                set_v1(&tree, &format!("kubepods/burstable/pod{u}"), round * 1_000_000, mib << 20);
            }
            let samples = col.collect(&pods, t(round as f64));
            let now: Vec<u64> = samples.iter().map(|s| s.memory_bytes >> 20).collect();
            if round > 2 {
                changed_per_round.push(now.iter().zip(&last).filter(|(a, b)| a != b).count());
            }
            last = now;
        }
        assert_eq!(changed_per_round, vec![2; 10], "pods whose memory was re-read, per round");
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
