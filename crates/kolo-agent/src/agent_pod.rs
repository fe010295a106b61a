//! [`AgentPod`]: what the agent needs to know of a pod: its identity (a
//! [`PodRef`]), classes, requests, and its containers' runtime IDs (which
//! name their cgroups).

use k8s_openapi::api::core::v1::Pod;
use kolo_api::kube_qos::KubeQoSClass;
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
            priority_class: view.priority_class(),
            requests: *view.requests(),
            limits: *view.limits(),
            terminated: view.is_terminated(),
            deleting: view.is_terminating(),
            created: view.creation_timestamp(),
            containers,
        }
    }
}
