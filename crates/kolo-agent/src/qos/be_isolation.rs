//! `beIsolation`: BE pods get the lowest CPU priority the kernel offers
//! (spec §6.2 group identity, §6.6 core scheduling's `cpu.idle`).
//!
//! BE work gets the first of these mechanisms the kernel has:
//!
//! 1. `cpu.idle = 1` (mainline SCHED_IDLE groups) on the BE QoS dir only: BE
//!    tasks only run when no other task wants the CPU. Not on the pods: the
//!    kernel refuses `cpu.shares` / `cpu.weight` writes to an idle group
//!    (`EINVAL`), and `batchResource` sets the BE pods' shares, by which
//!    they share the BE dir's idle time among themselves. Only on CFS
//!    kernels (< 6.6) unless beClass `cpuQOS.schedIdle` says otherwise
//!    (1: always, 0: never): on EEVDF kernels a waking LS task waits up to
//!    a scheduler tick behind an idle group, so there the BE dir gets
//!    `cpu.idle = 0` and the next mechanism ([`crate::kernel`] has the
//!    measurements);
//! 2. `cpu.bvt_warp_ns` = beClass `groupIdentity` (default `-1`, Alibaba
//!    Cloud Linux group identity), also on the BE containers;
//! 3. `cpu.shares = 2` on the BE QoS dir (the smallest weight; the kubelet
//!    normally already sets it).
//!
//! Deviation (kolo default): the reference only does this when the NodeSLO
//! turns `resourceQOSStrategy.beClass.cpuQOS.enable` on (default off);
//! kolo does it unless that field is explicitly `false`. Explicitly off, the
//! BE dirs get the neutral values back (`cpu.idle = 0` on the QoS dir,
//! `cpu.bvt_warp_ns = 0` on it and the BE pods and containers) so nothing
//! lingers from an earlier round.
//!
//! LS, LSR, LSE and SYSTEM pods are only touched where their class's
//! `cpuQOS.enable` is `true` (LSE uses lsrClass): `cpu.idle = 0` and, with
//! the `groupIdentity` CPU policy (the default), `cpu.bvt_warp_ns` = the
//! class's `groupIdentity` (defaults: LSR / LS 2, SYSTEM 0) on the pod and
//! its containers; an LS pod's `koordinator.sh/cpuQOS` annotation overrides
//! the value ([`pod_group_identity`]). The Burstable / Guaranteed QoS dirs
//! are not written.

use kolo_api::QoSClass;
use kolo_api::crd::{CPUQOSCfg, NodeSLOSpec, ResourceQOS};
use kolo_api::names::annotation;

use super::{Features, NodeState, Plan, PodState, Strategy};
use crate::cgroup::resource::MIN_SHARES;
use crate::cgroup::{CgroupDir, CgroupWrite, Resource};

/// The strategy's name.
pub const NAME: &str = "beIsolation";

/// The `beIsolation` strategy (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct BeIsolation;

/// The CPU QoS config of a class: `None` for classes without one.
fn class_cpu_qos(slo: &NodeSLOSpec, qos: QoSClass) -> Option<&CPUQOSCfg> {
    let s = slo.resource_qos_strategy.as_ref()?;
    let class: Option<&ResourceQOS> = match qos {
        QoSClass::LSE | QoSClass::LSR => s.lsr_class.as_ref(),
        QoSClass::LS => s.ls_class.as_ref(),
        QoSClass::BE => s.be_class.as_ref(),
        QoSClass::System => s.system_class.as_ref(),
        QoSClass::None => None,
    };
    class?.cpu_qos.as_ref()
}

/// The reference default group identity of a class (§3.3).
fn default_group_identity(qos: QoSClass) -> i64 {
    match qos {
        QoSClass::LSE | QoSClass::LSR | QoSClass::LS => 2,
        QoSClass::BE => -1,
        QoSClass::System | QoSClass::None => 0,
    }
}

/// The class's group identity (configured or default), clamped to the
/// kernel's range [-1, 2].
fn group_identity(slo: &NodeSLOSpec, qos: QoSClass) -> i64 {
    class_cpu_qos(slo, qos)
        .and_then(|c| c.group_identity)
        .unwrap_or_else(|| default_group_identity(qos))
        .clamp(-1, 2)
}

