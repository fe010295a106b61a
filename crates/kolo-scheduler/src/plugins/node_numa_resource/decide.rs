//! The plugin's decisions, pure: PreFilter ([`PodNumaRequest::from_pod`],
//! §6.4), Filter ([`filter`], §6.5), Reserve ([`reserve`], §6.6), what
//! PreBind writes ([`resource_status_annotation`],
//! [`resource_spec_write_back`]) and Score ([`score`], §6.8).
//!
//! The framework adapter owns the state: it builds a [`NodeTopology`] per
//! node change, keeps a [`NodeAllocation`] per node (recording each
//! Reserve with [`NumaAllocationResult::record`], releasing on Unreserve and
//! pod deletion, seeding bound pods with [`pod_allocation_from_status`]),
//! and a [`PodNumaRequest`] per scheduling cycle.

use kolo_api::katalyst::KatalystQoSLevel;
use kolo_api::names::{annotation, label};
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::pod::PodView;
use kolo_core::resources::{ResourceName, ResourceVector};

use super::allocation::{NodeAllocation, PodAllocation};
use super::annotations::{
    AnnotationError, CpuBindPolicy, CpuExclusivePolicy, NumaAllocateStrategy, NumaNodeResources,
    NumaTopologyPolicy, NumaTopologySpec, ResourceSpec, ResourceStatus,
};
use super::args::{NodeNUMAResourceArgs, ScoringStrategyType};
use super::cpu_accumulator::{
    AllocateError, CpuSetRequest, allocate_cpuset, can_allocate_required,
};
use super::cpuset::CpuSet;
use super::hints::{
    CpuSplit, NotAdmitted, NumaHint, NumaScorer, admit, distribute_evenly, generate_hints,
    numa_available,
};
use super::score::weighted_score_of;
use super::topology::NodeTopology;
use kolo_core::HasMeta;

/// How a failure affects the pod, in kube-scheduler's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureCode {
    /// The node may fit later (after pods leave); preemption may help.
    Unschedulable,
    /// The node cannot fit this pod as long as node and pod are unchanged.
    UnschedulableAndUnresolvable,
}

/// Why NodeNUMAResource rejects a pod (on a node). The messages are
/// Koordinator's where the spec quotes them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FailureReason {
    /// A cpuset pod asks for a fractional number of CPUs.
    #[error("the requested CPUs must be integer")]
    NonIntegerCpus,
    /// Pod and node set different NUMA topology policies.
    #[error("node(s) NUMA Topology policy not match")]
    NumaPolicyMismatch,
    /// The node has no usable CPU topology.
    #[error("node(s) invalid CPU Topology")]
    InvalidCpuTopology,
    /// The node forces a bind policy other than the pod's required one.
    #[error("node(s) cpu bind policy conflicts with pod's required cpu bind policy")]
    BindPolicyConflict,
    /// Whole cores are required but the CPU count is not a multiple of a
    /// core's threads.
    #[error("node(s) requested cpus not multiple cpus per core")]
    NotMultipleOfCpusPerCore,
    /// The amplified CPU request does not fit.
    #[error("Insufficient amplified cpu")]
    InsufficientAmplifiedCpu,
    /// No cpuset could be chosen.
    #[error("{0}")]
    Allocate(AllocateError),
    /// The NUMA topology policy admits no set of NUMA nodes (kolo's wording;
    /// the spec does not quote Koordinator's).
    #[error("node(s) cannot satisfy NUMA topology policy {0}")]
    NumaAffinity(NumaTopologyPolicy),
    /// The chosen NUMA nodes cannot hold the request
    /// (`Insufficient NUMA cpu`, ...).
    #[error("{0}")]
    InsufficientNuma(String),
    /// A pod annotation is malformed.
    #[error("{0}")]
    Annotation(AnnotationError),
}

/// A rejection: the reason and whether it is resolvable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct NumaFailure {
    /// Unschedulable or UnschedulableAndUnresolvable.
    pub code: FailureCode,
    /// What is wrong.
    pub reason: FailureReason,
}

impl NumaFailure {
    fn unresolvable(reason: FailureReason) -> NumaFailure {
        NumaFailure { code: FailureCode::UnschedulableAndUnresolvable, reason }
    }

    fn unschedulable(reason: FailureReason) -> NumaFailure {
        NumaFailure { code: FailureCode::Unschedulable, reason }
    }

    /// Whether the code is UnschedulableAndUnresolvable.
    pub fn is_unresolvable(&self) -> bool {
        self.code == FailureCode::UnschedulableAndUnresolvable
    }
}

/// What a pod asks of NodeNUMAResource, resolved once per scheduling cycle
/// (PreFilter, §6.4), so that Filter on each node only compares flags.
#[derive(Debug, Clone, PartialEq)]
pub struct PodNumaRequest {
    skip: bool,
    requests: ResourceVector,
    num_cpus: usize,
    request_cpu_bind: bool,
    bind_policy: Option<CpuBindPolicy>,
    required_bind_policy: Option<CpuBindPolicy>,
    exclusive_policy: CpuExclusivePolicy,
    numa_policy: NumaTopologyPolicy,
    default_numa_strategy: NumaAllocateStrategy,
    score_kind: ScoringStrategyType,
    numa_score_kind: ScoringStrategyType,
    weights: Box<[(ResourceName, i64)]>,
    spec: ResourceSpec,
}

