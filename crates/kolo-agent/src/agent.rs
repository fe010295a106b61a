//! The agent loop: one [`Agent::tick`] per collection interval wires the
//! pieces together — pod list, collectors, store, predictor — and
//! [`Agent::node_metric`] builds the NodeMetric it reports.
//!
//! This is the act side for one node: it reads `/proc`, sysfs and cgroups
//! and the pod source, but never the clock (`now` is passed in) and writes
//! nothing but the predictor checkpoint (and not even that in dry-run mode).
//! The cadence follows the reference: node and pod usage every tick, PSI
//! every 10 s, pod list every 10 s (a file source is asked every tick: an
//! unchanged file costs a `stat`), predictor training and GC every minute,
//! checkpoint every 10 minutes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kolo_api::crd::{NodeMetric, NodeMetricSpec, NodeMetricStatus};
use kolo_core::clock::Timestamp;
use kolo_core::resources::ResourceVector;

use std::collections::{BTreeMap, HashMap};

use kolo_api::kube_qos::KubeQoSClass;
use kolo_core::cpuset::CpuSet;
use kolo_core::resources::ResourceName;

use crate::agent_pod::AgentPod;
use crate::cgroup::{CgroupDir, CgroupError, Cgroups, CpuThrottle, LayoutConfig, Resource};
use crate::collect::node::NodeCollector;
use crate::collect::pod::PodCollector;
use crate::collect::psi::NodePsiReader;
use crate::fast_probe::{FastProbe, SurgeRule};
use crate::kernel::{self, FairScheduler};
use crate::nodemetric::{CollectPolicy, ProdInputs, StatusInputs, build};
use crate::pods::{LastGood, PodSource};
use crate::predictor::reclaimable::ReclaimConfig;
use crate::predictor::{PredictServer, PredictorConfig, checkpoint};
use crate::qos::{
    BeGroupState, BeUsageWindow, CfsState, CollectSettings, EvictionHistory, Features, NodeState,
    PodState, SurgeThresholds, cfs_quota_burst,
};
use crate::sample::{NodeSample, PodSample};
use crate::store::{Entity, Metric, MetricStore, StoreConfig};
use kolo_core::CpuMem;

/// How often PSI is read (the reference's PSI collector interval).
const PSI_INTERVAL: Duration = Duration::from_secs(10);
/// How often a remote pod source (the kubelet) is asked.
const POD_SYNC_INTERVAL: Duration = Duration::from_secs(10);
/// How long a kubelet that answers again after failing counts as still
/// starting ([`NodeState::kubelet_down`]): it serves `/pods` a moment
/// before it sets up its QoS cgroups, which is where `cpu.idle` on the BE
/// QoS dir makes it fail.
const KUBELET_SETTLE: Duration = Duration::from_secs(30);

/// Where the agent looks and how often.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The node's name (the NodeMetric's name).
    pub node_name: String,
    /// The cgroup mount root and kubelet cgroup layout.
    pub cgroups: LayoutConfig,
    /// `/proc` (or the DaemonSet's host mount).
    pub proc_root: PathBuf,
    /// `/sys`.
    pub sys_root: PathBuf,
    /// The collection interval (default 1 s).
    pub interval: Duration,
    /// The NodeMetric spec (collect policy) in force.
    pub spec: NodeMetricSpec,
    /// Where the predictor's models are checkpointed (`None`: never).
    pub checkpoint: Option<PathBuf>,
    /// Write nothing (no checkpoint).
    pub dry_run: bool,
    /// The node's allocatable (CPU milli, memory bytes) for prodReclaimable;
    /// `None` reads the CPU count and MemTotal from `/proc`.
    pub allocatable: Option<ResourceVector>,
    /// Whether the pod source is cheap to ask every tick (a file).
    pub sync_pods_every_tick: bool,
}