/// Whether the CPU policy is group identity (unset, empty or
/// `groupIdentity`).
fn is_group_identity(slo: &NodeSLOSpec) -> bool {
    let policy = slo
        .resource_qos_strategy
        .as_ref()
        .and_then(|s| s.policies.as_ref())
        .and_then(|p| p.cpu_policy.as_deref());
    matches!(policy, None | Some("") | Some("groupIdentity"))
}

/// The group identity of a non-BE pod whose class has CPU QoS on, and where
/// it comes from: the class's, except that an LS pod's
/// `koordinator.sh/cpuQOS` annotation (`{"enable":bool,"groupIdentity":int}`)
/// overrides it: its `groupIdentity` if `enable` is true, else 0 (as in the
/// reference). An unparsable annotation is ignored.
pub fn pod_group_identity(slo: &NodeSLOSpec, pod: &PodState) -> (i64, &'static str) {
    let class = group_identity(slo, pod.pod.qos);
    if pod.pod.qos != QoSClass::LS {
        return (class, "class cpuQOS groupIdentity");
    }
    let over = pod
        .annotations
        .get(annotation::CPU_QOS)
        .and_then(|a| serde_json::from_str::<CPUQOSCfg>(a).ok());
    match over {
        None => (class, "class cpuQOS groupIdentity"),
        Some(a) if a.enable == Some(true) => (
            a.group_identity.map_or(class, |g| g.clamp(-1, 2)),
            "pod annotation koordinator.sh/cpuQOS",
        ),
        Some(_) => (0, "pod annotation koordinator.sh/cpuQOS without enable: true"),
    }
}

/// Whether BE isolation is on: unless beClass `cpuQOS.enable` is `false`.
pub fn be_enabled(slo: &NodeSLOSpec) -> bool {
    class_cpu_qos(slo, QoSClass::BE).and_then(|c| c.enable) != Some(false)
}

