//! A pod's total request of a resource, as the validation rules sum it.
//!
//! Like Koordinator's `GetPodRequest`: the containers' requests summed, the
//! larger of that and each init container's request, plus `spec.overhead`.
//! Two kolo refinements: a container that sets only a limit counts the
//! limit as its request (the API server stores the pod that way, so a pod
//! judged offline gets the verdict it would get in the cluster), and a
//! resource may be named by any of its aliases (the first alias present in
//! a list counts, in the given preference order). Unreadable quantities
//! count as zero; the API server never admits them anyway. Sums saturate
//! instead of overflowing.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kolo_api::quantity::{Format, Quantity};

/// The pod's total request of the resource named by `aliases`, in
/// nano-units.
pub fn pod_request_nanos(pod: &Pod, aliases: &[&str]) -> i128 {
    let Some(spec) = pod.spec.as_ref() else { return 0 };
    let sum = spec
        .containers
        .iter()
        .map(|c| container_request(c, aliases))
        .fold(0i128, i128::saturating_add);
    let with_init = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| container_request(c, aliases))
        .fold(sum, i128::max);
    let overhead = spec.overhead.as_ref().map_or(0, |o| amount(o, aliases).unwrap_or(0));
    with_init.saturating_add(overhead)
}

/// The same total as a quantity (for messages), capped at the quantity range.
pub fn as_quantity(nanos: i128) -> Quantity {
    Quantity::from_nanos(nanos, Format::DecimalSI).unwrap_or(if nanos < 0 {
        Quantity::MIN
    } else {
        Quantity::MAX
    })
}

fn container_request(container: &Container, aliases: &[&str]) -> i128 {
    let Some(resources) = container.resources.as_ref() else { return 0 };
    resources
        .requests
        .as_ref()
        .and_then(|r| amount(r, aliases))
        .or_else(|| resources.limits.as_ref().and_then(|l| amount(l, aliases)))
        .unwrap_or(0)
}

/// The amount of the first alias present, `None` if none is.
fn amount(list: &BTreeMap<String, KubeQuantity>, aliases: &[&str]) -> Option<i128> {
    let quantity = aliases.iter().find_map(|a| list.get(*a))?;
    Some(Quantity::try_from(quantity).map_or(0, |q| q.as_nanos()))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    const NANOS: i128 = 1_000_000_000;

    fn cpu(spec: Value) -> i128 {
        let pod: Pod =
            serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap();
        pod_request_nanos(&pod, &["cpu"])
    }

    fn c(requests: Value, limits: Value) -> Value {
        json!({"name": "c", "resources": {"requests": requests, "limits": limits}})
    }

    #[test]
    fn sum_table() {
        let cases = [
            (
                "containers summed",
                json!({"containers": [c(json!({"cpu": "1"}), json!({})), c(json!({"cpu": "500m"}), json!({}))]}),
                1500,
            ),
            (
                "limit stands in for a missing request",
                json!({"containers": [c(json!({}), json!({"cpu": "2"}))]}),
                2000,
            ),
            (
                "request preferred over limit",
                json!({"containers": [c(json!({"cpu": "1"}), json!({"cpu": "2"}))]}),
                1000,
            ),
            (
                "init container maximum",
                json!({"initContainers": [c(json!({"cpu": "3"}), json!({}))], "containers": [c(json!({"cpu": "1"}), json!({}))]}),
                3000,
            ),
            (
                "init container below the sum",
                json!({"initContainers": [c(json!({"cpu": "100m"}), json!({}))], "containers": [c(json!({"cpu": "1"}), json!({}))]}),
                1000,
            ),
            (
                "overhead added",
                json!({"containers": [c(json!({"cpu": "1"}), json!({}))], "overhead": {"cpu": "250m"}}),
                1250,
            ),
            (
                "unreadable is zero",
                json!({"containers": [c(json!({"cpu": "x"}), json!({"cpu": "2"}))]}),
                0,
            ),
            ("nothing", json!({"containers": [{"name": "c"}]}), 0),
        ];
        for (case, spec, milli) in cases {
            assert_eq!(cpu(spec), milli * NANOS / 1000, "{case}");
        }
    }

    #[test]
    fn aliases_and_saturation() {
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            c(json!({"koordinator.sh/batch-cpu": "7", "kubernetes.io/batch-cpu": "5"}), json!({})),
            c(json!({"resource.katalyst.kubewharf.io/reclaimed_millicpu": "2k"}), json!({})),
        ]}}))
        .unwrap();
        let aliases = kolo_api::names::resource::BATCH_CPU_ALIASES;
        assert_eq!(pod_request_nanos(&pod, &aliases), 2005 * NANOS);

        let huge = c(json!({"cpu": "99999999999999999999999999999"}), json!({}));
        let total = cpu(json!({"containers": [huge.clone(), huge.clone(), huge]}));
        assert_eq!(total, i128::MAX);
        assert_eq!(as_quantity(total), Quantity::MAX);
        assert_eq!(as_quantity(1_500_000_000).to_string(), "1500m");
    }
}
