//! [`PodView`]: the numbers and names kolo's algorithms need from a pod.
//!
//! A snapshot holds tens of thousands of pods and every scheduling cycle or
//! batch computation walks them, so a view keeps only what the algorithms
//! read, resolved once: QoS and priority classes, and the pod's effective
//! requests and limits as [`ResourceVector`]s computed the way kubelet and
//! kube-scheduler compute them (`k8s.io/component-helpers/resource`
//! `PodRequests` / `PodLimits`). The full `Pod` (affinity, tolerations,
//! per-container detail) stays with whoever needs it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use k8s_openapi::jiff::Timestamp;
use kolo_api::kube_qos::{KubeQoSClass, kube_qos};
use kolo_api::priority::{PriorityClass, priority_value_for_class, resolve_priority_with_qos};
use kolo_api::qos::{QoSClass, resolve_qos};

pub use crate::meta::StringMap;
use crate::meta::{HasMeta, Meta};
use crate::pod_ref::PodRef;
use crate::resources::{ResourceError, ResourceName, ResourceVector};

/// Errors building a [`PodView`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodViewError {
    /// A resource list of the pod is malformed.
    #[error("pod {namespace}/{name}: {field}: {error}")]
    Resources {
        /// `metadata.namespace`.
        namespace: String,
        /// `metadata.name`.
        name: String,
        /// Where the list is, naming the container, e.g.
        /// `spec.containers["app"].resources.requests` or `spec.overhead`.
        field: String,
        /// What is wrong (names the resource, quotes the value). Boxed to
        /// keep `Result<PodView, _>` small on the happy path.
        error: Box<ResourceError>,
    },
}

/// A pod's lifecycle phase (`status.phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PodPhase {
    /// Accepted but not all containers are running; also the phase of a pod
    /// with no status at all (what the API server assigns on create).
    Pending,
    /// Bound to a node and at least one container is running.
    Running,
    /// All containers terminated successfully and will not restart.
    Succeeded,
    /// All containers terminated, at least one in failure.
    Failed,
    /// The state could not be obtained, or the phase is not one Kubernetes
    /// defines.
    Unknown,
}

impl PodPhase {
    /// Parses `status.phase`; `None` (absent) is [`PodPhase::Pending`], an
    /// unrecognised value [`PodPhase::Unknown`].
    pub fn parse(phase: Option<&str>) -> PodPhase {
        match phase {
            None | Some("Pending") => PodPhase::Pending,
            Some("Running") => PodPhase::Running,
            Some("Succeeded") => PodPhase::Succeeded,
            Some("Failed") => PodPhase::Failed,
            Some(_) => PodPhase::Unknown,
        }
    }

    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
            PodPhase::Unknown => "Unknown",
        }
    }

    /// Succeeded or Failed: the pod will never run again and holds no
    /// resources.
    pub fn is_terminated(self) -> bool {
        matches!(self, PodPhase::Succeeded | PodPhase::Failed)
    }
}

impl fmt::Display for PodPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The owner of a pod (its controller reference, or the first owner).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerRef {
    /// `kind`, e.g. `ReplicaSet`.
    pub kind: Box<str>,
    /// `name`.
    pub name: Box<str>,
    /// `uid`.
    pub uid: Box<str>,
    /// Whether this is the managing controller (`controller: true`).
    pub controller: bool,
}

/// What kolo's algorithms need from a pod, resolved once.
///
/// Build one with [`PodView::from_pod`] (or `TryFrom<&Pod>`); tests and the
/// simulator can also start from [`PodView::new`] and the `with_*` methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    /// `namespace/name`, built once: the key NodeMetrics, caches and the
    /// simulator look pods up by, thousands of times a second.
    key: Arc<str>,
    /// Where the name starts in `key`.
    name_at: u32,
    /// UID, labels, annotations, creation time.
    meta: Meta,
    node_name: Option<Box<str>>,
    scheduler_name: Option<Box<str>>,
    phase: PodPhase,
    qos: QoSClass,
    kube_qos: KubeQoSClass,
    priority_class: PriorityClass,
    priority: i32,
    deletion_timestamp: Option<Timestamp>,
    owner: Option<Box<OwnerRef>>,
    requests: ResourceVector,
    limits: ResourceVector,
}

