//! Batch allocatable (`kubernetes.io/batch-cpu`, `kubernetes.io/batch-memory`):
//! the reference's `BatchResource` plugin (Koordinator spec §2.2), every
//! term kept.
//!
//! ```text
//! safetyMargin      = capacity × (100 − reclaimThresholdPercent) / 100       (truncated)
//! nodeReserved      = Max(kubeletReserved, annotationReserved)
//! systemUsed        = systemUsage + usage of host apps with priority > batch
//! sysUsedOrReserved = Max(systemUsed, nodeReserved)
//! byUsage           = Max(capacity − safetyMargin − sysUsedOrReserved − HPUsed,      0)
//! byRequest         = Max(capacity − safetyMargin − nodeReserved      − HPRequest,   0)
//! byMaxUsageRequest = Max(capacity − safetyMargin − sysUsedOrReserved − HPMaxUsedReq, 0)
//! batch             = per resource, the policy's value, then min(cap) when
//!                     batch{CPU,Memory}ThresholdPercent is set
//! batch-cpu         × cpu-normalization-ratio when the node's ratio is > 1
//! ```
//!
//! HP ("high priority") pods are the Running and Pending pods whose priority
//! class with default is neither Batch nor Free (so Prod, Mid and None).
//!
//! Where kolo deliberately differs from the reference (each has a test):
//!
//! * **`cpuCalculatePolicy: request` is implemented** (`batch.cpu =
//!   byRequest.cpu`). The reference accepts the value and silently uses
//!   `usage`, which is exactly what an operator choosing `request` wanted to
//!   avoid (CPU overcommit driven by measured usage).
//! * **A pod without a metric counts its request in `HPMaxUsedReq` too.**
//!   The reference adds it to `HPUsed` only, so under `maxUsageRequest` a
//!   newly started LS pod *raised* batch allocatable until its first report
//!   (its NUMA-level formula already adds it to both).
//! * **A Succeeded or Failed pod consumes its metric entry.** The reference
//!   skips such a pod before looking its metric up, so the last report of a
//!   pod that has already exited counted as "dangling" high-priority usage
//!   until the agent stopped reporting it. Its containers are gone; it
//!   holds nothing. Pods in phase `Unknown` are still skipped before the
//!   lookup (they may be running on an unreachable node), as in the
//!   reference.
//!
//! Koordinator issue #1906 (steep drops of batch allocatable when an LS pod
//! starts): a pod the agent has not measured yet counts at its **request**,
//! as in the reference. That is the safe direction — the pod is entitled to
//! its request at any moment and the agent needs a report interval to see
//! it — so kolo keeps the drop and does not smooth it. What kolo changes is
//! that such drops are explainable: the pods without a metric and the
//! dangling metrics (pods reported but no longer listed, e.g. the old pod of
//! a rolling update) are separate terms ([`PodTerms`]), and the terminated
//! pods' double count above is gone. See `docs/noderesource.md`.

use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::FixedState;
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::pod::{PodPhase, PodView};
use serde::Serialize;

use super::amount::{CpuMem, Percents, multiply_percents, multiply_truncate, reserve_ratio};
use super::inputs::MetricInputs;
use super::{NodeBasics, OptionalPercents};
use crate::config::{CalculatePolicy, ColocationStrategy};

/// How the node's pods and pod metrics were counted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodTerms {
    /// Running / Pending pods counted as high priority.
    pub high_priority: usize,
    /// Running / Pending Batch or Free pods (not counted).
    pub low_priority: usize,
    /// Succeeded / Failed pods (not counted; their metric is consumed).
    pub terminated: usize,
    /// Pods in phase `Unknown` (not counted; their metric counts as dangling).
    pub unknown_phase: usize,
    /// High-priority pods with no metric yet, counted at their request.
    pub without_metric: usize,
    /// The summed request of those pods (part of `hpUsed`, `hpRequest`
    /// and `hpMaxUsedRequest`).
    pub without_metric_request: CpuMem,
    /// High-priority LSE pods with a metric (their CPU counts at request).
    pub lse: usize,
    /// Pod metrics whose pod is not among the node's active pods and whose
    /// priority is not batch / free: counted as high-priority usage.
    pub dangling: usize,
    /// Their summed usage (part of `hpUsed` and `hpMaxUsedRequest`).
    pub dangling_used: CpuMem,
    /// Dangling metrics of batch / free pods (not counted).
    pub dangling_low_priority: usize,
}

