//! `cpusetBind`: the CPUs the scheduler bound an LSE / LSR pod to reach its
//! containers (spec §6 runtime hooks: Koordinator's `CPUSetAllocator`, in
//! reconciler mode).
//!
//! kolo's scheduler (NodeNUMAResource) picks the CPUs at bind time and
//! writes them into the pod's `scheduling.koordinator.sh/resource-status`
//! annotation; nothing else gives them to the container. Every round, each
//! container of a running LSE or LSR pod whose annotation carries a cpuset
//! gets `cpuset.cpus` = that cpuset. The executor writes only what differs,
//! so a round where nothing changed writes nothing.
//!
//! Only the containers are written, as the reference's hook does: the pod
//! cgroup keeps the CPUs the kubelet gave it (every CPU with the kubelet's
//! `none` CPU manager policy), a superset of the container's, which cgroup
//! v1 requires.
//!
//! Not done (yet): the reference also narrows LS pods to the shared pool
//! (every CPU not held by LSE / LSR pods) from the node's
//! `cpu-shared-pools` annotation; kolo leaves LS containers on the CPUs the
//! kubelet gave them, so an LSR pod's CPUs are exclusive from BE (through
//! the suppression pools) but shared with LS pods.
//!
//! With `kolo runtime-proxy` in front of the container runtime and the
//! agent's `--hook-socket`, the same strategy gives a new container its
//! cpuset at creation ([`super::hook`]); without them, a new container runs
//! on the pod's CPUs for up to one round.

use kolo_api::QoSClass;
use kolo_api::crd::NodeSLOSpec;

use super::cpu_pools::bound_cpus;
use super::{NodeState, Plan, Strategy};
use crate::cgroup::{CgroupWrite, Resource, Value};

/// The strategy's name.
pub const NAME: &str = "cpusetBind";

/// The `cpusetBind` strategy (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct CpusetBind;

impl Strategy for CpusetBind {
    fn name(&self) -> &'static str {
        NAME
    }

    fn plan(&self, node: &NodeState, _slo: &NodeSLOSpec, plan: &mut Plan) {
        let bound_classes = [QoSClass::LSE, QoSClass::LSR];
        for pod in node.pods.iter().filter(|p| !p.pod.terminated) {
            // The class first: parsing the annotation of every LS and BE pod
            // each round would cost for nothing.
            if !bound_classes.contains(&pod.pod.qos) {
                continue;
            }
            let Some(cpus) = bound_cpus(pod) else { continue };
            for container in &pod.containers {
                let Some(dir) = &container.dir else { continue };
                let write = CgroupWrite {
                    dir: dir.clone(),
                    resource: Resource::CpusetCpus,
                    value: Value::Cpuset(cpus.clone()),
                };
                let reason = format!(
                    "{} pod {}, container {}: cpuset.cpus={cpus} (the CPUs the scheduler bound it to)",
                    pod.pod.qos, pod.pod.id, container.name
                );
                plan.write(NAME, write, reason);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::names::annotation;
    use kolo_core::resources::ResourceVector;

    use super::*;
    use crate::cgroup::CgroupDir;
    use crate::qos::ContainerState;
    use crate::qos::testing_b::{be_pod, ls_pod, node};

    fn container(pod_dir: &CgroupDir, name: &str, created: bool) -> ContainerState {
        ContainerState {
            name: name.to_string(),
            dir: created.then(|| pod_dir.join(&format!("cri-{name}")).expect("valid dir")),
            requests: ResourceVector::new(),
            limits: ResourceVector::new(),
            usage: None,
        }
    }

    /// (dir, cpus) of every write.
    fn writes(plan: &Plan) -> Vec<(String, String)> {
        assert!(
            plan.writes
                .iter()
                .all(|w| w.strategy == NAME && w.write.resource == Resource::CpusetCpus)
        );
        plan.writes.iter().map(|w| (w.write.dir.to_string(), w.write.value.to_string())).collect()
    }

    #[test]
    fn bound_containers_get_their_cpus_and_nothing_else_is_written() {
        // (class, annotation, terminated, containers created, expected cpus)
        let status = |cpus: &str| format!("{{\"cpuset\":\"{cpus}\"}}");
        let table = [
            (QoSClass::LSR, Some(status("2-3")), false, true, Some("2-3")),
            (QoSClass::LSE, Some(status("1,5")), false, true, Some("1,5")),
            // Not bound: no annotation, an empty cpuset, a malformed one.
            (QoSClass::LSR, None, false, true, None),
            (QoSClass::LSR, Some(status("")), false, true, None),
            (QoSClass::LSR, Some("{not json".to_string()), false, true, None),
            // Only LSE / LSR pods are bound, even with an annotation.
            (QoSClass::LS, Some(status("2-3")), false, true, None),
            (QoSClass::BE, Some(status("2-3")), false, true, None),
            // A finished pod, and containers the runtime has not created.
            (QoSClass::LSR, Some(status("2-3")), true, true, None),
            (QoSClass::LSR, Some(status("2-3")), false, false, None),
        ];
        for (qos, annotation_value, terminated, created, want) in table {
            let mut n = node(8_000, 1 << 34);
            let mut pod = if qos == QoSClass::BE { be_pod("p", 0, 0) } else { ls_pod("p", 0, 0) };
            pod.pod.qos = qos;
            pod.pod.terminated = terminated;
            if let Some(value) = &annotation_value {
                pod.annotations.insert(annotation::RESOURCE_STATUS.to_string(), value.clone());
            }
            pod.containers =
                vec![container(&pod.dir, "a", created), container(&pod.dir, "b", created)];
            let dir = pod.dir.to_string();
            n.pods.push(pod);
            let mut plan = Plan::default();
            CpusetBind.plan(&n, &NodeSLOSpec::default(), &mut plan);
            let expected: Vec<(String, String)> = want
                .map(|cpus| {
                    ["a", "b"].map(|c| (format!("{dir}/cri-{c}"), cpus.to_string())).to_vec()
                })
                .unwrap_or_default();
            assert_eq!(
                writes(&plan),
                expected,
                "{qos:?} {annotation_value:?} {terminated} {created}"
            );
        }
    }
}
