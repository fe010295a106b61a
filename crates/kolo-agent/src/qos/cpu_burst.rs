//! `cpuBurst`: lets LS pods bank unused CPU quota and spend it in bursts
//! (spec §5.5, the static `cpuBurstOnly` part).
//!
//! With policy `cpuBurstOnly` or `auto` and a kernel with CFS burst, for
//! every pod that is not LSR, LSE or BE (LSR / LSE pods have whole CPUs, BE
//! pods must never burst), every container with a CPU limit gets
//!
//! `cpu.cfs_burst_us` = limit (cores) × `cpuBurstPercent` / 100 × 100000
//! = limit (milli) × `cpuBurstPercent`
//!
//! (v2: `cpu.max.burst`), and the pod dir gets the sum over its containers
//! (both at most [`MAX_BURST_US`]).
//! Defaults (§3.3): policy `none` (nothing written), `cpuBurstPercent`
//! 1000. The pod annotation `koordinator.sh/cpuBurst` (JSON, same fields as
//! the NodeSLO `cpuBurstStrategy`) overrides the node config field by field;
//! an unparsable annotation is ignored.
//!
//! Deviation: mainline kernels reject `cpu.cfs_burst_us` above the group's
//! quota (`burst > quota` → `EINVAL`), which the reference default of 1000 %
//! always hits. kolo caps each container's burst at its quota (limit ×
//! 100000 / 1000, the value the kubelet writes), i.e. at most 100 %.
//!
//! The CFS quota burst of `cfsQuotaBurstOnly` / `auto` (scaling throttled
//! containers' quotas up to `cfsQuotaBurstPercent` while the share pool is
//! below `sharePoolThresholdPercent`) is its own strategy,
//! [`super::cfs_quota_burst`].

use kolo_api::QoSClass;
use kolo_api::crd::{CPUBurstStrategy, NodeSLOSpec};
use kolo_api::names::annotation;

use super::{NodeState, Plan, PodState, Strategy};
use crate::cgroup::resource::CFS_BASE_PERIOD_US;
use crate::cgroup::{CgroupWrite, Resource};

/// The strategy's name.
pub const NAME: &str = "cpuBurst";

/// The reference default of `cpuBurstPercent`.
pub const DEFAULT_CPU_BURST_PERCENT: i64 = 1000;

/// The `cpuBurst` strategy (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuBurst;

/// The effective config of a pod: the node's `cpuBurstStrategy` with the
/// pod's `koordinator.sh/cpuBurst` annotation fields over it.
pub fn pod_config(slo: &NodeSLOSpec, pod: &PodState) -> CPUBurstStrategy {
    let mut cfg = slo.cpu_burst_strategy.clone().unwrap_or_default();
    let over = pod
        .annotations
        .get(annotation::CPU_BURST)
        .and_then(|a| serde_json::from_str::<CPUBurstStrategy>(a).ok());
    if let Some(o) = over {
        cfg.policy = o.policy.or(cfg.policy);
        cfg.cpu_burst_percent = o.cpu_burst_percent.or(cfg.cpu_burst_percent);
        cfg.cfs_quota_burst_percent = o.cfs_quota_burst_percent.or(cfg.cfs_quota_burst_percent);
        cfg.cfs_quota_burst_period_seconds =
            o.cfs_quota_burst_period_seconds.or(cfg.cfs_quota_burst_period_seconds);
        cfg.share_pool_threshold_percent =
            o.share_pool_threshold_percent.or(cfg.share_pool_threshold_percent);
    }
    cfg
}

/// The largest burst the cgroup layer accepts (100 s, its v1 range).
pub const MAX_BURST_US: i64 = 1000 * CFS_BASE_PERIOD_US;

/// `cpu.cfs_burst_us` of a container with CPU limit `limit_milli`:
/// `limit_milli × percent`, capped at the quota `limit_milli × 100` and at
/// [`MAX_BURST_US`]; 0 without a limit or with a non-positive percent.
pub fn burst_us(limit_milli: i64, percent: i64) -> i64 {
    if limit_milli <= 0 || percent <= 0 {
        return 0;
    }
    let quota = limit_milli.saturating_mul(CFS_BASE_PERIOD_US) / 1000;
    limit_milli.saturating_mul(percent).min(quota).min(MAX_BURST_US)
}

fn static_burst(policy: Option<&str>) -> bool {
    matches!(policy, Some("cpuBurstOnly") | Some("auto"))
}

