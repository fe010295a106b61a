//! The default estimator (spec §1.3): how much a pod is expected to use
//! before the node agent has measured it, and what a node offers.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kolo_api::PriorityClass;
use kolo_api::names::annotation::{
    LOAD_ESTIMATED_SCALING_FACTORS, LOAD_ESTIMATED_SECONDS_AFTER_INITIALIZED,
    LOAD_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED, NODE_RAW_ALLOCATABLE,
};
use kolo_api::quantity::{parse_milli, parse_value};
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kolo_core::resources::{ResourceName, ResourceVector};

use super::args::LoadAwareSchedulingArgs;
use kolo_core::HasMeta;

/// Estimate of a zero cpu (or batch-cpu) request, in milli-cores; not scaled.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 250;

/// Estimate of a zero memory (or batch-memory) request, in bytes (200 MiB);
/// not scaled.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// A pod's estimation annotation that could not be used; the arguments
/// were used in its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pod annotation {annotation}: {problem} (value {value:?}); using the plugin arguments")]
pub struct EstimationAnnotationError {
    /// The annotation key.
    pub annotation: &'static str,
    /// The annotation value.
    pub value: String,
    /// What is wrong with it.
    pub problem: String,
}

/// The estimate of one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodEstimate {
    /// Estimated usage per resource, under the names of the scaling factors
    /// (`cpu`, `memory`, ...), even for Batch pods whose requests are in
    /// `batch-*`. cpu in milli-cores.
    pub resources: ResourceVector,
    /// Set when the pod's scaling-factor annotation was malformed and the
    /// arguments were used instead.
    pub annotation_error: Option<EstimationAnnotationError>,
}

/// Estimates what `pod` will use (spec §1.3).
///
/// For each scaling factor `(name, factor)`:
///
/// 1. `name` is translated by the pod's priority class: Batch reads
///    `batch-cpu` / `batch-memory`, Mid reads `mid-cpu` / `mid-memory`
///    (other names have no Batch or Mid counterpart and read nothing), Free
///    reads nothing at all;
/// 2. the amount is the limit if it exceeds the request, else the request;
/// 3. a zero amount of cpu / batch-cpu is estimated at 250m and of memory /
///    batch-memory at 200Mi, **unscaled**; anything else (mid-* included) at
///    0;
/// 4. otherwise `round(amount × factor / 100)` (half away from zero), capped
///    at a positive limit.
///
/// With `allowCustomizeEstimation`, the pod annotation
/// `scheduling.koordinator.sh/load-estimated-scaling-factors` (`{"cpu":
/// 100}`) replaces the factors it names. A malformed annotation is reported
/// in [`PodEstimate::annotation_error`] and the arguments are used.
pub fn estimate_pod(pod: &PodView, args: &LoadAwareSchedulingArgs) -> PodEstimate {
    let mut annotation_error = None;
    let custom = if args.allow_customize_estimation {
        match custom_scaling_factors(pod) {
            Ok(custom) => custom,
            Err(error) => {
                annotation_error = Some(error);
                None
            }
        }
    } else {
        None
    };
    let mut resources = ResourceVector::EMPTY;
    let class = pod.priority_class();
    let mut estimate_one = |name: &str, factor: i64| {
        let Some(original) = ResourceName::lookup(name) else {
            // A name this process never saw is in no pod's requests and has
            // no default: its estimate is 0, the same as leaving it out.
            return;
        };
        let estimate = estimate_resource(pod, class, original, factor);
        if estimate != 0 {
            resources.set(original, estimate);
        }
    };
    match &custom {
        Some(custom) => {
            for (name, factor) in custom {
                estimate_one(name, *factor);
            }
            for (name, factor) in &args.estimated_scaling_factors {
                if !custom.contains_key(name) {
                    estimate_one(name, *factor);
                }
            }
        }
        None => {
            for (name, factor) in &args.estimated_scaling_factors {
                estimate_one(name, *factor);
            }
        }
    }
    PodEstimate { resources, annotation_error }
}

