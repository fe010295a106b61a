//! The agent's metric store: bounded, in memory, answering avg / last /
//! count / p50 / p90 / p95 / p99 over a window (spec §2).
//!
//! # Layout
//!
//! One fixed-capacity ring of 8-byte points (`u32` ms offset + `f32` value)
//! per series. A series is an [`Entity`] (the node, the system, a pod by
//! UID, a container by runtime ID) and a [`Metric`]. Each kind of entity has
//! its own retention, sized from the NodeMetric collect policy:
//!
//! | entity | series | retention (default) |
//! | --- | --- | --- |
//! | node | cpu, memory, memory with cache, 6 × PSI | longest aggregated window (30 min) |
//! | system | cpu, memory, memory with cache | same as the node |
//! | pod | cpu, memory (+ memory with cache under `usageWithPageCache`), PSI | aggregate window (300 s), at least the predictor's 1 min |
//! | container | cpu, memory, PSI | 60 s |
//!
//! A ring holds `ceil(retention / interval) + 2` points, so memory does not
//! grow with time: it is a constant for the node plus a constant per pod and
//! per container, and [`MetricStore::remove_pod`], [`MetricStore::retain_pods`]
//! and [`MetricStore::gc`] free it. Memory is kept in KiB (exact for page
//! multiples, so percentiles print as `…Ki` like the reference's), CPU in
//! cores, PSI in percent.
//!
//! Time is always passed in; nothing here reads the clock.

mod aggregate;
mod ring;

use std::collections::HashMap;
use std::time::Duration;

use kolo_core::clock::Timestamp;

use crate::sample::{NodeSample, PodSample, Pressure, PsiSample};
use ring::{Pushed, Ring};

pub use aggregate::{Aggregation, Summary, Window, percentile, percentile_index};

/// Longest retention any series gets, whatever the policy asks (2 h of node
/// history at 1 s is 7,202 points, 56 KiB a series).
pub const MAX_RETENTION: Duration = Duration::from_secs(2 * 3600);

/// Who a series belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Entity<'a> {
    /// The whole node.
    Node,
    /// The system: node minus pods (daemons, kernel), see [`system_sample`].
    System,
    /// A pod, by UID.
    Pod(&'a str),
    /// A container, by runtime ID (without the `runtime://` prefix).
    Container(&'a str),
}

/// What a series measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// CPU in use, cores.
    Cpu,
    /// Memory in use without page cache, bytes.
    Memory,
    /// Memory in use with page cache, bytes (node, system, and pods when
    /// [`StoreConfig::pod_memory_with_cache`] is set).
    MemoryWithCache,
    /// CPU pressure `some avg10`, percent.
    CpuPressureSome,
    /// CPU pressure `full avg10`, percent.
    CpuPressureFull,
    /// Memory pressure `some avg10`, percent.
    MemoryPressureSome,
    /// Memory pressure `full avg10`, percent.
    MemoryPressureFull,
    /// I/O pressure `some avg10`, percent.
    IoPressureSome,
    /// I/O pressure `full avg10`, percent.
    IoPressureFull,
}

impl Metric {
    /// Index among the six PSI series, for the PSI metrics.
    fn psi_index(self) -> Option<usize> {
        match self {
            Metric::CpuPressureSome => Some(0),
            Metric::CpuPressureFull => Some(1),
            Metric::MemoryPressureSome => Some(2),
            Metric::MemoryPressureFull => Some(3),
            Metric::IoPressureSome => Some(4),
            Metric::IoPressureFull => Some(5),
            Metric::Cpu | Metric::Memory | Metric::MemoryWithCache => None,
        }
    }

    /// Storage unit → reporting unit.
    fn scale(self) -> f64 {
        match self {
            Metric::Memory | Metric::MemoryWithCache => 1024.0,
            _ => 1.0,
        }
    }
}

/// Memory is stored in KiB.
fn kib(bytes: u64) -> f32 {
    (bytes as f64 / 1024.0) as f32
}

/// How long each kind of series is kept, and at what rate it is sampled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    /// The CPU / memory collection interval (the reference's 1 s).
    pub interval: Duration,
    /// How long node and system series are kept.
    pub node_retention: Duration,
    /// How long pod series are kept.
    pub pod_retention: Duration,
    /// How long container series are kept.
    pub container_retention: Duration,
    /// The PSI collection interval (the reference's 10 s).
    pub psi_interval: Duration,
    /// How long PSI series are kept.
    pub psi_retention: Duration,
    /// Whether pods get a memory-with-page-cache series (only the
    /// `usageWithPageCache` collect policy reports it).
    pub pod_memory_with_cache: bool,
}

