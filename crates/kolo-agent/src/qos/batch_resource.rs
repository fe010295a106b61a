//! `batchResource`: the cgroup limits of BE pods from their
//! `kubernetes.io/batch-cpu` / `batch-memory` requests and limits (spec
//! §6.3, Koordinator's `BatchResource` runtime hook, reconciler mode).
//!
//! BE pods carry their real size in the batch extended resources, which
//! the kubelet does not turn into cgroup limits (it sees a BestEffort pod).
//! Per container (batch-cpu in milli-cores, batch-memory in bytes):
//!
//! * `cpu.shares` = request × 1024 / 1000, clamped to [2, 262144]; no
//!   request → 2;
//! * `cpu.cfs_quota_us` = limit × 100000 / 1000 (period 100000 µs), at least
//!   1000; no or non-positive limit → `-1` (unlimited);
//! * `memory.limit_in_bytes` = limit; no or non-positive limit → unlimited.
//!
//! Pod level: shares from the sum of the positive container requests; quota
//! and memory limit from the sums of the container limits, unlimited as soon
//! as one container has none (a pod cannot be tighter than an unlimited
//! container).
//!
//! The quota is `-1` everywhere when BE CPU suppression works by CFS quota
//! (`resourceUsedThresholdWithBE.enable` and `cpuSuppressPolicy:
//! cfsQuota`): the suppressor sets the BE QoS dir quota, and children must
//! not exceed it.
//!
//! Deviation: the reference scales the quota down by the node's CPU
//! normalization ratio; [`NodeState`] does not carry it, so kolo does not.

use kolo_api::crd::NodeSLOSpec;
use kolo_core::resources::{ResourceName, ResourceVector};

use super::{NodeState, Plan, PodState, Strategy};
use crate::cgroup::resource::{
    CFS_BASE_PERIOD_US, CFS_MAX_QUOTA_US, CFS_MIN_QUOTA_US, MAX_SHARES, MIN_SHARES,
};
use crate::cgroup::{CgroupDir, CgroupWrite, Resource};

/// The strategy's name.
pub const NAME: &str = "batchResource";

/// The `batchResource` strategy (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchResource;

/// `cpu.shares` for a batch-cpu request in milli-cores: `milli × 1024 /
/// 1000`, clamped to [2, 262144] (non-positive → 2).
pub fn milli_to_shares(milli: i64) -> i64 {
    if milli <= 0 {
        return MIN_SHARES;
    }
    (milli.saturating_mul(1024) / 1000).clamp(MIN_SHARES, MAX_SHARES)
}

/// `cpu.cfs_quota_us` for a batch-cpu limit in milli-cores with the
/// 100000 µs period: `milli × 100`, in [1000, [`CFS_MAX_QUOTA_US`]];
/// non-positive → `-1`.
pub fn milli_to_quota(milli: i64) -> i64 {
    if milli <= 0 {
        return -1;
    }
    (milli.saturating_mul(CFS_BASE_PERIOD_US) / 1000).clamp(CFS_MIN_QUOTA_US, CFS_MAX_QUOTA_US)
}

/// Whether the NodeSLO makes the BE suppressor work by CFS quota (then the
/// batch quotas stay unlimited).
pub fn cfs_quota_suppressed(slo: &NodeSLOSpec) -> bool {
    slo.resource_used_threshold_with_be.as_ref().is_some_and(|t| {
        t.enable == Some(true) && t.cpu_suppress_policy.as_deref() == Some("cfsQuota")
    })
}

fn positive(v: &ResourceVector, name: ResourceName) -> Option<i64> {
    v.get(name).filter(|n| *n > 0)
}

fn has_batch(pod: &PodState) -> bool {
    pod.containers.iter().any(|c| {
        [&c.requests, &c.limits]
            .iter()
            .any(|v| v.contains(ResourceName::BatchCpu) || v.contains(ResourceName::BatchMemory))
    })
}

/// The sum of the containers' positive `name` limits, `None` if one
/// container has none.
fn sum_limits(pod: &PodState, name: ResourceName) -> Option<i64> {
    pod.containers
        .iter()
        .try_fold(0i64, |acc, c| positive(&c.limits, name).map(|n| acc.saturating_add(n)))
}

struct Writer<'a> {
    plan: &'a mut Plan,
    quota_off: bool,
}

