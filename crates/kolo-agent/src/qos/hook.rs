//! The runtime hooks' decisions: what `kolo runtime-proxy` should change in
//! a container's resources before the container runtime creates it (or
//! updates it), and what the agent writes on the pod cgroup before the
//! sandbox runs.
//!
//! One rule, two entry points: the hooks run the very strategies the
//! reconcile loop runs ([`HOOK_STRATEGIES`]: `cpusetBind` and
//! `batchResource`), over a node holding only the pod asked about, with the
//! NodeSLO the loop follows. The container does not exist yet, so it gets a
//! placeholder cgroup; what the strategies write there becomes the CRI
//! patch, and what they write on the pod's own cgroup is returned for the
//! agent to write itself (the CRI carries no pod-level values). The loop
//! later finds the values already set, and a container created without the
//! proxy is still fixed by the loop within a round.
//!
//! Units: plan values are in the cgroup v1 domain whatever the node runs
//! ([`crate::cgroup::resource`]), and so are the CRI's fields (`cpu_shares`
//! in v1 shares, quotas in µs); the runtime converts them on cgroup v2. The
//! values pass through unchanged, `-1` / [`Value::Max`] meaning unlimited.
//! No CFS period is set: the strategies compute quotas for the 100000 µs
//! period the kubelet uses, and the loop does not write the period either.

use kolo_api::crd::NodeSLOSpec;
use kolo_api::runtime_hook::ResourcesPatch;

use super::batch_resource::BatchResource;
use super::cpuset_bind::CpusetBind;
use super::{NodeState, Plan, PodState, Strategy};
use crate::cgroup::{CgroupDir, CgroupWrite, PathError, Resource, Value};

/// The strategies whose writes the hooks make at creation time (the same
/// types as in [`super::default_strategies`]).
pub const HOOK_STRATEGIES: [&dyn Strategy; 2] = [&CpusetBind, &BatchResource];

/// The name of the placeholder cgroup the container being created gets
/// below its pod's (never created: only compared against).
const PLACEHOLDER: &str = "kolo-hook-container";

/// What the hooks do for one request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HookDecision {
    /// The change to the container's resources (empty for pod stages).
    pub patch: ResourcesPatch,
    /// Writes on the pod's cgroup, for the agent to make itself.
    pub pod_writes: Vec<CgroupWrite>,
    /// Why, one line per value (the strategies' reasons).
    pub reasons: Vec<String>,
}

/// A hook decision that cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// The request names a container the pod's spec does not have.
    #[error("pod {pod}: no container named {container:?} in spec.containers")]
    UnknownContainer {
        /// `namespace/name` of the pod.
        pod: String,
        /// The container name asked about.
        container: String,
    },
    /// The pod's cgroup cannot hold the placeholder (not expected: the pod
    /// dir was validated when the state was built).
    #[error("pod {pod}: cgroup dir: {source}")]
    Dir {
        /// `namespace/name` of the pod.
        pod: String,
        /// What is wrong.
        source: PathError,
    },
}

/// What the hooks change for `container` of `pod` before it is created or
/// its resources are updated, on a node with `node`'s fields (its pods are
/// not read) following `slo`.
pub fn container_decision(
    node: &NodeState,
    slo: &NodeSLOSpec,
    pod: &PodState,
    container: &str,
) -> Result<HookDecision, HookError> {
    if !pod.containers.iter().any(|c| c.name == container) {
        return Err(HookError::UnknownContainer {
            pod: pod.pod.id.key(),
            container: container.into(),
        });
    }
    decide(node, slo, pod, Some(container))
}

/// What the hooks write on `pod`'s cgroup before its sandbox runs (only
/// [`HookDecision::pod_writes`] and the reasons are set).
pub fn pod_decision(
    node: &NodeState,
    slo: &NodeSLOSpec,
    pod: &PodState,
) -> Result<HookDecision, HookError> {
    decide(node, slo, pod, None)
}

