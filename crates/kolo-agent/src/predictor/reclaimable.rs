//! prodReclaimable and prodPeak (spec §4.3): what the Prod pods requested
//! but are predicted not to use, and their predicted peak.
//!
//! Two predictors, both over the pods whose priority class (with default) is
//! `koord-prod` or none; the result is their resource-wise **min**, the peak
//! their **max**. With `ratio = (100 + safetyMargin) / 100` (1.1):
//!
//! * pod-based: per pod, once —
//!   * younger than the cold start (24 h): its requests count as
//!     *unpredicted*;
//!   * terminated or being deleted: ignored;
//!   * no prediction: requests unpredicted;
//!   * otherwise `peak = (int(p95 cpu × ratio), int(p98 memory × ratio))`;
//!     `unReclaimable += peak`; `reclaimable += max(request − peak, 0)`.
//!
//!   `result = min(max(allocatable − unReclaimable, 0), reclaimable)`,
//!   `peak = unReclaimable + unpredicted`.
//! * priority-based: `reclaimRequest` = Σ requests of the non-terminated
//!   pods; `unReclaimable = int((sys p95 + Σ class p95) cpu × ratio)` and the
//!   same with p98 memory, the classes being `koord-prod` and none;
//!   `result = min(max(allocatable − unReclaimable, 0),
//!   max(reclaimRequest − unReclaimable, 0))`, `peak = unReclaimable`. A
//!   missing system or class model is an error (the NodeMetric field is then
//!   left empty).
//!
//! `allocatable` is the node's raw-allocatable annotation if present, else
//! `status.allocatable` — the caller picks it.

use std::collections::HashSet;
use std::time::Duration;

use kolo_api::PriorityClass;
use kolo_core::clock::Timestamp;
use kolo_core::resources::ResourceVector;

use kolo_core::CpuMem;

use super::{NodeItem, Predictions};
use crate::AgentPod;

/// Settings of the prodReclaimable predictors (spec §4.1 defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReclaimConfig {
    /// A pod younger than this (or exactly this old) is in cold start (24 h).
    pub cold_start: Duration,
    /// Safety margin on predicted peaks, percent (10).
    pub safety_margin_percent: u32,
}

impl Default for ReclaimConfig {
    fn default() -> Self {
        ReclaimConfig { cold_start: Duration::from_secs(24 * 3600), safety_margin_percent: 10 }
    }
}

impl ReclaimConfig {
    fn ratio(&self) -> f64 {
        f64::from(100 + self.safety_margin_percent) / 100.0
    }
}

/// One predictor's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PredictorOutcome {
    /// Reclaimable resources.
    pub reclaimable: CpuMem,
    /// Predicted peak.
    pub peak: CpuMem,
}

/// The combined answer, with both predictors' parts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProdReclaimable {
    /// `min(pod-based, priority-based)` per resource: `prodReclaimableMetric`.
    pub reclaimable: CpuMem,
    /// `max(pod-based, priority-based)` per resource: `prodPeakMetric`.
    pub peak: CpuMem,
    /// The pod-based predictor.
    pub by_pods: PredictorOutcome,
    /// The priority-based predictor.
    pub by_priority: PredictorOutcome,
    /// UIDs of eligible pods past their cold start that had no prediction
    /// (their requests were counted as unpredicted).
    pub missing_predictions: Vec<String>,
}

/// Why prodReclaimable could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReclaimableError {
    /// A node-level model the priority-based predictor needs is missing.
    #[error("no prediction for {0} yet")]
    MissingPrediction(String),
}

/// Whether pods of this class count (Prod, or no class).
pub fn is_prod_reclaimable(class: PriorityClass) -> bool {
    matches!(class, PriorityClass::Prod | PriorityClass::None)
}

fn requests(pod: &AgentPod) -> CpuMem {
    CpuMem::new(pod.requests.cpu(), pod.requests.memory())
}

/// `int(v × ratio)`, as the reference's `MultiplyMilliQuant` / `MultiplyQuant`.
fn scale(v: CpuMem, ratio: f64) -> CpuMem {
    CpuMem::new((v.cpu as f64 * ratio) as i64, (v.memory as f64 * ratio) as i64)
}