/// Every term of a node's batch allocatable. CPU in milli-cores, memory in
/// bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchTerms {
    /// `status.capacity` (not allocatable).
    pub capacity: CpuMem,
    /// `cpuReclaimThresholdPercent` / `memoryReclaimThresholdPercent`.
    pub reclaim_threshold_percent: Percents,
    /// `capacity × (100 − threshold) / 100`, truncated; negative for a
    /// threshold above 100.
    pub safety_margin: CpuMem,
    /// `Max(capacity − allocatable, 0)`.
    pub kubelet_reserved: CpuMem,
    /// From the `node.koordinator.sh/reservation` annotation, if any.
    pub annotation_reserved: Option<CpuMem>,
    /// The number of CPUs in the annotation's `reservedCPUs`, if set (it
    /// replaces `resources.cpu`).
    #[serde(rename = "reservedCPUs")]
    pub reserved_cpus: Option<u32>,
    /// `Max(kubeletReserved, annotationReserved)`.
    pub node_reserved: CpuMem,
    /// NodeMetric `status.nodeMetric.systemUsage`.
    pub system_usage: CpuMem,
    /// Usage of host applications with a priority above batch.
    pub host_app_used: CpuMem,
    /// `systemUsage + hostAppUsed`.
    pub system_used: CpuMem,
    /// `Max(systemUsed, nodeReserved)`.
    pub sys_used_or_reserved: CpuMem,
    /// How the pods were counted.
    pub pods: PodTerms,
    /// Sum of the high-priority pods' requests.
    pub hp_request: CpuMem,
    /// Sum of their usage (request when unmeasured; request CPU for LSE)
    /// plus dangling usage.
    pub hp_used: CpuMem,
    /// Sum of `Max(request, usage)` per pod plus dangling usage.
    pub hp_max_used_request: CpuMem,
    /// The `usage` policy's result.
    pub by_usage: CpuMem,
    /// The `request` policy's result.
    pub by_request: CpuMem,
    /// The `maxUsageRequest` policy's result.
    pub by_max_usage_request: CpuMem,
    /// `cpuCalculatePolicy`.
    pub cpu_policy: CalculatePolicy,
    /// `memoryCalculatePolicy`.
    pub memory_policy: CalculatePolicy,
    /// CPU from the CPU policy, memory from the memory policy.
    pub by_policy: CpuMem,
    /// `batchCPUThresholdPercent` / `batchMemoryThresholdPercent`.
    pub threshold_percent: OptionalPercents,
    /// `capacity × threshold / 100` where a threshold is set.
    pub cap: OptionalAmounts,
    /// `min(byPolicy, cap)`.
    pub capped: CpuMem,
    /// The node's `cpu-normalization-ratio` when above 1.
    pub cpu_normalization_ratio: Option<f64>,
    /// What is published: `capped`, batch-cpu multiplied by the ratio.
    pub result: CpuMem,
}

/// An amount per resource where one is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct OptionalAmounts {
    /// CPU (milli-cores).
    pub cpu: Option<i64>,
    /// Memory (bytes).
    pub memory: Option<i64>,
}

/// Where each pod's entry is in the metric's pod list.
pub(crate) enum MetricIndex<'m> {
    /// The metric lists exactly the node's pods, in their order and with
    /// the same shared keys (`kolo sim` builds its reports from the pods it
    /// hands the manager): pod *i*'s entry is entry *i*. Nothing to build
    /// or hash, for a thousand nodes a minute.
    Aligned(usize),
    /// Key → index of its entry. A key reported twice keeps its last
    /// entry, as the reference's map does. A fast hash: SipHash was most of
    /// this function's time, and the keys are the cluster's own pod keys,
    /// nothing to defend against.
    ByKey(HashMap<&'m str, usize, FixedState>),
}

