//! The predict server: every model, training from the metric store, GC,
//! and the conversion to and from checkpoints.

use std::collections::HashMap;

use kolo_api::PriorityClass;
use kolo_core::clock::Timestamp;

use super::checkpoint::{Checkpoint, ModelCheckpoint};
use super::histogram::{DecayingHistogram, HistogramOptions};
use super::{Model, NodeItem, Prediction, Predictions, PredictorConfig};
use crate::AgentPod;
use crate::store::{Entity, Metric, MetricStore};

/// One training round's samples, before they go into the models.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrainingSamples {
    /// Per pod with both series in the window: (UID, P90 CPU cores, P90
    /// memory bytes).
    pub pods: Vec<(String, f64, f64)>,
    /// Per priority class ([`NodeItem::PRIORITY_CLASSES`] order): the sum of
    /// its pods' samples (0, 0 for a class without pods).
    pub priorities: [(f64, f64); 5],
    /// P90 of the node's CPU and memory (without page cache); `None` if
    /// either series is empty.
    pub node: Option<(f64, f64)>,
    /// `max(node − Σ pods, 0)` per resource; `None` without a node sample.
    pub system: Option<(f64, f64)>,
    /// Pods skipped for lack of samples.
    pub skipped_pods: usize,
}

fn priority_index(class: PriorityClass) -> usize {
    NodeItem::Priority(class).index() - 1
}

/// The samples of one training round (spec §4.2): for each pod the P90 over
/// `[now − window, now]` of its CPU and memory (without page cache), summed
/// per priority class (with default); the node's P90; the system as node
/// minus all pods.
///
/// Unlike the reference, a round without a node sample does not feed the
/// system model a zero (it is skipped).
pub fn training_samples(
    store: &MetricStore,
    pods: &[AgentPod],
    window: std::time::Duration,
    now: Timestamp,
    scratch: &mut Vec<f32>,
) -> TrainingSamples {
    let start = now.checked_sub(window).unwrap_or(Timestamp::MIN);
    let mut p90 = |entity: Entity<'_>, metric: Metric| {
        store.window(entity, metric, start, now).map(|w| w.percentile(0.9, scratch))
    };
    let mut out = TrainingSamples::default();
    let (mut all_cpu, mut all_mem) = (0.0, 0.0);
    for pod in pods {
        let entity = Entity::Pod(&pod.id.uid);
        let (Some(cpu), Some(mem)) = (p90(entity, Metric::Cpu), p90(entity, Metric::Memory)) else {
            out.skipped_pods += 1;
            continue;
        };
        out.pods.push((pod.id.uid.clone(), cpu, mem));
        let slot = &mut out.priorities[priority_index(pod.priority_class)];
        slot.0 += cpu;
        slot.1 += mem;
        all_cpu += cpu;
        all_mem += mem;
    }
    if let (Some(cpu), Some(mem)) =
        (p90(Entity::Node, Metric::Cpu), p90(Entity::Node, Metric::Memory))
    {
        out.node = Some((cpu, mem));
        out.system = Some(((cpu - all_cpu).max(0.0), (mem - all_mem).max(0.0)));
    }
    out
}

/// What a training round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TrainingReport {
    /// Pod models updated.
    pub pods_trained: usize,
    /// Pods skipped for lack of samples.
    pub pods_skipped: usize,
    /// Whether the node and system models were updated.
    pub node_trained: bool,
}

/// What a restore did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RestoreReport {
    /// Models restored.
    pub restored: usize,
    /// Pod models dropped because the pod is not on the node any more.
    pub unknown: usize,
    /// Models dropped because their histograms do not fit.
    pub invalid: usize,
}

/// Every model, keyed by pod UID or node item.
#[derive(Debug, Clone)]
pub struct PredictServer {
    config: PredictorConfig,
    pods: HashMap<Box<str>, Model>,
    items: [Option<Model>; 7],
    last_trained: Option<Timestamp>,
    last_checkpointed: Option<Timestamp>,
}

impl PredictServer {
    /// No models yet.
    pub fn new(config: PredictorConfig) -> Self {
        PredictServer {
            config,
            pods: HashMap::new(),
            items: Default::default(),
            last_trained: None,
            last_checkpointed: None,
        }
    }

    /// The settings.
    pub fn config(&self) -> &PredictorConfig {
        &self.config
    }

    /// Whether a training interval has passed since the last training.
    pub fn training_due(&self, now: Timestamp) -> bool {
        due(self.last_trained, self.config.training_interval, now)
    }