impl Strategy for CpuBurst {
    fn name(&self) -> &'static str {
        NAME
    }

    fn plan(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan) {
        if !node.features.cfs_burst {
            return;
        }
        for pod in &node.pods {
            // The declared class: an unlabelled Guaranteed pod bursts as LS.
            let qos = pod.pod.declared_qos();
            if matches!(qos, QoSClass::LSR | QoSClass::LSE | QoSClass::BE) || pod.pod.terminated {
                continue;
            }
            let cfg = pod_config(slo, pod);
            let policy = cfg.policy.as_deref();
            if !static_burst(policy) {
                continue;
            }
            let percent = cfg.cpu_burst_percent.unwrap_or(DEFAULT_CPU_BURST_PERCENT);
            let key = pod.pod.id.key();
            let mut total = 0i64;
            for c in &pod.containers {
                let limit = c.limits.cpu();
                let burst = burst_us(limit, percent);
                if burst <= 0 {
                    continue;
                }
                total = total.saturating_add(burst);
                let Some(dir) = &c.dir else { continue };
                plan.write(
                    NAME,
                    CgroupWrite::int(dir, Resource::CpuCfsBurst, burst),
                    format!(
                        "{:?} container {key}/{}: cpu.cfs_burst_us={burst} (cpu limit {limit}m × cpuBurstPercent {percent}, capped at quota {}; policy {})",
                        qos,
                        c.name,
                        limit.saturating_mul(CFS_BASE_PERIOD_US) / 1000,
                        policy.unwrap_or("none"),
                    ),
                );
            }
            let total = total.min(MAX_BURST_US);
            if total > 0 {
                plan.write(
                    NAME,
                    CgroupWrite::int(&pod.dir, Resource::CpuCfsBurst, total),
                    format!(
                        "{:?} pod {key}: cpu.cfs_burst_us={total} (sum of its containers' bursts; policy {})",
                        qos,
                        policy.unwrap_or("none"),
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kolo_core::resources::ResourceName::{BatchCpu, Cpu, Memory};

    use super::*;
    use crate::cgroup::Value;
    use crate::qos::Features;
    use crate::qos::testing_a::*;

    fn slo(policy: Option<&str>, percent: Option<i64>) -> NodeSLOSpec {
        NodeSLOSpec {
            cpu_burst_strategy: Some(CPUBurstStrategy {
                policy: policy.map(str::to_string),
                cpu_burst_percent: percent,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn web() -> PodState {
        pod(
            "web",
            QoSClass::LS,
            vec![
                container("a", res(&[(Cpu, 500)]), res(&[(Cpu, 2000), (Memory, 1 << 30)])),
                container("b", res(&[(Cpu, 500)]), res(&[(Cpu, 500)])),
                container("nolimit", res(&[(Cpu, 100)]), res(&[])),
            ],
        )
    }

    fn node_with(pods: Vec<PodState>) -> NodeState {
        let mut n = node();
        n.features = Features { cfs_burst: true, ..Default::default() };
        n.pods = pods;
        n
    }

    #[test]
    fn burst_formula() {
        // (limit milli, percent, burst µs)
        let table = [
            (2000, 50, 100_000), // 2 cores × 50 % × 100000
            (2000, 100, 200_000),
            (2000, 1000, 200_000), // 2 000 000 capped at quota 200 000
            (500, 30, 15_000),
            (0, 50, 0),
            (-1, 50, 0),
            (1000, 0, 0),
            (1000, -5, 0),
            (i64::MAX, 50, MAX_BURST_US),
            (2_000_000, 100, MAX_BURST_US), // 2000 cores: quota 200 s, capped at 100 s
        ];
        for (limit, percent, burst) in table {
            assert_eq!(burst_us(limit, percent), burst, "{limit}m {percent}%");
        }
    }

    #[test]
    fn policies() {
        let a = "kubepods/burstable/podweb/a";
        let b = "kubepods/burstable/podweb/b";
        let p = "kubepods/burstable/podweb";
        let n = node_with(vec![web()]);
        // (policy, percent, a, b, pod)
        let table = [
            (None, Some(50), None, None, None),
            (Some("none"), Some(50), None, None, None),
            (Some("cfsQuotaBurstOnly"), Some(50), None, None, None),
            (Some("cpuBurstOnly"), Some(50), Some(100_000), Some(25_000), Some(125_000)),
            (Some("auto"), Some(20), Some(40_000), Some(10_000), Some(50_000)),
            (Some("cpuBurstOnly"), None, Some(200_000), Some(50_000), Some(250_000)),
        ];
        for (policy, percent, wa, wb, wp) in table {
            let plan = run(&CpuBurst, &n, &slo(policy, percent));
            let int = |v: Option<i64>| v.map(Value::Int);
            assert_eq!(written(&plan, a, Resource::CpuCfsBurst), int(wa), "{policy:?} {percent:?}");
            assert_eq!(written(&plan, b, Resource::CpuCfsBurst), int(wb), "{policy:?} {percent:?}");
            assert_eq!(written(&plan, p, Resource::CpuCfsBurst), int(wp), "{policy:?} {percent:?}");
            assert_eq!(
                written(&plan, "kubepods/burstable/podweb/nolimit", Resource::CpuCfsBurst),
                None
            );
        }
        let plan = run(&CpuBurst, &n, &slo(Some("cpuBurstOnly"), Some(50)));
        assert_eq!(
            plan.writes[0].reason,
            "LS container default/web/a: cpu.cfs_burst_us=100000 (cpu limit 2000m × cpuBurstPercent 50, capped at quota 200000; policy cpuBurstOnly)"
        );
    }

    #[test]
    fn needs_the_kernel_feature() {
        let mut n = node_with(vec![web()]);
        n.features.cfs_burst = false;
        assert!(run(&CpuBurst, &n, &slo(Some("auto"), Some(50))).writes.is_empty());
    }

    #[test]
    fn never_be_lsr_lse() {
        let limited = |name: &str, qos| {
            pod(
                name,
                qos,
                vec![container("c", res(&[(Cpu, 1000)]), res(&[(Cpu, 1000), (BatchCpu, 1000)]))],
            )
        };
        let n = node_with(vec![
            limited("be", QoSClass::BE),
            limited("lsr", QoSClass::LSR),
            limited("lse", QoSClass::LSE),
            limited("sys", QoSClass::System),
        ]);
        let plan = run(&CpuBurst, &n, &slo(Some("auto"), Some(50)));
        let dirs: Vec<String> = writes(&plan).into_iter().map(|w| w.0).collect();
        assert_eq!(dirs, vec!["kubepods/burstable/podsys/c", "kubepods/burstable/podsys"]);
    }

    /// The declared class decides (docs/compatibility.md, "Two QoS
    /// resolutions"): a Guaranteed pod without label or annotation (class
    /// LSR by default) bursts as LS; a declared LSR / LSE pod does not.
    #[test]
    fn declared_class_decides() {
        use kolo_api::qos::QoSSource::{KatalystAnnotation, KoordinatorLabel, KubernetesDefault};
        // (case, class, where it came from, burst of the container)
        let table = [
            ("unlabelled guaranteed", QoSClass::LSR, KubernetesDefault, Some(50_000)),
            ("labelled LSR", QoSClass::LSR, KoordinatorLabel, None),
            ("katalyst dedicated_cores", QoSClass::LSR, KatalystAnnotation, None),
            ("labelled LSE", QoSClass::LSE, KoordinatorLabel, None),
            ("unlabelled burstable", QoSClass::LS, KubernetesDefault, Some(50_000)),
            ("unlabelled best effort", QoSClass::BE, KubernetesDefault, None),
        ];
        for (case, qos, source, burst) in table {
            let limits = res(&[(Cpu, 1000)]);
            let mut p = pod("g", qos, vec![container("c", limits, limits)]);
            p.pod.qos_source = source;
            let c = p.containers[0].dir.clone().expect("container dir");
            let plan = run(&CpuBurst, &node_with(vec![p]), &slo(Some("auto"), Some(50)));
            let path = c.as_path().display().to_string();
            assert_eq!(
                written(&plan, &path, Resource::CpuCfsBurst),
                burst.map(Value::Int),
                "{case}"
            );
        }
    }

    #[test]
    fn annotation_overrides_field_wise() {
        let mut p = web();
        p.annotations
            .insert(annotation::CPU_BURST.to_string(), r#"{"cpuBurstPercent":10}"#.to_string());
        let mut off = web();
        off.pod.id.name = "off".to_string();
        off.dir = dir("kubepods/burstable/podoff");
        off.containers.iter_mut().for_each(|c| c.dir = None);
        off.annotations
            .insert(annotation::CPU_BURST.to_string(), r#"{"policy":"none"}"#.to_string());
        let mut bad = web();
        bad.pod.id.name = "bad".to_string();
        bad.dir = dir("kubepods/burstable/podbad");
        bad.containers.iter_mut().for_each(|c| c.dir = None);
        bad.annotations.insert(annotation::CPU_BURST.to_string(), "{not json".to_string());
        let n = node_with(vec![p, off, bad]);
        let plan = run(&CpuBurst, &n, &slo(Some("cpuBurstOnly"), Some(50)));
        assert_eq!(
            written(&plan, "kubepods/burstable/podweb/a", Resource::CpuCfsBurst),
            Some(Value::Int(20_000))
        );
        assert_eq!(written(&plan, "kubepods/burstable/podoff", Resource::CpuCfsBurst), None);
        // Bad JSON: node config (50 %): 100000 + 25000.
        assert_eq!(
            written(&plan, "kubepods/burstable/podbad", Resource::CpuCfsBurst),
            Some(Value::Int(125_000))
        );
    }
}