impl AgentConfig {
    /// The defaults for a node: real `/sys/fs/cgroup`, `/proc`, `/sys`, 1 s.
    pub fn new(node_name: impl Into<String>) -> AgentConfig {
        AgentConfig {
            node_name: node_name.into(),
            cgroups: LayoutConfig::new("/sys/fs/cgroup"),
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
            interval: Duration::from_secs(1),
            spec: NodeMetricSpec::default(),
            checkpoint: None,
            dry_run: false,
            allocatable: None,
            sync_pods_every_tick: false,
        }
    }
}

/// Why the agent could not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The cgroup hierarchy could not be detected.
    #[error("cgroups under {root}: {source}")]
    Cgroups {
        /// The configured root.
        root: PathBuf,
        /// What went wrong.
        source: CgroupError,
    },
    /// `/proc/meminfo` could not be read for the node's allocatable.
    #[error("reading the node's capacity: {0}")]
    Capacity(String),
}

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TickReport {
    /// Node usage, if measured this tick (the first tick only records a
    /// baseline).
    pub node: Option<NodeSample>,
    /// Pods measured this tick.
    pub pods_measured: usize,
    /// Pods in the current list.
    pub pods_known: usize,
    /// Problems met (each names the file, pod or source); the tick still
    /// recorded what it could.
    pub errors: Vec<String>,
}

/// Counters for `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct AgentStats {
    /// Ticks run.
    pub ticks: u64,
    /// Errors met, all kinds.
    pub errors: u64,
    /// Pod source failures (the last good list was kept).
    pub pod_source_failures: u64,
    /// Wall time of the last tick's collection, seconds.
    pub last_tick_seconds: f64,
}

/// One node's agent.
pub struct Agent<S> {
    config: AgentConfig,
    cgroups: Arc<Cgroups>,
    node: NodeCollector,
    /// The fast path's open counters (`None` until first used, or when
    /// the layout has no CPU accounting files).
    fast: Option<FastProbe>,
    /// The kernel's fair scheduler (detected once at start).
    scheduler: Option<FairScheduler>,
    /// The BE QoS cgroup's CPU use the last fast-path surge saw (cores):
    /// until the next round's fresh pod samples, the strategies see the BE
    /// pods' last samples scaled to it.
    fast_be_cores: Option<f64>,
    /// The BE pods' CPU in the last round's samples, cores (summed once per
    /// round: the fast path compares against it every probe).
    sampled_be_cores: f64,
    /// Whether rounds read the CFS state of LS containers with CPU limits
    /// (see [`Agent::set_collect`]); on until the caller says otherwise,
    /// so quotas a previous agent raised are seen and reset.
    collect_cfs: bool,
    cfs: BTreeMap<CgroupDir, CfsState>,
    /// The window of [`BeUsageWindow`] (`None`: not collected).
    be_window: Option<Duration>,
    cfs_throttle: HashMap<CgroupDir, CpuThrottle>,
    node_psi: NodePsiReader,
    pod_collector: PodCollector,
    pods: LastGood<S>,
    pod_generation: u64,
    agent_pods: Vec<AgentPod>,
    /// The strategies' view of each pod without usage, rebuilt only when
    /// the pod list changes (parsing Pod objects every second would cost
    /// more than the whole collection round).
    pod_states: Vec<PodState>,
    store: MetricStore,
    predictor: PredictServer,
    policy: CollectPolicy,
    allocatable: ResourceVector,
    last_pod_sync: Option<Timestamp>,
    /// When the pod source answered again after failing.
    pods_back_at: Option<Timestamp>,
    last_psi: Option<Timestamp>,
    last_samples: Vec<PodSample>,
    last_node: Option<NodeSample>,
    scratch: Vec<f32>,
    stats: AgentStats,
    /// What `kolo doctor` found at start-up, for `/metrics`.
    doctor: Option<crate::doctor::Report>,
}