impl PodNumaRequest {
    /// PreFilter (§6.4).
    ///
    /// * A pod whose requests are all zero is skipped by every later step.
    /// * Only a pod whose **raw** QoS is LSE or LSR and whose priority class
    ///   (with default) is Prod may ask for a cpuset: its policy is the
    ///   preferred one (empty or `Default` → `defaultCPUBindPolicy`),
    ///   replaced by the required one when set (`Default` → the default).
    /// * With FullPCPUs or SpreadByPCPUs, a fractional cpu request is
    ///   UnschedulableAndUnresolvable "the requested CPUs must be integer";
    ///   a positive one requests a cpuset.
    ///
    /// A malformed `resource-spec` or `numa-topology-spec` annotation is
    /// UnschedulableAndUnresolvable, naming the annotation and field
    /// (Koordinator returns an internal error and retries forever).
    pub fn from_pod(
        pod: &PodView,
        args: &NodeNUMAResourceArgs,
    ) -> Result<PodNumaRequest, NumaFailure> {
        let annotation_error = |e| NumaFailure::unresolvable(FailureReason::Annotation(e));
        let numa_spec = pod
            .annotation(annotation::NUMA_TOPOLOGY_SPEC)
            .map(NumaTopologySpec::parse)
            .transpose()
            .map_err(annotation_error)?
            .unwrap_or_default();
        let requests = *pod.requests();
        let cpu = requests.cpu();
        let mut req = PodNumaRequest {
            skip: requests.is_zero(),
            requests,
            num_cpus: usize::try_from(cpu / 1000).unwrap_or(0),
            request_cpu_bind: false,
            bind_policy: None,
            required_bind_policy: None,
            exclusive_policy: CpuExclusivePolicy::None,
            numa_policy: numa_spec.numa_topology_policy.unwrap_or(NumaTopologyPolicy::None),
            default_numa_strategy: args.numa_allocate_strategy(),
            score_kind: args.scoring_strategy.strategy_type,
            numa_score_kind: args.numa_scoring_strategy.strategy_type,
            weights: args.weights().into_boxed_slice(),
            spec: ResourceSpec::default(),
        };
        if req.skip || !allow_use_cpuset(pod) {
            return Ok(req);
        }
        let spec = pod
            .annotation(annotation::RESOURCE_SPEC)
            .map(ResourceSpec::parse)
            .transpose()
            .map_err(annotation_error)?
            .unwrap_or_default();
        let default = args.default_cpu_bind_policy;
        let resolve = |p: CpuBindPolicy| if p == CpuBindPolicy::Default { default } else { p };
        let required = spec.required_cpu_bind_policy.map(resolve);
        let policy =
            required.unwrap_or_else(|| spec.preferred_cpu_bind_policy.map_or(default, resolve));
        req.required_bind_policy = required;
        if policy.binds_cpus() {
            if cpu % 1000 != 0 {
                return Err(NumaFailure::unresolvable(FailureReason::NonIntegerCpus));
            }
            if cpu > 0 {
                req.request_cpu_bind = true;
                req.bind_policy = Some(policy);
                req.exclusive_policy =
                    spec.preferred_cpu_exclusive_policy.unwrap_or(CpuExclusivePolicy::None);
            }
        }
        req.spec = spec;
        Ok(req)
    }

    /// The pod requests nothing: every step passes it untouched.
    pub fn skip(&self) -> bool {
        self.skip
    }

    /// PreFilter decided the pod needs a cpuset (a node's bind-policy label
    /// can still add one, §10.13).
    pub fn request_cpu_bind(&self) -> bool {
        self.request_cpu_bind
    }

    /// The resolved bind policy (required if set, else preferred), when the
    /// pod may have a cpuset.
    pub fn bind_policy(&self) -> Option<CpuBindPolicy> {
        self.bind_policy
    }

    /// The pod's required bind policy (`Default` resolved).
    pub fn required_bind_policy(&self) -> Option<CpuBindPolicy> {
        self.required_bind_policy
    }

    /// The pod's exclusive policy.
    pub fn exclusive_policy(&self) -> CpuExclusivePolicy {
        self.exclusive_policy
    }

    /// The pod's own NUMA topology policy.
    pub fn numa_policy(&self) -> NumaTopologyPolicy {
        self.numa_policy
    }

    /// `cpu request / 1000`.
    pub fn num_cpus(&self) -> usize {
        self.num_cpus
    }

    /// The pod's effective requests.
    pub fn requests(&self) -> &ResourceVector {
        &self.requests
    }
}

/// AllowUseCPUSet: raw QoS LSE or LSR, and priority class Prod.
fn allow_use_cpuset(pod: &PodView) -> bool {
    matches!(raw_qos(pod), QoSClass::LSE | QoSClass::LSR)
        && pod.priority_class() == PriorityClass::Prod
}

/// The QoS class the pod states explicitly, not the one derived from its
/// Kubernetes QoS. Koordinator reads only its `koordinator.sh/qosClass`
/// label; kolo also honours a Katalyst `qos_level` annotation (which
/// [`PodView::qos`] already resolved with precedence) when it and its
/// memory enhancement are well-formed, so Katalyst's `dedicated_cores` pods
/// get cpusets as they would under Katalyst.
pub fn raw_qos(pod: &PodView) -> QoSClass {
    let katalyst = pod.annotation(annotation::KATALYST_QOS_LEVEL).and_then(KatalystQoSLevel::parse);
    let enhancement_ok =
        pod.annotation(annotation::KATALYST_MEMORY_ENHANCEMENT).is_none_or(|json| {
            serde_json::from_str::<std::collections::BTreeMap<String, String>>(json).is_ok()
        });
    if katalyst.is_some() && enhancement_ok {
        return pod.qos();
    }
    pod.label(label::QOS_CLASS).map_or(QoSClass::None, QoSClass::from_label_value)
}