impl Writer<'_> {
    /// Writes shares, quota and memory limit of one cgroup. `what` names it
    /// in the reasons; `None` amounts mean "no request / no limit".
    fn write(
        &mut self,
        dir: &CgroupDir,
        what: &str,
        cpu_request: Option<i64>,
        cpu_limit: Option<i64>,
        memory_limit: Option<i64>,
    ) {
        let shares = milli_to_shares(cpu_request.unwrap_or(0));
        let reason = match cpu_request {
            Some(m) => format!(
                "{what}: cpu.shares={shares} (batch-cpu request {m}m × 1024 / 1000, clamped to [2, 262144])"
            ),
            None => format!("{what}: cpu.shares={shares} (no batch-cpu request)"),
        };
        self.plan.write(NAME, CgroupWrite::int(dir, Resource::CpuShares, shares), reason);

        let (quota, reason) = if self.quota_off {
            (
                -1,
                format!(
                    "{what}: cpu.cfs_quota_us=-1 (BE CPU is suppressed by cfsQuota on the BE QoS dir)"
                ),
            )
        } else {
            match cpu_limit {
                Some(m) => {
                    let q = milli_to_quota(m);
                    (
                        q,
                        format!(
                            "{what}: cpu.cfs_quota_us={q} (batch-cpu limit {m}m × {CFS_BASE_PERIOD_US} / 1000, min {CFS_MIN_QUOTA_US})"
                        ),
                    )
                }
                None => (-1, format!("{what}: cpu.cfs_quota_us=-1 (no batch-cpu limit)")),
            }
        };
        self.plan.write(NAME, CgroupWrite::int(dir, Resource::CpuCfsQuota, quota), reason);

        let (mem, reason) = match memory_limit {
            Some(b) => (b, format!("{what}: memory.limit_in_bytes={b} (batch-memory limit)")),
            None => (-1, format!("{what}: memory.limit_in_bytes=-1 (no batch-memory limit)")),
        };
        self.plan.write(NAME, CgroupWrite::int(dir, Resource::MemoryLimit, mem), reason);
    }
}

