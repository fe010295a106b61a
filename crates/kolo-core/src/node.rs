//! [`NodeView`]: what kolo's algorithms need from a node.
//!
//! Capacity and allocatable become [`ResourceVector`]s, including the
//! colocation resources the manager publishes in `status.allocatable`
//! (`kubernetes.io/batch-*`, `mid-*`, and Katalyst's reclaimed resources,
//! folded into batch). The batch formula reads **capacity** (spec §2.2), the
//! scheduler's fit check reads allocatable, so both are kept.

use std::fmt;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;

use crate::meta::{HasMeta, Meta, StringMap};
use crate::resources::{ResourceError, ResourceVector};

/// Errors building a [`NodeView`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeViewError {
    /// A resource list of the node is malformed.
    #[error("node {node}: {field}: {error}")]
    Resources {
        /// `metadata.name`.
        node: String,
        /// `status.capacity` or `status.allocatable`.
        field: &'static str,
        /// What is wrong (names the resource, quotes the value).
        error: ResourceError,
    },
    /// A taint has an effect Kubernetes does not define.
    #[error(
        "node {node}: spec.taints[{index}] (key {key:?}): unknown effect {effect:?}, \
         expected NoSchedule, PreferNoSchedule or NoExecute"
    )]
    TaintEffect {
        /// `metadata.name`.
        node: String,
        /// Position in `spec.taints`.
        index: usize,
        /// The taint key.
        key: String,
        /// The effect as written.
        effect: String,
    },
}

/// What a taint does to pods that do not tolerate it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    /// New pods are not scheduled.
    NoSchedule,
    /// The scheduler avoids the node.
    PreferNoSchedule,
    /// New pods are not scheduled and running ones are evicted.
    NoExecute,
}

impl TaintEffect {
    /// Parses the Kubernetes spelling.
    pub fn parse(effect: &str) -> Option<TaintEffect> {
        match effect {
            "NoSchedule" => Some(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Some(TaintEffect::PreferNoSchedule),
            "NoExecute" => Some(TaintEffect::NoExecute),
            _ => None,
        }
    }

    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

impl fmt::Display for TaintEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Taint {
    /// `key`.
    pub key: Box<str>,
    /// `value` (empty when unset, which Kubernetes treats the same way).
    pub value: Box<str>,
    /// `effect`.
    pub effect: TaintEffect,
}

/// The status of a node condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// `"True"`.
    True,
    /// `"False"`.
    False,
    /// `"Unknown"`, any other value, or the condition is missing.
    Unknown,
}

impl ConditionStatus {
    /// Parses a condition status; anything but `True`/`False` is Unknown.
    pub fn parse(status: &str) -> ConditionStatus {
        match status {
            "True" => ConditionStatus::True,
            "False" => ConditionStatus::False,
            _ => ConditionStatus::Unknown,
        }
    }
}

/// What kolo's algorithms need from a node, resolved once.
///
/// Build one with [`NodeView::from_node`] (or `TryFrom<&Node>`); tests and
/// the simulator can start from [`NodeView::new`] and the `with_*` methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    name: Box<str>,
    /// UID, labels, annotations, creation time.
    meta: Meta,
    taints: Box<[Taint]>,
    unschedulable: bool,
    capacity: ResourceVector,
    allocatable: ResourceVector,
    ready: ConditionStatus,
}

impl NodeView {
    /// Reads a node.
    ///
    /// A node without `status.allocatable` gets its capacity as allocatable,
    /// the API server's default (it matters only for hand-written
    /// snapshots). A missing `Ready` condition reads as Unknown.
    /// Annotations are kept except `kubectl.kubernetes.io/last-applied-configuration`.
    ///
    /// Fails on a malformed quantity (naming the node, the field and the
    /// resource, quoting the value) or an unknown taint effect.
    pub fn from_node(node: &Node) -> Result<NodeView, NodeViewError> {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let status = node.status.as_ref();
        let read = |field: &'static str, list| match list {
            None => Ok(None),
            Some(list) => ResourceVector::from_object_list(list)
                .map(Some)
                .map_err(|error| NodeViewError::Resources { node: name.to_owned(), field, error }),
        };
        let capacity = read("status.capacity", status.and_then(|s| s.capacity.as_ref()))?;
        let allocatable = read("status.allocatable", status.and_then(|s| s.allocatable.as_ref()))?;
        let capacity = capacity.unwrap_or_default();
        let allocatable = allocatable.unwrap_or(capacity);