/// The per-node resolution of a pod's request (Filter steps 1, 2 and 4).
#[derive(Debug, Clone, Copy)]
struct Resolved {
    numa_policy: NumaTopologyPolicy,
    request_cpu_bind: bool,
    bind_policy: CpuBindPolicy,
    required: bool,
    node_forced: bool,
    strategy: NumaAllocateStrategy,
}

fn resolve(req: &PodNumaRequest, node: &NodeTopology) -> Result<Resolved, NumaFailure> {
    let node_policy = node.numa_policy();
    if req.numa_policy != NumaTopologyPolicy::None
        && node_policy != NumaTopologyPolicy::None
        && req.numa_policy != node_policy
    {
        return Err(NumaFailure::unresolvable(FailureReason::NumaPolicyMismatch));
    }
    let numa_policy =
        if req.numa_policy != NumaTopologyPolicy::None { req.numa_policy } else { node_policy };
    let forced = node.cpu_bind_policy().required();
    let cpu = req.requests.cpu();
    let mut request_cpu_bind = req.request_cpu_bind;
    if !request_cpu_bind && forced.is_some() && cpu > 0 {
        // §10.13: the node's label gives even LS pods a cpuset.
        if cpu % 1000 != 0 {
            return Err(NumaFailure::unresolvable(FailureReason::NonIntegerCpus));
        }
        request_cpu_bind = true;
    }
    let (bind_policy, required) = match (forced, req.required_bind_policy) {
        (Some(p), _) => (p, true),
        (None, Some(p)) => (p, true),
        (None, None) => (req.bind_policy.unwrap_or(CpuBindPolicy::FullPCPUs), false),
    };
    Ok(Resolved {
        numa_policy,
        request_cpu_bind,
        bind_policy,
        required,
        node_forced: forced.is_some(),
        strategy: node.numa_allocate_strategy().unwrap_or(req.default_numa_strategy),
    })
}

/// Filter (§6.5). Returns quickly, without allocating, for the common pod:
/// no cpuset and no NUMA policy on a node with no NUMA policy and no bind
/// policy label.
pub fn filter(
    req: &PodNumaRequest,
    node: &NodeTopology,
    alloc: &NodeAllocation,
) -> Result<(), NumaFailure> {
    if req.skip
        || (!req.request_cpu_bind && req.numa_policy == NumaTopologyPolicy::None && node.is_plain())
    {
        return Ok(());
    }
    let r = resolve(req, node)?;
    if r.request_cpu_bind {
        let Some(topology) = node.usable_topology() else {
            return Err(NumaFailure::unresolvable(FailureReason::InvalidCpuTopology));
        };
        if r.node_forced && req.required_bind_policy.is_some_and(|p| p != r.bind_policy) {
            return Err(NumaFailure::unresolvable(FailureReason::BindPolicyConflict));
        }
        if r.required
            && r.bind_policy == CpuBindPolicy::FullPCPUs
            && !req.num_cpus.is_multiple_of(topology.cpus_per_core())
        {
            return Err(NumaFailure::unresolvable(FailureReason::NotMultipleOfCpusPerCore));
        }
        if r.required
            && r.numa_policy == NumaTopologyPolicy::None
            && !can_allocate_required(
                topology,
                alloc,
                node.reserved_cpus(),
                &cpuset_request(req, &r),
            )
        {
            return Err(NumaFailure::unschedulable(FailureReason::Allocate(
                AllocateError::NotEnoughCpus,
            )));
        }
    }
    if matches!(r.numa_policy, NumaTopologyPolicy::Restricted | NumaTopologyPolicy::SingleNUMANode)
    {
        let hints = pod_hints(req, &r, node, alloc);
        admit(r.numa_policy, &hints).map_err(|NotAdmitted| {
            NumaFailure::unschedulable(FailureReason::NumaAffinity(r.numa_policy))
        })?;
    }
    Ok(())
}

fn cpuset_request(req: &PodNumaRequest, r: &Resolved) -> CpuSetRequest {
    CpuSetRequest {
        num_cpus: req.num_cpus,
        bind_policy: r.bind_policy,
        required: r.required,
        exclusive_policy: req.exclusive_policy,
        numa_strategy: r.strategy,
    }
}

fn pod_hints(
    req: &PodNumaRequest,
    r: &Resolved,
    node: &NodeTopology,
    alloc: &NodeAllocation,
) -> Vec<NumaHint> {
    let required = (r.request_cpu_bind && r.required).then_some(r.bind_policy);
    let available = numa_available(node, alloc, required);
    let scorer = NumaScorer { kind: req.numa_score_kind, weights: &req.weights };
    generate_hints(&available, node.numa_allocatable(), &req.requests, r.numa_policy, &scorer)
}

/// What Reserve chose for a pod on a node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NumaAllocationResult {
    /// The bound CPUs (empty: no cpuset).
    pub cpuset: CpuSet,
    /// The resources taken from each NUMA node (empty without a NUMA
    /// policy hint).
    pub numa_resources: Vec<NumaNodeResources>,
    /// The bind policy used, when a cpuset was chosen.
    pub bind_policy: Option<CpuBindPolicy>,
    /// Whether the node forced `bind_policy`.
    pub node_forced: bool,
    /// The pod's exclusive policy.
    pub exclusive_policy: CpuExclusivePolicy,
}

impl NumaAllocationResult {
    /// Nothing was allocated (the adapter need not record or annotate).
    pub fn is_empty(&self) -> bool {
        self.cpuset.is_empty() && self.numa_resources.is_empty()
    }