/// A pod's `namespace/name` key, the one [`PodView::key`] gives and
/// NodeMetric `podsMetric` entries are matched by.
pub fn pod_key(namespace: &str, name: &str) -> Arc<str> {
    let mut key = String::with_capacity(namespace.len() + 1 + name.len());
    key.push_str(namespace);
    key.push('/');
    key.push_str(name);
    key.into()
}

impl PodView {
    /// Reads a pod.
    ///
    /// * QoS and priority class are the "with default" forms of spec §0.2
    ///   (Koordinator label, Katalyst annotation, else from the Kubernetes
    ///   QoS class); the priority value is `spec.priority` when set and not
    ///   0, else the class default (9500 / 7500 / 5500 / 3500 / 0).
    /// * Requests and limits are the pod's effective amounts; see
    ///   [`requests`](Self::requests) and [`limits`](Self::limits).
    /// * A missing `status.phase` reads as Pending.
    /// * Annotations are kept except `kubectl.kubernetes.io/last-applied-configuration`.
    ///
    /// Fails when a quantity in any resource list is malformed, naming the
    /// pod, the container and the field, and quoting the value.
    pub fn from_pod(pod: &Pod) -> Result<PodView, PodViewError> {
        let meta = &pod.metadata;
        let namespace = meta.namespace.as_deref().unwrap_or_default();
        let name = meta.name.as_deref().unwrap_or_default();
        let (requests, limits) =
            effective_resources(pod).map_err(|(field, error)| PodViewError::Resources {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                field,
                error: Box::new(error),
            })?;
        let spec = pod.spec.as_ref();
        let qos = resolve_qos(pod);
        // Resolve QoS once and reuse it for the class and the value.
        let priority_class = resolve_priority_with_qos(pod, |_| qos);
        let priority = priority_value_for_class(pod, priority_class);
        let owner = meta.owner_references.as_ref().and_then(|refs| {
            let chosen =
                refs.iter().find(|r| r.controller == Some(true)).or_else(|| refs.first())?;
            Some(Box::new(OwnerRef {
                kind: chosen.kind.as_str().into(),
                name: chosen.name.as_str().into(),
                uid: chosen.uid.as_str().into(),
                controller: chosen.controller == Some(true),
            }))
        });
        Ok(PodView {
            key: pod_key(namespace, name),
            name_at: namespace.len() as u32 + 1,
            meta: Meta::from_object_meta(meta),
            node_name: spec
                .and_then(|s| s.node_name.as_deref())
                .filter(|n| !n.is_empty())
                .map(Into::into),
            scheduler_name: spec
                .and_then(|s| s.scheduler_name.as_deref())
                .filter(|n| !n.is_empty())
                .map(Into::into),
            phase: PodPhase::parse(pod.status.as_ref().and_then(|s| s.phase.as_deref())),
            qos,
            kube_qos: kube_qos(pod),
            priority_class,
            priority,
            deletion_timestamp: meta.deletion_timestamp.as_ref().map(|t| t.0),
            owner,
            requests,
            limits,
        })
    }

    /// A pending, unassigned pod with no requests, labels or priority: the
    /// view [`from_pod`](Self::from_pod) gives for such a pod (BestEffort,
    /// hence QoS BE, class Batch, priority 5500; spec §0.2). Adjust it with
    /// the `with_*` methods.
    pub fn new(namespace: &str, name: &str) -> PodView {
        PodView {
            key: pod_key(namespace, name),
            name_at: namespace.len() as u32 + 1,
            meta: Meta::default(),
            node_name: None,
            scheduler_name: None,
            phase: PodPhase::Pending,
            qos: QoSClass::BE,
            kube_qos: KubeQoSClass::BestEffort,
            priority_class: PriorityClass::Batch,
            priority: PriorityClass::Batch.default_priority(),
            deletion_timestamp: None,
            owner: None,
            requests: ResourceVector::EMPTY,
            limits: ResourceVector::EMPTY,
        }
    }

    /// `metadata.namespace` (empty if the object had none).
    pub fn namespace(&self) -> &str {
        &self.key[..self.name_at as usize - 1]
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.key[self.name_at as usize..]
    }

    /// `namespace/name`, the key NodeMetric's `podsMetric` uses.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// [`key`](Self::key), shared.
    pub fn shared_key(&self) -> &Arc<str> {
        &self.key
    }

    /// The pod's identity: namespace, name and UID.
    pub fn pod_ref(&self) -> PodRef {
        PodRef::new(self.namespace(), self.name(), self.uid())
    }