    /// Whether a checkpoint interval has passed since the last checkpoint.
    pub fn checkpoint_due(&self, now: Timestamp) -> bool {
        due(self.last_checkpointed, self.config.checkpoint_interval, now)
    }

    /// Notes that a checkpoint was written at `now`.
    pub fn mark_checkpointed(&mut self, now: Timestamp) {
        self.last_checkpointed = Some(now);
    }

    /// One training round: [`training_samples`] over the last training
    /// interval, then [`PredictServer::apply`].
    pub fn train(
        &mut self,
        store: &MetricStore,
        pods: &[AgentPod],
        now: Timestamp,
        scratch: &mut Vec<f32>,
    ) -> TrainingReport {
        let samples = training_samples(store, pods, self.config.training_interval, now, scratch);
        self.apply(&samples, now)
    }

    /// Adds one training round's samples to the models (creating missing
    /// ones), each with weight 1 at `now`.
    pub fn apply(&mut self, samples: &TrainingSamples, now: Timestamp) -> TrainingReport {
        let config = &self.config;
        for (uid, cpu, mem) in &samples.pods {
            match self.pods.get_mut(uid.as_str()) {
                Some(model) => model.add(*cpu, *mem, now),
                None => {
                    let mut model = Model::new(config, now);
                    model.add(*cpu, *mem, now);
                    self.pods.insert(uid.as_str().into(), model);
                }
            }
        }
        let mut add = |item: NodeItem, (cpu, mem): (f64, f64)| {
            self.items[item.index()]
                .get_or_insert_with(|| Model::new(config, now))
                .add(cpu, mem, now);
        };
        for (class, sample) in NodeItem::PRIORITY_CLASSES.into_iter().zip(samples.priorities) {
            add(NodeItem::Priority(class), sample);
        }
        if let Some(node) = samples.node {
            add(NodeItem::Node, node);
        }
        if let Some(system) = samples.system {
            add(NodeItem::System, system);
        }
        self.last_trained = Some(now);
        TrainingReport {
            pods_trained: samples.pods.len(),
            pods_skipped: samples.skipped_pods,
            node_trained: samples.node.is_some(),
        }
    }

    /// Drops every model not updated for longer than the expiration; returns
    /// how many went.
    pub fn gc(&mut self, now: Timestamp) -> usize {
        let expired = |m: &Model| {
            now.duration_since(m.last_updated).as_secs_f64()
                > self.config.model_expiration.as_secs_f64()
        };
        let before = self.len();
        self.pods.retain(|_, m| !expired(m));
        for slot in &mut self.items {
            if slot.as_ref().is_some_and(expired) {
                *slot = None;
            }
        }
        if self.pods.capacity() > 2 * self.pods.len() + 16 {
            self.pods.shrink_to_fit();
        }
        before - self.len()
    }

    /// Drops a pod's model.
    pub fn remove_pod(&mut self, uid: &str) {
        self.pods.remove(uid);
    }

    /// A pod's model.
    pub fn pod_model(&self, uid: &str) -> Option<&Model> {
        self.pods.get(uid)
    }

    /// A node-level model.
    pub fn item_model(&self, item: NodeItem) -> Option<&Model> {
        self.items[item.index()].as_ref()
    }

    /// Number of models.
    pub fn len(&self) -> usize {
        self.pods.len() + self.items.iter().flatten().count()
    }

    /// Whether there is no model.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Approximate bytes held.
    pub fn approx_bytes(&self) -> usize {
        size_of::<Self>()
            + self.pods.capacity() * (size_of::<(Box<str>, Model)>() + 1)
            + self.pods.iter().map(|(k, m)| k.len() + m.heap_bytes()).sum::<usize>()
            + self.items.iter().flatten().map(Model::heap_bytes).sum::<usize>()
    }

    /// Every model as a checkpoint, pods sorted by UID (a stable file).
    pub fn to_checkpoint(&self) -> Checkpoint {
        let entry = |uid: String, m: &Model| ModelCheckpoint {
            uid,
            last_updated_ms: m.last_updated.as_millisecond(),
            cpu: m.cpu.to_state(),
            memory: m.memory.to_state(),
        };
        let mut pods: Vec<(&str, &Model)> = self.pods.iter().map(|(k, m)| (&**k, m)).collect();
        pods.sort_unstable_by_key(|(k, _)| *k);
        let models = NodeItem::ALL
            .into_iter()
            .filter_map(|item| Some(entry(item.uid(), self.item_model(item)?)))
            .chain(pods.into_iter().map(|(uid, m)| entry(uid.to_string(), m)))
            .collect();
        Checkpoint::new(&self.config, models)
    }