/// The resource a Batch / Mid / Free pod requests instead of `name`
/// (`TranslateResourceNameByPriorityClass`); `None` for "no such
/// resource".
fn translate(class: PriorityClass, name: ResourceName) -> Option<ResourceName> {
    match (class, name) {
        (PriorityClass::Prod | PriorityClass::None, name) => Some(name),
        (PriorityClass::Batch, ResourceName::Cpu) => Some(ResourceName::BatchCpu),
        (PriorityClass::Batch, ResourceName::Memory) => Some(ResourceName::BatchMemory),
        (PriorityClass::Mid, ResourceName::Cpu) => Some(ResourceName::MidCpu),
        (PriorityClass::Mid, ResourceName::Memory) => Some(ResourceName::MidMemory),
        _ => None,
    }
}

fn estimate_resource(pod: &PodView, class: PriorityClass, name: ResourceName, factor: i64) -> i64 {
    let Some(real) = translate(class, name) else { return 0 };
    // Vectors already hold cpu in milli-cores and everything else (batch-cpu
    // and mid-cpu included, which are milli-cores as integers) via value(),
    // the units the reference reads each name with.
    let request = pod.requests().value(real);
    let limit = pod.limits().value(real);
    let amount = if limit > request { limit } else { request };
    if amount == 0 {
        return match real {
            ResourceName::Cpu | ResourceName::BatchCpu => DEFAULT_MILLI_CPU_REQUEST,
            ResourceName::Memory | ResourceName::BatchMemory => DEFAULT_MEMORY_REQUEST,
            _ => 0,
        };
    }
    // f64::round is half away from zero, like Go's math.Round; the
    // multiplication happens before the division, as in the reference.
    let estimate = (amount as f64 * factor as f64 / 100.0).round() as i64;
    if limit > 0 && estimate > limit { limit } else { estimate }
}

/// The pod's custom scaling factors, `None` if the annotation is absent or
/// an empty object.
fn custom_scaling_factors(
    pod: &PodView,
) -> Result<Option<BTreeMap<String, i64>>, EstimationAnnotationError> {
    let Some(value) = pod.annotation(LOAD_ESTIMATED_SCALING_FACTORS) else { return Ok(None) };
    match serde_json::from_str::<BTreeMap<String, i64>>(value) {
        Ok(map) if map.is_empty() => Ok(None),
        Ok(map) => Ok(Some(map)),
        Err(error) => Err(EstimationAnnotationError {
            annotation: LOAD_ESTIMATED_SCALING_FACTORS,
            value: value.to_owned(),
            problem: format!("not a JSON object of integer percentages: {error}"),
        }),
    }
}

/// The two "keep estimating for N seconds" settings of one pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EstimationWindows {
    /// Seconds after PodScheduled during which the pod counts at its
    /// estimate at least; `<= 0` disables.
    pub after_pod_scheduled: i64,
    /// Seconds after Initialized, likewise.
    pub after_initialized: i64,
}

/// The estimation windows of `pod`: the arguments, replaced by the pod's
/// `load-estimated-seconds-after-*` annotations when `allowCustomizeEstimation`
/// is set. A parsable annotation wins whatever its value (`"0"` turns the
/// window off for that pod); a malformed one is reported and ignored.
pub fn estimation_windows(
    pod: &PodView,
    args: &LoadAwareSchedulingArgs,
) -> (EstimationWindows, Vec<EstimationAnnotationError>) {
    let mut windows = EstimationWindows {
        after_pod_scheduled: args.estimated_seconds_after_pod_scheduled.unwrap_or(0),
        after_initialized: args.estimated_seconds_after_initialized.unwrap_or(0),
    };
    let mut errors = Vec::new();
    if args.allow_customize_estimation {
        let mut read = |key: &'static str, into: &mut i64| {
            let Some(value) = pod.annotation(key) else { return };
            match value.trim().parse::<i64>() {
                Ok(seconds) => *into = seconds,
                Err(error) => errors.push(EstimationAnnotationError {
                    annotation: key,
                    value: value.to_owned(),
                    problem: format!("not an integer number of seconds: {error}"),
                }),
            }
        };
        read(LOAD_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED, &mut windows.after_pod_scheduled);
        read(LOAD_ESTIMATED_SECONDS_AFTER_INITIALIZED, &mut windows.after_initialized);
    }
    (windows, errors)
}