impl<S: PodSource> Agent<S> {
    /// Detects the cgroup layout, restores the predictor checkpoint (if
    /// any; a bad one is logged and ignored) and prepares the collectors.
    pub fn new(config: AgentConfig, source: S) -> Result<Agent<S>, AgentError> {
        let cgroups = Cgroups::detect(&config.cgroups)
            .map_err(|source| AgentError::Cgroups { root: config.cgroups.root.clone(), source })?;
        let allocatable = match config.allocatable {
            Some(a) => a,
            None => node_capacity(&config.proc_root)?,
        };
        let policy = CollectPolicy::from_spec(&config.spec);
        let store = MetricStore::new(StoreConfig::for_policy(config.interval, &policy));
        let mut predictor = PredictServer::new(PredictorConfig::default());
        if let Some(path) = &config.checkpoint
            && let Some(saved) = checkpoint::load_or_ignore(path)
        {
            // Pods are not known yet: keep every model; GC drops the ones
            // whose pods do not come back within the model expiration.
            let report = predictor.restore(&saved, |_| true);
            tracing::info!(?report, path = %path.display(), "predictor checkpoint restored");
        }
        let scheduler = kernel::detect(&config.proc_root, &config.sys_root);
        tracing::info!(?scheduler, "kernel fair scheduler (EEVDF: BE isolation by weight)");
        let cgroups = Arc::new(cgroups);
        Ok(Agent {
            scheduler,
            cgroups: Arc::clone(&cgroups),
            node: NodeCollector::new(&config.proc_root, &config.sys_root),
            fast: None,
            fast_be_cores: None,
            sampled_be_cores: 0.0,
            collect_cfs: true,
            cfs: BTreeMap::new(),
            be_window: None,
            cfs_throttle: HashMap::new(),
            node_psi: NodePsiReader::new(&config.proc_root),
            pod_collector: PodCollector::new(cgroups),
            pods: LastGood::new(source),
            pod_generation: 0,
            agent_pods: Vec::new(),
            pod_states: Vec::new(),
            store,
            predictor,
            policy,
            allocatable,
            last_pod_sync: None,
            pods_back_at: None,
            last_psi: None,
            last_samples: Vec::new(),
            last_node: None,
            scratch: Vec::new(),
            stats: AgentStats::default(),
            doctor: None,
            config,
        })
    }

    /// One collection round at `now`.
    pub fn tick(&mut self, now: Timestamp) -> TickReport {
        let started = std::time::Instant::now();
        let mut report = TickReport::default();
        self.sync_pods(now, &mut report);
        let node = match self.node.collect(now) {
            Ok(sample) => sample,
            Err(e) => {
                report.errors.push(e.to_string());
                None
            }
        };
        let pods = self.pod_collector.collect(&self.agent_pods, now);
        report.errors.extend(self.pod_collector.errors().iter().map(ToString::to_string));
        self.collect_cfs_state();
        if let Some(node) = &node {
            self.store.record_round(node, &pods);
        }
        if due(self.last_psi, now, PSI_INTERVAL) {
            self.last_psi = Some(now);
            match self.node_psi.read() {
                Ok(Some(psi)) => self.store.record_psi(Entity::Node, now, &psi),
                Ok(None) => {}
                Err(e) => report.errors.push(e.to_string()),
            }
            for pod in self.pod_collector.collect_psi(&self.agent_pods, now) {
                self.store.record_psi(Entity::Pod(&pod.uid), pod.at, &pod.psi);
                for c in &pod.containers {
                    self.store.record_psi(Entity::Container(&c.id), pod.at, &c.psi);
                }
            }
        }
        if self.predictor.training_due(now) {
            self.predictor.train(&self.store, &self.agent_pods, now, &mut self.scratch);
            self.predictor.gc(now);
            self.store.gc(now);
        }
        if let Some(path) = &self.config.checkpoint
            && !self.config.dry_run
            && self.predictor.checkpoint_due(now)
        {
            match checkpoint::save(path, &self.predictor.to_checkpoint()) {
                Ok(()) => self.predictor.mark_checkpointed(now),
                Err(e) => report.errors.push(e.to_string()),
            }
        }
        if node.is_some() {
            self.last_node = node;
        }
        self.fast_be_cores = None;
        report.node = node;
        report.pods_measured = pods.len();
        report.pods_known = self.agent_pods.len();
        self.last_samples = pods;
        self.sampled_be_cores = self.sum_be_samples();
        self.stats.ticks += 1;
        self.stats.errors += report.errors.len() as u64;
        self.stats.last_tick_seconds = started.elapsed().as_secs_f64();
        report
    }

