//! [`AgentPod`]: what the agent needs to know of a pod: its identity (a
//! [`PodRef`]), classes, requests, and its containers' runtime IDs (which
//! name their cgroups).

use k8s_openapi::api::core::v1::Pod;
use kolo_api::kube_qos::KubeQoSClass;
use kolo_api::qos::{QoSSource, resolve_qos_explained};
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::HasMeta;
use kolo_core::PodRef;
use kolo_core::pod::PodView;
use kolo_core::resources::ResourceVector;

/// One container of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerRef {
    /// `spec.containers[].name`.
    pub name: String,
    /// `status.containerStatuses[].containerID`, e.g.
    /// `containerd://4f1c...`; `None` until the runtime created it.
    pub id: Option<String>,
}

impl ContainerRef {
    /// Whether this is the container with runtime id `id`, given bare
    /// (`4f1c...`) or with its runtime (`containerd://4f1c...`).
    pub fn has_id(&self, id: &str) -> bool {
        let bare = |id: &str| id.rsplit_once("://").map_or(id, |(_, bare)| bare).to_string();
        !id.is_empty() && self.id.as_deref().map(bare) == Some(bare(id))
    }
}

/// A pod as the agent sees it: the spec-side facts its collectors and
/// strategies need, read once per pod list (the live figures are in
/// [`PodState`](crate::qos::PodState)).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPod {
    /// Namespace, name and UID. The UID is unvalidated: the cgroup layer
    /// validates it before it becomes a path component.
    pub id: PodRef,
    /// Kubernetes QoS class: decides the pod's cgroup parent.
    pub kube_qos: KubeQoSClass,
    /// kolo QoS class (Koordinator label / Katalyst annotation / default).
    pub qos: QoSClass,
    /// Which rule decided `qos`; see [`AgentPod::declared_qos`].
    pub qos_source: QoSSource,
    /// Priority class (with default).
    pub priority_class: PriorityClass,
    /// Effective requests.
    pub requests: ResourceVector,
    /// Effective limits.
    pub limits: ResourceVector,
    /// Whether the pod is terminated (Succeeded / Failed).
    pub terminated: bool,
    /// Whether the pod is being deleted (`metadata.deletionTimestamp` set):
    /// it still runs and uses resources, but will not need them for long.
    pub deleting: bool,
    /// Creation time, if known.
    pub created: Option<kolo_core::clock::Timestamp>,
    /// Containers (regular ones; init containers have finished).
    pub containers: Vec<ContainerRef>,
}

impl AgentPod {
    /// Whether the pod is BE: the pods the strategies may throttle or evict,
    /// and whose memory the collector reads every round for memory
    /// eviction.
    pub fn is_be(&self) -> bool {
        self.qos == QoSClass::BE
    }

    /// Builds the agent's view of a pod. Fails on the same malformed fields
    /// [`PodView::from_pod`] rejects (its error names the field).
    pub fn from_pod(pod: &Pod) -> Result<AgentPod, kolo_core::pod::PodViewError> {
        Ok(AgentPod::from_view(&PodView::from_pod(pod)?, pod))
    }

    /// The agent's view of `pod` already read as `view` (a caller that
    /// holds both, such as `kolo sim`, parses the Pod once): identity,
    /// classes and requests from `view`, containers from `pod`.
    pub fn from_view(view: &PodView, pod: &Pod) -> AgentPod {
        let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
        let containers = pod
            .spec
            .iter()
            .flat_map(|s| &s.containers)
            .map(|c| ContainerRef {
                name: c.name.clone(),
                id: statuses
                    .and_then(|st| st.iter().find(|s| s.name == c.name))
                    .and_then(|s| s.container_id.clone())
                    .filter(|id| !id.is_empty()),
            })
            .collect();
        AgentPod {
            id: view.pod_ref(),
            kube_qos: view.kube_qos(),
            qos: view.qos(),
            qos_source: resolve_qos_explained(pod).source,
            priority_class: view.priority_class(),
            requests: *view.requests(),
            limits: *view.limits(),
            terminated: view.is_terminated(),
            deleting: view.is_terminating(),
            created: view.creation_timestamp(),
            containers,
        }
    }