    /// Records the result in the node's allocation state (Reserve step 4);
    /// undo with [`NodeAllocation::release`] on Unreserve.
    pub fn record(&self, alloc: &mut NodeAllocation, pod_key: &str) {
        alloc.add(pod_key, self.cpuset.clone(), self.exclusive_policy, self.numa_resources.clone());
    }
}

/// Reserve (§6.6): the NUMA nodes by hint (when a NUMA policy applies),
/// the resources split across them, then the cpuset. Does not modify
/// `alloc`; see [`NumaAllocationResult::record`].
pub fn reserve(
    req: &PodNumaRequest,
    node: &NodeTopology,
    alloc: &NodeAllocation,
) -> Result<NumaAllocationResult, NumaFailure> {
    let mut result = NumaAllocationResult {
        exclusive_policy: req.exclusive_policy,
        ..NumaAllocationResult::default()
    };
    if req.skip {
        return Ok(result);
    }
    let r = resolve(req, node)?;
    if r.numa_policy != NumaTopologyPolicy::None {
        let hints = pod_hints(req, &r, node, alloc);
        let hint = admit(r.numa_policy, &hints).map_err(|NotAdmitted| {
            NumaFailure::unschedulable(FailureReason::NumaAffinity(r.numa_policy))
        })?;
        if let Some(hint) = hint {
            let split = match (r.request_cpu_bind, r.required, r.bind_policy) {
                (false, _, _) => CpuSplit::Milli,
                (true, true, CpuBindPolicy::FullPCPUs) => {
                    CpuSplit::WholeCores(node.usable_topology().map_or(1, |t| t.cpus_per_core()))
                }
                (true, _, _) => CpuSplit::WholeCpus,
            };
            let required = (r.request_cpu_bind && r.required).then_some(r.bind_policy);
            let available = numa_available(node, alloc, required);
            result.numa_resources =
                distribute_evenly(&req.requests, &available, &hint.nodes, split).map_err(
                    |reasons| {
                        NumaFailure::unschedulable(FailureReason::InsufficientNuma(
                            reasons.join(", "),
                        ))
                    },
                )?;
        }
    }
    if r.request_cpu_bind {
        let Some(topology) = node.usable_topology() else {
            return Err(NumaFailure::unresolvable(FailureReason::InvalidCpuTopology));
        };
        result.cpuset = allocate_cpuset(
            topology,
            alloc,
            node.reserved_cpus(),
            &CpuSet::new(),
            &cpuset_request(req, &r),
            &result.numa_resources,
        )
        .map_err(|e| NumaFailure::unschedulable(FailureReason::Allocate(e)))?;
        result.bind_policy = Some(r.bind_policy);
        result.node_forced = r.node_forced;
    }
    Ok(result)
}

/// The `scheduling.koordinator.sh/resource-status` value PreBind writes:
/// `{"cpuset":"0-3","numaNodeResources":[{"node":0,"resources":{"cpu":"4","memory":"8Gi"}}]}`.
pub fn resource_status_annotation(result: &NumaAllocationResult) -> String {
    ResourceStatus {
        cpuset: result.cpuset.clone(),
        numa_node_resources: result.numa_resources.clone(),
    }
    .to_json()
}

/// The `scheduling.koordinator.sh/resource-spec` value PreBind writes back,
/// if any: when the pod got a cpuset but left its policy unspecified or
/// `Default`, the resolved policy is recorded (as preferred, and also as
/// required when the node forced it), so the node agent and later
/// schedulers see what was decided. Other fields are kept.
pub fn resource_spec_write_back(
    req: &PodNumaRequest,
    result: &NumaAllocationResult,
) -> Option<String> {
    let policy = result.bind_policy?;
    let unspecified = |p: Option<CpuBindPolicy>| matches!(p, None | Some(CpuBindPolicy::Default));
    let mut spec = req.spec.clone();
    let old = spec.clone();
    if unspecified(spec.preferred_cpu_bind_policy) && spec.required_cpu_bind_policy.is_none() {
        spec.preferred_cpu_bind_policy = Some(policy);
    }
    if spec.required_cpu_bind_policy == Some(CpuBindPolicy::Default)
        || (result.node_forced && spec.required_cpu_bind_policy.is_none())
    {
        spec.required_cpu_bind_policy = Some(policy);
    }
    (spec != old).then(|| spec.to_json())
}

/// Rebuilds what an already bound pod holds from its `resource-status`
/// (and the exclusive policy of its `resource-spec`), to seed a
/// [`NodeAllocation`] at start-up or on informer events. `Ok(None)` when
/// the pod holds nothing.
pub fn pod_allocation_from_status(pod: &PodView) -> Result<Option<PodAllocation>, AnnotationError> {
    let Some(json) = pod.annotation(annotation::RESOURCE_STATUS) else {
        return Ok(None);
    };
    let status = ResourceStatus::parse(json)?;
    if status.cpuset.is_empty() && status.numa_node_resources.is_empty() {
        return Ok(None);
    }
    let exclusive_policy = match pod.annotation(annotation::RESOURCE_SPEC) {
        Some(spec) => ResourceSpec::parse(spec)?.preferred_cpu_exclusive_policy,
        None => None,
    };
    Ok(Some(PodAllocation {
        cpuset: status.cpuset,
        exclusive_policy: exclusive_policy.unwrap_or(CpuExclusivePolicy::None),
        numa_resources: status.numa_node_resources,
    }))
}

/// `amount × ratio`, truncated (Koordinator's `MultiplyMilliQuant`).
fn amplify(amount: i64, ratio: f64) -> i64 {
    (amount as f64 * ratio) as i64
}

