//! The Kubernetes QoS class of a pod (Guaranteed, Burstable, BestEffort).
//!
//! kolo's QoS classes default from it when a pod carries neither a
//! Koordinator label nor a Katalyst annotation. `status.qosClass`, which the
//! API server fills in, is used when present; otherwise the class is computed
//! from the containers the way Kubernetes does (`GetPodQOS`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;

use crate::quantity::Quantity;

/// The Kubernetes QoS class of a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KubeQoSClass {
    /// Every container has equal cpu and memory requests and limits.
    Guaranteed,
    /// Some cpu or memory request or limit, but not Guaranteed.
    Burstable,
    /// No cpu or memory request or limit at all.
    BestEffort,
}

impl KubeQoSClass {
    /// The spelling used in `status.qosClass`.
    pub fn as_str(self) -> &'static str {
        match self {
            KubeQoSClass::Guaranteed => "Guaranteed",
            KubeQoSClass::Burstable => "Burstable",
            KubeQoSClass::BestEffort => "BestEffort",
        }
    }

    /// Parses the spelling used in `status.qosClass`; anything else is `None`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "Guaranteed" => Some(KubeQoSClass::Guaranteed),
            "Burstable" => Some(KubeQoSClass::Burstable),
            "BestEffort" => Some(KubeQoSClass::BestEffort),
            _ => None,
        }
    }
}

/// The pod's Kubernetes QoS class: `status.qosClass` if the API server set a
/// valid one, otherwise [`compute_kube_qos`].
pub fn kube_qos(pod: &Pod) -> KubeQoSClass {
    pod.status
        .as_ref()
        .and_then(|status| status.qos_class.as_deref())
        .and_then(KubeQoSClass::parse)
        .unwrap_or_else(|| compute_kube_qos(pod))
}

/// Computes the Kubernetes QoS class from the pod spec, as `GetPodQOS` does:
/// only positive cpu and memory amounts of app and init containers count; a
/// pod is Guaranteed when every container limits both cpu and memory and the
/// summed requests equal the summed limits.
///
/// One deliberate difference: a request missing next to a limit is taken to
/// equal the limit. The API server applies exactly that default before a pod
/// is stored, so this gives the class the stored pod will have even for specs
/// that never went through the API server (hand-written snapshots, tests).
/// Quantities that fail to parse are ignored here; [`crate::quantity`] errors
/// are reported by the code that needs the amounts.
pub fn compute_kube_qos(pod: &Pod) -> KubeQoSClass {
    let Some(spec) = pod.spec.as_ref() else {
        return KubeQoSClass::BestEffort;
    };
    let containers = spec.containers.iter().chain(spec.init_containers.iter().flatten());

    let mut requests: BTreeMap<&'static str, i128> = BTreeMap::new();
    let mut limits: BTreeMap<&'static str, i128> = BTreeMap::new();
    let mut every_container_limits_cpu_and_memory = true;

    for container in containers {
        let container_limits = positive_qos_amounts(container, Side::Limits);
        let container_requests = positive_qos_amounts(container, Side::Requests);
        if !(container_limits.contains_key("cpu") && container_limits.contains_key("memory")) {
            every_container_limits_cpu_and_memory = false;
        }
        for (name, amount) in &container_limits {
            *limits.entry(name).or_default() += amount;
        }
        for name in QOS_RESOURCES {
            // API-server defaulting: a missing request equals the limit.
            let request = container_requests.get(name).or_else(|| container_limits.get(name));
            if let Some(amount) = request {
                *requests.entry(name).or_default() += amount;
            }
        }
    }

    if requests.is_empty() && limits.is_empty() {
        KubeQoSClass::BestEffort
    } else if every_container_limits_cpu_and_memory && requests == limits {
        KubeQoSClass::Guaranteed
    } else {
        KubeQoSClass::Burstable
    }
}

/// The resources that decide the Kubernetes QoS class.
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

#[derive(Clone, Copy)]
enum Side {
    Requests,
    Limits,
}