/// Whether the BE QoS dir gets `cpu.idle = 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SchedIdle {
    /// Yes (the reason).
    Use(&'static str),
    /// No, though the kernel has it (the reason): reset to 0.
    Avoid(&'static str),
    /// The kernel has no `cpu.idle`.
    Unavailable,
}

/// beClass `cpuQOS.schedIdle` decides where set (1: use `cpu.idle`, else
/// not); unset, kolo uses `cpu.idle` on CFS kernels and not on EEVDF ones,
/// where it delays waking LS tasks by up to a tick ([`crate::kernel`]).
fn be_sched_idle(slo: &NodeSLOSpec, f: Features) -> SchedIdle {
    if !f.cpu_idle {
        return SchedIdle::Unavailable;
    }
    match class_cpu_qos(slo, QoSClass::BE).and_then(|c| c.sched_idle) {
        Some(1) => SchedIdle::Use("beClass cpuQOS schedIdle=1"),
        Some(_) => SchedIdle::Avoid("beClass cpuQOS schedIdle=0"),
        None if f.eevdf => SchedIdle::Avoid(
            "EEVDF scheduler: cpu.idle delays waking LS tasks; BE isolated by weight",
        ),
        None => SchedIdle::Use("kernel has cpu.idle, CFS scheduler"),
    }
}

fn pod_and_containers(pod: &PodState) -> impl Iterator<Item = (&CgroupDir, String)> {
    let key = pod.pod.id.key();
    std::iter::once((&pod.dir, format!("pod {key}"))).chain(
        pod.containers.iter().filter_map(move |c| {
            c.dir.as_ref().map(|d| (d, format!("container {key}/{}", c.name)))
        }),
    )
}

impl BeIsolation {
    fn plan_be(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan) {
        let f = node.features;
        let be_pods = node.pods.iter().filter(|p| p.is_be() && !p.pod.terminated);
        if !be_enabled(slo) {
            let why = "beClass cpuQOS.enable=false: BE isolation off, neutral value";
            if f.cpu_idle {
                plan.write(
                    NAME,
                    CgroupWrite::int(&node.be_dir, Resource::CpuIdle, 0),
                    format!("BE QoS dir: cpu.idle=0 ({why})"),
                );
            }
            if f.bvt_warp_ns {
                plan.write(
                    NAME,
                    CgroupWrite::int(&node.be_dir, Resource::CpuBvtWarpNs, 0),
                    format!("BE QoS dir: cpu.bvt_warp_ns=0 ({why})"),
                );
                for p in be_pods {
                    for (dir, what) in pod_and_containers(p) {
                        plan.write(
                            NAME,
                            CgroupWrite::int(dir, Resource::CpuBvtWarpNs, 0),
                            format!("BE {what}: cpu.bvt_warp_ns=0 ({why})"),
                        );
                    }
                }
            }
            return;
        }
        let n = be_pods.clone().count();
        match be_sched_idle(slo, f) {
            SchedIdle::Use(_) if node.kubelet_down => {
                // A starting kubelet writes the BE QoS dir's `cpu.shares`
                // and exits if that fails, which it does on an idle group:
                // with `cpu.idle = 1` left in place, a restarted kubelet
                // never comes back. Lifted while the kubelet is away; the
                // first round after it answers again restores it.
                plan.write(
                    NAME,
                    CgroupWrite::int(&node.be_dir, Resource::CpuIdle, 0),
                    format!(
                        "BE QoS dir ({n} BE pods): cpu.idle=0 while the kubelet is not answering \
                         (a starting kubelet cannot write cpu.shares on an idle group)"
                    ),
                );
                return;
            }
            SchedIdle::Use(why) => {
                // Only the QoS dir: the kernel refuses `cpu.shares` / `cpu.weight`
                // on an idle group, and batchResource sets the BE pods' shares
                // (inside the idle BE dir they share by their batch-cpu requests).
                plan.write(
                    NAME,
                    CgroupWrite::int(&node.be_dir, Resource::CpuIdle, 1),
                    format!("BE QoS dir ({n} BE pods): cpu.idle=1 (lowest CPU priority; {why})"),
                );
                return;
            }
            SchedIdle::Avoid(why) => {
                // Written before the shares below (same depth keeps the
                // plan's order): an idle group refuses `cpu.shares`.
                plan.write(
                    NAME,
                    CgroupWrite::int(&node.be_dir, Resource::CpuIdle, 0),
                    format!("BE QoS dir ({n} BE pods): cpu.idle=0 ({why})"),
                );
            }
            SchedIdle::Unavailable => {}
        }
        if f.bvt_warp_ns {
            let bvt = group_identity(slo, QoSClass::BE);
            let why = "lowest CPU priority; cpu.idle not used, kernel has group identity";
            plan.write(
                NAME,
                CgroupWrite::int(&node.be_dir, Resource::CpuBvtWarpNs, bvt),
                format!("BE QoS dir: cpu.bvt_warp_ns={bvt} ({why})"),
            );
            for p in be_pods {
                for (dir, what) in pod_and_containers(p) {
                    plan.write(
                        NAME,
                        CgroupWrite::int(dir, Resource::CpuBvtWarpNs, bvt),
                        format!("BE {what}: cpu.bvt_warp_ns={bvt} ({why})"),
                    );
                }
            }
        } else {
            plan.write(
                NAME,
                CgroupWrite::int(&node.be_dir, Resource::CpuShares, MIN_SHARES),
                format!("BE QoS dir: cpu.shares={MIN_SHARES} (lowest CPU weight; no group identity, cpu.idle not used)"),
            );
        }
    }

    fn plan_others(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan) {
        let f = node.features;
        let gi = is_group_identity(slo);
        for p in node.pods.iter().filter(|p| !p.is_be() && !p.pod.terminated) {
            let qos = p.pod.qos;
            if class_cpu_qos(slo, qos).and_then(|c| c.enable) != Some(true) {
                continue;
            }
            let key = p.pod.id.key();
            if f.cpu_idle {
                plan.write(
                    NAME,
                    CgroupWrite::int(&p.dir, Resource::CpuIdle, 0),
                    format!(
                        "{qos:?} pod {key}: cpu.idle=0 (normal CPU priority; class cpuQOS enabled)"
                    ),
                );
            }
            if f.bvt_warp_ns && gi {
                let (bvt, source) = pod_group_identity(slo, p);
                for (dir, what) in pod_and_containers(p) {
                    plan.write(
                        NAME,
                        CgroupWrite::int(dir, Resource::CpuBvtWarpNs, bvt),
                        format!("{qos:?} {what}: cpu.bvt_warp_ns={bvt} ({source})"),
                    );
                }
            }
        }
    }
}

impl Strategy for BeIsolation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn plan(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan) {
        self.plan_be(node, slo, plan);
        self.plan_others(node, slo, plan);
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::crd::{ResourceQOSPolicies, ResourceQOSStrategy};

    use super::*;
    use crate::cgroup::Value;
    use crate::qos::Features;
    use crate::qos::testing_a::*;

    const BE_POD: &str = "kubepods/besteffort/podspark-1";
    const BE_CTR: &str = "kubepods/besteffort/podspark-1/c";
    const LS_POD: &str = "kubepods/burstable/podweb";
    const LS_CTR: &str = "kubepods/burstable/podweb/c";

    fn cpu(enable: Option<bool>, gi: Option<i64>) -> Option<ResourceQOS> {
        Some(ResourceQOS {
            cpu_qos: Some(CPUQOSCfg { enable, group_identity: gi, ..Default::default() }),
            ..Default::default()
        })
    }

    fn slo(be: Option<ResourceQOS>, ls: Option<ResourceQOS>) -> NodeSLOSpec {
        NodeSLOSpec {
            resource_qos_strategy: Some(ResourceQOSStrategy {
                be_class: be,
                ls_class: ls,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn node_with(features: Features) -> NodeState {
        let mut n = node();
        n.features = features;
        n.pods.push(pod("spark-1", QoSClass::BE, vec![container("c", res(&[]), res(&[]))]));
        n.pods.push(pod("web", QoSClass::LS, vec![container("c", res(&[]), res(&[]))]));
        n
    }

    fn int(v: i64) -> Option<Value> {
        Some(Value::Int(v))
    }

    #[test]
    fn cpu_idle_is_lifted_while_the_kubelet_is_down() {
        let idle = Features { cpu_idle: true, ..Default::default() };
        let eevdf = Features { eevdf: true, ..idle };
        let forced = slo(
            Some(ResourceQOS {
                cpu_qos: Some(CPUQOSCfg { sched_idle: Some(1), ..Default::default() }),
                ..Default::default()
            }),
            None,
        );
        // (features, slo, kubelet down) → BE dir cpu.idle, shares
        let table = [
            (idle, NodeSLOSpec::default(), false, int(1), None),
            (idle, NodeSLOSpec::default(), true, int(0), None),
            (eevdf, forced.clone(), false, int(1), None),
            (eevdf, forced, true, int(0), None),
            // Not using cpu.idle anyway: the kubelet's state changes nothing.
            (eevdf, NodeSLOSpec::default(), true, int(0), int(2)),
        ];
        for (features, spec, down, want_idle, want_shares) in table {
            let mut n = node_with(features);
            n.kubelet_down = down;
            let plan = run(&BeIsolation, &n, &spec);
            let lifted = down && want_shares.is_none();
            let got = [Resource::CpuIdle, Resource::CpuShares].map(|r| written(&plan, BE_DIR, r));
            assert_eq!(got, [want_idle, want_shares], "{features:?} down={down}");
            if lifted {
                assert!(plan.writes[0].reason.contains("kubelet is not answering"), "{plan:?}");
            }
        }
    }

    #[test]
    fn feature_fallbacks_with_default_slo() {
        let idle = Features { cpu_idle: true, bvt_warp_ns: true, ..Default::default() };
        let bvt = Features { bvt_warp_ns: true, ..Default::default() };
        let none = Features::default();
        // (features, be dir, be pod, be container) for (cpu.idle, bvt, shares)
        type Row = (Features, [Option<Value>; 3], [Option<Value>; 3], [Option<Value>; 3]);
        let table: [Row; 3] = [
            (idle, [int(1), None, None], [None, None, None], [None, None, None]),
            (bvt, [None, int(-1), None], [None, int(-1), None], [None, int(-1), None]),
            (none, [None, None, int(2)], [None, None, None], [None, None, None]),
        ];
        for (features, be_dir, be_pod, be_ctr) in table {
            let plan = run(&BeIsolation, &node_with(features), &NodeSLOSpec::default());
            for (path, want) in [(BE_DIR, be_dir), (BE_POD, be_pod), (BE_CTR, be_ctr)] {
                let got = [Resource::CpuIdle, Resource::CpuBvtWarpNs, Resource::CpuShares]
                    .map(|r| written(&plan, path, r));
                assert_eq!(got, want, "{features:?} {path}");
            }
            // LS untouched by default.
            assert!(
                plan.writes.iter().all(|w| !w.write.dir.starts_with(&dir("kubepods/burstable")))
            );
        }
        let plan = run(&BeIsolation, &node_with(idle), &NodeSLOSpec::default());
        assert_eq!(plan.writes.len(), 1);
        assert_eq!(
            plan.writes[0].reason,
            "BE QoS dir (1 BE pods): cpu.idle=1 (lowest CPU priority; kernel has cpu.idle, CFS scheduler)"
        );
        // bvt: a reason per pod / container, with the value.
        let plan = run(&BeIsolation, &node_with(bvt), &NodeSLOSpec::default());
        let reason = &plan.writes.iter().find(|w| w.write.dir == dir(BE_POD)).unwrap().reason;
        assert_eq!(
            reason,
            "BE pod default/spark-1: cpu.bvt_warp_ns=-1 (lowest CPU priority; cpu.idle not used, kernel has group identity)"
        );
    }

    #[test]
    fn sched_idle_by_scheduler_and_config() {
        let cfs = Features { cpu_idle: true, ..Default::default() };
        let eevdf = Features { eevdf: true, ..cfs };
        let sched_idle = |v: Option<i64>| {
            slo(
                Some(ResourceQOS {
                    cpu_qos: Some(CPUQOSCfg { sched_idle: v, ..Default::default() }),
                    ..Default::default()
                }),
                None,
            )
        };
        // (features, beClass schedIdle, BE dir cpu.idle, BE dir cpu.shares)
        let table = [
            (cfs, None, int(1), None),
            (eevdf, None, int(0), int(2)),
            (cfs, Some(0), int(0), int(2)),
            (eevdf, Some(1), int(1), None),
            (eevdf, Some(0), int(0), int(2)),
            // No cpu.idle file: shares whatever schedIdle says.
            (Features { eevdf: true, ..Default::default() }, Some(1), None, int(2)),
        ];
        for (features, idle, want_idle, want_shares) in table {
            let plan = run(&BeIsolation, &node_with(features), &sched_idle(idle));
            assert_eq!(
                written(&plan, BE_DIR, Resource::CpuIdle),
                want_idle,
                "{features:?} {idle:?}"
            );
            assert_eq!(
                written(&plan, BE_DIR, Resource::CpuShares),
                want_shares,
                "{features:?} {idle:?}"
            );
            // cpu.idle=0 comes before the shares: an idle group refuses them.
            let order: Vec<Resource> = plan.writes.iter().map(|w| w.write.resource).collect();
            if want_idle == int(0) {
                assert_eq!(order, [Resource::CpuIdle, Resource::CpuShares]);
            }
        }
        let plan = run(&BeIsolation, &node_with(eevdf), &NodeSLOSpec::default());
        assert_eq!(
            plan.writes[0].reason,
            "BE QoS dir (1 BE pods): cpu.idle=0 (EEVDF scheduler: cpu.idle delays waking LS tasks; BE isolated by weight)"
        );
    }

    #[test]
    fn be_class_enable() {
        let f = all_features();
        // explicit true: as default; configured groupIdentity used (clamped).
        let plan = run(
            &BeIsolation,
            &node_with(Features { cpu_idle: false, ..f }),
            &slo(cpu(Some(true), Some(-7)), None),
        );
        assert_eq!(written(&plan, BE_POD, Resource::CpuBvtWarpNs), int(-1));
        let plan = run(
            &BeIsolation,
            &node_with(Features { cpu_idle: false, ..f }),
            &slo(cpu(None, Some(0)), None),
        );
        assert_eq!(written(&plan, BE_CTR, Resource::CpuBvtWarpNs), int(0));
        // explicit false: neutral values.
        let plan = run(&BeIsolation, &node_with(f), &slo(cpu(Some(false), None), None));
        assert_eq!(written(&plan, BE_DIR, Resource::CpuIdle), int(0));
        assert_eq!(written(&plan, BE_POD, Resource::CpuIdle), None);
        for path in [BE_DIR, BE_POD] {
            assert_eq!(written(&plan, path, Resource::CpuBvtWarpNs), int(0), "{path}");
        }
        assert_eq!(written(&plan, BE_CTR, Resource::CpuBvtWarpNs), int(0));
        assert_eq!(written(&plan, BE_DIR, Resource::CpuShares), None);
        // explicit false without features: nothing at all.
        assert!(
            run(&BeIsolation, &node_with(Features::default()), &slo(cpu(Some(false), None), None))
                .writes
                .is_empty()
        );
    }

    #[test]
    fn ls_pods_only_when_their_class_is_enabled() {
        let f = all_features();
        // (ls class, cpu policy, ls pod cpu.idle, ls pod bvt, ls container bvt)
        let gi = Some("groupIdentity");
        let table = [
            (None, gi, None, None, None),
            (cpu(Some(false), Some(2)), gi, None, None, None),
            (cpu(Some(true), None), gi, int(0), int(2), int(2)),
            (cpu(Some(true), Some(1)), None, int(0), int(1), int(1)),
            (cpu(Some(true), Some(9)), gi, int(0), int(2), int(2)),
            (cpu(Some(true), None), Some("coreSched"), int(0), None, None),
        ];
        for (ls, policy, idle, bvt, ctr_bvt) in table {
            let mut s = slo(None, ls.clone());
            s.resource_qos_strategy.as_mut().unwrap().policies = Some(ResourceQOSPolicies {
                cpu_policy: policy.map(str::to_string),
                ..Default::default()
            });
            let plan = run(&BeIsolation, &node_with(f), &s);
            assert_eq!(written(&plan, LS_POD, Resource::CpuIdle), idle, "{ls:?} {policy:?}");
            assert_eq!(written(&plan, LS_POD, Resource::CpuBvtWarpNs), bvt, "{ls:?} {policy:?}");
            assert_eq!(
                written(&plan, LS_CTR, Resource::CpuBvtWarpNs),
                ctr_bvt,
                "{ls:?} {policy:?}"
            );
            // Never a BE-style value on an LS dir.
            assert!(
                plan.writes.iter().filter(|w| w.write.dir.starts_with(&dir(LS_POD))).all(|w| w
                    .write
                    .value
                    != Value::Int(1)
                    || w.write.resource == Resource::CpuBvtWarpNs)
            );
        }
    }

    #[test]
    fn ls_pod_annotation() {
        let s = slo(None, cpu(Some(true), Some(1)));
        // (annotation, bvt)
        let table = [
            (None, 1),
            (Some("{oops"), 1),
            (Some(r#"{"enable":true,"groupIdentity":2}"#), 2),
            (Some(r#"{"enable":true,"groupIdentity":-9}"#), -1),
            (Some(r#"{"enable":true}"#), 1),
            (Some(r#"{"groupIdentity":2}"#), 0),
            (Some(r#"{"enable":false,"groupIdentity":2}"#), 0),
        ];
        for (a, bvt) in table {
            let mut n = node_with(all_features());
            if let Some(a) = a {
                n.pods[1].annotations.insert(annotation::CPU_QOS.to_string(), a.to_string());
            }
            let plan = run(&BeIsolation, &n, &s);
            assert_eq!(written(&plan, LS_POD, Resource::CpuBvtWarpNs), int(bvt), "{a:?}");
            assert_eq!(written(&plan, LS_CTR, Resource::CpuBvtWarpNs), int(bvt), "{a:?}");
        }
        // Only LS pods read it.
        let mut p = pod("db", QoSClass::LSR, vec![]);
        p.annotations.insert(annotation::CPU_QOS.to_string(), r#"{"enable":false}"#.to_string());
        let s = NodeSLOSpec {
            resource_qos_strategy: Some(ResourceQOSStrategy {
                lsr_class: cpu(Some(true), None),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(pod_group_identity(&s, &p), (2, "class cpuQOS groupIdentity"));
    }

    #[test]
    fn terminated_be_pods_are_skipped() {
        let mut n = node_with(all_features());
        n.pods[0].pod.terminated = true;
        let plan = run(&BeIsolation, &n, &NodeSLOSpec::default());
        assert_eq!(writes(&plan), vec![(BE_DIR.to_string(), Resource::CpuIdle, Value::Int(1))]);
    }
}
