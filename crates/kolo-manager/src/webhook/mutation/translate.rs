//! Resource translation (spec §4.2): a Batch or Mid pod asks for the
//! overcommitted `batch-*` / `mid-*` resources instead of `cpu` / `memory`.
//!
//! For the pod's priority class "with default" (a Katalyst `reclaimed_cores`
//! pod is Batch through its QoS):
//!
//! * Prod, None and Free: nothing changes (Free has no mapping).
//! * Batch and Mid: in every init container and container, in `requests`
//!   and `limits`, `cpu` becomes `kubernetes.io/<tier>-cpu` holding the
//!   **milli** value as a plain integer (500m → 500, 1 → 1000, printed
//!   canonically as `1k`) and `memory` becomes `kubernetes.io/<tier>-memory`
//!   with the same quantity; then a missing request of either is set to the
//!   limit; `spec.overhead` is translated the same way.
//!
//! kolo additions:
//!
//! * The aliases of the batch resources (`koordinator.sh/batch-*` and
//!   Katalyst's `resource.katalyst.kubewharf.io/reclaimed_*`, both
//!   spellings) are renamed to `kubernetes.io/batch-cpu` /
//!   `kubernetes.io/batch-memory` (same units), whatever the pod's class:
//!   kolo's nodes advertise only the canonical names, and the kubelet
//!   refuses a pod asking for a resource its node does not have. When a list
//!   holds several spellings, the most preferred one is kept
//!   ([`names::BATCH_CPU_ALIASES`] order), as kolo's scheduler reads it.
//! * A `cpu` quantity that cannot be read, or whose milli value is out of
//!   range, is left as it is (the API server rejects such a pod anyway);
//!   the reference would saturate.
//! * Pod-level `spec.resources` is left alone: Kubernetes allows only `cpu`
//!   and `memory` there.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kolo_api::PriorityClass;
use kolo_api::names::resource as names;
use kolo_api::priority::resolve_priority;
use kolo_api::quantity::{Format, Quantity};

type ResourceList = BTreeMap<String, KubeQuantity>;

/// Translates the pod's resources for its priority class and folds the
/// batch aliases (see the module docs). Returns whether anything changed.
pub fn translate_resources(pod: &mut Pod) -> bool {
    let class = resolve_priority(pod);
    let target = match class {
        PriorityClass::Batch | PriorityClass::Mid => class.cpu_memory_resource_names(),
        PriorityClass::Prod | PriorityClass::Free | PriorityClass::None => None,
    };
    let Some(spec) = pod.spec.as_mut() else {
        return false;
    };
    let mut changed = false;
    let containers = spec.init_containers.iter_mut().flatten().chain(spec.containers.iter_mut());
    for container in containers {
        changed |= translate_container(container, target);
    }
    if let Some(overhead) = spec.overhead.as_mut() {
        changed |= fold_batch_aliases(overhead);
        if let Some((cpu, memory)) = target {
            changed |= rename(overhead, cpu, memory);
        }
    }
    changed
}

fn translate_container(container: &mut Container, target: Option<(&str, &str)>) -> bool {
    let Some(resources) = container.resources.as_mut() else {
        return false;
    };
    let mut changed = false;
    for list in [resources.requests.as_mut(), resources.limits.as_mut()].into_iter().flatten() {
        changed |= fold_batch_aliases(list);
        if let Some((cpu, memory)) = target {
            changed |= rename(list, cpu, memory);
        }
    }
    if let Some((cpu, memory)) = target {
        for name in [cpu, memory] {
            let Some(limit) = resources.limits.as_ref().and_then(|l| l.get(name)) else {
                continue;
            };
            let requests = resources.requests.get_or_insert_with(BTreeMap::new);
            if !requests.contains_key(name) {
                requests.insert(name.to_string(), limit.clone());
                changed = true;
            }
        }
    }
    changed
}

/// `cpu` → `cpu_name` (milli as an integer), `memory` → `memory_name`.
fn rename(list: &mut ResourceList, cpu_name: &str, memory_name: &str) -> bool {
    let mut changed = false;
    if let Some(cpu) = list.get("cpu")
        && let Some(milli) = milli_as_integer(cpu)
    {
        list.remove("cpu");
        list.insert(cpu_name.to_string(), milli);
        changed = true;
    }
    if let Some(memory) = list.remove("memory") {
        list.insert(memory_name.to_string(), memory);
        changed = true;
    }
    changed
}