        let spec = node.spec.as_ref();
        let taints = spec
            .and_then(|s| s.taints.as_ref())
            .map(|taints| {
                taints
                    .iter()
                    .enumerate()
                    .map(|(index, t)| {
                        let effect = TaintEffect::parse(&t.effect).ok_or_else(|| {
                            NodeViewError::TaintEffect {
                                node: name.to_owned(),
                                index,
                                key: t.key.clone(),
                                effect: t.effect.clone(),
                            }
                        })?;
                        Ok(Taint {
                            key: t.key.as_str().into(),
                            value: t.value.as_deref().unwrap_or_default().into(),
                            effect,
                        })
                    })
                    .collect::<Result<Box<[Taint]>, NodeViewError>>()
            })
            .transpose()?
            .unwrap_or_default();

        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .map_or(ConditionStatus::Unknown, |c| ConditionStatus::parse(&c.status));

        Ok(NodeView {
            name: name.into(),
            meta: Meta::from_object_meta(&node.metadata),
            taints,
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            capacity,
            allocatable,
            ready,
        })
    }

    /// A ready, schedulable node with no resources, labels or taints.
    /// Adjust it with the `with_*` methods.
    pub fn new(name: &str) -> NodeView {
        NodeView {
            name: name.into(),
            meta: Meta::default(),
            taints: Box::default(),
            unschedulable: false,
            capacity: ResourceVector::EMPTY,
            allocatable: ResourceVector::EMPTY,
            ready: ConditionStatus::True,
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `spec.taints`, in order.
    pub fn taints(&self) -> &[Taint] {
        &self.taints
    }

    /// `spec.unschedulable` (cordoned).
    pub fn is_unschedulable(&self) -> bool {
        self.unschedulable
    }

    /// The `Ready` condition.
    pub fn ready(&self) -> ConditionStatus {
        self.ready
    }

    /// Whether the `Ready` condition is True.
    pub fn is_ready(&self) -> bool {
        self.ready == ConditionStatus::True
    }

    /// `status.capacity`.
    pub fn capacity(&self) -> &ResourceVector {
        &self.capacity
    }

    /// `status.allocatable` (capacity if the node reports none).
    pub fn allocatable(&self) -> &ResourceVector {
        &self.allocatable
    }

    /// Replaces allocatable; for the simulator applying the manager's
    /// batch/mid decisions.
    pub fn set_allocatable(&mut self, allocatable: ResourceVector) {
        self.allocatable = allocatable;
    }

    /// Sets capacity and allocatable.
    #[must_use]
    pub fn with_resources(
        mut self,
        capacity: ResourceVector,
        allocatable: ResourceVector,
    ) -> NodeView {
        self.capacity = capacity;
        self.allocatable = allocatable;
        self
    }

    /// Replaces the labels.
    #[must_use]
    pub fn with_labels(mut self, labels: StringMap) -> NodeView {
        self.meta.labels = labels;
        self
    }

    /// Replaces the annotations.
    #[must_use]
    pub fn with_annotations(mut self, annotations: StringMap) -> NodeView {
        self.meta.annotations = annotations;
        self
    }

    /// Replaces the taints.
    #[must_use]
    pub fn with_taints(mut self, taints: Vec<Taint>) -> NodeView {
        self.taints = taints.into_boxed_slice();
        self
    }

    /// Cordons (or uncordons) the node.
    #[must_use]
    pub fn with_unschedulable(mut self, unschedulable: bool) -> NodeView {
        self.unschedulable = unschedulable;
        self
    }

    /// Sets the `Ready` condition.
    #[must_use]
    pub fn with_ready(mut self, ready: ConditionStatus) -> NodeView {
        self.ready = ready;
        self
    }

    /// Sets the creation timestamp.
    #[must_use]
    pub fn with_creation_timestamp(mut self, at: Timestamp) -> NodeView {
        self.meta.creation_timestamp = Some(at);
        self
    }
}

impl HasMeta for NodeView {
    fn meta(&self) -> &Meta {
        &self.meta
    }
}

impl TryFrom<&Node> for NodeView {
    type Error = NodeViewError;
    fn try_from(node: &Node) -> Result<Self, Self::Error> {
        NodeView::from_node(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::ResourceName::{
        BatchCpu, BatchMemory, Cpu, EphemeralStorage, Memory, MidCpu, MidMemory, Pods,
    };

    const GI: i64 = 1 << 30;

    fn node(yaml: &str) -> Node {
        serde_saphyr::from_str(yaml).expect("test node yaml")
    }

    #[test]
    fn colocation_node() {
        let n = node(
            r#"
metadata:
  name: node-1
  creationTimestamp: "2024-01-02T03:04:05Z"
  labels: {node.koordinator.sh/cpu-reclaim-ratio: "0.7"}
  annotations: {node.koordinator.sh/reservation: '{"reservedCPUs":"0-1"}'}
spec:
  taints:
  - {key: dedicated, value: batch, effect: NoSchedule}
  - {key: maint, effect: NoExecute}
status:
  capacity:
    cpu: "96"
    memory: 512Gi
    pods: "110"
    ephemeral-storage: 100Gi
  allocatable:
    cpu: 95500m
    memory: 500Gi
    pods: "110"
    ephemeral-storage: 90Gi
    kubernetes.io/batch-cpu: "25000"
    kubernetes.io/batch-memory: 33G
    kubernetes.io/mid-cpu: 4k
    kubernetes.io/mid-memory: 8Gi
  conditions:
  - {type: MemoryPressure, status: "False"}
  - {type: Ready, status: "True"}
"#,
        );
        let view = NodeView::from_node(&n).unwrap();
        assert_eq!(view.name(), "node-1");
        assert_eq!(view.label("node.koordinator.sh/cpu-reclaim-ratio"), Some("0.7"));
        assert!(view.annotation("node.koordinator.sh/reservation").is_some());
        assert!(view.is_ready());
        assert!(!view.is_unschedulable());
        assert_eq!(
            view.taints(),
            &[
                Taint {
                    key: "dedicated".into(),
                    value: "batch".into(),
                    effect: TaintEffect::NoSchedule
                },
                Taint { key: "maint".into(), value: "".into(), effect: TaintEffect::NoExecute },
            ]
        );
        assert_eq!(view.capacity().cpu(), 96_000);
        assert_eq!(view.capacity().memory(), 512 * GI);
        assert_eq!(view.capacity().get(BatchCpu), None);
        let alloc = view.allocatable();
        assert_eq!(alloc.get(Cpu), Some(95_500));
        assert_eq!(alloc.get(Memory), Some(500 * GI));
        assert_eq!(alloc.get(Pods), Some(110));
        assert_eq!(alloc.get(EphemeralStorage), Some(90 * GI));
        assert_eq!(alloc.get(BatchCpu), Some(25_000));
        assert_eq!(alloc.get(BatchMemory), Some(33_000_000_000));
        assert_eq!(alloc.get(MidCpu), Some(4_000));
        assert_eq!(alloc.get(MidMemory), Some(8 * GI));
        assert_eq!(view.creation_timestamp().unwrap().to_string(), "2024-01-02T03:04:05Z");
    }

    #[test]
    fn katalyst_reclaimed_resources_fold_into_batch() {
        let n = node(
            r#"
metadata: {name: kat-1}
status:
  allocatable:
    resource.katalyst.kubewharf.io/reclaimed_millicpu: 12k
    resource.katalyst.kubewharf.io/reclaimed_memory: 16Gi
"#,
        );
        let view = NodeView::from_node(&n).unwrap();
        assert_eq!(view.allocatable().get(BatchCpu), Some(12_000));
        assert_eq!(view.allocatable().get(BatchMemory), Some(16 * GI));
    }

    #[test]
    fn defaults_for_sparse_nodes() {
        let n = node(
            r#"
metadata: {name: bare}
spec: {unschedulable: true}
status:
  capacity: {cpu: "4", memory: 8Gi}
  conditions: [{type: Ready, status: "False"}]
"#,
        );
        let view = NodeView::from_node(&n).unwrap();
        assert_eq!(view.allocatable(), view.capacity(), "allocatable defaults to capacity");
        assert!(view.is_unschedulable());
        assert_eq!(view.ready(), ConditionStatus::False);

        let empty = NodeView::from_node(&node("metadata: {name: empty}")).unwrap();
        assert_eq!(empty.ready(), ConditionStatus::Unknown, "no Ready condition");
        assert!(empty.allocatable().is_empty() && empty.taints().is_empty());
    }

    #[test]
    fn malformed_quantity_names_node_field_and_value() {
        let n = node(
            r#"
metadata: {name: bad-1}
status:
  capacity: {cpu: "4"}
  allocatable: {cpu: "4", memory: 1.2.3Gi}
"#,
        );
        let err = NodeView::from_node(&n).unwrap_err().to_string();
        for needle in ["bad-1", "status.allocatable", "memory", "1.2.3Gi"] {
            assert!(err.contains(needle), "{needle:?} missing from {err}");
        }
    }

    #[test]
    fn unknown_taint_effect_is_an_error() {
        let n = node(
            r#"
metadata: {name: t-1}
spec:
  taints: [{key: a, effect: NoSchedule}, {key: b, effect: Sometimes}]
"#,
        );
        let err = NodeView::from_node(&n).unwrap_err().to_string();
        assert!(
            err.contains("t-1") && err.contains("spec.taints[1]") && err.contains("Sometimes"),
            "{err}"
        );
    }
}