/// Runs [`HOOK_STRATEGIES`] over a node holding only `pod`, whose
/// container `container` (if any) has the placeholder dir and whose other
/// containers have none (the strategies skip them), and sorts the writes.
fn decide(
    node: &NodeState,
    slo: &NodeSLOSpec,
    pod: &PodState,
    container: Option<&str>,
) -> Result<HookDecision, HookError> {
    let placeholder = pod
        .dir
        .join(PLACEHOLDER)
        .map_err(|source| HookError::Dir { pod: pod.pod.id.key(), source })?;
    let mut alone = pod.clone();
    for c in &mut alone.containers {
        c.dir = (Some(c.name.as_str()) == container).then(|| placeholder.clone());
    }
    let mut view = node.without_pods();
    view.pods.push(alone);
    let mut plan = Plan::default();
    for strategy in HOOK_STRATEGIES {
        strategy.plan(&view, slo, &mut plan);
    }
    let mut decision = HookDecision::default();
    for w in plan.writes {
        match Target::of(&w.write.dir, &placeholder, &pod.dir) {
            Target::Container if set_field(&mut decision.patch, &w.write) => {
                decision.reasons.push(w.reason);
            }
            Target::Pod => {
                decision.pod_writes.push(w.write);
                decision.reasons.push(w.reason);
            }
            Target::Container => decision
                .reasons
                .push(format!("not carried by the CRI, left to the reconcile loop: {}", w.reason)),
            Target::Other => decision
                .reasons
                .push(format!("outside the pod, left to the reconcile loop: {}", w.reason)),
        }
    }
    Ok(decision)
}

/// Where a planned write lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The container being created (the placeholder).
    Container,
    /// The pod's cgroup.
    Pod,
    /// Anywhere else (no hook strategy writes there today).
    Other,
}

impl Target {
    fn of(dir: &CgroupDir, placeholder: &CgroupDir, pod: &CgroupDir) -> Target {
        if dir == placeholder {
            Target::Container
        } else if dir == pod {
            Target::Pod
        } else {
            Target::Other
        }
    }
}

/// Sets the CRI field of `write`'s resource; `false` when the CRI has no
/// such field or the value has the wrong shape.
fn set_field(patch: &mut ResourcesPatch, write: &CgroupWrite) -> bool {
    let int = || match &write.value {
        Value::Int(n) => Some(*n),
        Value::Max => Some(-1),
        _ => None,
    };
    let cpus = || match &write.value {
        Value::Cpuset(set) => Some(set.to_string()),
        _ => None,
    };
    let set = match write.resource {
        Resource::CpuShares => int().map(|n| patch.cpu_shares = Some(n)),
        Resource::CpuCfsQuota => int().map(|n| patch.cpu_quota = Some(n)),
        Resource::CpuCfsPeriod => int().map(|n| patch.cpu_period = Some(n)),
        Resource::MemoryLimit => int().map(|n| patch.memory_limit_in_bytes = Some(n)),
        Resource::CpusetCpus => cpus().map(|s| patch.cpuset_cpus = Some(s)),
        Resource::CpusetMems => cpus().map(|s| patch.cpuset_mems = Some(s)),
        _ => None,
    };
    set.is_some()
}

#[cfg(test)]
mod tests {
    use kolo_api::QoSClass;
    use kolo_api::crd::ResourceThresholdStrategy;
    use kolo_api::names::annotation;
    use kolo_core::resources::ResourceName::{BatchCpu, BatchMemory, Cpu, Memory};
    use proptest::prelude::*;

    use super::{
        BatchResource, CgroupDir, CgroupWrite, CpusetBind, HookDecision, NodeSLOSpec, Plan,
        PodState, Resource, ResourcesPatch, Value, container_decision, pod_decision,
    };
    use crate::qos::testing_a::{container, node, pod, res};
    use crate::qos::{ContainerState, Strategy as QosStrategy, plan_all};

    const GI: i64 = 1 << 30;

    fn status(cpus: &str) -> String {
        format!("{{\"cpuset\":\"{cpus}\"}}")
    }

    fn with_status(mut p: PodState, value: &str) -> PodState {
        p.annotations.insert(annotation::RESOURCE_STATUS.to_string(), value.to_string());
        p
    }