impl Strategy for BatchResource {
    fn name(&self) -> &'static str {
        NAME
    }

    fn plan(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan) {
        let mut w = Writer { plan, quota_off: cfs_quota_suppressed(slo) };
        for pod in &node.pods {
            if !pod.is_be() || pod.pod.terminated || !has_batch(pod) {
                continue;
            }
            let key = pod.pod.id.key();
            let requests: Vec<i64> = pod
                .containers
                .iter()
                .filter_map(|c| positive(&c.requests, ResourceName::BatchCpu))
                .collect();
            let pod_request = (!requests.is_empty())
                .then(|| requests.iter().fold(0i64, |a, n| a.saturating_add(*n)));
            w.write(
                &pod.dir,
                &format!("BE pod {key}"),
                pod_request,
                sum_limits(pod, ResourceName::BatchCpu),
                sum_limits(pod, ResourceName::BatchMemory),
            );
            for c in &pod.containers {
                let Some(dir) = &c.dir else { continue };
                w.write(
                    dir,
                    &format!("BE container {key}/{}", c.name),
                    positive(&c.requests, ResourceName::BatchCpu),
                    positive(&c.limits, ResourceName::BatchCpu),
                    positive(&c.limits, ResourceName::BatchMemory),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::QoSClass;
    use kolo_api::crd::ResourceThresholdStrategy;
    use kolo_core::resources::ResourceName::{BatchCpu, BatchMemory, Cpu, Memory};

    use super::*;
    use crate::cgroup::Value;
    use crate::qos::testing_a::*;

    const GI: i64 = 1 << 30;

    #[test]
    fn conversions() {
        // (milli, shares, quota)
        let table = [
            (500, 512, 50_000),
            (2000, 2048, 200_000),
            (1000, 1024, 100_000),
            (1, 2, 1_000), // 1m → 1.024 shares → clamped to 2; quota 100 → min 1000
            (5, 5, 1_000),
            (0, 2, -1),
            (-300, 2, -1),
            (300_000, 262_144, 30_000_000),
            // The kernel's bound (2^44 - 1 µs), not i64::MAX / 1000.
            (i64::MAX, 262_144, CFS_MAX_QUOTA_US),
            (200_000_000_000, 262_144, CFS_MAX_QUOTA_US),
        ];
        for (milli, shares, quota) in table {
            assert_eq!(milli_to_shares(milli), shares, "shares of {milli}m");
            assert_eq!(milli_to_quota(milli), quota, "quota of {milli}m");
        }
    }

    fn spark() -> PodState {
        pod(
            "spark-1",
            QoSClass::BE,
            vec![
                container(
                    "driver",
                    res(&[(BatchCpu, 500), (BatchMemory, GI)]),
                    res(&[(BatchCpu, 2000), (BatchMemory, 2 * GI)]),
                ),
                container(
                    "exec",
                    res(&[(BatchCpu, 1500), (BatchMemory, GI)]),
                    res(&[(BatchCpu, 1000), (BatchMemory, GI)]),
                ),
            ],
        )
    }

    #[test]
    fn pod_and_containers() {
        let mut n = node();
        n.pods.push(spark());
        let plan = run(&BatchResource, &n, &NodeSLOSpec::default());
        let p = "kubepods/besteffort/podspark-1";
        let d = "kubepods/besteffort/podspark-1/driver";
        let e = "kubepods/besteffort/podspark-1/exec";
        let table = [
            // pod: requests 500 + 1500 = 2000 → 2048; limits 3000 → 300000; 3 GiB
            (p, Resource::CpuShares, 2048),
            (p, Resource::CpuCfsQuota, 300_000),
            (p, Resource::MemoryLimit, 3 * GI),
            (d, Resource::CpuShares, 512),
            (d, Resource::CpuCfsQuota, 200_000),
            (d, Resource::MemoryLimit, 2 * GI),
            (e, Resource::CpuShares, 1536),
            (e, Resource::CpuCfsQuota, 100_000),
            (e, Resource::MemoryLimit, GI),
        ];
        for (dir, resource, value) in table {
            assert_eq!(
                written(&plan, dir, resource),
                Some(Value::Int(value)),
                "{resource:?} of {dir}"
            );
        }
        assert_eq!(plan.writes.len(), 9);
        assert!(plan.writes.iter().all(|w| w.strategy == NAME));
        let reason = &plan.writes.iter().find(|w| w.write.dir == dir(d)).unwrap().reason;
        assert!(reason.contains("default/spark-1/driver") && reason.contains("500m"), "{reason}");
    }

    #[test]
    fn a_container_without_limit_makes_the_pod_unlimited() {
        let mut n = node();
        n.pods.push(pod(
            "p",
            QoSClass::BE,
            vec![
                container(
                    "a",
                    res(&[(BatchCpu, 1000)]),
                    res(&[(BatchCpu, 2000), (BatchMemory, GI)]),
                ),
                container("b", res(&[(BatchCpu, -5)]), res(&[(BatchCpu, 0)])),
            ],
        ));
        let plan = run(&BatchResource, &n, &NodeSLOSpec::default());
        let p = "kubepods/besteffort/podp";
        assert_eq!(written(&plan, p, Resource::CpuShares), Some(Value::Int(1024)));
        assert_eq!(written(&plan, p, Resource::CpuCfsQuota), Some(Value::Int(-1)));
        assert_eq!(written(&plan, p, Resource::MemoryLimit), Some(Value::Int(-1)));
        let b = "kubepods/besteffort/podp/b";
        assert_eq!(written(&plan, b, Resource::CpuShares), Some(Value::Int(2)));
        assert_eq!(written(&plan, b, Resource::CpuCfsQuota), Some(Value::Int(-1)));
        assert_eq!(written(&plan, b, Resource::MemoryLimit), Some(Value::Int(-1)));
    }

    #[test]
    fn huge_limits_saturate() {
        let mut n = node();
        n.pods.push(pod(
            "p",
            QoSClass::BE,
            vec![
                container("a", res(&[]), res(&[(BatchCpu, i64::MAX), (BatchMemory, i64::MAX)])),
                container("b", res(&[]), res(&[(BatchCpu, i64::MAX), (BatchMemory, i64::MAX)])),
            ],
        ));
        let plan = run(&BatchResource, &n, &NodeSLOSpec::default());
        let p = "kubepods/besteffort/podp";
        assert_eq!(written(&plan, p, Resource::CpuCfsQuota), Some(Value::Int(CFS_MAX_QUOTA_US)));
        assert_eq!(written(&plan, p, Resource::MemoryLimit), Some(Value::Int(i64::MAX)));
    }

    #[test]
    fn cfs_quota_suppression_keeps_quotas_unlimited() {
        let mut n = node();
        n.pods.push(spark());
        let slo = |enable, policy: &str| NodeSLOSpec {
            resource_used_threshold_with_be: Some(ResourceThresholdStrategy {
                enable: Some(enable),
                cpu_suppress_policy: Some(policy.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let d = "kubepods/besteffort/podspark-1/driver";
        for (enable, policy, quota) in
            [(true, "cfsQuota", -1), (false, "cfsQuota", 200_000), (true, "cpuset", 200_000)]
        {
            let plan = run(&BatchResource, &n, &slo(enable, policy));
            assert_eq!(written(&plan, d, Resource::CpuCfsQuota), Some(Value::Int(quota)));
            assert_eq!(written(&plan, d, Resource::CpuShares), Some(Value::Int(512)));
        }
    }

    #[test]
    fn only_be_pods_with_batch_resources() {
        let mut n = node();
        // LS pod with batch resources (odd, but must be left alone).
        n.pods.push(pod(
            "ls",
            QoSClass::LS,
            vec![container("c", res(&[(BatchCpu, 500)]), res(&[(BatchCpu, 500)]))],
        ));
        // BE pod without batch resources.
        n.pods.push(pod(
            "be",
            QoSClass::BE,
            vec![container("c", res(&[(Cpu, 100)]), res(&[(Memory, GI)]))],
        ));
        // Terminated BE pod.
        let mut done = spark();
        done.pod.terminated = true;
        n.pods.push(done);
        assert!(run(&BatchResource, &n, &NodeSLOSpec::default()).writes.is_empty());
    }
}