/// The container's positive cpu and memory amounts on one side, in
/// milli-units (exact for every realistic amount; saturates past 9.2e15 units).
fn positive_qos_amounts(container: &Container, side: Side) -> BTreeMap<&'static str, i128> {
    let list: Option<&BTreeMap<String, KubeQuantity>> =
        container.resources.as_ref().and_then(|r| match side {
            Side::Requests => r.requests.as_ref(),
            Side::Limits => r.limits.as_ref(),
        });
    let mut amounts = BTreeMap::new();
    let Some(list) = list else {
        return amounts;
    };
    for name in QOS_RESOURCES {
        let milli = list
            .get(name)
            .and_then(|q| Quantity::try_from(q).ok())
            .map(|q| i128::from(q.milli_value()));
        if let Some(milli) = milli.filter(|m| *m > 0) {
            amounts.insert(name, milli);
        }
    }
    amounts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_pods::{container, pod_with};

    #[test]
    fn computes_the_class_from_containers() {
        // (case, containers as (requests, limits), init containers, expected)
        type Res<'a> = &'a [(&'a str, &'a str)];
        type Case<'a> = (&'a str, &'a [(Res<'a>, Res<'a>)], &'a [(Res<'a>, Res<'a>)], KubeQoSClass);
        let cases: &[Case] = &[
            ("no resources", &[(&[], &[])], &[], KubeQoSClass::BestEffort),
            (
                "only extended resources",
                &[(&[("kubernetes.io/batch-cpu", "1000")], &[])],
                &[],
                KubeQoSClass::BestEffort,
            ),
            ("zero requests", &[(&[("cpu", "0")], &[])], &[], KubeQoSClass::BestEffort),
            (
                "requests equal limits",
                &[(&[("cpu", "1"), ("memory", "1Gi")], &[("cpu", "1000m"), ("memory", "1Gi")])],
                &[],
                KubeQoSClass::Guaranteed,
            ),
            (
                "limits only (requests default to limits)",
                &[(&[], &[("cpu", "2"), ("memory", "1Gi")])],
                &[],
                KubeQoSClass::Guaranteed,
            ),
            (
                "requests below limits",
                &[(&[("cpu", "500m"), ("memory", "1Gi")], &[("cpu", "1"), ("memory", "1Gi")])],
                &[],
                KubeQoSClass::Burstable,
            ),
            ("cpu limit only", &[(&[], &[("cpu", "1")])], &[], KubeQoSClass::Burstable),
            ("requests only", &[(&[("memory", "64Mi")], &[])], &[], KubeQoSClass::Burstable),
            (
                "one container guaranteed, the other not",
                &[(&[], &[("cpu", "1"), ("memory", "1Gi")]), (&[("cpu", "100m")], &[])],
                &[],
                KubeQoSClass::Burstable,
            ),
            (
                "init container without limits spoils Guaranteed",
                &[(&[], &[("cpu", "1"), ("memory", "1Gi")])],
                &[(&[("cpu", "1")], &[])],
                KubeQoSClass::Burstable,
            ),
            (
                "init container guaranteed too",
                &[(&[], &[("cpu", "1"), ("memory", "1Gi")])],
                &[(&[], &[("cpu", "1"), ("memory", "1Gi")])],
                KubeQoSClass::Guaranteed,
            ),
        ];
        for (case, containers, inits, expected) in cases {
            let pod = pod_with(
                containers.iter().map(|(r, l)| container(r, l)).collect(),
                inits.iter().map(|(r, l)| container(r, l)).collect(),
            );
            assert_eq!(compute_kube_qos(&pod), *expected, "{case}");
            assert_eq!(kube_qos(&pod), *expected, "{case} (no status)");
        }
    }

    #[test]
    fn status_qos_class_wins_and_invalid_status_is_ignored() {
        let mut pod = pod_with(vec![container(&[], &[])], vec![]);
        pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
            qos_class: Some("Guaranteed".into()),
            ..Default::default()
        });
        assert_eq!(kube_qos(&pod), KubeQoSClass::Guaranteed);
        pod.status.as_mut().unwrap().qos_class = Some("Platinum".into());
        assert_eq!(kube_qos(&pod), KubeQoSClass::BestEffort);
    }

    #[test]
    fn a_pod_without_spec_is_best_effort() {
        assert_eq!(compute_kube_qos(&Pod::default()), KubeQoSClass::BestEffort);
    }
}
