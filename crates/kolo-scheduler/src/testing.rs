//! Builders for this crate's tests: pods and nodes from short YAML, the way
//! they appear in `kubectl get -o yaml`.

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::framework::PodInfo;

/// A pod from YAML (`apiVersion`/`kind` optional).
pub fn pod_from_yaml(yaml: &str) -> Pod {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("test pod: {e}\n{yaml}"))
}

/// A node from YAML.
pub fn node_from_yaml(yaml: &str) -> Node {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("test node: {e}\n{yaml}"))
}

/// A pending pod `default/<name>` with one container requesting `requests`
/// (pairs of resource name and quantity).
pub fn pod(name: &str, requests: &[(&str, &str)]) -> Pod {
    let mut yaml = format!(
        "metadata:\n  name: {name}\n  namespace: default\n  uid: uid-{name}\nspec:\n  containers:\n  - name: c\n"
    );
    if !requests.is_empty() {
        yaml.push_str("    resources:\n      requests:\n");
        for (k, v) in requests {
            yaml.push_str(&format!("        {k}: \"{v}\"\n"));
        }
    }
    pod_from_yaml(&yaml)
}

/// [`pod`] as a [`PodInfo`].
pub fn pod_info(name: &str, requests: &[(&str, &str)]) -> PodInfo {
    PodInfo::new(pod(name, requests)).unwrap()
}

/// A ready node with this allocatable (and the same capacity).
pub fn node(name: &str, allocatable: &[(&str, &str)]) -> Node {
    let mut yaml = format!(
        "metadata:\n  name: {name}\n  labels:\n    kubernetes.io/hostname: {name}\nstatus:\n  allocatable:\n"
    );
    for (k, v) in allocatable {
        yaml.push_str(&format!("    {k}: \"{v}\"\n"));
    }
    yaml.push_str("  capacity:\n");
    for (k, v) in allocatable {
        yaml.push_str(&format!("    {k}: \"{v}\"\n"));
    }
    yaml.push_str("  conditions:\n  - type: Ready\n    status: \"True\"\n");
    node_from_yaml(&yaml)
}

/// A [`NodeInfo`](crate::framework::NodeInfo) with no pods, id 0.
pub fn node_info(node: Node) -> crate::framework::NodeInfo {
    let view = kolo_core::node::NodeView::from_node(&node).unwrap();
    crate::framework::NodeInfo::new(crate::framework::NodeId(0), std::sync::Arc::new(node), view)
}

/// A cycle context at the Unix epoch.
pub fn ctx() -> crate::framework::CycleContext {
    crate::framework::CycleContext { now: kolo_core::clock::Timestamp::UNIX_EPOCH }
}

/// A node `n` with this allocatable and these pods counted on it, id 0.
pub fn node_info_with(
    allocatable: &[(&str, &str)],
    pods: &[PodInfo],
) -> crate::framework::NodeInfo {
    let mut info = node_info(node("n", allocatable));
    for p in pods {
        info.add_pod(p);
    }
    info
}