/// The node's requested cpu with the cpuset-bound CPUs counted amplified,
/// and the pod's cpu (amplified when it gets a cpuset): a bound CPU is a
/// whole physical CPU, worth `ratio` amplified CPUs of the node's
/// (amplified) allocatable.
fn amplified_cpu(
    ratio: f64,
    request_cpu_bind: bool,
    pod_cpu: i64,
    node_requested_cpu: i64,
    alloc: &NodeAllocation,
) -> (i64, i64) {
    let bound = alloc.allocated_cpus().len() as i64 * 1000;
    let requested = node_requested_cpu.saturating_sub(bound).saturating_add(amplify(bound, ratio));
    let pod = if request_cpu_bind { amplify(pod_cpu, ratio) } else { pod_cpu };
    (requested, pod)
}

/// Filter step 3, the amplification check: on a node whose
/// `resource-amplification-ratio.cpu` is above 1, the pod's cpu must fit
/// `allocatable − requested` with cpuset-bound CPUs re-amplified. Separate
/// from [`filter`] because it needs the node's requested cpu, which the
/// framework's node info holds (sum of the pods' requests, milli-cores).
pub fn check_amplified_cpu(
    req: &PodNumaRequest,
    node: &NodeTopology,
    alloc: &NodeAllocation,
    node_requested_cpu: i64,
) -> Result<(), NumaFailure> {
    let Some(ratio) = node.cpu_amplification_ratio() else {
        return Ok(());
    };
    if req.skip {
        return Ok(());
    }
    let r = resolve(req, node)?;
    let (requested, pod) =
        amplified_cpu(ratio, r.request_cpu_bind, req.requests.cpu(), node_requested_cpu, alloc);
    if pod > node.allocatable().cpu().saturating_sub(requested) {
        return Err(NumaFailure::unschedulable(FailureReason::InsufficientAmplifiedCpu));
    }
    Ok(())
}