/// A node's `node.koordinator.sh/raw-allocatable` annotation that could not
/// be used; the node's allocatable was used instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node annotation {NODE_RAW_ALLOCATABLE}: {problem}; using status.allocatable")]
pub struct RawAllocatableError {
    /// What is wrong.
    pub problem: String,
}

/// What a node offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEstimate {
    /// The allocatable, with the raw (pre-amplification) amounts where the
    /// node has them.
    pub allocatable: ResourceVector,
    /// Set when the raw-allocatable annotation was malformed.
    pub error: Option<RawAllocatableError>,
}

/// What `node` offers (`EstimateNode`): its allocatable, with the amounts of
/// the `node.koordinator.sh/raw-allocatable` annotation (a resource list in
/// JSON) written over it, which undoes resource amplification.
///
/// Resources this process has never seen are skipped rather than interned:
/// no plugin tracks them. A malformed annotation is reported and ignored.
pub fn estimate_node(node: &NodeView) -> NodeEstimate {
    let mut allocatable = *node.allocatable();
    let Some(raw) = node.annotation(NODE_RAW_ALLOCATABLE) else {
        return NodeEstimate { allocatable, error: None };
    };
    let list = match serde_json::from_str::<BTreeMap<String, KubeQuantity>>(raw) {
        Ok(list) => list,
        Err(error) => {
            let problem = format!("not a JSON resource list: {error}");
            return NodeEstimate { allocatable, error: Some(RawAllocatableError { problem }) };
        }
    };
    let mut parsed = ResourceVector::EMPTY;
    for (key, quantity) in &list {
        let Some(name) = ResourceName::lookup(key) else { continue };
        let amount = if name.is_milli() { parse_milli(quantity) } else { parse_value(quantity) };
        match amount {
            Ok(amount) => parsed.set(name, amount),
            Err(error) => {
                let problem = format!("resource {key:?}: {error}");
                return NodeEstimate { allocatable, error: Some(RawAllocatableError { problem }) };
            }
        }
    }
    for (name, amount) in parsed.iter() {
        allocatable.set(name, amount);
    }
    NodeEstimate { allocatable, error: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kolo_api::QoSClass;
    use kolo_api::names::label::PRIORITY_CLASS;
    use kolo_core::pod::StringMap;

    const GI: i64 = 1 << 30;
    const MI: i64 = 1 << 20;

    fn args(json: &str) -> LoadAwareSchedulingArgs {
        serde_json::from_str::<LoadAwareSchedulingArgs>(json).unwrap().defaulted()
    }

    fn rv(pairs: &[(ResourceName, i64)]) -> ResourceVector {
        pairs.iter().copied().collect()
    }

    fn pod(class: PriorityClass, requests: &[(ResourceName, i64)]) -> PodView {
        PodView::new("ns", "p")
            .with_priority(class, class.default_priority())
            .with_requests(rv(requests))
            .with_limits(rv(requests))
    }

    use ResourceName::{BatchCpu, BatchMemory, Cpu, Memory, MidCpu, MidMemory};

    #[test]
    fn estimator_table() {
        let defaults = args("{}");
        // (case, pod, want cpu, want memory)
        let cases: Vec<(&str, PodView, i64, i64)> = vec![
            (
                "prod 16 cores / 32Gi, request = limit",
                pod(PriorityClass::Prod, &[(Cpu, 16_000), (Memory, 32 * GI)]),
                13_600,
                24_051_816_858,
            ),
            (
                "empty pod is BE, hence Batch: batch-cpu missing -> unscaled defaults",
                PodView::new("ns", "empty"),
                250,
                200 * MI,
            ),
            (
                "prod pod without requests: unscaled defaults",
                pod(PriorityClass::Prod, &[]),
                DEFAULT_MILLI_CPU_REQUEST,
                DEFAULT_MEMORY_REQUEST,
            ),
            (
                "batch pod reads batch-cpu with value(), already milli",
                pod(PriorityClass::Batch, &[(BatchCpu, 2_000), (BatchMemory, 4 * GI)]),
                1_700,
                3_006_477_107, // round(4Gi * 0.7) = 3006477107.2
            ),
            (
                "batch pod ignores plain cpu",
                pod(PriorityClass::Batch, &[(Cpu, 8_000), (BatchMemory, 100)]),
                250,
                70,
            ),
            ("mid pod without mid-* estimates 0", pod(PriorityClass::Mid, &[(Cpu, 8_000)]), 0, 0),
            (
                "mid pod with mid-*",
                pod(PriorityClass::Mid, &[(MidCpu, 1_000), (MidMemory, 1_000)]),
                850,
                700,
            ),
            ("free pod estimates 0", pod(PriorityClass::Free, &[(Cpu, 1_000), (Memory, GI)]), 0, 0),
            (
                "none-class pod keeps cpu/memory",
                pod(PriorityClass::None, &[(Cpu, 1_000), (Memory, 1_000)]),
                850,
                700,
            ),
            (
                "limits above requests: the limit is scaled",
                pod(PriorityClass::Prod, &[(Cpu, 1_000), (Memory, 1_000)])
                    .with_limits(rv(&[(Cpu, 4_000), (Memory, 3_000)])),
                3_400,
                2_100,
            ),
            (
                "limits at or below requests: the request is scaled",
                pod(PriorityClass::Prod, &[(Cpu, 1_000), (Memory, 1_000)])
                    .with_limits(rv(&[(Cpu, 1_000)])),
                850,
                700,
            ),
            (
                "the estimate is capped at a positive limit, even one below the request",
                pod(PriorityClass::Prod, &[(Cpu, 1_000), (Memory, 1_000)])
                    .with_limits(rv(&[(Cpu, 500)])),
                500,
                700,
            ),
            (
                "round half away from zero: 10m * 85% = 8.5 -> 9",
                pod(PriorityClass::Prod, &[(Cpu, 10), (Memory, 5)]),
                9,
                4, // 3.5 -> 4
            ),
        ];
        for (case, pod, cpu, memory) in cases {
            let got = estimate_pod(&pod, &defaults);
            assert_eq!(got.resources.value(Cpu), cpu, "{case}: cpu");
            assert_eq!(got.resources.value(Memory), memory, "{case}: memory");
            assert!(got.annotation_error.is_none(), "{case}");
            // The result is stored under the original names only.
            for n in [BatchCpu, BatchMemory, MidCpu, MidMemory] {
                assert!(!got.resources.contains(n), "{case}: {n}");
            }
        }
    }

    #[test]
    fn estimate_is_capped_at_a_positive_limit() {
        // Only reachable with a factor above 100 (a custom annotation).
        let a = args(r#"{"allowCustomizeEstimation": true}"#);
        let p = pod(PriorityClass::Prod, &[(Cpu, 1_000), (Memory, 1_000)]).with_annotations(
            StringMap::from_iter([(LOAD_ESTIMATED_SCALING_FACTORS, r#"{"cpu":150,"memory":150}"#)]),
        );
        let got = estimate_pod(&p, &a).resources;
        assert_eq!((got.cpu(), got.memory()), (1_000, 1_000));
        // No limit: no cap.
        let p = p.with_limits(ResourceVector::EMPTY);
        let got = estimate_pod(&p, &a).resources;
        assert_eq!((got.cpu(), got.memory()), (1_500, 1_500));
    }

    #[test]
    fn custom_scaling_factors_annotation() {
        let base = pod(PriorityClass::Prod, &[(Cpu, 1_000), (Memory, 1_000)]);
        let with = |v: &str| {
            base.clone()
                .with_annotations(StringMap::from_iter([(LOAD_ESTIMATED_SCALING_FACTORS, v)]))
        };
        let allowed = args(r#"{"allowCustomizeEstimation": true}"#);
        // (annotation, allowed?, cpu, memory, error?)
        let cases = [
            (r#"{"cpu":100}"#, true, 1_000, 700, false),
            (r#"{"cpu":100}"#, false, 850, 700, false),
            (r#"{"cpu":50,"memory":50}"#, true, 500, 500, false),
            (r#"{}"#, true, 850, 700, false),
            (r#"not json"#, true, 850, 700, true),
            (r#"{"cpu":"high"}"#, true, 850, 700, true),
        ];
        for (value, allow, cpu, memory, error) in cases {
            let a = if allow { allowed.clone() } else { args("{}") };
            let got = estimate_pod(&with(value), &a);
            assert_eq!(got.resources.cpu(), cpu, "{value} allow={allow}");
            assert_eq!(got.resources.memory(), memory, "{value} allow={allow}");
            assert_eq!(got.annotation_error.is_some(), error, "{value}");
        }
        let err = estimate_pod(&with("nope"), &allowed).annotation_error.unwrap();
        assert!(err.to_string().starts_with(
            "pod annotation scheduling.koordinator.sh/load-estimated-scaling-factors: not a JSON"
        ));
    }

    #[test]
    fn priority_label_drives_translation() {
        // Built from a real Pod: a prod-labelled pod with requests reads cpu.
        use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceRequirements};
        let q = |s: &str| KubeQuantity(s.to_owned());
        let k8s = Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                labels: Some([(PRIORITY_CLASS.to_owned(), "koord-batch".to_owned())].into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    resources: Some(ResourceRequirements {
                        requests: Some(
                            [
                                ("cpu".to_owned(), q("4")),
                                ("kubernetes.io/batch-cpu".to_owned(), q("2000")),
                            ]
                            .into(),
                        ),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let view = PodView::from_pod(&k8s).unwrap();
        assert_eq!(view.priority_class(), PriorityClass::Batch);
        assert_eq!(view.qos(), QoSClass::LS);
        let got = estimate_pod(&view, &args("{}")).resources;
        assert_eq!(got.cpu(), 1_700);
        assert_eq!(got.memory(), DEFAULT_MEMORY_REQUEST);
    }

    #[test]
    fn estimation_windows_table() {
        let a = args(
            r#"{"allowCustomizeEstimation": true, "estimatedSecondsAfterPodScheduled": 60,
                "estimatedSecondsAfterInitialized": 30}"#,
        );
        let p = |pairs: &[(&str, &str)]| {
            PodView::new("ns", "p").with_annotations(StringMap::from_iter(pairs.iter().copied()))
        };
        let (w, e) = estimation_windows(&p(&[]), &a);
        assert_eq!((w.after_pod_scheduled, w.after_initialized, e.len()), (60, 30, 0));
        let (w, e) = estimation_windows(
            &p(&[
                (LOAD_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED, "120"),
                (LOAD_ESTIMATED_SECONDS_AFTER_INITIALIZED, "0"),
            ]),
            &a,
        );
        assert_eq!((w.after_pod_scheduled, w.after_initialized, e.len()), (120, 0, 0));
        let (w, e) =
            estimation_windows(&p(&[(LOAD_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED, "soon")]), &a);
        assert_eq!((w.after_pod_scheduled, e.len()), (60, 1));
        // Not allowed: annotations ignored.
        let mut not_allowed = a.clone();
        not_allowed.allow_customize_estimation = false;
        let (w, e) = estimation_windows(
            &p(&[(LOAD_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED, "soon")]),
            &not_allowed,
        );
        assert_eq!((w.after_pod_scheduled, e.len()), (60, 0));
    }

    #[test]
    fn node_estimate_uses_raw_allocatable() {
        let node = |raw: Option<&str>| {
            let n = NodeView::new("n").with_resources(
                rv(&[(Cpu, 192_000), (Memory, 512 * GI)]),
                rv(&[(Cpu, 192_000), (Memory, 512 * GI)]),
            );
            match raw {
                Some(raw) => {
                    n.with_annotations(StringMap::from_iter([(NODE_RAW_ALLOCATABLE, raw)]))
                }
                None => n,
            }
        };
        let cases = [
            (None, 192_000, 512 * GI, false),
            (Some(r#"{"cpu":"96"}"#), 96_000, 512 * GI, false),
            (Some(r#"{"cpu":"96","memory":"256Gi"}"#), 96_000, 256 * GI, false),
            (Some(r#"{}"#), 192_000, 512 * GI, false),
            (Some(r#"{"example.com/never-seen":"1"}"#), 192_000, 512 * GI, false),
            (Some("garbage"), 192_000, 512 * GI, true),
            (Some(r#"{"cpu":"ninety"}"#), 192_000, 512 * GI, true),
        ];
        for (raw, cpu, memory, error) in cases {
            let got = estimate_node(&node(raw));
            assert_eq!(got.allocatable.cpu(), cpu, "{raw:?}");
            assert_eq!(got.allocatable.memory(), memory, "{raw:?}");
            assert_eq!(got.error.is_some(), error, "{raw:?}");
        }
    }
}