impl<'m> MetricIndex<'m> {
    /// The index of `metric` for `pods`, which are distinct (a store's
    /// listing), so an aligned metric has no key twice either.
    pub(crate) fn new(pods: &[&PodView], metric: &'m MetricInputs) -> MetricIndex<'m> {
        let aligned = metric.pods.len() == pods.len()
            && pods.iter().zip(&metric.pods).all(|(p, m)| Arc::ptr_eq(p.shared_key(), m.key));
        if aligned {
            return MetricIndex::Aligned(pods.len());
        }
        let mut by_key =
            HashMap::with_capacity_and_hasher(metric.pods.len(), FixedState::default());
        for (i, m) in metric.pods.iter().enumerate() {
            by_key.insert(&**m.key, i);
        }
        MetricIndex::ByKey(by_key)
    }

    /// The entry of `pod`, the `position`-th pod.
    fn of(&self, position: usize, pod: &PodView) -> Option<usize> {
        match self {
            MetricIndex::Aligned(_) => Some(position),
            MetricIndex::ByKey(by_key) => by_key.get(pod.key()).copied(),
        }
    }

    /// Calls `f` with the index of each key's (last) entry.
    fn for_each_entry(&self, mut f: impl FnMut(usize)) {
        match self {
            MetricIndex::Aligned(n) => (0..*n).for_each(f),
            MetricIndex::ByKey(by_key) => by_key.values().for_each(|&i| f(i)),
        }
    }
}

/// Counts the node's pods and pod metrics (see [`PodTerms`]). Returns
/// (HPRequest, HPUsed, HPMaxUsedReq, terms).
fn accumulate(pods: &[&PodView], metric: &MetricInputs) -> (CpuMem, CpuMem, CpuMem, PodTerms) {
    let mut terms = PodTerms::default();
    let index = MetricIndex::new(pods, metric);
    let mut consumed = vec![false; metric.pods.len()];
    let (mut request_sum, mut used, mut max_used_req) = (CpuMem::ZERO, CpuMem::ZERO, CpuMem::ZERO);
    for (position, pod) in pods.iter().enumerate() {
        let entry = index.of(position, pod);
        match pod.phase() {
            PodPhase::Running | PodPhase::Pending => {}
            PodPhase::Succeeded | PodPhase::Failed => {
                // Deviation: consume the metric of an exited pod.
                if let Some(i) = entry {
                    consumed[i] = true;
                }
                terms.terminated += 1;
                continue;
            }
            PodPhase::Unknown => {
                terms.unknown_phase += 1;
                continue;
            }
        }
        let usage = entry.map(|i| {
            consumed[i] = true;
            metric.pods[i].usage
        });
        if matches!(pod.priority_class(), PriorityClass::Batch | PriorityClass::Free) {
            terms.low_priority += 1;
            continue;
        }
        terms.high_priority += 1;
        let request =
            CpuMem::new(pod.requests().cpu(), pod.requests().memory()).clamp_non_negative();
        request_sum += request;
        match usage {
            None => {
                terms.without_metric += 1;
                terms.without_metric_request += request;
                used += request;
                // Deviation: the reference adds nothing here.
                max_used_req += request;
            }
            Some(usage) if pod.qos() == QoSClass::LSE => {
                terms.lse += 1;
                used += CpuMem::new(request.cpu, usage.memory);
                max_used_req += request.max(usage);
            }
            Some(usage) => {
                used += usage;
                max_used_req += request.max(usage);
            }
        }
    }
    index.for_each_entry(|i| {
        if consumed[i] {
            return;
        }
        let m = &metric.pods[i];
        if m.low_priority {
            terms.dangling_low_priority += 1;
        } else {
            terms.dangling += 1;
            terms.dangling_used += m.usage;
        }
    });
    used += terms.dangling_used;
    max_used_req += terms.dangling_used;
    (request_sum, used, max_used_req, terms)
}

/// `batch-cpu` × the cpu-normalization ratio, as the reference's prepare
/// step does it: `MultiplyMilliQuant` on the quantity (whose *value* is
/// already milli-cores, so its milli-value is ×1000), then `Value()`, which
/// rounds the fraction up.
pub fn normalize_batch_cpu(batch_cpu: i64, ratio: f64) -> i64 {
    let scaled = multiply_truncate(batch_cpu.saturating_mul(1000), ratio);
    scaled / 1000 + i64::from(scaled % 1000 > 0)
}

fn pick(policy: CalculatePolicy, by_usage: i64, by_request: i64, by_max: i64) -> i64 {
    match policy {
        CalculatePolicy::Usage => by_usage,
        CalculatePolicy::Request => by_request,
        CalculatePolicy::MaxUsageRequest => by_max,
    }
}

/// The batch terms of a node whose capacity has cpu and memory.
pub(crate) fn calculate(
    basics: &NodeBasics,
    pods: &[&PodView],
    metric: &MetricInputs,
    strategy: &ColocationStrategy,
    cpu_normalization_ratio: Option<f64>,
) -> BatchTerms {
    let capacity = basics.capacity;
    let reclaim_threshold_percent = Percents {
        cpu: strategy.cpu_reclaim_threshold(),
        memory: strategy.memory_reclaim_threshold(),
    };
    let safety_margin = CpuMem::new(
        multiply_truncate(capacity.cpu, reserve_ratio(reclaim_threshold_percent.cpu)),
        multiply_truncate(capacity.memory, reserve_ratio(reclaim_threshold_percent.memory)),
    );
    let host_app_used = metric.host_apps_above(PriorityClass::Batch.default_priority());
    let system_used = metric.system_usage + host_app_used;
    let sys_used_or_reserved = system_used.max(basics.node_reserved);
    let (hp_request, hp_used, hp_max_used_request, pod_terms) = accumulate(pods, metric);

    let base = capacity - safety_margin;
    let by_usage = (base - sys_used_or_reserved - hp_used).clamp_non_negative();
    let by_request = (base - basics.node_reserved - hp_request).clamp_non_negative();
    let by_max_usage_request =
        (base - sys_used_or_reserved - hp_max_used_request).clamp_non_negative();

    // Deviation: `request` is honoured for CPU (the reference reads it as `usage`).
    let (cpu_policy, memory_policy) = (strategy.cpu_policy(), strategy.memory_policy());
    let by_policy = CpuMem::new(
        pick(cpu_policy, by_usage.cpu, by_request.cpu, by_max_usage_request.cpu),
        pick(memory_policy, by_usage.memory, by_request.memory, by_max_usage_request.memory),
    );

    let threshold_percent = OptionalPercents {
        cpu: strategy.batch_cpu_threshold_percent,
        memory: strategy.batch_memory_threshold_percent,
    };
    let full = multiply_percents(
        capacity,
        Percents {
            cpu: threshold_percent.cpu.unwrap_or(0),
            memory: threshold_percent.memory.unwrap_or(0),
        },
    );
    let cap = OptionalAmounts {
        cpu: threshold_percent.cpu.map(|_| full.cpu),
        memory: threshold_percent.memory.map(|_| full.memory),
    };
    let capped = CpuMem::new(
        cap.cpu.map_or(by_policy.cpu, |c| by_policy.cpu.min(c)),
        cap.memory.map_or(by_policy.memory, |c| by_policy.memory.min(c)),
    )
    .clamp_non_negative();
    let result = CpuMem::new(
        cpu_normalization_ratio.map_or(capped.cpu, |r| normalize_batch_cpu(capped.cpu, r)),
        capped.memory,
    );

    BatchTerms {
        capacity,
        reclaim_threshold_percent,
        safety_margin,
        kubelet_reserved: basics.kubelet_reserved,
        annotation_reserved: basics.annotation.map(|a| a.amount),
        reserved_cpus: basics.annotation.and_then(|a| a.reserved_cpus),
        node_reserved: basics.node_reserved,
        system_usage: metric.system_usage,
        host_app_used,
        system_used,
        sys_used_or_reserved,
        pods: pod_terms,
        hp_request,
        hp_used,
        hp_max_used_request,
        by_usage,
        by_request,
        by_max_usage_request,
        cpu_policy,
        memory_policy,
        by_policy,
        threshold_percent,
        cap,
        capped,
        cpu_normalization_ratio,
        result,
    }
}
