//! Pod builders for this crate's unit tests.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

fn resource_list(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, Quantity>> {
    (!pairs.is_empty())
        .then(|| pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect())
}

/// A container with the given requests and limits.
pub fn container(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
    Container {
        name: "c".into(),
        resources: Some(ResourceRequirements {
            requests: resource_list(requests),
            limits: resource_list(limits),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A pod with these containers and init containers.
pub fn pod_with(containers: Vec<Container>, init_containers: Vec<Container>) -> Pod {
    Pod {
        spec: Some(PodSpec {
            containers,
            init_containers: (!init_containers.is_empty()).then_some(init_containers),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The pod with labels, annotations and `spec.priority` set.
pub fn with_meta(
    mut pod: Pod,
    labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
    priority: Option<i32>,
) -> Pod {
    let map = |pairs: &[(&str, &str)]| {
        (!pairs.is_empty())
            .then(|| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    };
    pod.metadata.labels = map(labels);
    pod.metadata.annotations = map(annotations);
    pod.spec.get_or_insert_with(Default::default).priority = priority;
    pod
}
