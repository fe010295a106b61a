//! Reading the inputs of the formulas from the node, its annotations and its
//! NodeMetric, with the problems found on the way.
//!
//! * The node: `status.capacity` and the kubelet reservation
//!   (`capacity − allocatable`), the `node.koordinator.sh/reservation`
//!   annotation (with its `reservedCPUs` cpuset), and the
//!   `node.koordinator.sh/cpu-normalization-ratio` annotation. A malformed
//!   annotation is skipped with a warning naming the node and the key; it
//!   never stops the computation.
//! * The NodeMetric: system usage, host applications, per-pod usage, node
//!   usage and prodReclaimable. A malformed quantity there is an error naming
//!   the field: the caller withdraws the node's batch and mid resources
//!   rather than compute them from a report it cannot read.
//!
//! Deviation: reported usages are clamped at 0. A negative usage (which no
//! agent reports, but a hand-written NodeMetric can hold) would otherwise
//! *raise* batch allocatable.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kolo_api::PriorityClass;
use kolo_api::names::annotation;
use kolo_api::quantity::{parse_milli, parse_value};
use kolo_core::compact_vector::CompactVector;
use kolo_core::node::NodeView;
use kolo_core::resources::{ResourceName, ResourceVector};
use kolo_core::usage_report::{NodeUsageReport, ReportPart};
use serde::Deserialize;

use super::amount::CpuMem;
use kolo_core::HasMeta;

/// A quantity of the NodeMetric that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct MetricError {
    /// The field, e.g. `status.podsMetric[3].podUsage.resources.cpu`.
    pub field: String,
    /// What is wrong (quotes the value).
    pub message: String,
}

/// CPU and memory of a report's vector, negative amounts clamped at 0.
fn partial(v: &ResourceVector) -> Partial {
    partial_of(|name| v.get(name))
}

/// [`partial`] of a compact vector (a reported pod's usage).
fn compact_partial(v: &CompactVector) -> Partial {
    partial_of(|name| v.get(name))
}

fn partial_of(get: impl Fn(ResourceName) -> Option<i64>) -> Partial {
    Partial {
        cpu: get(ResourceName::Cpu).map(|c| c.max(0)),
        memory: get(ResourceName::Memory).map(|m| m.max(0)),
    }
}

/// CPU and memory of a resource list, each `None` when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Partial {
    pub cpu: Option<i64>,
    pub memory: Option<i64>,
}

impl Partial {
    /// Absent amounts as 0.
    pub fn or_zero(self) -> CpuMem {
        CpuMem::new(self.cpu.unwrap_or(0), self.memory.unwrap_or(0))
    }

    /// Both amounts present.
    pub fn complete(self) -> Option<CpuMem> {
        Some(CpuMem::new(self.cpu?, self.memory?))
    }
}

/// One entry of `status.podsMetric`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodMetric<'r> {
    /// `namespace/name`, borrowed from the report: shared, so a pod whose
    /// view holds the same key is found by pointer (see `batch.rs`), and
    /// not cloned (an atomic count per pod per report).
    pub key: &'r Arc<str>,
    /// The usage (cpu and memory; absent as 0).
    pub usage: CpuMem,
    /// Whether `priority` is `koord-batch` or `koord-free`. An empty or
    /// unknown priority counts as high priority, as in the reference.
    pub low_priority: bool,
}

/// One entry of `status.hostApplicationMetric`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostApp {
    /// The usage.
    pub usage: CpuMem,
    /// The default value of its priority class; `None` for an empty or
    /// unknown priority.
    pub priority: Option<i32>,
}

/// What the formulas read from a NodeMetric.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct MetricInputs<'r> {
    /// `status.nodeMetric.systemUsage`.
    pub system_usage: CpuMem,
    /// `status.nodeMetric.nodeUsage`.
    pub node_usage: Partial,
    /// `status.prodReclaimableMetric.resource`, `None` when absent.
    pub prod_reclaimable: Option<CpuMem>,
    /// `status.podsMetric`, in order.
    pub pods: Vec<PodMetric<'r>>,
    /// `status.hostApplicationMetric`, in order.
    pub host_apps: Vec<HostApp>,
}