    /// Loads the models of a checkpoint (replacing models with the same
    /// key). Node-level models are always kept; a pod model only if
    /// `is_known_pod(uid)` (the pod is still on the node).
    pub fn restore(
        &mut self,
        checkpoint: &Checkpoint,
        mut is_known_pod: impl FnMut(&str) -> bool,
    ) -> RestoreReport {
        let mut report = RestoreReport::default();
        for m in &checkpoint.models {
            let item = NodeItem::from_uid(&m.uid);
            if item.is_none() && !is_known_pod(&m.uid) {
                report.unknown += 1;
                continue;
            }
            let cpu = DecayingHistogram::from_state(
                HistogramOptions::cpu(),
                self.config.cpu_half_life,
                &m.cpu,
            );
            let memory = DecayingHistogram::from_state(
                HistogramOptions::memory(),
                self.config.memory_half_life,
                &m.memory,
            );
            let last_updated = Timestamp::from_millisecond(m.last_updated_ms).ok();
            let (Some(cpu), Some(memory), Some(last_updated)) = (cpu, memory, last_updated) else {
                report.invalid += 1;
                continue;
            };
            let model = Model { cpu, memory, last_updated };
            match item {
                Some(item) => self.items[item.index()] = Some(model),
                None => {
                    self.pods.insert(m.uid.as_str().into(), model);
                }
            }
            report.restored += 1;
        }
        report
    }
}

fn due(last: Option<Timestamp>, interval: std::time::Duration, now: Timestamp) -> bool {
    last.is_none_or(|last| now.duration_since(last).as_secs_f64() >= interval.as_secs_f64())
}

impl Predictions for PredictServer {
    fn pod(&self, uid: &str) -> Option<Prediction> {
        self.pods.get(uid).map(Model::prediction)
    }