/// Computes prodReclaimable and prodPeak for `pods` on a node with
/// `allocatable` (CPU milli, memory bytes). See the module documentation.
pub fn prod_reclaimable<'a>(
    pods: impl IntoIterator<Item = &'a AgentPod>,
    allocatable: &ResourceVector,
    predictions: &dyn Predictions,
    config: &ReclaimConfig,
    now: Timestamp,
) -> Result<ProdReclaimable, ReclaimableError> {
    let allocatable = CpuMem::new(allocatable.cpu(), allocatable.memory());
    let ratio = config.ratio();
    let cold_start_secs = config.cold_start.as_secs_f64();

    let mut seen = HashSet::new();
    let (mut unreclaimable, mut reclaimable, mut unpredicted) =
        (CpuMem::default(), CpuMem::default(), CpuMem::default());
    let mut reclaim_request = CpuMem::default();
    let mut missing = Vec::new();
    for pod in pods {
        if !is_prod_reclaimable(pod.priority_class) || !seen.insert(pod.id.uid.as_str()) {
            continue;
        }
        let request = requests(pod);
        // Priority-based: every running eligible pod's requests; a pod
        // being deleted is on its way out (the reference skips it too).
        let gone = pod.terminated || pod.deleting;
        if !gone {
            reclaim_request += request;
        }
        // Pod-based.
        let cold = pod
            .created
            .is_some_and(|created| now.duration_since(created).as_secs_f64() <= cold_start_secs);
        if cold {
            unpredicted += request;
            continue;
        }
        if gone {
            continue;
        }
        let Some(prediction) = predictions.pod(&pod.id.uid) else {
            unpredicted += request;
            missing.push(pod.id.uid.clone());
            continue;
        };
        let peak = scale(CpuMem::new(prediction.p95.cpu, prediction.p98.memory), ratio);
        unreclaimable += peak;
        reclaimable += request.sub_non_negative(peak);
    }
    let by_pods = PredictorOutcome {
        reclaimable: allocatable.sub_non_negative(unreclaimable).min(reclaimable),
        peak: unreclaimable + unpredicted,
    };

    let item = |item: NodeItem| {
        predictions.item(item).ok_or_else(|| ReclaimableError::MissingPrediction(item.uid()))
    };
    let mut sum = {
        let sys = item(NodeItem::System)?;
        CpuMem::new(sys.p95.cpu, sys.p98.memory)
    };
    for class in NodeItem::PRIORITY_CLASSES.into_iter().filter(|c| is_prod_reclaimable(*c)) {
        let p = item(NodeItem::Priority(class))?;
        sum += CpuMem::new(p.p95.cpu, p.p98.memory);
    }
    let priority_peak = scale(sum, ratio);
    let by_priority = PredictorOutcome {
        reclaimable: allocatable
            .sub_non_negative(priority_peak)
            .min(reclaim_request.sub_non_negative(priority_peak)),
        peak: priority_peak,
    };

    Ok(ProdReclaimable {
        reclaimable: by_pods.reclaimable.min(by_priority.reclaimable),
        peak: by_pods.peak.max(by_priority.peak),
        by_pods,
        by_priority,
        missing_predictions: missing,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use kolo_api::QoSClass;
    use kolo_api::kube_qos::KubeQoSClass;

    use super::*;
    use crate::predictor::Prediction;

    const GI: i64 = 1 << 30;

    fn now() -> Timestamp {
        "2026-01-02T00:00:00Z".parse().unwrap()
    }

    fn pod(uid: &str, class: PriorityClass, cpu: i64, mem: i64, age_h: i64) -> AgentPod {
        AgentPod {
            id: kolo_core::PodRef { namespace: "ns".into(), name: uid.into(), uid: uid.into() },
            kube_qos: KubeQoSClass::Burstable,
            qos: QoSClass::LS,
            qos_source: kolo_api::qos::QoSSource::KoordinatorLabel,
            priority_class: class,
            requests: ResourceVector::cpu_memory(cpu, mem),
            limits: ResourceVector::new(),
            terminated: false,
            deleting: false,
            created: Some(now() - jiff_hours(age_h)),
            containers: vec![],
        }
    }

    fn jiff_hours(h: i64) -> k8s_openapi::jiff::SignedDuration {
        k8s_openapi::jiff::SignedDuration::from_hours(h)
    }

    fn pred(cpu_p95: i64, mem_p98: i64) -> Prediction {
        let v = CpuMem::new(cpu_p95, mem_p98);
        Prediction { p60: v, p90: v, p95: v, p98: v, max: v }
    }

    #[derive(Default)]
    struct Table {
        pods: HashMap<String, Prediction>,
        items: HashMap<NodeItem, Prediction>,
    }

    impl Predictions for Table {
        fn pod(&self, uid: &str) -> Option<Prediction> {
            self.pods.get(uid).copied()
        }
        fn item(&self, item: NodeItem) -> Option<Prediction> {
            self.items.get(&item).copied()
        }
    }

    fn table() -> Table {
        let mut t = Table::default();
        t.items.insert(NodeItem::System, pred(500, GI));
        t.items.insert(NodeItem::Priority(PriorityClass::Prod), pred(2000, 4 * GI));
        t.items.insert(NodeItem::Priority(PriorityClass::None), pred(0, 0));
        t
    }

    #[test]
    fn worked_example() {
        // Node: 16 cores, 64 GiB.
        let alloc = ResourceVector::cpu_memory(16_000, 64 * GI);
        let mut t = table();
        // a: requests 4 cores / 8 GiB; p95 cpu 1000m, p98 mem 2 GiB.
        //    peak = (1100m, 2.2 GiB = 2362232012 bytes, truncated);
        //    reclaimable = (2900m, 8 GiB − 2362232012 = 6227702580).
        t.pods.insert("a".into(), pred(1000, 2 * GI));
        // b: requests 1 core / 1 GiB; p95 2000m (over its request), p98 0.5 GiB.
        //    peak = (2200m, 590558003); reclaimable = (0, 483183821).
        t.pods.insert("b".into(), pred(2000, GI / 2));
        // c: 2 h old → cold start: requests (2000m, 4 GiB) unpredicted.
        // d: batch → not counted. e: terminated → ignored. f: no prediction.
        let mut e = pod("e", PriorityClass::Prod, 8000, 8 * GI, 48);
        e.terminated = true;
        // (a pod being deleted is ignored the same way: see `deleting_pods_are_ignored`)
        let pods = [
            pod("a", PriorityClass::Prod, 4000, 8 * GI, 48),
            pod("b", PriorityClass::None, 1000, GI, 48),
            pod("c", PriorityClass::Prod, 2000, 4 * GI, 2),
            pod("d", PriorityClass::Batch, 8000, 8 * GI, 48),
            e,
            pod("f", PriorityClass::Prod, 500, GI, 48),
            pod("a", PriorityClass::Prod, 4000, 8 * GI, 48), // a duplicate: once
        ];
        let r = prod_reclaimable(&pods, &alloc, &t, &ReclaimConfig::default(), now()).unwrap();

        // Pod-based: unReclaimable = (3300m, 2362232012 + 590558003 = 2952790015);
        // reclaimable = (2900m, 6227702580 + 483183821 = 6710886401);
        // bound = alloc − unReclaimable = (12700m, 65766686721) → result = reclaimable.
        // unpredicted = c (2000m, 4 GiB) + f (500m, 1 GiB).
        assert_eq!(r.by_pods.reclaimable, CpuMem::new(2900, 6_710_886_401));
        assert_eq!(r.by_pods.peak, CpuMem::new(3300 + 2500, 2_952_790_015 + 5 * GI));
        assert_eq!(r.missing_predictions, vec!["f".to_string()]);

        // Priority-based: reclaimRequest = a + b + c + f = (7500m, 14 GiB);
        // unReclaimable = int((500 + 2000 + 0) × 1.1) = 2750m,
        //                 int((1 + 4 + 0) GiB × 1.1) = 5905580032;
        // result = min(alloc − peak, request − peak) = (4750m, 15032385536 − 5905580032).
        assert_eq!(r.by_priority.peak, CpuMem::new(2750, 5_905_580_032));
        assert_eq!(r.by_priority.reclaimable, CpuMem::new(4750, 14 * GI - 5_905_580_032));

        // Combined: min of the results (cpu 2900 < 4750; memory
        // 6710886401 < 9126805504), max of the peaks.
        assert_eq!(r.reclaimable, CpuMem::new(2900, 6_710_886_401));
        assert_eq!(r.peak, CpuMem::new(5800, 2_952_790_015 + 5 * GI));
    }

    #[test]
    fn deleting_pods_are_ignored() {
        // The worked example's pod e again, but being deleted instead of
        // terminated: it must not count either way.
        let alloc = ResourceVector::cpu_memory(16_000, 64 * GI);
        let mut t = table();
        t.pods.insert("a".into(), pred(1000, 2 * GI));
        let mut e = pod("e", PriorityClass::Prod, 8000, 8 * GI, 48);
        let without = prod_reclaimable(
            &[pod("a", PriorityClass::Prod, 4000, 8 * GI, 48)],
            &alloc,
            &t,
            &ReclaimConfig::default(),
            now(),
        )
        .unwrap();
        e.deleting = true;
        let with = prod_reclaimable(
            &[pod("a", PriorityClass::Prod, 4000, 8 * GI, 48), e],
            &alloc,
            &t,
            &ReclaimConfig::default(),
            now(),
        )
        .unwrap();
        assert_eq!(with.by_priority, without.by_priority);
        assert_eq!(with.by_pods, without.by_pods);
        assert!(with.missing_predictions.is_empty(), "no prediction is wanted for it");
    }

    #[test]
    fn allocatable_bounds_the_result() {
        // A small node: 2 cores, 4 GiB; a pod requesting 8 cores using 1.
        let alloc = ResourceVector::cpu_memory(2000, 4 * GI);
        let mut t = table();
        t.pods.insert("a".into(), pred(1000, GI));
        let pods = [pod("a", PriorityClass::Prod, 8000, 8 * GI, 48)];
        let r = prod_reclaimable(&pods, &alloc, &t, &ReclaimConfig::default(), now()).unwrap();
        // Pod-based: peak (1100m, 1181116006); bound (900m, 3113851898).
        assert_eq!(r.by_pods.reclaimable, CpuMem::new(900, 4 * GI - 1_181_116_006));
        // Priority-based: peak = (2750m, 5905580032) > allocatable → 0.
        assert_eq!(r.by_priority.reclaimable, CpuMem::new(0, 0));
        assert_eq!(r.reclaimable, CpuMem::new(0, 0));
    }

    #[test]
    fn cold_start_boundary_and_unknown_creation() {
        let alloc = ResourceVector::cpu_memory(16_000, 64 * GI);
        let mut t = table();
        t.pods.insert("a".into(), pred(100, GI));
        let config = ReclaimConfig::default();
        // Exactly 24 h old: still cold (the reference's `<=`).
        let r = prod_reclaimable(
            &[pod("a", PriorityClass::Prod, 1000, 2 * GI, 24)],
            &alloc,
            &t,
            &config,
            now(),
        )
        .unwrap();
        assert_eq!(r.by_pods.reclaimable, CpuMem::default());
        assert_eq!(r.by_pods.peak, CpuMem::new(1000, 2 * GI));
        // Unknown creation time: not cold.
        let mut p = pod("a", PriorityClass::Prod, 1000, 2 * GI, 0);
        p.created = None;
        let r = prod_reclaimable(&[p], &alloc, &t, &config, now()).unwrap();
        assert_eq!(r.by_pods.reclaimable, CpuMem::new(890, 2 * GI - 1_181_116_006));
        // A smaller margin.
        let config = ReclaimConfig { safety_margin_percent: 0, ..config };
        let r = prod_reclaimable(
            &[pod("a", PriorityClass::Prod, 1000, 2 * GI, 25)],
            &alloc,
            &t,
            &config,
            now(),
        )
        .unwrap();
        assert_eq!(r.by_pods.reclaimable, CpuMem::new(900, GI));
    }

    #[test]
    fn missing_node_models_are_errors() {
        let alloc = ResourceVector::cpu_memory(16_000, 64 * GI);
        let mut t = table();
        t.items.remove(&NodeItem::Priority(PriorityClass::None));
        let err = prod_reclaimable(&[], &alloc, &t, &ReclaimConfig::default(), now()).unwrap_err();
        assert_eq!(err.to_string(), "no prediction for __node-__ yet");
        let err =
            prod_reclaimable(&[], &alloc, &Table::default(), &ReclaimConfig::default(), now())
                .unwrap_err();
        assert_eq!(err, ReclaimableError::MissingPrediction("__node-sys__".into()));
    }
}