impl<'r> MetricInputs<'r> {
    /// The formulas' inputs from a node's usage report. A CPU or memory
    /// quantity that could not be read (other than in the aggregated
    /// windows, which the formulas do not use) is an error: the first, in
    /// the report's reading order.
    pub fn read(report: &'r NodeUsageReport) -> Result<MetricInputs<'r>, MetricError> {
        if let Some(e) = report.errors.iter().find(|e| {
            e.part != ReportPart::AggregatedNodeUsage
                && matches!(e.resource, ResourceName::Cpu | ResourceName::Memory)
        }) {
            return Err(MetricError { field: e.field.clone(), message: e.message.clone() });
        }
        Ok(MetricInputs {
            system_usage: partial(&report.system_usage).or_zero(),
            node_usage: report.node_usage.as_ref().map(partial).unwrap_or_default(),
            prod_reclaimable: report.prod_reclaimable.as_ref().map(|r| partial(r).or_zero()),
            pods: report
                .pods
                .iter()
                .map(|p| PodMetric {
                    key: &p.key,
                    usage: compact_partial(&p.usage).or_zero(),
                    low_priority: matches!(
                        p.priority,
                        Some(PriorityClass::Batch | PriorityClass::Free)
                    ),
                })
                .collect(),
            host_apps: report
                .host_apps
                .iter()
                .map(|app| HostApp {
                    usage: partial(&app.usage).or_zero(),
                    priority: app.priority.map(PriorityClass::default_priority),
                })
                .collect(),
        })
    }

    /// The summed usage of the host applications whose priority is above
    /// `floor` (a priority class default value: 5500 for batch, 7500 for mid).
    ///
    /// Deviation: an application with an empty or unknown priority counts
    /// (the reference gives it priority 0 and leaves its usage out). Its
    /// usage is not part of `systemUsage`, so leaving it out would offer it
    /// to batch pods; the reference itself counts a pod metric with an empty
    /// priority as high priority.
    pub fn host_apps_above(&self, floor: i32) -> CpuMem {
        self.host_apps
            .iter()
            .filter(|app| app.priority.is_none_or(|p| p > floor))
            .fold(CpuMem::ZERO, |sum, app| sum + app.usage)
    }
}

/// The node's `status.capacity`, cpu and memory, each `None` when absent.
pub(crate) fn capacity(node: &NodeView) -> Partial {
    let c = node.capacity();
    Partial { cpu: c.get(ResourceName::Cpu), memory: c.get(ResourceName::Memory) }
}

/// `Max(capacity − allocatable, 0)` per cpu and memory: what the kubelet
/// keeps back (`--kube-reserved`, `--system-reserved`, eviction threshold).
/// A resource missing from allocatable counts as 0 there, as in the
/// reference, so all of it is reserved.
pub(crate) fn kubelet_reserved(node: &NodeView) -> CpuMem {
    let (c, a) = (node.capacity(), node.allocatable());
    CpuMem::new(c.cpu().saturating_sub(a.cpu()), c.memory().saturating_sub(a.memory()))
        .clamp_non_negative()
}

/// The `node.koordinator.sh/reservation` annotation as the formulas use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AnnotationReserved {
    /// Reserved cpu (milli) and memory; absent resources as 0.
    pub amount: CpuMem,
    /// The number of CPUs in `reservedCPUs`, when set (it replaces
    /// `resources.cpu`).
    pub reserved_cpus: Option<u32>,
}

#[derive(Deserialize)]
struct ReservationJson {
    #[serde(default)]
    resources: Option<BTreeMap<String, KubeQuantity>>,
    #[serde(default, rename = "reservedCPUs")]
    reserved_cpus: Option<String>,
}

