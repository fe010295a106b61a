//! Mid allocatable (`kubernetes.io/mid-cpu`, `kubernetes.io/mid-memory`):
//! the reference's `MidResource` plugin (Koordinator spec §2.3), every term
//! kept.
//!
//! Default mode (`midReclaimMode` unset), from what the agent predicts Prod
//! pods will leave unused:
//!
//! ```text
//! reservedOrUsed = Max(Max(kubeletReserved, annotationReserved),
//!                      systemUsage + usage of host apps with priority > mid)
//! unallocated    = Max(capacity − reservedOrUsed − request of Running/Pending pods
//!                      whose priority is not Mid, Batch or Free, 0)
//! nodeUnused     = capacity − nodeUsage        (0 when nodeUsage lacks cpu or memory)
//! mid            = Max(min(prodReclaimable, nodeUnused), 0)
//!                  + unallocated × midUnallocatedPercent / 100      (truncated)
//! mid            = min(mid, capacity × mid{CPU,Memory}ThresholdPercent / 100)
//! ```
//!
//! Static mode (`midReclaimMode: static`): `mid = capacity ×
//! midStatic{CPU,Memory}ReservedPercent / 100`, then the same cap.
//!
//! A missing `prodReclaimableMetric` is not a degradation: it reads as 0,
//! so mid is 0 (published as 0, not removed).

use kolo_api::PriorityClass;
use kolo_core::pod::PodView;
use serde::Serialize;

use super::NodeBasics;
use super::amount::{CpuMem, Percents, multiply_percents};
use super::inputs::MetricInputs;
use crate::config::ColocationStrategy;

/// Every term of a node's mid allocatable. CPU in milli-cores, memory in
/// bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MidTerms {
    /// `status.capacity`.
    pub capacity: CpuMem,
    /// `midCPUThresholdPercent` / `midMemoryThresholdPercent`.
    pub threshold_percent: Percents,
    /// `capacity × threshold / 100`, truncated.
    pub cap: CpuMem,
    /// The mode and its own terms.
    #[serde(flatten)]
    pub mode: MidMode,
    /// Before the cap.
    pub uncapped: CpuMem,
    /// What is published: `min(uncapped, cap)`.
    pub result: CpuMem,
}

/// The mid reclaim mode with the terms only it has.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "camelCase")]
pub enum MidMode {
    /// `midReclaimMode` unset: from prodReclaimable.
    Default(MidDefaultTerms),
    /// `midReclaimMode: static`: a fixed share of capacity.
    Static(MidStaticTerms),
}

/// The terms of the static mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MidStaticTerms {
    /// `midStaticCPUReservedPercent` / `midStaticMemoryReservedPercent`.
    pub reserved_percent: Percents,
}

/// The terms of the default mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MidDefaultTerms {
    /// NodeMetric `status.prodReclaimableMetric.resource`; `None` (read as
    /// 0) when absent.
    pub prod_reclaimable: Option<CpuMem>,
    /// NodeMetric `status.nodeMetric.nodeUsage`; `None` when it lacks cpu
    /// or memory.
    pub node_usage: Option<CpuMem>,
    /// `capacity − nodeUsage` (may be negative), or 0 without node usage.
    pub node_unused: CpuMem,
    /// `Max(kubeletReserved, annotationReserved)`.
    pub node_reserved: CpuMem,
    /// `systemUsage` + usage of host apps with a priority above mid.
    pub system_used: CpuMem,
    /// `Max(nodeReserved, systemUsed)`.
    pub reserved_or_used: CpuMem,
    /// Sum of the requests of Running / Pending pods that are not Mid,
    /// Batch or Free.
    pub prod_request: CpuMem,
    /// `Max(capacity − reservedOrUsed − prodRequest, 0)`.
    pub unallocated: CpuMem,
    /// `midUnallocatedPercent`.
    pub unallocated_percent: i64,
    /// `Max(min(prodReclaimable, nodeUnused), 0)`.
    pub reclaimable: CpuMem,
    /// `unallocated × unallocatedPercent / 100`, truncated.
    pub from_unallocated: CpuMem,
}

/// The mid terms of a node whose capacity has cpu and memory.
pub(crate) fn calculate(
    basics: &NodeBasics,
    pods: &[&PodView],
    metric: &MetricInputs,
    strategy: &ColocationStrategy,
) -> MidTerms {
    let defaults = ColocationStrategy::defaults();
    let pct = |v: Option<i64>, d: Option<i64>| v.or(d).unwrap_or(0);
    let capacity = basics.capacity;
    let threshold_percent = Percents {
        cpu: pct(strategy.mid_cpu_threshold_percent, defaults.mid_cpu_threshold_percent),
        memory: pct(strategy.mid_memory_threshold_percent, defaults.mid_memory_threshold_percent),
    };
    let cap = multiply_percents(capacity, threshold_percent);
    let (mode, uncapped) = if strategy.is_mid_static() {
        let reserved_percent = Percents {
            cpu: pct(strategy.mid_static_cpu_reserved_percent, None),
            memory: pct(strategy.mid_static_memory_reserved_percent, None),
        };
        let uncapped = multiply_percents(capacity, reserved_percent);
        (MidMode::Static(MidStaticTerms { reserved_percent }), uncapped)
    } else {
        let system_used =
            metric.system_usage + metric.host_apps_above(PriorityClass::Mid.default_priority());
        let reserved_or_used = basics.node_reserved.max(system_used);
        let prod_request = pods
            .iter()
            .filter(|p| p.is_active())
            .filter(|p| {
                !matches!(
                    p.priority_class(),
                    PriorityClass::Mid | PriorityClass::Batch | PriorityClass::Free
                )
            })
            .fold(CpuMem::ZERO, |sum, p| {
                sum + CpuMem::new(p.requests().cpu(), p.requests().memory()).clamp_non_negative()
            });
        let unallocated = (capacity - reserved_or_used - prod_request).clamp_non_negative();
        let node_usage = metric.node_usage.complete();
        let node_unused = node_usage.map_or(CpuMem::ZERO, |u| capacity - u);
        let reclaimable =
            metric.prod_reclaimable.unwrap_or(CpuMem::ZERO).min(node_unused).clamp_non_negative();
        let unallocated_percent =
            pct(strategy.mid_unallocated_percent, defaults.mid_unallocated_percent);
        let from_unallocated = multiply_percents(
            unallocated,
            Percents { cpu: unallocated_percent, memory: unallocated_percent },
        );
        let terms = MidDefaultTerms {
            prod_reclaimable: metric.prod_reclaimable,
            node_usage,
            node_unused,
            node_reserved: basics.node_reserved,
            system_used,
            reserved_or_used,
            prod_request,
            unallocated,
            unallocated_percent,
            reclaimable,
            from_unallocated,
        };
        (MidMode::Default(terms), reclaimable + from_unallocated)
    };
    let result = uncapped.min(cap).clamp_non_negative();
    MidTerms { capacity, threshold_percent, cap, mode, uncapped, result }
}