    fn cfs_quota_suppression() -> NodeSLOSpec {
        NodeSLOSpec {
            resource_used_threshold_with_be: Some(ResourceThresholdStrategy {
                enable: Some(true),
                cpu_suppress_policy: Some("cfsQuota".to_string()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn container_patches() {
        let be = pod(
            "be",
            QoSClass::BE,
            vec![
                container(
                    "main",
                    res(&[(BatchCpu, 500), (BatchMemory, GI)]),
                    res(&[(BatchCpu, 1000), (BatchMemory, 2 * GI)]),
                ),
                container("side", res(&[(BatchCpu, 100)]), res(&[])),
            ],
        );
        let ls =
            pod("ls", QoSClass::LS, vec![container("c", res(&[(Cpu, 500)]), res(&[(Memory, GI)]))]);
        let lsr = |value: &str| {
            with_status(pod("lsr", QoSClass::LSR, vec![container("c", res(&[]), res(&[]))]), value)
        };
        let be_patch = ResourcesPatch {
            cpu_shares: Some(512),
            cpu_quota: Some(100_000),
            memory_limit_in_bytes: Some(2 * GI),
            ..Default::default()
        };
        let cpus =
            |s: &str| ResourcesPatch { cpuset_cpus: Some(s.to_string()), ..Default::default() };
        // (pod, container, slo, expected patch)
        let table = [
            (be.clone(), "main", NodeSLOSpec::default(), be_patch.clone()),
            // cfsQuota suppression: the batch quota stays unlimited.
            (
                be.clone(),
                "main",
                cfs_quota_suppression(),
                ResourcesPatch { cpu_quota: Some(-1), ..be_patch },
            ),
            // No limit: unlimited quota and memory.
            (
                be.clone(),
                "side",
                NodeSLOSpec::default(),
                ResourcesPatch {
                    cpu_shares: Some(102),
                    cpu_quota: Some(-1),
                    memory_limit_in_bytes: Some(-1),
                    ..Default::default()
                },
            ),
            (lsr(&status("2-3")), "c", NodeSLOSpec::default(), cpus("2-3")),
            (with_status(lsr(""), &status("0,4-5")), "c", NodeSLOSpec::default(), cpus("0,4-5")),
            (ls.clone(), "c", NodeSLOSpec::default(), ResourcesPatch::default()),
            // A cpuset on an LS pod is not a binding.
            (
                with_status(ls, &status("2-3")),
                "c",
                NodeSLOSpec::default(),
                ResourcesPatch::default(),
            ),
            // Malformed annotations bind nothing.
            (lsr("{not json"), "c", NodeSLOSpec::default(), ResourcesPatch::default()),
            (lsr(&status("3-1")), "c", NodeSLOSpec::default(), ResourcesPatch::default()),
            (lsr(&status("")), "c", NodeSLOSpec::default(), ResourcesPatch::default()),
        ];
        for (p, c, slo, want) in table {
            let d = container_decision(&node(), &slo, &p, c).unwrap();
            assert_eq!(d.patch, want, "{} {c} {:?}", p.pod.id, p.annotations);
            assert_eq!(d.reasons.is_empty(), want.is_empty(), "{d:?}");
        }
    }

    #[test]
    fn pod_writes_are_returned_not_patched() {
        let be = pod(
            "be",
            QoSClass::BE,
            vec![
                container(
                    "a",
                    res(&[(BatchCpu, 500)]),
                    res(&[(BatchCpu, 1000), (BatchMemory, GI)]),
                ),
                container(
                    "b",
                    res(&[(BatchCpu, 1500)]),
                    res(&[(BatchCpu, 1000), (BatchMemory, GI)]),
                ),
            ],
        );
        let d = pod_decision(&node(), &NodeSLOSpec::default(), &be).unwrap();
        assert!(d.patch.is_empty());
        let want = [
            (Resource::CpuShares, 2048),
            (Resource::CpuCfsQuota, 200_000),
            (Resource::MemoryLimit, 2 * GI),
        ];
        let got: Vec<_> =
            d.pod_writes.iter().map(|w| (w.dir.clone(), w.resource, w.value.clone())).collect();
        let want: Vec<_> = want.iter().map(|(r, v)| (be.dir.clone(), *r, Value::Int(*v))).collect();
        assert_eq!(got, want);
        assert_eq!(d.reasons.len(), 3);
        // A container decision carries the same pod writes (the strategy
        // plans the pod with every container), and only its own patch.
        let c = container_decision(&node(), &NodeSLOSpec::default(), &be, "b").unwrap();
        assert_eq!(c.pod_writes, d.pod_writes);
        assert_eq!(c.patch.cpu_shares, Some(1536));
        // Non-BE pods have no pod writes.
        let lsr = with_status(
            pod("lsr", QoSClass::LSR, vec![container("c", res(&[]), res(&[]))]),
            &status("2-3"),
        );
        assert_eq!(
            pod_decision(&node(), &NodeSLOSpec::default(), &lsr).unwrap(),
            HookDecision::default()
        );
    }

    #[test]
    fn an_unknown_container_is_an_error_naming_it() {
        let p = pod("p", QoSClass::BE, vec![container("a", res(&[]), res(&[]))]);
        let err = container_decision(&node(), &NodeSLOSpec::default(), &p, "nope").unwrap_err();
        assert_eq!(
            err.to_string(),
            "pod default/p: no container named \"nope\" in spec.containers"
        );
    }

    #[test]
    fn the_node_pods_are_not_read() {
        // Another bound pod on the node changes nothing for this one.
        let mut n = node();
        n.pods.push(with_status(
            pod("other", QoSClass::LSR, vec![container("c", res(&[]), res(&[]))]),
            &status("0-1"),
        ));
        let be = pod("be", QoSClass::BE, vec![container("a", res(&[(BatchCpu, 500)]), res(&[]))]);
        let d = container_decision(&n, &NodeSLOSpec::default(), &be, "a").unwrap();
        assert_eq!(d.patch.cpuset_cpus, None);
        assert_eq!(d.patch.cpu_shares, Some(512));
    }

    /// The patch a plan's writes on `dir` amount to, mapped independently
    /// of [`set_field`].
    fn expected_patch(plan: &Plan, dir: &CgroupDir) -> ResourcesPatch {
        let mut p = ResourcesPatch::default();
        for w in plan.writes.iter().filter(|w| &w.write.dir == dir) {
            match (w.write.resource, &w.write.value) {
                (Resource::CpuShares, Value::Int(n)) => p.cpu_shares = Some(*n),
                (Resource::CpuCfsQuota, Value::Int(n)) => p.cpu_quota = Some(*n),
                (Resource::MemoryLimit, Value::Int(n)) => p.memory_limit_in_bytes = Some(*n),
                (Resource::CpusetCpus, Value::Cpuset(s)) => p.cpuset_cpus = Some(s.to_string()),
                other => panic!("a hook strategy wrote {other:?}: map it in set_field"),
            }
        }
        p
    }

    fn amount() -> impl Strategy<Value = Option<i64>> {
        prop_oneof![
            Just(None),
            Just(Some(0)),
            Just(Some(-5)),
            (1i64..64_000).prop_map(Some),
            (1i64..(64 * GI)).prop_map(Some),
        ]
    }

    fn arb_container() -> impl Strategy<Value = (Option<i64>, Option<i64>, Option<i64>, Option<i64>)>
    {
        (amount(), amount(), amount(), amount())
    }

    fn annotation_value() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            Just(Some("{not json".to_string())),
            Just(Some(status(""))),
            proptest::collection::btree_set(0u32..64, 1..6).prop_map(|cpus| {
                let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
                Some(status(&list.join(",")))
            }),
        ]
    }

    fn arb_pod(i: usize) -> impl Strategy<Value = PodState> {
        let class = prop_oneof![
            Just(QoSClass::BE),
            Just(QoSClass::LSR),
            Just(QoSClass::LSE),
            Just(QoSClass::LS)
        ];
        (class, proptest::collection::vec(arb_container(), 1..4), annotation_value(), any::<bool>())
            .prop_map(move |(qos, cs, value, terminated)| {
                let containers: Vec<ContainerState> = cs
                    .iter()
                    .enumerate()
                    .map(|(j, (req_cpu, req_mem, lim_cpu, lim_mem))| {
                        let pick = |pairs: [(kolo_core::resources::ResourceName, Option<i64>);
                                        2]| {
                            let set: Vec<_> =
                                pairs.iter().filter_map(|(n, v)| v.map(|v| (*n, v))).collect();
                            res(&set)
                        };
                        container(
                            &format!("c{j}"),
                            pick([(BatchCpu, *req_cpu), (BatchMemory, *req_mem)]),
                            pick([(BatchCpu, *lim_cpu), (BatchMemory, *lim_mem)]),
                        )
                    })
                    .collect();
                let mut p = pod(&format!("p{i}"), qos, containers);
                p.pod.terminated = terminated;
                match value {
                    Some(v) => with_status(p, &v),
                    None => p,
                }
            })
    }

    proptest! {
        /// One rule, two entry points: for every container, the hook's
        /// patch holds exactly what the reconcile plan writes to the
        /// container's real dir, and its pod writes are the plan's on the
        /// pod dir.
        #[test]
        fn the_hook_patch_is_what_the_reconcile_loop_writes(
            pods in (arb_pod(0), arb_pod(1), arb_pod(2)),
            suppress in any::<bool>(),
        ) {
            let slo = if suppress { cfs_quota_suppression() } else { NodeSLOSpec::default() };
            let mut n = node();
            n.pods = vec![pods.0, pods.1, pods.2];
            let strategies: Vec<Box<dyn QosStrategy>> = vec![Box::new(CpusetBind), Box::new(BatchResource)];
            let plan = plan_all(&strategies, &n, &slo);
            for p in &n.pods {
                let pod_writes: Vec<CgroupWrite> =
                    plan.writes.iter().filter(|w| w.write.dir == p.dir).map(|w| w.write.clone()).collect();
                prop_assert_eq!(&pod_decision(&n, &slo, p).unwrap().pod_writes, &pod_writes);
                for c in &p.containers {
                    let dir = c.dir.as_ref().expect("the builder gives every container a dir");
                    let d = container_decision(&n, &slo, p, &c.name).unwrap();
                    prop_assert_eq!(&d.patch, &expected_patch(&plan, dir), "{} {}", p.pod.id, c.name);
                    prop_assert_eq!(&d.pod_writes, &pod_writes);
                }
            }
        }
    }
}