/// Reads the reservation annotation. `None` when it is absent or cannot be
/// read at all (not JSON); problems are pushed to `warnings`.
///
/// Deviation: a malformed `reservedCPUs` or a malformed quantity drops only
/// that part (the reference drops the whole annotation, which lowers the
/// reservation and so raises batch allocatable).
pub(crate) fn annotation_reserved(
    node: &NodeView,
    warnings: &mut Vec<String>,
) -> Option<AnnotationReserved> {
    let key = annotation::NODE_RESERVATION;
    let text = node.annotation(key)?;
    let name = node.name();
    let parsed: ReservationJson = match serde_json::from_str(text) {
        Ok(p) => p,
        Err(e) => {
            warnings.push(format!("node {name}: annotation {key}: {e} (ignored)"));
            return None;
        }
    };
    let mut amount = CpuMem::ZERO;
    for (resource, q) in parsed.resources.iter().flatten() {
        let parsed = match resource.as_str() {
            "cpu" => parse_milli(q).map(|v| amount.cpu = v.max(0)),
            "memory" => parse_value(q).map(|v| amount.memory = v.max(0)),
            _ => Ok(()),
        };
        if let Err(e) = parsed {
            warnings.push(format!(
                "node {name}: annotation {key}: resources.{resource}: {e} (ignored)"
            ));
        }
    }
    let mut reserved_cpus = None;
    if let Some(cpus) = parsed.reserved_cpus.as_deref().filter(|c| !c.trim().is_empty()) {
        match count_cpuset(cpus) {
            Ok(n) => {
                reserved_cpus = Some(n);
                amount.cpu = i64::from(n) * 1000;
            }
            Err(e) => warnings.push(format!(
                "node {name}: annotation {key}: reservedCPUs {cpus:?}: {e} (ignored)"
            )),
        }
    }
    Some(AnnotationReserved { amount, reserved_cpus })
}

/// The number of CPUs in a Linux cpuset list such as `0-3,8,10-11`
/// (duplicates and overlaps counted once).
pub(crate) fn count_cpuset(text: &str) -> Result<u32, String> {
    let mut ranges = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let id =
            |s: &str| s.trim().parse::<u32>().map_err(|_| format!("{s:?} is not a CPU number"));
        let range = match part.split_once('-') {
            Some((a, b)) => (id(a)?, id(b)?),
            None => {
                let n = id(part)?;
                (n, n)
            }
        };
        if range.0 > range.1 {
            return Err(format!("range {part:?} runs backwards"));
        }
        ranges.push(range);
    }
    ranges.sort_unstable();
    let mut count: u64 = 0;
    let mut covered_to: Option<u32> = None;
    for (start, end) in ranges {
        let start = match covered_to {
            Some(c) if c >= end => continue,
            Some(c) if c >= start => c + 1,
            _ => start,
        };
        count += u64::from(end - start) + 1;
        covered_to = Some(end);
    }
    u32::try_from(count).map_err(|_| "too many CPUs".to_string())
}