/// The milli value of a cpu quantity as a quantity of whole units (what
/// Kubernetes' `NewQuantity(q.MilliValue(), DecimalSI)` gives), rounding up
/// like `MilliValue()`. `None` if unreadable or out of range.
fn milli_as_integer(cpu: &KubeQuantity) -> Option<KubeQuantity> {
    let quantity = Quantity::try_from(cpu).ok()?;
    let nanos = quantity.as_nanos();
    // MilliValue(): nano-units / 10^6, rounded away from zero.
    let milli = nanos / 1_000_000 + i128::from(nanos % 1_000_000 != 0) * nanos.signum();
    let milli = Quantity::from_nanos(milli.checked_mul(1_000_000_000)?, Format::DecimalSI)?;
    Some(KubeQuantity::from(milli))
}

/// Renames every alias of batch cpu / memory to the canonical name; the
/// most preferred spelling present wins.
fn fold_batch_aliases(list: &mut ResourceList) -> bool {
    let mut changed = false;
    for aliases in [names::BATCH_CPU_ALIASES, names::BATCH_MEMORY_ALIASES] {
        let [canonical, others @ ..] = aliases;
        for alias in others {
            if let Some(value) = list.remove(alias) {
                changed = true;
                list.entry(canonical.to_string()).or_insert(value);
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn pod(labels: Value, spec: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "labels": labels}, "spec": spec}))
            .unwrap()
    }

    fn translated(labels: Value, spec: Value) -> (bool, Value) {
        let mut p = pod(labels, spec);
        let changed = translate_resources(&mut p);
        (changed, serde_json::to_value(&p.spec).unwrap())
    }

    fn batch() -> Value {
        json!({"koordinator.sh/priority-class": "koord-batch"})
    }

    fn one(resources: Value) -> Value {
        json!({"containers": [{"name": "c", "resources": resources}]})
    }

    #[test]
    fn translation_table() {
        // (case, labels, container resources, expected container resources)
        let cases = [
            (
                "batch: 500m is 500, memory keeps its value",
                batch(),
                json!({"requests": {"cpu": "500m", "memory": "1Gi"}}),
                json!({"requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "1Gi"}}),
            ),
            (
                "batch: 1 is 1000 (canonical 1k)",
                batch(),
                json!({"requests": {"cpu": "1"}, "limits": {"cpu": "2500m"}}),
                json!({"requests": {"kubernetes.io/batch-cpu": "1k"}, "limits": {"kubernetes.io/batch-cpu": "2500"}}),
            ),
            (
                "sub-milli cpu rounds up like MilliValue",
                batch(),
                json!({"requests": {"cpu": "0.0001"}}),
                json!({"requests": {"kubernetes.io/batch-cpu": "1"}}),
            ),
            (
                "requests filled from limits",
                batch(),
                json!({"limits": {"cpu": "2", "memory": "512Mi"}}),
                json!({
                    "requests": {"kubernetes.io/batch-cpu": "2k", "kubernetes.io/batch-memory": "512Mi"},
                    "limits": {"kubernetes.io/batch-cpu": "2k", "kubernetes.io/batch-memory": "512Mi"}
                }),
            ),
            (
                "a request is never overwritten by the limit",
                batch(),
                json!({"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}),
                json!({"requests": {"kubernetes.io/batch-cpu": "1k"}, "limits": {"kubernetes.io/batch-cpu": "2k"}}),
            ),
            (
                "a missing limit is not filled from the request",
                batch(),
                json!({"requests": {"memory": "1Gi"}}),
                json!({"requests": {"kubernetes.io/batch-memory": "1Gi"}}),
            ),
            (
                "mid",
                json!({"koordinator.sh/priority-class": "koord-mid"}),
                json!({"requests": {"cpu": "250m", "memory": "1G"}}),
                json!({"requests": {"kubernetes.io/mid-cpu": "250", "kubernetes.io/mid-memory": "1G"}}),
            ),
            (
                "prod untouched",
                json!({"koordinator.sh/priority-class": "koord-prod"}),
                json!({"requests": {"cpu": "1", "memory": "1Gi"}}),
                json!({"requests": {"cpu": "1", "memory": "1Gi"}}),
            ),
            (
                "free has no mapping",
                json!({"koordinator.sh/priority-class": "koord-free"}),
                json!({"requests": {"cpu": "1"}}),
                json!({"requests": {"cpu": "1"}}),
            ),
            (
                "none (burstable, no labels) is prod",
                json!({}),
                json!({"requests": {"cpu": "1"}}),
                json!({"requests": {"cpu": "1"}}),
            ),
            (
                "BE label without priority is batch",
                json!({"koordinator.sh/qosClass": "BE"}),
                json!({"requests": {"cpu": "100m"}}),
                json!({"requests": {"kubernetes.io/batch-cpu": "100"}}),
            ),
            (
                "other resources kept",
                batch(),
                json!({"requests": {"cpu": "1", "nvidia.com/gpu": "1", "ephemeral-storage": "1Gi"}}),
                json!({"requests": {"kubernetes.io/batch-cpu": "1k", "nvidia.com/gpu": "1", "ephemeral-storage": "1Gi"}}),
            ),
            (
                "cpu replaces an existing batch-cpu",
                batch(),
                json!({"requests": {"cpu": "1", "kubernetes.io/batch-cpu": "7"}}),
                json!({"requests": {"kubernetes.io/batch-cpu": "1k"}}),
            ),
            (
                "katalyst aliases folded on a prod pod too",
                json!({}),
                json!({"requests": {"resource.katalyst.kubewharf.io/reclaimed_millicpu": "2k", "katalyst.kubewharf.io/reclaimed_memory": "1Gi"}}),
                json!({"requests": {"kubernetes.io/batch-cpu": "2k", "kubernetes.io/batch-memory": "1Gi"}}),
            ),
            (
                "the canonical spelling wins over aliases",
                batch(),
                json!({"requests": {"kubernetes.io/batch-cpu": "3", "koordinator.sh/batch-cpu": "9"}}),
                json!({"requests": {"kubernetes.io/batch-cpu": "3"}}),
            ),
            (
                "huge cpu left alone",
                batch(),
                json!({"requests": {"cpu": "99999999999999999999999999999"}}),
                json!({"requests": {"cpu": "99999999999999999999999999999"}}),
            ),
            (
                "unreadable cpu left alone, memory still moves",
                batch(),
                json!({"requests": {"cpu": "lots", "memory": "1Gi"}}),
                json!({"requests": {"cpu": "lots", "kubernetes.io/batch-memory": "1Gi"}}),
            ),
        ];
        for (case, labels, resources, expected) in cases {
            let (_, spec) = translated(labels, one(resources));
            assert_eq!(spec["containers"][0]["resources"], expected, "{case}");
        }
    }

    #[test]
    fn init_containers_and_overhead() {
        let spec = json!({
            "initContainers": [{"name": "init", "resources": {"limits": {"cpu": "1", "memory": "64Mi"}}}],
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}],
            "overhead": {"cpu": "100m", "memory": "10Mi"}
        });
        let (changed, spec) = translated(batch(), spec);
        assert!(changed);
        assert_eq!(
            spec["initContainers"][0]["resources"],
            json!({
                "requests": {"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "64Mi"},
                "limits": {"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "64Mi"}
            })
        );
        assert_eq!(
            spec["containers"][0]["resources"],
            json!({"requests": {"kubernetes.io/batch-cpu": "2k"}})
        );
        assert_eq!(
            spec["overhead"],
            json!({"kubernetes.io/batch-cpu": "100", "kubernetes.io/batch-memory": "10Mi"})
        );
    }

    #[test]
    fn katalyst_reclaimed_is_batch_and_translation_is_idempotent() {
        let mut p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "annotations": {"katalyst.kubewharf.io/qos_level": "reclaimed_cores"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
        }))
        .unwrap();
        assert!(translate_resources(&mut p));
        let once = p.clone();
        assert!(!translate_resources(&mut p));
        assert_eq!(p, once);
        let requests =
            &once.spec.unwrap().containers[0].resources.clone().unwrap().requests.unwrap();
        assert_eq!(requests["kubernetes.io/batch-cpu"].0, "1k");
        assert_eq!(requests["kubernetes.io/batch-memory"].0, "1Gi");
    }

    #[test]
    fn nothing_to_do_is_unchanged() {
        let (changed, _) = translated(batch(), json!({"containers": [{"name": "c"}]}));
        assert!(!changed);
        let mut no_spec: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}})).unwrap();
        assert!(!translate_resources(&mut no_spec));
    }
}