impl Default for StoreConfig {
    /// 1 s collection; node 30 min, pods 300 s, containers 60 s; PSI every
    /// 10 s kept 60 s; no pod page-cache series.
    fn default() -> Self {
        StoreConfig {
            interval: Duration::from_secs(1),
            node_retention: Duration::from_secs(30 * 60),
            pod_retention: Duration::from_secs(300),
            container_retention: Duration::from_secs(60),
            psi_interval: Duration::from_secs(10),
            psi_retention: Duration::from_secs(60),
            pod_memory_with_cache: false,
        }
    }
}

/// The window the predictor trains over (spec §4.2): pod series must keep at
/// least this much.
pub const TRAINING_WINDOW: Duration = Duration::from_secs(60);

impl StoreConfig {
    /// The retentions a NodeMetric collect policy needs: node and system
    /// series cover the longest aggregated window and the aggregate window;
    /// pod series the aggregate window and the predictor's 1 min. Every
    /// retention is capped at [`MAX_RETENTION`].
    pub fn for_policy(interval: Duration, policy: &crate::nodemetric::CollectPolicy) -> Self {
        let longest = policy.durations.iter().map(|d| d.duration).max().unwrap_or_default();
        StoreConfig {
            interval,
            node_retention: longest.max(policy.aggregate_window),
            pod_retention: policy.aggregate_window.max(TRAINING_WINDOW),
            pod_memory_with_cache: policy.memory == crate::nodemetric::MemoryPolicy::WithPageCache,
            ..StoreConfig::default()
        }
    }

    fn capacity(retention: Duration, interval: Duration) -> usize {
        let retention = retention.min(MAX_RETENTION).as_millis();
        let interval = interval.as_millis().max(1);
        usize::try_from(retention.div_ceil(interval)).unwrap_or(usize::MAX).saturating_add(2)
    }