/// The `node.koordinator.sh/cpu-normalization-ratio` annotation when it is
/// a finite number above 1 (the reference ignores other values); a value
/// that is not a number is skipped with a warning.
pub(crate) fn cpu_normalization_ratio(node: &NodeView, warnings: &mut Vec<String>) -> Option<f64> {
    let key = annotation::NODE_CPU_NORMALIZATION_RATIO;
    let text = node.annotation(key)?;
    match text.trim().parse::<f64>() {
        Ok(ratio) if ratio.is_finite() => (ratio > 1.0).then_some(ratio),
        _ => {
            warnings.push(format!(
                "node {}: annotation {key}={text:?} is not a number such as 1.2 (ignored)",
                node.name()
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use kolo_core::pod::StringMap;

    use super::*;
    use kolo_api::crd::NodeMetric;

    fn node_with(annotations: &[(&str, &str)]) -> NodeView {
        NodeView::new("n1").with_annotations(annotations.iter().copied().collect::<StringMap>())
    }

    #[test]
    fn cpusets_count_distinct_cpus() {
        assert_eq!(count_cpuset("0-3"), Ok(4));
        assert_eq!(count_cpuset("0-3,8,10-11"), Ok(7));
        assert_eq!(count_cpuset("5"), Ok(1));
        assert_eq!(count_cpuset("0-3,2-5,4"), Ok(6), "overlaps once");
        assert_eq!(count_cpuset("1,1,1"), Ok(1));
        assert_eq!(count_cpuset(" 0 - 1 , 4 "), Ok(3));
        assert_eq!(count_cpuset("0-4294967295"), Err("too many CPUs".into()));
        assert!(count_cpuset("3-1").unwrap_err().contains("backwards"));
        assert!(count_cpuset("a").is_err());
        assert!(count_cpuset("1,,2").is_err());
    }

    #[test]
    fn reservation_annotation() {
        let mut w = Vec::new();
        let n = node_with(&[(
            annotation::NODE_RESERVATION,
            r#"{"resources":{"cpu":"2","memory":"8Gi","pods":"3"},"reservedCPUs":"0-3"}"#,
        )]);
        let r = annotation_reserved(&n, &mut w).unwrap();
        assert_eq!(r.amount, CpuMem::new(4000, 8 << 30), "reservedCPUs replaces resources.cpu");
        assert_eq!(r.reserved_cpus, Some(4));
        assert!(w.is_empty());

        let n = node_with(&[(annotation::NODE_RESERVATION, r#"{"resources":{"cpu":"1500m"}}"#)]);
        let r = annotation_reserved(&n, &mut w).unwrap();
        assert_eq!((r.amount, r.reserved_cpus), (CpuMem::new(1500, 0), None));

        // A bad cpuset keeps the rest, with a warning.
        let n = node_with(&[(
            annotation::NODE_RESERVATION,
            r#"{"resources":{"cpu":"1","memory":"1Gi"},"reservedCPUs":"0-x"}"#,
        )]);
        let r = annotation_reserved(&n, &mut w).unwrap();
        assert_eq!(r.amount, CpuMem::new(1000, 1 << 30));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("reservedCPUs") && w[0].contains("n1"), "{w:?}");

        w.clear();
        let n = node_with(&[(annotation::NODE_RESERVATION, "{nope")]);
        assert_eq!(annotation_reserved(&n, &mut w), None);
        assert!(w[0].starts_with("node n1: annotation node.koordinator.sh/reservation:"), "{w:?}");

        w.clear();
        let n = node_with(&[(annotation::NODE_RESERVATION, r#"{"resources":{"memory":"lots"}}"#)]);
        assert_eq!(annotation_reserved(&n, &mut w).unwrap().amount, CpuMem::ZERO);
        assert!(w[0].contains("resources.memory"), "{w:?}");
        assert_eq!(annotation_reserved(&node_with(&[]), &mut w), None);
    }

    #[test]
    fn normalization_ratio() {
        let mut w = Vec::new();
        let key = annotation::NODE_CPU_NORMALIZATION_RATIO;
        assert_eq!(cpu_normalization_ratio(&node_with(&[(key, "1.25")]), &mut w), Some(1.25));
        assert_eq!(cpu_normalization_ratio(&node_with(&[(key, "1")]), &mut w), None);
        assert_eq!(cpu_normalization_ratio(&node_with(&[(key, "-1")]), &mut w), None);
        assert!(w.is_empty());
        assert_eq!(cpu_normalization_ratio(&node_with(&[(key, "fast")]), &mut w), None);
        assert_eq!(cpu_normalization_ratio(&node_with(&[(key, "inf")]), &mut w), None);
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn metric_errors_name_the_field() {
        let metric: NodeMetric = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n1"}, "spec": {},
            "status": {"podsMetric": [
                {"namespace": "a", "name": "ok", "podUsage": {"resources": {"cpu": "1"}}},
                {"namespace": "a", "name": "bad", "podUsage": {"resources": {"memory": "1.2.3"}}}
            ]}
        }))
        .unwrap();
        let err = MetricInputs::read(&NodeUsageReport::read(&metric)).unwrap_err();
        assert_eq!(err.field, "status.podsMetric[1].podUsage.resources.memory");
        assert!(err.message.contains("1.2.3"), "{err}");
    }

    #[test]
    fn negative_usage_reads_as_zero_and_priorities_parse() {
        let metric: NodeMetric = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n1"}, "spec": {},
            "status": {
                "nodeMetric": {"systemUsage": {"resources": {"cpu": "-2", "memory": "1Gi"}}},
                "hostApplicationMetric": [
                    {"name": "a", "priority": "koord-prod", "usage": {"resources": {"cpu": "1"}}},
                    {"name": "b", "priority": "koord-mid", "usage": {"resources": {"cpu": "2"}}},
                    {"name": "c", "priority": "koord-batch", "usage": {"resources": {"cpu": "4"}}},
                    {"name": "d", "usage": {"resources": {"cpu": "8"}}}
                ]
            }
        }))
        .unwrap();
        let report = NodeUsageReport::read(&metric);
        let m = MetricInputs::read(&report).unwrap();
        assert_eq!(m.system_usage, CpuMem::new(0, 1 << 30));
        assert_eq!(m.prod_reclaimable, None);
        // Above batch (5500): prod 1 + mid 2 + unknown 8 = 11 cores.
        assert_eq!(m.host_apps_above(5500).cpu, 11_000);
        // Above mid (7500): prod 1 + unknown 8 = 9 cores.
        assert_eq!(m.host_apps_above(7500).cpu, 9_000);
    }
}