    fn sync_pods(&mut self, now: Timestamp, report: &mut TickReport) {
        // A failing source is asked again every tick: a kubelet coming back
        // is seen within a tick (and the BE isolation that a starting
        // kubelet cannot cope with is restored as soon; see beIsolation).
        let failing = self.pods.consecutive_failures() > 0;
        if !self.config.sync_pods_every_tick
            && !failing
            && !due(self.last_pod_sync, now, POD_SYNC_INTERVAL)
        {
            return;
        }
        self.resync_pods(now, report);
    }

    /// Asks the pod source now, whatever the sync interval, and rebuilds
    /// the pods' states if the list changed: the runtime hooks call it
    /// when asked about a pod the agent has not seen yet (a new pod shows
    /// up in the source before the next sync). Returns the problems met,
    /// as a tick reports them.
    pub fn sync_pods_now(&mut self, now: Timestamp) -> Vec<String> {
        let mut report = TickReport::default();
        self.resync_pods(now, &mut report);
        report.errors
    }

    fn resync_pods(&mut self, now: Timestamp, report: &mut TickReport) {
        let failing = self.pods.consecutive_failures() > 0;
        self.last_pod_sync = Some(now);
        match self.pods.sync() {
            Ok(_) if failing => self.pods_back_at = Some(now),
            Ok(_) => {}
            Err(e) => {
                self.stats.pod_source_failures += 1;
                report.errors.push(e.to_string());
            }
        }
        if self.pods.generation() == self.pod_generation {
            return;
        }
        self.pod_generation = self.pods.generation();
        self.agent_pods.clear();
        self.pod_states.clear();
        let paths = self.cgroups.pod_paths();
        for pod in self.pods.pods() {
            let key = || {
                format!(
                    "{}/{}",
                    pod.metadata.namespace.as_deref().unwrap_or_default(),
                    pod.metadata.name.as_deref().unwrap_or_default()
                )
            };
            let agent_pod = match AgentPod::from_pod(pod) {
                Ok(p) => p,
                Err(e) => {
                    report.errors.push(format!("pod {}: {e} (skipped)", key()));
                    continue;
                }
            };
            // The collector still measures a pod the strategies cannot use
            // (it reports a bad UID itself); the strategies leave it alone.
            match PodState::with_ref(agent_pod.clone(), pod, paths, None, &BTreeMap::new()) {
                Ok(state) => self.pod_states.push(state),
                Err(e) => report.errors.push(format!("pod {}: {e} (no QoS for it)", key())),
            }
            self.agent_pods.push(agent_pod);
        }
        // Free the series of pods that are gone. (Their predictor models
        // expire after 30 min without samples, as in the reference, so a pod
        // that comes back after a short kubelet hiccup keeps its history.)
        let uids: std::collections::HashSet<&str> =
            self.agent_pods.iter().map(|p| p.id.uid.as_str()).collect();
        self.store.retain_pods(|uid| uids.contains(uid));
    }

    /// The NodeMetric status as of `now`, from what was collected so far.
    pub fn node_metric_status(&mut self, now: Timestamp) -> NodeMetricStatus {
        let reclaim = ReclaimConfig::default();
        let built = build(
            &StatusInputs {
                store: &self.store,
                pods: &self.agent_pods,
                policy: &self.policy,
                prod: Some(ProdInputs {
                    predictions: &self.predictor,
                    allocatable: &self.allocatable,
                    config: &reclaim,
                }),
                now,
            },
            &mut self.scratch,
        );
        built.status
    }