    fn capacities(&self) -> Capacities {
        Capacities {
            node: Self::capacity(self.node_retention, self.interval),
            pod: Self::capacity(self.pod_retention, self.interval),
            container: Self::capacity(self.container_retention, self.interval),
            psi: Self::capacity(self.psi_retention, self.psi_interval),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Capacities {
    node: usize,
    pod: usize,
    container: usize,
    psi: usize,
}

/// System usage for one round: node minus the sum of pods, per resource,
/// never negative (spec §1.3; host applications are not subtracted, kolo
/// does not collect them yet).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SystemSample {
    /// When it was taken (the node sample's time).
    pub at: Timestamp,
    /// CPU, cores.
    pub cpu_cores: f64,
    /// Memory without page cache, bytes.
    pub memory_bytes: u64,
    /// Memory with page cache, bytes.
    pub memory_with_cache_bytes: u64,
}

/// `max(node − Σ pods, 0)` per resource (spec §1.3).
pub fn system_sample(node: &NodeSample, pods: &[PodSample]) -> SystemSample {
    let cpu: f64 = pods.iter().map(|p| p.cpu_cores).sum();
    let memory: u64 = pods.iter().map(|p| p.memory_bytes).fold(0, u64::saturating_add);
    let with_cache: u64 =
        pods.iter().map(|p| p.memory_with_cache_bytes).fold(0, u64::saturating_add);
    SystemSample {
        at: node.at,
        cpu_cores: (node.cpu_cores - cpu).max(0.0),
        memory_bytes: node.memory_bytes.saturating_sub(memory),
        memory_with_cache_bytes: node.memory_with_cache_bytes.saturating_sub(with_cache),
    }
}

/// The six PSI series of one entity, allocated on its first PSI sample.
#[derive(Debug, Clone)]
struct PsiRings([Ring; 6]);

impl PsiRings {
    fn new(cap: usize) -> Box<Self> {
        Box::new(PsiRings(std::array::from_fn(|_| Ring::new(cap))))
    }

    fn record(&mut self, at_ms: i64, psi: &PsiSample, counters: &mut Counters) {
        let pairs: [&Pressure; 3] = [&psi.cpu, &psi.memory, &psi.io];
        for (i, pressure) in pairs.into_iter().enumerate() {
            counters.count(self.0[2 * i].push(at_ms, pressure.some_avg10 as f32));
            if let Some(full) = pressure.full_avg10 {
                counters.count(self.0[2 * i + 1].push(at_ms, full as f32));
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        size_of::<Self>() + self.0.iter().map(Ring::heap_bytes).sum::<usize>()
    }

    fn set_capacity(&mut self, cap: usize) {
        self.0.iter_mut().for_each(|r| r.set_capacity(cap));
    }

    fn last_ms(&self) -> Option<i64> {
        self.0.iter().filter_map(Ring::last_ms).max()
    }
}

/// Pushes one (cpu cores, memory bytes, memory-with-cache bytes) point.
fn push_usage(series: &mut NodeSeries, c: &mut Counters, at: Timestamp, usage: (f64, u64, u64)) {
    let t = at.as_millisecond();
    c.count(series.cpu.push(t, usage.0 as f32));
    c.count(series.memory.push(t, kib(usage.1)));
    c.count(series.memory_with_cache.push(t, kib(usage.2)));
}

#[derive(Debug, Clone)]
struct NodeSeries {
    cpu: Ring,
    memory: Ring,
    memory_with_cache: Ring,
    psi: Option<Box<PsiRings>>,
}

#[derive(Debug, Clone)]
struct PodSeries {
    cpu: Ring,
    memory: Ring,
    memory_with_cache: Option<Ring>,
    psi: Option<Box<PsiRings>>,
}

impl PodSeries {
    fn new(cap: usize, with_cache: bool) -> Self {
        PodSeries {
            cpu: Ring::new(cap),
            memory: Ring::new(cap),
            memory_with_cache: with_cache.then(|| Ring::new(cap)),
            psi: None,
        }
    }

    fn heap_bytes(&self) -> usize {
        self.cpu.heap_bytes()
            + self.memory.heap_bytes()
            + self.memory_with_cache.as_ref().map_or(0, Ring::heap_bytes)
            + self.psi.as_ref().map_or(0, |p| p.heap_bytes())
    }

    fn last_ms(&self) -> Option<i64> {
        [self.cpu.last_ms(), self.memory.last_ms(), self.psi.as_ref().and_then(|p| p.last_ms())]
            .into_iter()
            .flatten()
            .max()
    }
}

#[derive(Debug, Clone)]
struct ContainerSeries {
    /// The owning pod's UID (to free the container with its pod).
    pod: Box<str>,
    cpu: Ring,
    memory: Ring,
    psi: Option<Box<PsiRings>>,
}

impl ContainerSeries {
    fn heap_bytes(&self) -> usize {
        self.pod.len()
            + self.cpu.heap_bytes()
            + self.memory.heap_bytes()
            + self.psi.as_ref().map_or(0, |p| p.heap_bytes())
    }

    fn last_ms(&self) -> Option<i64> {
        [self.cpu.last_ms(), self.memory.last_ms(), self.psi.as_ref().and_then(|p| p.last_ms())]
            .into_iter()
            .flatten()
            .max()
    }
}

/// Points the store did not take as they came.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Points refused because the value was NaN or infinite.
    pub not_finite: u64,
    /// Series restarted because a point was older than the newest one (the
    /// wall clock stepped back).
    pub clock_resets: u64,
}

impl Counters {
    fn count(&mut self, pushed: Pushed) {
        match pushed {
            Pushed::Stored => {}
            Pushed::StoredAfterReset => self.clock_resets += 1,
            Pushed::NotFinite => self.not_finite += 1,
        }
    }
}

/// Size figures of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreStats {
    /// Pods with series.
    pub pods: usize,
    /// Containers with series.
    pub containers: usize,
    /// Points stored, all series together.
    pub points: usize,
    /// Approximate bytes held ([`MetricStore::approx_bytes`]).
    pub bytes: usize,
    /// Points not taken as they came.
    pub counters: Counters,
}

/// The metric store. See the module documentation.
#[derive(Debug, Clone)]
pub struct MetricStore {
    config: StoreConfig,
    caps: Capacities,
    node: NodeSeries,
    system: NodeSeries,
    pods: HashMap<Box<str>, PodSeries>,
    containers: HashMap<Box<str>, ContainerSeries>,
    counters: Counters,
}

impl Default for MetricStore {
    fn default() -> Self {
        MetricStore::new(StoreConfig::default())
    }
}

impl MetricStore {
    /// An empty store.
    pub fn new(config: StoreConfig) -> Self {
        let caps = config.capacities();
        let node_series = || NodeSeries {
            cpu: Ring::new(caps.node),
            memory: Ring::new(caps.node),
            memory_with_cache: Ring::new(caps.node),
            psi: None,
        };
        MetricStore {
            config,
            caps,
            node: node_series(),
            system: node_series(),
            pods: HashMap::new(),
            containers: HashMap::new(),
            counters: Counters::default(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Applies a new configuration: rings are resized keeping their newest
    /// points; pod page-cache series are created or dropped.
    pub fn reconfigure(&mut self, config: StoreConfig) {
        let caps = config.capacities();
        for series in [&mut self.node, &mut self.system] {
            series.cpu.set_capacity(caps.node);
            series.memory.set_capacity(caps.node);
            series.memory_with_cache.set_capacity(caps.node);
            if let Some(psi) = &mut series.psi {
                psi.set_capacity(caps.psi);
            }
        }
        for pod in self.pods.values_mut() {
            pod.cpu.set_capacity(caps.pod);
            pod.memory.set_capacity(caps.pod);
            match (&mut pod.memory_with_cache, config.pod_memory_with_cache) {
                (Some(ring), true) => ring.set_capacity(caps.pod),
                (slot @ None, true) => *slot = Some(Ring::new(caps.pod)),
                (slot, false) => *slot = None,
            }
            if let Some(psi) = &mut pod.psi {
                psi.set_capacity(caps.psi);
            }
        }
        for c in self.containers.values_mut() {
            c.cpu.set_capacity(caps.container);
            c.memory.set_capacity(caps.container);
            if let Some(psi) = &mut c.psi {
                psi.set_capacity(caps.psi);
            }
        }
        self.caps = caps;
        self.config = config;
    }

    /// Records a node sample.
    pub fn record_node(&mut self, s: &NodeSample) {
        let usage = (s.cpu_cores, s.memory_bytes, s.memory_with_cache_bytes);
        push_usage(&mut self.node, &mut self.counters, s.at, usage);
    }

    /// Records a system sample (see [`system_sample`]).
    pub fn record_system(&mut self, s: &SystemSample) {
        let usage = (s.cpu_cores, s.memory_bytes, s.memory_with_cache_bytes);
        push_usage(&mut self.system, &mut self.counters, s.at, usage);
    }

    /// Records a pod sample and its containers' samples.
    pub fn record_pod(&mut self, s: &PodSample) {
        let t = s.at.as_millisecond();
        let (caps, with_cache) = (self.caps, self.config.pod_memory_with_cache);
        let pod = match self.pods.get_mut(s.uid.as_str()) {
            Some(pod) => pod,
            None => self
                .pods
                .entry(s.uid.as_str().into())
                .or_insert_with(|| PodSeries::new(caps.pod, with_cache)),
        };
        let c = &mut self.counters;
        c.count(pod.cpu.push(t, s.cpu_cores as f32));
        c.count(pod.memory.push(t, kib(s.memory_bytes)));
        if let Some(ring) = &mut pod.memory_with_cache {
            c.count(ring.push(t, kib(s.memory_with_cache_bytes)));
        }
        for cs in &s.containers {
            let series = match self.containers.get_mut(cs.id.as_str()) {
                Some(series) => series,
                None => self.containers.entry(cs.id.as_str().into()).or_insert_with(|| {
                    ContainerSeries {
                        pod: s.uid.as_str().into(),
                        cpu: Ring::new(caps.container),
                        memory: Ring::new(caps.container),
                        psi: None,
                    }
                }),
            };
            if series.pod.is_empty() {
                // Known so far only through PSI: now it has an owner.
                series.pod = s.uid.as_str().into();
            }
            c.count(series.cpu.push(t, cs.cpu_cores as f32));
            c.count(series.memory.push(t, kib(cs.memory_bytes)));
        }
    }

    /// Records one collection round: the node, every pod, and the system
    /// usage derived from them ([`system_sample`]).
    pub fn record_round(&mut self, node: &NodeSample, pods: &[PodSample]) {
        self.record_node(node);
        for pod in pods {
            self.record_pod(pod);
        }
        self.record_system(&system_sample(node, pods));
    }

    /// Records PSI of the node, a pod or a container. A pod or container
    /// not seen yet gets series (a container then belongs to no pod until
    /// [`MetricStore::record_pod`] names it; it is freed by [`MetricStore::gc`]).
    /// System PSI does not exist and is ignored.
    pub fn record_psi(&mut self, entity: Entity<'_>, at: Timestamp, psi: &PsiSample) {
        let t = at.as_millisecond();
        let caps = self.caps;
        let slot = match entity {
            Entity::Node => &mut self.node.psi,
            Entity::System => return,
            Entity::Pod(uid) => {
                if !self.pods.contains_key(uid) {
                    let series = PodSeries::new(caps.pod, self.config.pod_memory_with_cache);
                    self.pods.insert(uid.into(), series);
                }
                match self.pods.get_mut(uid) {
                    Some(series) => &mut series.psi,
                    None => return,
                }
            }
            Entity::Container(id) => {
                if !self.containers.contains_key(id) {
                    let series = ContainerSeries {
                        pod: "".into(),
                        cpu: Ring::new(caps.container),
                        memory: Ring::new(caps.container),
                        psi: None,
                    };
                    self.containers.insert(id.into(), series);
                }
                match self.containers.get_mut(id) {
                    Some(series) => &mut series.psi,
                    None => return,
                }
            }
        };
        slot.get_or_insert_with(|| PsiRings::new(caps.psi)).record(t, psi, &mut self.counters);
    }

    fn ring(&self, entity: Entity<'_>, metric: Metric) -> Option<&Ring> {
        fn psi(p: &Option<Box<PsiRings>>, metric: Metric) -> Option<&Ring> {
            p.as_ref().and_then(|p| metric.psi_index().map(|i| &p.0[i]))
        }
        match entity {
            Entity::Node | Entity::System => {
                let s = if entity == Entity::Node { &self.node } else { &self.system };
                match metric {
                    Metric::Cpu => Some(&s.cpu),
                    Metric::Memory => Some(&s.memory),
                    Metric::MemoryWithCache => Some(&s.memory_with_cache),
                    _ => psi(&s.psi, metric),
                }
            }
            Entity::Pod(uid) => {
                let s = self.pods.get(uid)?;
                match metric {
                    Metric::Cpu => Some(&s.cpu),
                    Metric::Memory => Some(&s.memory),
                    Metric::MemoryWithCache => s.memory_with_cache.as_ref(),
                    _ => psi(&s.psi, metric),
                }
            }
            Entity::Container(id) => {
                let s = self.containers.get(id)?;
                match metric {
                    Metric::Cpu => Some(&s.cpu),
                    Metric::Memory => Some(&s.memory),
                    Metric::MemoryWithCache => None,
                    _ => psi(&s.psi, metric),
                }
            }
        }
    }

    /// The points of one series with `start <= t <= end`; `None` if the
    /// series does not exist or has no point there (the reference's "empty
    /// result" error).
    pub fn window(
        &self,
        entity: Entity<'_>,
        metric: Metric,
        start: Timestamp,
        end: Timestamp,
    ) -> Option<Window<'_>> {
        let ring = self.ring(entity, metric)?;
        Window::new(ring, start.as_millisecond(), end.as_millisecond(), metric.scale())
    }

    /// One aggregation of one series over `[start, end]`; `None` as for
    /// [`MetricStore::window`]. `scratch` is reused by percentile queries.
    pub fn aggregate(
        &self,
        entity: Entity<'_>,
        metric: Metric,
        start: Timestamp,
        end: Timestamp,
        aggregation: Aggregation,
        scratch: &mut Vec<f32>,
    ) -> Option<f64> {
        Some(self.window(entity, metric, start, end)?.aggregate(aggregation, scratch))
    }

    /// The newest value of a series, at most `max_age` older than `now`
    /// (the qosmanager's "last" query: window 2 × the collection interval).
    pub fn last(
        &self,
        entity: Entity<'_>,
        metric: Metric,
        now: Timestamp,
        max_age: Duration,
    ) -> Option<f64> {
        let start = now.checked_sub(max_age).unwrap_or(Timestamp::MIN);
        Some(self.window(entity, metric, start, now)?.last())
    }

    /// Frees a pod's series and its containers' series.
    pub fn remove_pod(&mut self, uid: &str) {
        if self.pods.remove(uid).is_some() {
            self.containers.retain(|_, c| &*c.pod != uid);
        }
    }

    /// Frees every pod (and its containers) for which `keep` is false.
    /// Containers known only through PSI are kept (see [`MetricStore::gc`]).
    pub fn retain_pods(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.pods.retain(|uid, _| keep(uid));
        let pods = &self.pods;
        self.containers.retain(|_, c| c.pod.is_empty() || pods.contains_key(&c.pod));
    }

    /// Frees every pod and container whose newest point is older than its
    /// retention before `now` (nothing of it is left to query): restarted
    /// containers, pods that went away without [`MetricStore::remove_pod`].
    pub fn gc(&mut self, now: Timestamp) {
        let now_ms = now.as_millisecond();
        let stale = |last: Option<i64>, retention: Duration| {
            let keep_ms = i64::try_from(retention.min(MAX_RETENTION).as_millis()).unwrap_or(0);
            last.is_none_or(|t| t < now_ms - keep_ms)
        };
        let (pod_keep, container_keep) = (
            self.config.pod_retention.max(self.config.psi_retention),
            self.config.container_retention.max(self.config.psi_retention),
        );
        self.pods.retain(|_, p| !stale(p.last_ms(), pod_keep));
        let pods = &self.pods;
        self.containers.retain(|_, c| {
            !stale(c.last_ms(), container_keep) && (c.pod.is_empty() || pods.contains_key(&c.pod))
        });
        if self.pods.capacity() > 2 * self.pods.len() + 16 {
            self.pods.shrink_to_fit();
        }
        if self.containers.capacity() > 2 * self.containers.len() + 16 {
            self.containers.shrink_to_fit();
        }
    }

    /// UIDs of the pods with series.
    pub fn pod_uids(&self) -> impl Iterator<Item = &str> {
        self.pods.keys().map(|k| &**k)
    }

    /// Approximate bytes held: ring buffers, PSI blocks, map slots and keys.
    /// Proportional to the number of pods and containers, constant in time.
    pub fn approx_bytes(&self) -> usize {
        let node = |s: &NodeSeries| {
            s.cpu.heap_bytes()
                + s.memory.heap_bytes()
                + s.memory_with_cache.heap_bytes()
                + s.psi.as_ref().map_or(0, |p| p.heap_bytes())
        };
        // hashbrown: one (key, value) slot plus one control byte per bucket.
        let pod_slots = self.pods.capacity() * (size_of::<(Box<str>, PodSeries)>() + 1);
        let container_slots =
            self.containers.capacity() * (size_of::<(Box<str>, ContainerSeries)>() + 1);
        size_of::<Self>()
            + node(&self.node)
            + node(&self.system)
            + pod_slots
            + self.pods.iter().map(|(k, p)| k.len() + p.heap_bytes()).sum::<usize>()
            + container_slots
            + self.containers.iter().map(|(k, c)| k.len() + c.heap_bytes()).sum::<usize>()
    }

    /// Size figures and counters.
    pub fn stats(&self) -> StoreStats {
        let psi =
            |p: &Option<Box<PsiRings>>| p.as_ref().map_or(0, |p| p.0.iter().map(Ring::len).sum());
        let node =
            |s: &NodeSeries| s.cpu.len() + s.memory.len() + s.memory_with_cache.len() + psi(&s.psi);
        let points = node(&self.node)
            + node(&self.system)
            + self
                .pods
                .values()
                .map(|p| {
                    p.cpu.len()
                        + p.memory.len()
                        + p.memory_with_cache.as_ref().map_or(0, Ring::len)
                        + psi(&p.psi)
                })
                .sum::<usize>()
            + self
                .containers
                .values()
                .map(|c| c.cpu.len() + c.memory.len() + psi(&c.psi))
                .sum::<usize>();
        StoreStats {
            pods: self.pods.len(),
            containers: self.containers.len(),
            points,
            bytes: self.approx_bytes(),
            counters: self.counters,
        }
    }

    /// The capacities (points per ring) in force, for the documentation's
    /// memory figures: node, pod, container, PSI.
    pub fn ring_capacities(&self) -> [usize; 4] {
        [self.caps.node, self.caps.pod, self.caps.container, self.caps.psi]
    }

    /// Checks `Ring` capacities: every ring has the capacity of its kind.
    #[cfg(test)]
    fn assert_capacities(&self) {
        assert_eq!(self.node.cpu.capacity(), self.caps.node);
        for p in self.pods.values() {
            assert_eq!(p.cpu.capacity(), self.caps.pod);
        }
        for c in self.containers.values() {
            assert_eq!(c.cpu.capacity(), self.caps.container);
        }
    }
}

#[cfg(test)]
mod tests;