    /// The class the CPU QoS rules about exclusive CPUs go by (CPU burst,
    /// CFS quota burst, the share pool's usage ratio): the class the pod
    /// declares by label or Katalyst annotation; without one, LS even for a
    /// Guaranteed pod (whose `qos` defaults to LSR), as koordlet's raw
    /// label reading has it: only a declared LSR / LSE pod gets exclusive
    /// cores (docs/compatibility.md, "Two QoS resolutions").
    pub fn declared_qos(&self) -> QoSClass {
        match (self.qos_source, self.qos) {
            (QoSSource::KubernetesDefault, QoSClass::LSR) => QoSClass::LS,
            (_, qos) => qos,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A running pod with one container whose requests equal its limits
    /// (`guaranteed`), or with a request only, or with no resources.
    fn pod(kube: KubeQoSClass, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Pod {
        let resources = match kube {
            KubeQoSClass::Guaranteed => serde_json::json!({
                "requests": {"cpu": "2", "memory": "1Gi"},
                "limits": {"cpu": "2", "memory": "1Gi"}
            }),
            KubeQoSClass::Burstable => serde_json::json!({"requests": {"cpu": "100m"}}),
            KubeQoSClass::BestEffort => serde_json::json!({}),
        };
        let map = |pairs: &[(&str, &str)]| -> serde_json::Map<String, serde_json::Value> {
            pairs.iter().map(|(k, v)| (k.to_string(), (*v).into())).collect()
        };
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u",
                         "labels": map(labels), "annotations": map(annotations)},
            "spec": {"containers": [{"name": "c", "resources": resources}]},
            "status": {"phase": "Running"}
        }))
        .expect("valid pod")
    }

    #[test]
    fn declared_qos_is_the_label_or_annotation_else_ls() {
        use KubeQoSClass::{BestEffort, Burstable, Guaranteed};
        use QoSClass::{BE, LS, LSE, LSR};
        const LABEL: &str = "koordinator.sh/qosClass";
        const LEVEL: &str = "katalyst.kubewharf.io/qos_level";
        // (case, kube QoS, labels, annotations, qos, declared)
        type Pairs = &'static [(&'static str, &'static str)];
        let table: [(&str, _, Pairs, Pairs, _, _); 9] = [
            ("unlabelled guaranteed", Guaranteed, &[], &[], LSR, LS),
            ("guaranteed labelled LSR", Guaranteed, &[(LABEL, "LSR")], &[], LSR, LSR),
            ("guaranteed labelled LSE", Guaranteed, &[(LABEL, "LSE")], &[], LSE, LSE),
            ("guaranteed labelled LS", Guaranteed, &[(LABEL, "LS")], &[], LS, LS),
            ("guaranteed, unknown label", Guaranteed, &[(LABEL, "gold")], &[], LSR, LS),
            ("katalyst dedicated_cores", Guaranteed, &[], &[(LEVEL, "dedicated_cores")], LSR, LSR),
            ("katalyst shared_cores", Guaranteed, &[], &[(LEVEL, "shared_cores")], LS, LS),
            ("unlabelled burstable", Burstable, &[], &[], LS, LS),
            ("unlabelled best effort", BestEffort, &[], &[], BE, BE),
        ];
        for (case, kube, labels, annotations, qos, declared) in table {
            let p = AgentPod::from_pod(&pod(kube, labels, annotations)).expect("valid pod");
            assert_eq!(p.kube_qos, kube, "{case}");
            assert_eq!(p.qos, qos, "{case}");
            assert_eq!(p.declared_qos(), declared, "{case}");
        }
    }

    #[test]
    fn a_container_matches_its_id_bare_or_with_its_runtime() {
        let c = ContainerRef { name: "main".into(), id: Some("containerd://abc123".into()) };
        for (id, want) in [
            ("abc123", true),
            ("containerd://abc123", true),
            ("docker://abc123", true),
            ("abc12", false),
            ("", false),
        ] {
            assert_eq!(c.has_id(id), want, "{id:?}");
        }
        let created = ContainerRef { name: "main".into(), id: None };
        assert!(!created.has_id("abc123"));
    }
}