    /// The whole NodeMetric object (named after the node, with the spec in
    /// force) as of `now`.
    pub fn node_metric(&mut self, now: Timestamp) -> NodeMetric {
        let mut metric = NodeMetric::new(&self.config.node_name, self.config.spec.clone());
        metric.status = Some(self.node_metric_status(now));
        metric
    }

    /// The node as the QoS strategies see it, from the last round: usage,
    /// pods with their usage, the BE QoS cgroup's current cpuset and CFS
    /// quota, and the kernel's features. Pods whose objects cannot be used
    /// are left out (the collection round already reported them). The
    /// eviction history is empty: the QoS loop keeps it
    /// ([`crate::qos::QosLoop::round`]).
    pub fn node_state(&self, now: Timestamp) -> NodeState {
        self.node_state_of(self.pod_states.clone(), now)
    }

    /// [`Agent::node_state`] into `cache`, reusing the pods' states it holds
    /// when the pod list has not changed since it was filled: only their
    /// usage is refreshed, instead of cloning every pod's state each round.
    pub fn refresh_node_state<'c>(
        &self,
        cache: &'c mut NodeStateCache,
        now: Timestamp,
    ) -> &'c mut NodeState {
        let pods = match cache.state.take() {
            Some(previous) if cache.generation == Some(self.pod_generation) => previous.pods,
            _ => self.pod_states.clone(),
        };
        cache.generation = Some(self.pod_generation);
        cache.state.insert(self.node_state_of(pods, now))
    }

    /// The node state around `pods` (this agent's pod states, in its
    /// order), their usage set from the last round's samples.
    fn node_state_of(&self, mut pods: Vec<PodState>, now: Timestamp) -> NodeState {
        let samples: HashMap<&str, &PodSample> =
            self.last_samples.iter().map(|s| (s.uid.as_str(), s)).collect();
        // After a fast-path surge, the BE pods' CPU is what the BE cgroup
        // used over the last probe interval (their samples are a round old).
        let be_scale = self.fast_be_cores.map(|now| {
            let sampled = self.sampled_be_cores;
            if sampled > 0.0 { now / sampled } else { 1.0 }
        });
        for p in &mut pods {
            let scale = if p.is_be() { be_scale.unwrap_or(1.0) } else { 1.0 };
            set_usage(p, samples.get(p.pod.id.uid.as_str()).copied(), scale);
        }
        self.node_fields(now, pods)
    }

    /// The node-level fields of [`Agent::node_state`] around `pods`.
    fn node_fields(&self, now: Timestamp, pods: Vec<PodState>) -> NodeState {
        let be_dir = self.cgroups.pod_paths().qos_dir(KubeQoSClass::BestEffort).clone();
        let cpu_milli = self.allocatable.get(ResourceName::Cpu).unwrap_or(0);
        let cpus = u32::try_from((cpu_milli / 1000).max(1)).unwrap_or(1);
        NodeState {
            now,
            capacity: CpuMem::new(
                cpu_milli,
                self.allocatable.get(ResourceName::Memory).unwrap_or(0),
            ),
            allocatable: self.allocatable,
            reserved: CpuMem::default(),
            usage: self
                .last_node
                .map_or(CpuMem::default(), |n| cpu_mem(n.cpu_cores, n.memory_bytes)),
            be_cpus: CpuSet::from_range(0, cpus - 1),
            cpu_cores: BTreeMap::new(),
            be: be_group_state(&self.cgroups, &be_dir),
            be_dir,
            pods,
            features: Features {
                cpu_idle: self.cgroups.is_supported(Resource::CpuIdle),
                bvt_warp_ns: self.cgroups.is_supported(Resource::CpuBvtWarpNs),
                cfs_burst: self.cgroups.is_supported(Resource::CpuCfsBurst),
                memory_qos: self.cgroups.is_supported(Resource::MemoryMin),
                eevdf: self.scheduler == Some(FairScheduler::Eevdf),
            },
            version: self.cgroups.version(),
            evictions: EvictionHistory::default(),
            cfs: self.cfs.clone(),
            be_usage_window: self.be_usage_window(now),
            kubelet_down: self.kubelet_down(now),
        }
    }

    /// Whether the kubelet (the pod source) is down or has been back for
    /// less than [`KUBELET_SETTLE`].
    fn kubelet_down(&self, now: Timestamp) -> bool {
        self.pods.source().is_kubelet()
            && (self.pods.consecutive_failures() > 0
                || self.pods_back_at.is_some_and(|back| !due(Some(back), now, KUBELET_SETTLE)))
    }

    /// Follows the collector settings of the QoS loop's last round: the
    /// collection of [`NodeState::cfs`] on or off (off, rounds read nothing
    /// more and the state is dropped), and the window over which
    /// [`NodeState::be_usage_window`] averages the BE pods' CPU.
    pub fn set_collect(&mut self, settings: &CollectSettings) {
        self.collect_cfs = settings.cfs_state;
        self.be_window = settings.be_usage_window;
    }

    /// Follows a NodeMetric spec (the manager's, or the defaults) and its
    /// collect policy: the NodeMetric reports it, its status uses the
    /// policy's aggregation window and durations, and the store keeps as
    /// much history as they need from now on.
    pub fn set_metric_spec(&mut self, spec: NodeMetricSpec, policy: CollectPolicy) {
        for d in &policy.invalid_durations {
            tracing::warn!(duration = %d, "NodeMetric spec: aggregation duration skipped (not a Go duration, or zero)");
        }
        self.store.reconfigure(StoreConfig::for_policy(self.config.interval, &policy));
        self.policy = policy;
        self.config.spec = spec;
    }

    /// The NodeMetric spec the agent follows.
    pub fn metric_spec(&self) -> &NodeMetricSpec {
        &self.config.spec
    }

    /// The BE pods' CPU averaged over the configured window, from the
    /// store (which keeps pod series for 300 s: longer windows see at most
    /// that).
    fn be_usage_window(&self, now: Timestamp) -> Option<BeUsageWindow> {
        let window = self.be_window?;
        let start = now.checked_sub(window).unwrap_or(Timestamp::MIN);
        let mut avg = 0.0;
        let mut covered: Option<Duration> = None;
        for p in self.pod_states.iter().filter(|p| p.is_be() && !p.pod.terminated) {
            let Some(w) = self.store.window(Entity::Pod(&p.pod.id.uid), Metric::Cpu, start, now)
            else {
                continue;
            };
            avg += w.avg();
            covered = Some(covered.map_or(w.time_range(), |c| c.min(w.time_range())));
        }
        Some(BeUsageWindow {
            window,
            avg_milli: (avg * 1000.0).round() as i64,
            covered: covered.unwrap_or_default(),
        })
    }

    /// Reads `cpu.cfs_quota_us` and the throttling counters of every
    /// container with a CPU limit of the pods `cfsQuotaBurst` may scale
    /// (and the quota of their pods), when collection is on.
    fn collect_cfs_state(&mut self) {
        if !self.collect_cfs {
            self.cfs.clear();
            self.cfs_throttle.clear();
            return;
        }
        let mut cfs = BTreeMap::new();
        let mut throttle = HashMap::new();
        for pod in &self.pod_states {
            if !cfs_quota_burst::scales_quota(pod) {
                continue;
            }
            let mut any = false;
            for c in pod.containers.iter().filter(|c| c.limits.cpu() > 0) {
                let Some(dir) = &c.dir else { continue };
                let (Ok(quota), Ok(now)) =
                    (self.cgroups.cfs_quota_us(dir), self.cgroups.cpu_throttle(dir))
                else {
                    continue; // not created yet, or gone: nothing to scale
                };
                let ratio = self.cfs_throttle.get(dir).map(|prev| now.ratio_since(prev));
                throttle.insert(dir.clone(), now);
                cfs.insert(
                    dir.clone(),
                    CfsState { quota_us: quota.unwrap_or(-1), throttled_ratio: ratio },
                );
                any = true;
            }
            if any && let Ok(quota) = self.cgroups.cfs_quota_us(&pod.dir) {
                cfs.insert(
                    pod.dir.clone(),
                    CfsState { quota_us: quota.unwrap_or(-1), throttled_ratio: None },
                );
            }
        }
        self.cfs = cfs;
        self.cfs_throttle = throttle;
    }

    /// The fast path between rounds (see [`crate::fast_probe`]): reads the
    /// node's and the BE QoS cgroup's CPU time and, when `rule` sees an LS
    /// surge the last plan did not, makes the reading what the strategies
    /// see — node usage from the probe, the BE pods' usage scaled to the BE
    /// cgroup's — and returns `true`: the caller re-plans at once instead
    /// of waiting for the next round. The surge then shows up as usage the
    /// BE pods do not explain, which suppression subtracts from the BE
    /// budget, so BE is throttled within one probe interval.
    pub fn fast_probe(&mut self, now: Timestamp, thresholds: SurgeThresholds) -> bool {
        if self.fast.is_none() {
            let be_dir = self.cgroups.pod_paths().qos_dir(KubeQoSClass::BestEffort).clone();
            match FastProbe::new(&self.cgroups, &be_dir) {
                Ok(probe) => self.fast = Some(probe),
                Err(e) => {
                    tracing::debug!(error = %e, "no fast path");
                    return false;
                }
            }
        }
        let probe = self.fast.as_mut().expect("set above");
        let Ok(Some(reading)) = probe.read(&self.cgroups, now) else { return false };
        let rule = SurgeRule {
            capacity_cores: self.allocatable.get(ResourceName::Cpu).unwrap_or(1000).max(1) as f64
                / 1000.0,
            hot: thresholds.hot,
            jump: thresholds.jump,
        };
        if !rule.is_surge(&reading, self.seen_non_be_cores()) {
            return false;
        }
        let memory = self.last_node.map_or((0, 0), |n| (n.memory_bytes, n.memory_with_cache_bytes));
        self.last_node = Some(NodeSample {
            at: now,
            cpu_cores: reading.node_cores,
            memory_bytes: memory.0,
            memory_with_cache_bytes: memory.1,
        });
        self.fast_be_cores = Some(reading.be_cores);
        true
    }

    /// Non-BE CPU (cores) in the view the strategies last planned with:
    /// node usage minus the BE pods' usage.
    fn seen_non_be_cores(&self) -> f64 {
        let node = self.last_node.map_or(0.0, |n| n.cpu_cores);
        let be = self.fast_be_cores.unwrap_or(self.sampled_be_cores);
        (node - be).max(0.0)
    }

    /// The BE pods' CPU in the last round's samples, cores.
    fn sum_be_samples(&self) -> f64 {
        let be: std::collections::HashSet<&str> =
            self.pod_states.iter().filter(|p| p.is_be()).map(|p| p.pod.id.uid.as_str()).collect();
        self.last_samples.iter().filter(|s| be.contains(s.uid.as_str())).map(|s| s.cpu_cores).sum()
    }

    /// True when the node runs a BE pod: without one there is nothing for
    /// the fast path to throttle, and the loop need not probe.
    pub fn has_be_pods(&self) -> bool {
        self.pod_states.iter().any(PodState::is_be)
    }

    /// The node's cgroups (where plans are written).
    pub fn cgroups(&self) -> &Arc<Cgroups> {
        &self.cgroups
    }

    /// The pods the agent knows.
    pub fn pods(&self) -> &[AgentPod] {
        &self.agent_pods
    }

    /// The strategies' view of the pod with this UID (without usage), if
    /// the agent knows it and could build it.
    pub fn pod_state(&self, uid: &str) -> Option<&PodState> {
        self.pod_states.iter().find(|p| p.pod.id.uid == uid)
    }

    /// Keeps what `kolo doctor` found at start-up, so `/metrics` shows
    /// which QoS features this node allows.
    pub fn set_doctor(&mut self, report: crate::doctor::Report) {
        self.doctor = Some(report);
    }

    /// What `kolo doctor` found at start-up, if it ran.
    pub fn doctor(&self) -> Option<&crate::doctor::Report> {
        self.doctor.as_ref()
    }

    /// The state of the pod running the container with runtime id `id`
    /// (as the kubelet last reported it).
    pub fn pod_state_with_container(&self, id: &str) -> Option<&PodState> {
        self.pod_states.iter().find(|p| p.pod.containers.iter().any(|c| c.has_id(id)))
    }

    /// How many times the pod list changed: the pods' states are rebuilt
    /// each time, so a caller holding copies compares it to know when to
    /// take them again.
    pub fn pod_generation(&self) -> u64 {
        self.pod_generation
    }

    /// The last tick's pod samples.
    pub fn last_pod_samples(&self) -> &[PodSample] {
        &self.last_samples
    }

    /// The latest node sample.
    pub fn last_node_sample(&self) -> Option<&NodeSample> {
        self.last_node.as_ref()
    }

    /// The metric store.
    pub fn store(&self) -> &MetricStore {
        &self.store
    }

    /// The predictor.
    pub fn predictor(&self) -> &PredictServer {
        &self.predictor
    }

    /// Counters.
    pub fn stats(&self) -> &AgentStats {
        &self.stats
    }

    /// The node's allocatable used for prodReclaimable.
    pub fn allocatable(&self) -> &ResourceVector {
        &self.allocatable
    }
}