    fn item(&self, item: NodeItem) -> Option<Prediction> {
        self.item_model(item).map(Model::prediction)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kolo_api::QoSClass;
    use kolo_api::kube_qos::KubeQoSClass;
    use kolo_core::resources::ResourceVector;

    use super::*;
    use crate::sample::{NodeSample, PodSample};
    use crate::store::StoreConfig;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_767_225_600 + secs).unwrap()
    }

    pub(crate) fn agent_pod(uid: &str, class: PriorityClass) -> AgentPod {
        AgentPod {
            id: kolo_core::PodRef { namespace: "ns".into(), name: uid.into(), uid: uid.into() },
            kube_qos: KubeQoSClass::Burstable,
            qos: QoSClass::LS,
            qos_source: kolo_api::qos::QoSSource::KoordinatorLabel,
            priority_class: class,
            requests: ResourceVector::cpu_memory(1000, 1 << 30),
            limits: ResourceVector::new(),
            terminated: false,
            deleting: false,
            created: None,
            containers: vec![],
        }
    }

    fn record(store: &mut MetricStore, secs: i64, node_cpu: f64, pods: &[(&str, f64, u64)]) {
        let node = NodeSample {
            at: at(secs),
            cpu_cores: node_cpu,
            memory_bytes: 8 << 30,
            memory_with_cache_bytes: 9 << 30,
        };
        let pods: Vec<PodSample> = pods
            .iter()
            .map(|&(uid, cpu, mem)| PodSample {
                at: at(secs),
                uid: uid.into(),
                cpu_cores: cpu,
                memory_bytes: mem,
                memory_with_cache_bytes: mem,
                containers: vec![],
            })
            .collect();
        store.record_round(&node, &pods);
    }

    #[test]
    fn training_samples_are_p90_over_the_last_minute() {
        let mut store = MetricStore::new(StoreConfig::default());
        // 120 s of data; only the last 61 points (t = 59..=119) count.
        for t in 0..120 {
            let a = if t < 59 { 50.0 } else { (t - 59) as f64 / 10.0 }; // 0.0 .. 6.0
            record(&mut store, t, 10.0, &[("a", a, 1 << 30), ("b", 1.0, 2 << 30)]);
        }
        let pods = [
            agent_pod("a", PriorityClass::Prod),
            agent_pod("b", PriorityClass::Batch),
            agent_pod("gone", PriorityClass::Prod),
        ];
        let s = training_samples(&store, &pods, Duration::from_secs(60), at(119), &mut Vec::new());
        // 61 values 0.0..=6.0: index int(61 × 0.9) − 1 = 53 → 5.3.
        assert_eq!(s.pods.len(), 2);
        assert_eq!(s.pods[0].0, "a");
        assert!((s.pods[0].1 - 5.3).abs() < 1e-6, "{}", s.pods[0].1);
        assert_eq!(s.pods[0].2, (1u64 << 30) as f64);
        assert_eq!(s.skipped_pods, 1);
        let prod = s.priorities[0];
        let batch = s.priorities[2];
        assert!((prod.0 - 5.3).abs() < 1e-6);
        assert_eq!(batch, (1.0, (2u64 << 30) as f64));
        assert_eq!(s.priorities[1], (0.0, 0.0), "mid: no pods, zero sample");
        let (node_cpu, node_mem) = s.node.unwrap();
        assert_eq!(node_cpu, 10.0);
        let (sys_cpu, sys_mem) = s.system.unwrap();
        assert!((sys_cpu - (10.0 - 6.3)).abs() < 1e-6);
        assert_eq!(sys_mem, node_mem - (3u64 << 30) as f64);
    }

    #[test]
    fn train_gc_and_predictions() {
        let mut store = MetricStore::default();
        let mut server = PredictServer::new(PredictorConfig::default());
        let pods = [agent_pod("a", PriorityClass::Prod)];
        assert!(server.training_due(at(0)));
        for t in 0..60 {
            record(&mut store, t, 2.0, &[("a", 1.0, 100 << 20)]);
        }
        let report = server.train(&store, &pods, at(59), &mut Vec::new());
        assert_eq!(report, TrainingReport { pods_trained: 1, pods_skipped: 0, node_trained: true });
        assert!(!server.training_due(at(100)));
        assert!(server.training_due(at(119)));
        assert_eq!(server.len(), 8, "pod + node + 5 classes + sys");
        let p = server.pod("a").unwrap();
        let o = HistogramOptions::cpu();
        let cpu_end = (o.bucket_start(o.find_bucket(1.0) + 1) * 1000.0) as i64;
        assert_eq!(p.p95.cpu, cpu_end);
        assert_eq!(p.max.cpu, cpu_end);
        let m = HistogramOptions::memory();
        assert_eq!(p.p98.memory, m.bucket_start(m.find_bucket((100u64 << 20) as f64) + 1) as i64);
        assert!(server.item(NodeItem::System).is_some());
        // A class without pods is fed zeros: its percentiles are the end of
        // the first bucket (25m, 5 MiB), as in the reference.
        let mid = server.item(NodeItem::Priority(PriorityClass::Mid)).unwrap();
        assert_eq!(mid.max, kolo_core::CpuMem::new(25, 5 << 20));
        // GC: nothing after 30 min, everything after 30 min + 1 s.
        assert_eq!(server.gc(at(59 + 1800)), 0);
        assert_eq!(server.gc(at(59 + 1801)), 8);
        assert!(server.is_empty());
    }

    #[test]
    fn checkpoint_round_trip_drops_unknown_pods() {
        let mut server = PredictServer::new(PredictorConfig::default());
        let samples = TrainingSamples {
            pods: vec![("a".into(), 1.0, 1e9), ("b".into(), 0.2, 3e8)],
            priorities: [(1.2, 1.3e9), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)],
            node: Some((3.0, 4e9)),
            system: Some((1.8, 2.7e9)),
            skipped_pods: 0,
        };
        for i in 0..30 {
            server.apply(&samples, at(60 * i));
        }
        let cp = server.to_checkpoint();
        let mut restored = PredictServer::new(PredictorConfig::default());
        let report = restored.restore(&cp, |uid| uid == "a");
        assert_eq!(report, RestoreReport { restored: 8, unknown: 1, invalid: 0 });
        assert_eq!(restored.pod("a"), server.pod("a"));
        assert_eq!(restored.pod("b"), None);
        for item in NodeItem::ALL {
            assert_eq!(restored.item(item), server.item(item), "{item:?}");
        }
        assert_eq!(
            restored.pod_model("a").unwrap().last_updated,
            server.pod_model("a").unwrap().last_updated
        );
        // Training continues on the restored histograms exactly as before.
        server.apply(&samples, at(3600));
        restored.apply(&samples, at(3600));
        assert_eq!(restored.pod("a"), server.pod("a"));
    }
}