/// Score (§6.8), in `0..=100`.
///
/// * NUMA policy None: LeastAllocated / MostAllocated (`scoringStrategy`)
///   of `node_requested + pod request` against the node's allocatable, the
///   cpu amplified as in [`check_amplified_cpu`] when the node has a ratio.
/// * Otherwise: the NUMA scorer (type of `numaScoringStrategy`, weights of
///   `scoringStrategy`, §10.12) over the NUMA nodes the pod would be placed
///   on; 0 when no hint exists.
///
/// A skipped pod, or one whose resolution fails, scores 0.
///
/// `node_requested` gives what the node's pods request of a resource (the
/// framework keeps those sums); only the scored resources are asked for, so
/// scoring a node copies no resource vector.
pub fn score(
    req: &PodNumaRequest,
    node: &NodeTopology,
    alloc: &NodeAllocation,
    node_requested: &dyn Fn(ResourceName) -> i64,
) -> i64 {
    if req.skip {
        return 0;
    }
    let Ok(r) = resolve(req, node) else {
        return 0;
    };
    if r.numa_policy == NumaTopologyPolicy::None {
        let amplified = node.cpu_amplification_ratio().map(|ratio| {
            let (node_cpu, pod_cpu) = amplified_cpu(
                ratio,
                r.request_cpu_bind,
                req.requests.cpu(),
                node_requested(ResourceName::Cpu),
                alloc,
            );
            node_cpu.saturating_add(pod_cpu)
        });
        let requested = |name: ResourceName| match (name, amplified) {
            (ResourceName::Cpu, Some(cpu)) => cpu,
            _ => node_requested(name).saturating_add(req.requests.value(name)),
        };
        return weighted_score_of(req.score_kind, &req.weights, &requested, node.allocatable());
    }
    let hints = pod_hints(req, &r, node, alloc);
    admit(r.numa_policy, &hints).ok().flatten().map_or(0, |h| h.score)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::node_numa_resource::annotations::NodeCpuBindPolicy;
    use crate::plugins::node_numa_resource::topology::CpuTopology;
    use kolo_core::pod::StringMap;

    const GI: i64 = 1 << 30;

    fn pod(
        qos_label: Option<&str>,
        class: PriorityClass,
        cpu: i64,
        annotations: &[(&str, &str)],
    ) -> PodView {
        let labels: StringMap = qos_label.map(|q| (label::QOS_CLASS, q)).into_iter().collect();
        let qos = qos_label.map_or(QoSClass::LSR, QoSClass::from_label_value);
        PodView::new("ns", "p")
            .with_labels(labels)
            .with_annotations(annotations.iter().copied().collect())
            .with_qos(qos)
            .with_priority(class, class.default_priority())
            .with_requests(ResourceVector::cpu_memory(cpu, 8 * GI))
    }

    fn lsr(cpu: i64, annotations: &[(&str, &str)]) -> PodView {
        pod(Some("LSR"), PriorityClass::Prod, cpu, annotations)
    }

    fn spec(json: &str) -> [(&str, &str); 1] {
        [(annotation::RESOURCE_SPEC, json)]
    }

    /// §6.4: (case, pod, args default, cpuset?, policy, required).
    #[test]
    fn prefilter_eligibility_table() {
        use CpuBindPolicy::{FullPCPUs, SpreadByPCPUs};
        let katalyst = [(annotation::KATALYST_QOS_LEVEL, "dedicated_cores")];
        type Case = (
            &'static str,
            PodView,
            CpuBindPolicy,
            bool,
            Option<CpuBindPolicy>,
            Option<CpuBindPolicy>,
        );
        let cases: Vec<Case> = vec![
            ("LSR prod: args default", lsr(4000, &[]), FullPCPUs, true, Some(FullPCPUs), None),
            (
                "LSE prod",
                pod(Some("LSE"), PriorityClass::Prod, 4000, &[]),
                SpreadByPCPUs,
                true,
                Some(SpreadByPCPUs),
                None,
            ),
            (
                "LSR mid: no",
                pod(Some("LSR"), PriorityClass::Mid, 4000, &[]),
                FullPCPUs,
                false,
                None,
                None,
            ),
            (
                "LS prod: no",
                pod(Some("LS"), PriorityClass::Prod, 4000, &[]),
                FullPCPUs,
                false,
                None,
                None,
            ),
            (
                "BE batch: no",
                pod(Some("BE"), PriorityClass::Batch, 4000, &[]),
                FullPCPUs,
                false,
                None,
                None,
            ),
            // Guaranteed without a label resolves to LSR, but the raw QoS is none.
            (
                "derived LSR: no",
                pod(None, PriorityClass::Prod, 4000, &[]),
                FullPCPUs,
                false,
                None,
                None,
            ),
            (
                "katalyst dedicated_cores",
                pod(None, PriorityClass::Prod, 4000, &katalyst),
                FullPCPUs,
                true,
                Some(FullPCPUs),
                None,
            ),
            (
                "preferred spread",
                lsr(4000, &spec(r#"{"preferredCPUBindPolicy":"SpreadByPCPUs"}"#)),
                FullPCPUs,
                true,
                Some(SpreadByPCPUs),
                None,
            ),
            (
                "preferred Default",
                lsr(4000, &spec(r#"{"preferredCPUBindPolicy":"Default"}"#)),
                SpreadByPCPUs,
                true,
                Some(SpreadByPCPUs),
                None,
            ),
            (
                "required Default",
                lsr(4000, &spec(r#"{"requiredCPUBindPolicy":"Default"}"#)),
                SpreadByPCPUs,
                true,
                Some(SpreadByPCPUs),
                Some(SpreadByPCPUs),
            ),
            (
                "required overrides preferred",
                lsr(
                    4000,
                    &spec(
                        r#"{"preferredCPUBindPolicy":"SpreadByPCPUs","requiredCPUBindPolicy":"FullPCPUs"}"#,
                    ),
                ),
                SpreadByPCPUs,
                true,
                Some(FullPCPUs),
                Some(FullPCPUs),
            ),
            (
                "constrained burst",
                lsr(4000, &spec(r#"{"preferredCPUBindPolicy":"ConstrainedBurst"}"#)),
                FullPCPUs,
                false,
                None,
                None,
            ),
            ("no cpu", lsr(0, &[]), FullPCPUs, false, None, None),
        ];
        for (case, pod, default, cpuset, policy, required) in cases {
            let args =
                NodeNUMAResourceArgs { default_cpu_bind_policy: default, ..Default::default() };
            let req =
                PodNumaRequest::from_pod(&pod, &args).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert!(!req.skip(), "{case}");
            assert_eq!(req.request_cpu_bind(), cpuset, "{case}");
            assert_eq!(req.bind_policy(), policy, "{case}");
            assert_eq!(req.required_bind_policy(), required, "{case}");
        }
    }

    #[test]
    fn prefilter_skip_and_errors() {
        let args = NodeNUMAResourceArgs::default();
        let empty = PodView::new("ns", "empty");
        assert!(PodNumaRequest::from_pod(&empty, &args).unwrap().skip());

        let err = PodNumaRequest::from_pod(&lsr(1500, &[]), &args).unwrap_err();
        assert!(err.is_unresolvable());
        assert_eq!(err.to_string(), "the requested CPUs must be integer");
        // Not eligible: a fractional request is fine.
        assert!(
            PodNumaRequest::from_pod(&pod(Some("LS"), PriorityClass::Prod, 1500, &[]), &args)
                .is_ok()
        );

        let err = PodNumaRequest::from_pod(
            &lsr(2000, &spec(r#"{"preferredCPUBindPolicy":"Full"}"#)),
            &args,
        )
        .unwrap_err();
        assert!(err.is_unresolvable());
        assert!(err.to_string().contains("resource-spec: preferredCPUBindPolicy"), "{err}");
        let req = PodNumaRequest::from_pod(
            &lsr(2000, &spec(r#"{"preferredCPUExclusivePolicy":"PCPULevel"}"#)),
            &args,
        )
        .unwrap();
        assert_eq!(req.exclusive_policy(), CpuExclusivePolicy::PCPULevel);
        let numa = [(annotation::NUMA_TOPOLOGY_SPEC, r#"{"numaTopologyPolicy":"SingleNUMANode"}"#)];
        let req =
            PodNumaRequest::from_pod(&pod(Some("LS"), PriorityClass::Prod, 500, &numa), &args)
                .unwrap();
        assert_eq!(req.numa_policy(), NumaTopologyPolicy::SingleNUMANode);
    }

    /// 2 sockets × 2 NUMA nodes × 4 cores × 2 threads, 64Gi (16Gi a node).
    fn node() -> NodeTopology {
        NodeTopology::new(
            CpuTopology::synthetic(2, 2, 4, 2),
            ResourceVector::cpu_memory(32_000, 64 * GI),
        )
    }

    fn request(pod: &PodView) -> PodNumaRequest {
        PodNumaRequest::from_pod(pod, &NodeNUMAResourceArgs::default()).unwrap()
    }

    fn holding(cpus: &str) -> NodeAllocation {
        let mut a = NodeAllocation::new();
        a.add("other", CpuSet::parse(cpus).unwrap(), CpuExclusivePolicy::None, Vec::new());
        a
    }

    #[test]
    fn filter_table() {
        use FailureCode::{Unschedulable as U, UnschedulableAndUnresolvable as UU};
        let ls = |cpu| pod(Some("LS"), PriorityClass::Prod, cpu, &[]);
        let single =
            [(annotation::NUMA_TOPOLOGY_SPEC, r#"{"numaTopologyPolicy":"SingleNUMANode"}"#)];
        let no_topology = NodeTopology::from_node(&kolo_core::node::NodeView::new("bare"));
        let full_only = node().with_cpu_bind_policy(NodeCpuBindPolicy::FullPCPUsOnly);
        type Case = (
            &'static str,
            PodView,
            NodeTopology,
            NodeAllocation,
            Option<(FailureCode, &'static str)>,
        );
        let cases: Vec<Case> = vec![
            ("LS pod, plain node", ls(500), node(), NodeAllocation::new(), None),
            ("cpuset pod fits", lsr(4000, &[]), node(), NodeAllocation::new(), None),
            // §10.13: the node label gives an LS pod a cpuset...
            (
                "LS pod, FullPCPUsOnly node",
                ls(2000),
                full_only.clone(),
                NodeAllocation::new(),
                None,
            ),
            // ...so its request must be integer.
            (
                "LS fractional, FullPCPUsOnly node",
                ls(500),
                full_only.clone(),
                NodeAllocation::new(),
                Some((UU, "the requested CPUs must be integer")),
            ),
            (
                "LS odd, FullPCPUsOnly node",
                ls(3000),
                full_only.clone(),
                NodeAllocation::new(),
                Some((UU, "node(s) requested cpus not multiple cpus per core")),
            ),
            (
                "LS pod, FullPCPUsOnly node full",
                ls(4000),
                full_only.clone(),
                holding("0-30"),
                Some((U, "not enough cpus available to satisfy request")),
            ),
            (
                "NUMA policy mismatch",
                pod(Some("LS"), PriorityClass::Prod, 500, &single),
                node().with_numa_policy(NumaTopologyPolicy::Restricted),
                NodeAllocation::new(),
                Some((UU, "node(s) NUMA Topology policy not match")),
            ),
            (
                "no topology",
                lsr(4000, &[]),
                no_topology,
                NodeAllocation::new(),
                Some((UU, "node(s) invalid CPU Topology")),
            ),
            (
                "policy conflict",
                lsr(4000, &spec(r#"{"requiredCPUBindPolicy":"SpreadByPCPUs"}"#)),
                full_only.clone(),
                NodeAllocation::new(),
                Some((UU, "node(s) cpu bind policy conflicts with pod's required cpu bind policy")),
            ),
            (
                "same required policy",
                lsr(4000, &spec(r#"{"requiredCPUBindPolicy":"FullPCPUs"}"#)),
                full_only,
                NodeAllocation::new(),
                None,
            ),
            (
                "required FullPCPUs, odd count",
                lsr(3000, &spec(r#"{"requiredCPUBindPolicy":"FullPCPUs"}"#)),
                node(),
                NodeAllocation::new(),
                Some((UU, "node(s) requested cpus not multiple cpus per core")),
            ),
            // cpus 0-28 held: 3 CPUs left but only core 15 (30,31) is whole.
            (
                "required FullPCPUs, partly used cores",
                lsr(4000, &spec(r#"{"requiredCPUBindPolicy":"FullPCPUs"}"#)),
                node(),
                holding("0-28"),
                Some((U, "not enough cpus available to satisfy request")),
            ),
            // Preferred only: Filter does not try the allocation.
            ("preferred, full node", lsr(4000, &[]), node(), holding("0-31"), None),
            (
                "required spread",
                lsr(3000, &spec(r#"{"requiredCPUBindPolicy":"SpreadByPCPUs"}"#)),
                node(),
                holding("0-28"),
                Some((U, "not enough cpus available to satisfy request")),
            ),
            (
                "single NUMA fits",
                pod(Some("LS"), PriorityClass::Prod, 6000, &single),
                node(),
                NodeAllocation::new(),
                None,
            ),
            (
                "single NUMA too big",
                pod(Some("LS"), PriorityClass::Prod, 9000, &single),
                node(),
                NodeAllocation::new(),
                Some((U, "node(s) cannot satisfy NUMA topology policy SingleNUMANode")),
            ),
            (
                "restricted node, spans two",
                ls(9000),
                node().with_numa_policy(NumaTopologyPolicy::Restricted),
                NodeAllocation::new(),
                None,
            ),
        ];
        for (case, pod, node, alloc, expected) in cases {
            let got = filter(&request(&pod), &node, &alloc).map_err(|e| (e.code, e.to_string()));
            assert_eq!(got, expected.map_or(Ok(()), |(c, m)| Err((c, m.to_owned()))), "{case}");
        }
    }

    #[test]
    fn reserve_writes_status_and_spec() {
        let single =
            [(annotation::NUMA_TOPOLOGY_SPEC, r#"{"numaTopologyPolicy":"SingleNUMANode"}"#)];
        let p = lsr(4000, &single);
        let req = request(&p);
        let node = node();
        let mut alloc = NodeAllocation::new();
        let result = reserve(&req, &node, &alloc).unwrap();
        assert_eq!(
            resource_status_annotation(&result),
            r#"{"cpuset":"0-3","numaNodeResources":[{"node":0,"resources":{"cpu":"4","memory":"8Gi"}}]}"#
        );
        assert_eq!(
            resource_spec_write_back(&req, &result).as_deref(),
            Some(r#"{"preferredCPUBindPolicy":"FullPCPUs"}"#)
        );
        result.record(&mut alloc, "ns/p");
        // The next pod on the same node: node 0 now has 4 CPUs and 8Gi left;
        // LeastAllocated NUMA scoring sends it to an empty node.
        let second = reserve(&req, &node, &alloc).unwrap();
        assert_eq!(second.cpuset.to_string(), "8-11");
        assert_eq!(second.numa_resources[0].node, 1);

        // Status parses back into the same allocation.
        let bound = p.clone().with_annotations(
            [(annotation::RESOURCE_STATUS, resource_status_annotation(&result).as_str())]
                .into_iter()
                .collect(),
        );
        let rebuilt = pod_allocation_from_status(&bound).unwrap().unwrap();
        assert_eq!(rebuilt.cpuset, result.cpuset);
        assert_eq!(rebuilt.numa_resources, result.numa_resources);
        assert_eq!(pod_allocation_from_status(&p).unwrap(), None);

        // An LS pod on a FullPCPUsOnly node: cpuset, and the policy written
        // back as required.
        let forced = node.clone().with_cpu_bind_policy(NodeCpuBindPolicy::FullPCPUsOnly);
        let ls = request(&pod(Some("LS"), PriorityClass::Prod, 2000, &[]));
        let r = reserve(&ls, &forced, &NodeAllocation::new()).unwrap();
        assert_eq!(r.cpuset.to_string(), "0-1");
        assert_eq!(resource_status_annotation(&r), r#"{"cpuset":"0-1"}"#);
        assert_eq!(
            resource_spec_write_back(&ls, &r).as_deref(),
            Some(r#"{"requiredCPUBindPolicy":"FullPCPUs","preferredCPUBindPolicy":"FullPCPUs"}"#)
        );
        // An explicit policy is not rewritten.
        let explicit = request(&lsr(2000, &spec(r#"{"preferredCPUBindPolicy":"SpreadByPCPUs"}"#)));
        let r = reserve(&explicit, &node, &NodeAllocation::new()).unwrap();
        assert_eq!(r.cpuset.to_string(), "0,2");
        assert_eq!(resource_spec_write_back(&explicit, &r), None);
        // Nothing to do for an LS pod on a plain node.
        let r = reserve(
            &request(&pod(Some("LS"), PriorityClass::Prod, 500, &[])),
            &node,
            &NodeAllocation::new(),
        )
        .unwrap();
        assert!(r.is_empty());
        assert_eq!(
            resource_spec_write_back(&request(&pod(Some("LS"), PriorityClass::Prod, 500, &[])), &r),
            None
        );
    }

    #[test]
    fn reserve_failures() {
        let req = request(&lsr(4000, &spec(r#"{"requiredCPUBindPolicy":"FullPCPUs"}"#)));
        let err = reserve(&req, &node(), &holding("0-28")).unwrap_err();
        assert_eq!(
            (err.code, err.to_string()),
            (FailureCode::Unschedulable, "not enough cpus available to satisfy request".to_owned())
        );
    }

    #[test]
    fn scores() {
        let node = node();
        let p = request(&lsr(4000, &[]));
        let requested = ResourceVector::cpu_memory(8000, 16 * GI);
        // cpu (32-12)/32 = 62, memory (64-24)/64 = 62.
        assert_eq!(score(&p, &node, &NodeAllocation::new(), &|n| requested.value(n)), 62);
        let mut args = NodeNUMAResourceArgs::default();
        args.scoring_strategy.strategy_type = ScoringStrategyType::MostAllocated;
        args.scoring_strategy.resources[0].weight = 3;
        let most = PodNumaRequest::from_pod(&lsr(4000, &[]), &args).unwrap();
        // cpu 12/32 = 37 ×3, memory 24/64 = 37: 37.
        assert_eq!(score(&most, &node, &NodeAllocation::new(), &|n| requested.value(n)), 37);
        // Amplified ×2: 4 bound CPUs count 8; the pod's 4 count 8.
        let amplified = node.clone().with_cpu_amplification_ratio(2.0);
        let held = holding("0-3");
        // cpu requested = 8000 - 4000 + 8000 + 8000 = 20000: (32-20)/32 = 37.
        assert_eq!(score(&p, &amplified, &held, &|n| requested.value(n)), (37 + 62) / 2);
        assert!(check_amplified_cpu(&p, &amplified, &held, 8000).is_ok());
        let err = check_amplified_cpu(&p, &amplified, &held, 22_000).unwrap_err();
        assert_eq!(err.to_string(), "Insufficient amplified cpu");
        assert!(check_amplified_cpu(&p, &node, &held, 1_000_000).is_ok(), "no ratio, no check");

        // NUMA policy: the chosen NUMA node's score. Node 0 (8 CPUs, 16Gi)
        // with the pod's 4 CPUs and 8Gi: 50 / 50.
        let single =
            [(annotation::NUMA_TOPOLOGY_SPEC, r#"{"numaTopologyPolicy":"SingleNUMANode"}"#)];
        let numa_pod = request(&lsr(4000, &single));
        assert_eq!(score(&numa_pod, &node, &NodeAllocation::new(), &|n| requested.value(n)), 50);
        assert_eq!(
            score(&request(&PodView::new("ns", "e")), &node, &NodeAllocation::new(), &|n| {
                requested.value(n)
            }),
            0
        );
    }

    #[test]
    fn fast_path_skips_resolution() {
        // A plain node with a broken topology: the common pod never looks.
        let bare = NodeTopology::from_node(&kolo_core::node::NodeView::new("bare"));
        let ls = request(&pod(Some("LS"), PriorityClass::Prod, 500, &[]));
        assert!(filter(&ls, &bare, &NodeAllocation::new()).is_ok());
        let be = request(&pod(Some("BE"), PriorityClass::Batch, 0, &[]));
        assert!(filter(&be, &node(), &NodeAllocation::new()).is_ok());
    }
}