/// The last [`NodeState`] an agent built, kept between rounds so the
/// next one reuses its pods' states (see [`Agent::refresh_node_state`]).
#[derive(Debug, Default)]
pub struct NodeStateCache {
    /// The pod-list generation `state` was built from.
    generation: Option<u64>,
    state: Option<NodeState>,
}

/// The BE QoS cgroup `be_dir`'s current cpuset and CFS quota (`-1`:
/// unlimited), as the suppression strategies adjust from; each `None` when
/// it cannot be read.
pub fn be_group_state(cgroups: &Cgroups, be_dir: &CgroupDir) -> BeGroupState {
    BeGroupState {
        cpuset: cgroups.cpuset_cpus(be_dir).ok(),
        cfs_quota_us: cgroups.cfs_quota_us(be_dir).ok().map(|q| q.unwrap_or(-1)),
    }
}

/// A pod's (and its containers') usage from its last `sample`, CPU scaled
/// by `scale`; none without a sample.
fn set_usage(p: &mut PodState, sample: Option<&PodSample>, scale: f64) {
    p.usage = sample.map(|s| cpu_mem(s.cpu_cores * scale, s.memory_bytes));
    for c in &mut p.containers {
        c.usage = sample.and_then(|s| {
            let sc = s.containers.iter().find(|sc| sc.name == c.name)?;
            Some(cpu_mem(sc.cpu_cores * scale, sc.memory_bytes))
        });
    }
}

fn cpu_mem(cores: f64, bytes: u64) -> CpuMem {
    CpuMem::new((cores * 1000.0).round() as i64, i64::try_from(bytes).unwrap_or(i64::MAX))
}

fn due(last: Option<Timestamp>, now: Timestamp, every: Duration) -> bool {
    last.is_none_or(|last| now.duration_since(last).as_secs_f64() >= every.as_secs_f64())
}

/// The node's capacity from `/proc`: CPUs × 1000 and MemTotal.
fn node_capacity(proc_root: &std::path::Path) -> Result<ResourceVector, AgentError> {
    let (cpus, memory) = crate::collect::node::node_capacity(proc_root)
        .map_err(|e| AgentError::Capacity(e.to_string()))?;
    let cpus = i64::try_from(cpus).unwrap_or(i64::MAX).saturating_mul(1000);
    Ok(ResourceVector::cpu_memory(cpus, i64::try_from(memory).unwrap_or(i64::MAX)))
}

#[cfg(test)]
mod kubelet_down_tests;
#[cfg(test)]
mod node_state_tests;