    /// `spec.nodeName`, `None` while unscheduled.
    pub fn node_name(&self) -> Option<&str> {
        self.node_name.as_deref()
    }

    /// Whether the pod is bound to a node.
    pub fn is_assigned(&self) -> bool {
        self.node_name.is_some()
    }

    /// `spec.schedulerName` as written (`None` if unset; the API server
    /// defaults it to `default-scheduler`).
    pub fn scheduler_name(&self) -> Option<&str> {
        self.scheduler_name.as_deref()
    }

    /// `status.phase`.
    pub fn phase(&self) -> PodPhase {
        self.phase
    }

    /// Running or Pending: the pods the batch and mid formulas count
    /// (spec §2.2).
    pub fn is_active(&self) -> bool {
        matches!(self.phase, PodPhase::Running | PodPhase::Pending)
    }

    /// Succeeded or Failed.
    pub fn is_terminated(&self) -> bool {
        self.phase.is_terminated()
    }

    /// Being deleted (`metadata.deletionTimestamp` is set).
    pub fn is_terminating(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    /// The kolo QoS class "with default".
    pub fn qos(&self) -> QoSClass {
        self.qos
    }

    /// The Kubernetes QoS class (`status.qosClass`, or computed).
    pub fn kube_qos(&self) -> KubeQoSClass {
        self.kube_qos
    }

    /// The priority class "with default".
    pub fn priority_class(&self) -> PriorityClass {
        self.priority_class
    }

    /// The priority value "with default".
    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// `metadata.deletionTimestamp`.
    pub fn deletion_timestamp(&self) -> Option<Timestamp> {
        self.deletion_timestamp
    }

    /// The controller owner reference, or the first owner if none is marked
    /// controller.
    pub fn owner(&self) -> Option<&OwnerRef> {
        self.owner.as_deref()
    }

    /// The effective requests, as kube-scheduler computes them
    /// (`PodRequests` with default options):
    ///
    /// * per resource, `max(sum over app containers and sidecars, max over
    ///   init containers of (the init container + the sidecars started
    ///   before it))`, where a sidecar is an init container with
    ///   `restartPolicy: Always`;
    /// * pod-level `spec.resources.requests` (cpu, memory, hugepages) replace
    ///   the container aggregate for those resources;
    /// * plus `spec.overhead`.
    ///
    /// A container that limits a resource without requesting it requests
    /// its limit, as the API server defaults it; this matters only for specs
    /// that never went through an API server (hand-written snapshots).
    pub fn requests(&self) -> &ResourceVector {
        &self.requests
    }

    /// The effective limits (`PodLimits`): the same aggregation over
    /// container limits, pod-level limits replacing it, and the overhead
    /// added only to resources that have a non-zero limit. A resource no
    /// container limits is missing (unlimited).
    pub fn limits(&self) -> &ResourceVector {
        &self.limits
    }

    /// Binds (or with `None`, unbinds) the pod; for simulators and the
    /// scheduler's assumed state.
    pub fn set_node_name(&mut self, node: Option<&str>) {
        self.node_name = node.map(Into::into);
    }

    /// Changes the phase; for simulators.
    pub fn set_phase(&mut self, phase: PodPhase) {
        self.phase = phase;
    }

    /// Sets `metadata.uid`.
    #[must_use]
    pub fn with_uid(mut self, uid: &str) -> PodView {
        self.meta.uid = uid.into();
        self
    }

    /// Binds the pod to `node`.
    #[must_use]
    pub fn with_node_name(mut self, node: &str) -> PodView {
        self.node_name = Some(node.into());
        self
    }

    /// Sets `spec.schedulerName`.
    #[must_use]
    pub fn with_scheduler_name(mut self, scheduler: &str) -> PodView {
        self.scheduler_name = Some(scheduler.into());
        self
    }

    /// Sets the phase.
    #[must_use]
    pub fn with_phase(mut self, phase: PodPhase) -> PodView {
        self.phase = phase;
        self
    }

    /// Sets the kolo QoS class (and nothing derived from it).
    #[must_use]
    pub fn with_qos(mut self, qos: QoSClass) -> PodView {
        self.qos = qos;
        self
    }

    /// Sets the Kubernetes QoS class.
    #[must_use]
    pub fn with_kube_qos(mut self, kube_qos: KubeQoSClass) -> PodView {
        self.kube_qos = kube_qos;
        self
    }

    /// Sets the priority class and value.
    #[must_use]
    pub fn with_priority(mut self, class: PriorityClass, value: i32) -> PodView {
        self.priority_class = class;
        self.priority = value;
        self
    }

    /// Sets the effective requests.
    #[must_use]
    pub fn with_requests(mut self, requests: ResourceVector) -> PodView {
        self.requests = requests;
        self
    }

    /// Sets the effective limits.
    #[must_use]
    pub fn with_limits(mut self, limits: ResourceVector) -> PodView {
        self.limits = limits;
        self
    }

    /// Sets the creation timestamp.
    #[must_use]
    pub fn with_creation_timestamp(mut self, at: Timestamp) -> PodView {
        self.meta.creation_timestamp = Some(at);
        self
    }

    /// Marks the pod terminating since `at`.
    #[must_use]
    pub fn with_deletion_timestamp(mut self, at: Timestamp) -> PodView {
        self.deletion_timestamp = Some(at);
        self
    }

    /// Sets the owner.
    #[must_use]
    pub fn with_owner(mut self, owner: OwnerRef) -> PodView {
        self.owner = Some(Box::new(owner));
        self
    }

    /// Replaces the labels.
    #[must_use]
    pub fn with_labels(mut self, labels: StringMap) -> PodView {
        self.meta.labels = labels;
        self
    }

    /// Replaces the annotations.
    #[must_use]
    pub fn with_annotations(mut self, annotations: StringMap) -> PodView {
        self.meta.annotations = annotations;
        self
    }
}

impl HasMeta for PodView {
    fn meta(&self) -> &Meta {
        &self.meta
    }
}

impl TryFrom<&Pod> for PodView {
    type Error = PodViewError;
    fn try_from(pod: &Pod) -> Result<Self, Self::Error> {
        PodView::from_pod(pod)
    }
}

/// A field path and what is wrong there.
type FieldError = (String, ResourceError);

/// Parses one optional resource list, naming `field()` on error (the closure
/// keeps the happy path free of string formatting).
fn parse_list(
    list: Option<&BTreeMap<String, KubeQuantity>>,
    field: impl FnOnce() -> String,
) -> Result<ResourceVector, FieldError> {
    match list {
        None => Ok(ResourceVector::EMPTY),
        Some(list) => ResourceVector::from_object_list(list).map_err(|e| (field(), e)),
    }
}

/// A container's requests (defaulted from its limits, as the API server
/// does) and limits.
fn container_resources(
    c: &Container,
    kind: &str,
) -> Result<(ResourceVector, ResourceVector), FieldError> {
    let res = c.resources.as_ref();
    let mut requests = parse_list(res.and_then(|r| r.requests.as_ref()), || {
        format!("spec.{kind}[{:?}].resources.requests", c.name)
    })?;
    let limits = parse_list(res.and_then(|r| r.limits.as_ref()), || {
        format!("spec.{kind}[{:?}].resources.limits", c.name)
    })?;
    for (name, amount) in limits.iter() {
        if !requests.contains(name) {
            requests.set(name, amount);
        }
    }
    Ok((requests, limits))
}

/// `aggregateContainerResourcesByFn` of component-helpers, for one kind of
/// list.
#[derive(Default)]
struct Aggregate {
    /// App containers plus sidecars.
    sum: ResourceVector,
    /// Sidecars started so far.
    sidecars: ResourceVector,
    /// Max over init containers of their footprint while initialising.
    init_max: ResourceVector,
}

impl Aggregate {
    fn app(&mut self, v: &ResourceVector) {
        self.sum = self.sum.saturating_add(v);
    }

    fn init(&mut self, v: &ResourceVector, restartable: bool) {
        let footprint = if restartable {
            // A sidecar keeps running next to the app containers, and next
            // to every init container that starts after it.
            self.sum = self.sum.saturating_add(v);
            self.sidecars = self.sidecars.saturating_add(v);
            self.sidecars
        } else {
            v.saturating_add(&self.sidecars)
        };
        self.init_max = self.init_max.max(&footprint);
    }

    fn finish(&self) -> ResourceVector {
        self.sum.max(&self.init_max)
    }
}

/// The resources that pod-level `spec.resources` can set (KEP-2837).
fn is_pod_level(name: ResourceName) -> bool {
    match name {
        ResourceName::Cpu | ResourceName::Memory => true,
        ResourceName::Extended(e) => is_hugepages(e.name()),
        _ => false,
    }
}

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// Only the pod-level-capable resources of `v`.
fn pod_level_only(v: &ResourceVector) -> ResourceVector {
    v.iter().filter(|(n, _)| is_pod_level(*n)).collect()
}

/// Effective requests and limits (see [`PodView::requests`]).
fn effective_resources(pod: &Pod) -> Result<(ResourceVector, ResourceVector), FieldError> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok((ResourceVector::EMPTY, ResourceVector::EMPTY));
    };
    let mut requests = Aggregate::default();
    let mut limits = Aggregate::default();
    for c in &spec.containers {
        let (req, lim) = container_resources(c, "containers")?;
        requests.app(&req);
        limits.app(&lim);
    }
    for c in spec.init_containers.iter().flatten() {
        let (req, lim) = container_resources(c, "initContainers")?;
        let restartable = c.restart_policy.as_deref() == Some("Always");
        requests.init(&req, restartable);
        limits.init(&lim, restartable);
    }
    let mut requests = requests.finish();
    let mut limits = limits.finish();

    if let Some(pod_res) = spec.resources.as_ref() {
        let mut pod_req = pod_level_only(&parse_list(pod_res.requests.as_ref(), || {
            "spec.resources.requests".to_owned()
        })?);
        let pod_lim = pod_level_only(&parse_list(pod_res.limits.as_ref(), || {
            "spec.resources.limits".to_owned()
        })?);
        // The API server's pod-level defaulting (`defaultPodRequests`): a
        // resource with a pod-level limit but no pod-level request requests
        // the container aggregate, or the limit when no container requests it
        // (always the limit for hugepages). Defaulting to the aggregate
        // changes nothing below, so only the limit case is applied.
        for (name, limit) in pod_lim.iter() {
            let from_containers = requests.contains(name)
                && !matches!(name, ResourceName::Extended(e) if is_hugepages(e.name()));
            if !pod_req.contains(name) && !from_containers {
                pod_req.set(name, limit);
            }
        }
        for (name, amount) in pod_req.iter() {
            requests.set(name, amount);
        }
        if !pod_req.is_empty() || !pod_lim.is_empty() {
            for (name, amount) in pod_lim.iter() {
                limits.set(name, amount);
            }
        }
    }

    if let Some(overhead) = spec.overhead.as_ref() {
        let overhead = parse_list(Some(overhead), || "spec.overhead".to_owned())?;
        requests = requests.saturating_add(&overhead);
        for (name, extra) in overhead.iter() {
            // PodLimits: overhead only raises limits that exist and are
            // non-zero; a missing limit stays unlimited.
            if let Some(limit) = limits.get(name).filter(|l| *l != 0) {
                limits.set(name, limit.saturating_add(extra));
            }
        }
    }
    Ok((requests, limits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResourceName::{BatchCpu, BatchMemory, Cpu, Memory};

    const GI: i64 = 1 << 30;
    const MI: i64 = 1 << 20;

    fn pod(yaml: &str) -> Pod {
        serde_saphyr::from_str(yaml).expect("test pod yaml")
    }

    fn v(pairs: &[(ResourceName, i64)]) -> ResourceVector {
        pairs.iter().copied().collect()
    }

    #[test]
    fn plain_pod() {
        let p = pod(r#"
metadata:
  namespace: default
  name: web-0
  uid: "1111"
  creationTimestamp: "2024-05-01T10:00:00Z"
  labels: {app: web}
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: "{huge}"
    note: kept
  ownerReferences:
  - {apiVersion: v1, kind: Other, name: x, uid: u0}
  - {apiVersion: apps/v1, kind: StatefulSet, name: web, uid: u1, controller: true}
spec:
  nodeName: node-1
  schedulerName: kolo-scheduler
  containers:
  - name: app
    resources:
      requests: {cpu: 500m, memory: 1Gi}
      limits: {cpu: "1", memory: 1Gi}
  - name: log
    resources:
      requests: {cpu: 100m, memory: 128Mi}
status:
  phase: Running
"#);
        let view = PodView::from_pod(&p).unwrap();
        assert_eq!(view.key(), "default/web-0");
        assert_eq!(view.uid(), "1111");
        assert_eq!(view.node_name(), Some("node-1"));
        assert_eq!(view.scheduler_name(), Some("kolo-scheduler"));
        assert_eq!(view.phase(), PodPhase::Running);
        assert!(view.is_active() && !view.is_terminated() && !view.is_terminating());
        assert_eq!(*view.requests(), v(&[(Cpu, 600), (Memory, GI + 128 * MI)]));
        // Only `app` limits anything: the sum covers the containers that do.
        assert_eq!(*view.limits(), v(&[(Cpu, 1000), (Memory, GI)]));
        assert_eq!(view.label("app"), Some("web"));
        assert_eq!(view.annotation("note"), Some("kept"));
        assert_eq!(view.annotations().len(), 1, "last-applied is dropped");
        let owner = view.owner().unwrap();
        assert_eq!((&*owner.kind, &*owner.name, owner.controller), ("StatefulSet", "web", true));
        assert_eq!(view.creation_timestamp().unwrap().to_string(), "2024-05-01T10:00:00Z");
        assert_eq!(view.qos(), resolve_qos(&p));
        assert_eq!(view.priority_class(), kolo_api::priority::resolve_priority(&p));
        assert_eq!(view.priority(), kolo_api::priority::priority_value(&p));
    }

    #[test]
    fn init_container_larger_than_sum() {
        let p = pod(r#"
metadata: {namespace: ns, name: p}
spec:
  initContainers:
  - name: migrate
    resources: {requests: {cpu: "2", memory: 64Mi}}
  - name: warm
    resources: {requests: {memory: 3Gi}}
  containers:
  - name: a
    resources: {requests: {cpu: 500m, memory: 1Gi}}
  - name: b
    resources: {requests: {cpu: 500m, memory: 1Gi}}
"#);
        let view = PodView::from_pod(&p).unwrap();
        // cpu: max(1000, 2000); memory: max(2Gi, 3Gi).
        assert_eq!(*view.requests(), v(&[(Cpu, 2000), (Memory, 3 * GI)]));
    }

    #[test]
    fn sidecars_add_to_sum_and_to_later_init_containers() {
        let p = pod(r#"
metadata: {namespace: ns, name: p}
spec:
  initContainers:
  - name: before
    resources: {requests: {cpu: "5"}}
  - name: proxy
    restartPolicy: Always
    resources: {requests: {cpu: "1"}, limits: {cpu: "2"}}
  - name: after
    resources: {requests: {cpu: "3"}, limits: {cpu: "3"}}
  containers:
  - name: app
    resources: {requests: {cpu: "2"}, limits: {cpu: "4"}}
"#);
        let view = PodView::from_pod(&p).unwrap();
        // App 2 + sidecar 1 = 3; init: before 5 (no sidecar yet), after 3+1 = 4.
        assert_eq!(*view.requests(), v(&[(Cpu, 5000)]));
        // `before` has no limit but its request defaults nothing into limits.
        // Limits: app 4 + sidecar 2 = 6; init: after 3+2 = 5.
        assert_eq!(*view.limits(), v(&[(Cpu, 6000)]));

        let q = pod(r#"
metadata: {namespace: ns, name: q}
spec:
  initContainers:
  - name: proxy
    restartPolicy: Always
    resources: {requests: {cpu: "1"}}
  - name: big
    resources: {requests: {cpu: "4"}}
  containers:
  - name: app
    resources: {requests: {cpu: "2"}}
"#);
        // Sum 3; init `big` runs beside the sidecar: 5.
        assert_eq!(*PodView::from_pod(&q).unwrap().requests(), v(&[(Cpu, 5000)]));
    }

    #[test]
    fn overhead_added_to_requests_and_nonzero_limits() {
        let p = pod(r#"
metadata: {namespace: ns, name: p}
spec:
  overhead: {cpu: 250m, memory: 120Mi}
  containers:
  - name: app
    resources:
      requests: {cpu: "1", memory: 1Gi}
      limits: {cpu: "2"}
"#);
        let view = PodView::from_pod(&p).unwrap();
        assert_eq!(*view.requests(), v(&[(Cpu, 1250), (Memory, GI + 120 * MI)]));
        // No memory limit: it stays unlimited, overhead does not create one.
        assert_eq!(*view.limits(), v(&[(Cpu, 2250)]));
    }

    #[test]
    fn limits_default_requests_like_the_api_server() {
        let p = pod(r#"
metadata: {namespace: ns, name: p}
spec:
  containers:
  - name: app
    resources:
      requests: {cpu: 100m}
      limits: {cpu: 200m, memory: 256Mi}
"#);
        let view = PodView::from_pod(&p).unwrap();
        assert_eq!(*view.requests(), v(&[(Cpu, 100), (Memory, 256 * MI)]));
    }

    #[test]
    fn pod_level_resources_replace_container_aggregate() {
        let p = pod(r#"
metadata: {namespace: ns, name: p}
spec:
  resources:
    requests: {cpu: "3"}
    limits: {cpu: "4", memory: 2Gi}
  containers:
  - name: app
    resources: {requests: {cpu: "1"}}
"#);
        let view = PodView::from_pod(&p).unwrap();
        // cpu from the pod-level request; memory defaulted from the pod-level
        // limit because no container requests memory.
        assert_eq!(*view.requests(), v(&[(Cpu, 3000), (Memory, 2 * GI)]));
        assert_eq!(*view.limits(), v(&[(Cpu, 4000), (Memory, 2 * GI)]));
    }

    #[test]
    fn batch_requests_and_katalyst_aliases() {
        let p = pod(r#"
metadata:
  namespace: ns
  name: be
  labels: {koordinator.sh/qosClass: BE, koordinator.sh/priority-class: koord-batch}
spec:
  priority: 5200
  containers:
  - name: koord
    resources:
      requests: {kubernetes.io/batch-cpu: "1000", kubernetes.io/batch-memory: 1Gi}
      limits: {kubernetes.io/batch-cpu: "1000", kubernetes.io/batch-memory: 1Gi}
  - name: katalyst
    resources:
      requests:
        resource.katalyst.kubewharf.io/reclaimed_millicpu: 2k
        resource.katalyst.kubewharf.io/reclaimed_memory: 512Mi
"#);
        let view = PodView::from_pod(&p).unwrap();
        assert_eq!(*view.requests(), v(&[(BatchCpu, 3000), (BatchMemory, GI + 512 * MI)]));
        assert_eq!(*view.limits(), v(&[(BatchCpu, 1000), (BatchMemory, GI)]));
        assert_eq!(view.qos(), QoSClass::BE);
        assert_eq!(view.priority_class(), PriorityClass::Batch);
        assert_eq!(view.priority(), 5200);
    }

    #[test]
    fn best_effort_pod_without_requests() {
        let p = pod(r#"
metadata: {namespace: ns, name: empty}
spec:
  containers:
  - name: app
"#);
        let view = PodView::from_pod(&p).unwrap();
        assert!(view.requests().is_empty());
        assert!(view.limits().is_empty());
        assert_eq!(view.phase(), PodPhase::Pending, "no status reads as Pending");
        assert!(!view.is_assigned());
        // Spec §0.2: an empty pod is BE, hence Batch with priority 5500.
        assert_eq!(view.qos(), QoSClass::BE);
        assert_eq!(view.kube_qos(), KubeQoSClass::BestEffort);
        assert_eq!(view.priority_class(), PriorityClass::Batch);
        assert_eq!(view.priority(), 5500);
        assert_eq!(view, PodView::new("ns", "empty"));
    }

    #[test]
    fn terminated_and_terminating() {
        let p = pod(r#"
metadata: {namespace: ns, name: done, deletionTimestamp: "2024-05-01T10:00:00Z"}
spec: {containers: [{name: app}]}
status: {phase: Succeeded}
"#);
        let view = PodView::from_pod(&p).unwrap();
        assert!(view.is_terminated() && view.is_terminating() && !view.is_active());
    }

    #[test]
    fn malformed_quantity_error_names_pod_container_field_and_value() {
        let p = pod(r#"
metadata: {namespace: prod, name: api-7}
spec:
  initContainers:
  - name: setup
    resources: {limits: {memory: 12Qi}}
  containers:
  - name: app
"#);
        let err = PodView::from_pod(&p).unwrap_err().to_string();
        for needle in ["prod/api-7", "initContainers", "\"setup\"", "limits", "memory", "12Qi"] {
            assert!(err.contains(needle), "{needle:?} missing from {err}");
        }
        let q = pod(r#"
metadata: {namespace: prod, name: api-8}
spec:
  overhead: {cpu: lots}
  containers: [{name: app}]
"#);
        let err = PodView::from_pod(&q).unwrap_err().to_string();
        assert!(err.contains("spec.overhead") && err.contains("lots"), "{err}");
    }

    #[test]
    fn footprint() {
        // Two 200-byte vectors dominate; keep the rest small (a snapshot
        // holds 50,000 of these).
        assert!(std::mem::size_of::<PodView>() <= 600, "{}", std::mem::size_of::<PodView>());
    }
}
