//! `memoryQOS`: memcg protection and throttling per QoS class (spec §5.7,
//! Koordinator's `CgroupReconcile`).
//!
//! For every pod whose class has `resourceQOSStrategy.<class>.memoryQOS.enable:
//! true` (LSE uses lsrClass; pods without a kolo class use beClass when
//! BestEffort, else lsClass) on a kernel with `memory.min/low/high`:
//!
//! * pod: `memory.min` = req × `minLimitPercent` / 100, `memory.low` = req ×
//!   `lowLimitPercent` / 100 (raised to `memory.min` if lower), where req is
//!   the pod's memory request (BE: the sum of its containers' batch-memory
//!   requests);
//! * container: the same with the container's request (BE: batch-memory),
//!   and `memory.high` = floor_to_page(req + (limit − req) × `throttlingPercent`
//!   / 100), limit = the container's memory limit (BE: batch-memory limit),
//!   or the node's allocatable memory without one; raised to `memory.min`;
//!   `max` when `throttlingPercent` is 0;
//! * QoS dirs: `memory.min` / `memory.low` = the sum over their pods (the
//!   root `kubepods` dir: over all pods), so the protection reaches the
//!   pods — cgroup v2 caps a child's protection by its parent's. Only
//!   written if some pod's class sets the percent. A QoS dir is a pod dir's
//!   parent; the root is the BE QoS dir's parent.
//!
//! Defaults (§3.3): every percent 0. A percent of 0 (or unset, or negative)
//! writes nothing for `memory.min` / `memory.low`. Numbers saturate.
//!
//! The pod annotation `koordinator.sh/memoryQOS` adjusts this per pod (see
//! [`pod_percents`]).
//!
//! Not implemented: the Alibaba Cloud Linux extras (`memory.wmark_*`, `memory.priority`,
//! `memory.use_priority_oom`, `memory.oom.group`, page cache limits).

use std::collections::BTreeMap;

use kolo_api::QoSClass;
use kolo_api::crd::{MemoryQOSCfg, NodeSLOSpec};
use kolo_api::kube_qos::KubeQoSClass;
use kolo_api::names::annotation;
use kolo_core::resources::ResourceName;

use super::{NodeState, Plan, PodState, Strategy};
use crate::cgroup::resource::PAGE_SIZE;
use crate::cgroup::{CgroupDir, CgroupWrite, Resource, Value};

/// The strategy's name.
pub const NAME: &str = "memoryQOS";

/// The `memoryQOS` strategy (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryQos;

/// The percentages of one class, defaults applied (0), negatives as 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Percents {
    /// `minLimitPercent`.
    pub min: i64,
    /// `lowLimitPercent`.
    pub low: i64,
    /// `throttlingPercent`.
    pub throttling: i64,
}

impl Percents {
    fn from_cfg(cfg: &MemoryQOSCfg) -> Percents {
        let p = |v: Option<i64>| v.unwrap_or(0).max(0);
        Percents {
            min: p(cfg.min_limit_percent),
            low: p(cfg.low_limit_percent),
            throttling: p(cfg.throttling_percent),
        }
    }
}

/// The memory QoS percentages of a pod's class, `None` if the class's
/// memory QoS is not enabled.
pub fn class_percents(slo: &NodeSLOSpec, pod: &PodState) -> Option<Percents> {
    let s = slo.resource_qos_strategy.as_ref()?;
    let class = match pod.pod.qos {
        QoSClass::LSE | QoSClass::LSR => s.lsr_class.as_ref(),
        QoSClass::LS => s.ls_class.as_ref(),
        QoSClass::BE => s.be_class.as_ref(),
        QoSClass::System => s.system_class.as_ref(),
        QoSClass::None if pod.pod.kube_qos == KubeQoSClass::BestEffort => s.be_class.as_ref(),
        QoSClass::None => s.ls_class.as_ref(),
    };
    let cfg = class?.memory_qos.as_ref()?;
    (cfg.enable == Some(true)).then(|| Percents::from_cfg(cfg))
}

/// The `koordinator.sh/memoryQOS` pod annotation (Koordinator's
/// `PodMemoryQOSConfig`; the fields kolo uses).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodMemoryQos {
    /// `default` (or unset): the class config; `none`: off for this pod;
    /// `auto`: on, from the default template (every percent 0).
    pub policy: Option<String>,
    /// Overrides `minLimitPercent`.
    pub min_limit_percent: Option<i64>,
    /// Overrides `lowLimitPercent`.
    pub low_limit_percent: Option<i64>,
    /// Overrides `throttlingPercent`.
    pub throttling_percent: Option<i64>,
}

/// The percentages for a pod, `None` if memory QoS is off for it: the
/// class config (off unless `enable: true`), then the pod annotation
/// `koordinator.sh/memoryQOS` (an unparsable one is ignored): policy `none`
/// turns it off, `auto` turns it on from the default template (all 0), and
/// the annotation's percents override field by field (and turn it on, as in
/// the reference, where the pod config is merged over the class's "None"
/// values).
pub fn pod_percents(slo: &NodeSLOSpec, pod: &PodState) -> Option<Percents> {
    let class = class_percents(slo, pod);
    let Some(a) = pod
        .annotations
        .get(annotation::MEMORY_QOS)
        .and_then(|a| serde_json::from_str::<PodMemoryQos>(a).ok())
    else {
        return class;
    };
    let fields_set = a.min_limit_percent.is_some()
        || a.low_limit_percent.is_some()
        || a.throttling_percent.is_some();
    let base = match a.policy.as_deref() {
        Some("none") => return None,
        Some("auto") => Some(Percents::default()),
        _ if fields_set => Some(class.unwrap_or_default()),
        _ => class,
    }?;
    let p = |v: Option<i64>, d: i64| v.map_or(d, |v| v.max(0));
    Some(Percents {
        min: p(a.min_limit_percent, base.min),
        low: p(a.low_limit_percent, base.low),
        throttling: p(a.throttling_percent, base.throttling),
    })
}

/// `value × percent / 100`, in [0, i64::MAX].
pub fn percent_of(value: i64, percent: i64) -> i64 {
    let v = i128::from(value.max(0)) * i128::from(percent.max(0)) / 100;
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// `(memory.min, memory.low)` for a request: low is raised to min when it
/// is set but lower.
pub fn min_low(request: i64, p: Percents) -> (i64, i64) {
    let min = percent_of(request, p.min);
    let mut low = percent_of(request, p.low);
    if low > 0 && low < min {
        low = min;
    }
    (min, low)
}

/// `memory.high` of a container: `None` (`max`) when throttling is off or
/// there is no positive limit; else floor_to_page(req + (limit − req) ×
/// throttling / 100), at least `min`.
pub fn high(request: i64, limit: i64, throttling: i64, min: i64) -> Option<i64> {
    if throttling <= 0 || limit <= 0 {
        return None;
    }
    let req = i128::from(request.max(0));
    let h = req + (i128::from(limit) - req) * i128::from(throttling) / 100;
    let h = i64::try_from(h.max(0)).unwrap_or(i64::MAX) / PAGE_SIZE * PAGE_SIZE;
    (h > 0).then_some(h.max(min))
}

fn positive(v: Option<i64>) -> i64 {
    v.unwrap_or(0).max(0)
}

/// Pod-level sums for a QoS dir.
#[derive(Default)]
struct Sums {
    min: i64,
    low: i64,
    any_min: bool,
    any_low: bool,
}

impl Sums {
    fn add(&mut self, min: i64, low: i64, p: Percents) {
        self.min = self.min.saturating_add(min);
        self.low = self.low.saturating_add(low);
        self.any_min |= p.min > 0;
        self.any_low |= p.low > 0;
    }
}

fn parent(dir: &CgroupDir) -> Option<CgroupDir> {
    dir.as_path().parent().and_then(|p| p.to_str()).and_then(|p| CgroupDir::parse(p).ok())
}

fn write_min_low(
    plan: &mut Plan,
    dir: &CgroupDir,
    what: &str,
    req: i64,
    p: Percents,
    (min, low): (i64, i64),
) {
    if p.min > 0 {
        plan.write(
            NAME,
            CgroupWrite::int(dir, Resource::MemoryMin, min),
            format!(
                "{what}: memory.min={min} (memory request {req} × minLimitPercent {} / 100)",
                p.min
            ),
        );
    }
    if p.low > 0 {
        plan.write(
            NAME,
            CgroupWrite::int(dir, Resource::MemoryLow, low),
            format!(
                "{what}: memory.low={low} (memory request {req} × lowLimitPercent {} / 100, at least memory.min {min})",
                p.low
            ),
        );
    }
}

impl Strategy for MemoryQos {
    fn name(&self) -> &'static str {
        NAME
    }

    fn plan(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan) {
        if !node.features.memory_qos {
            return;
        }
        let node_memory = node.allocatable.memory();
        let mut qos_dirs: BTreeMap<CgroupDir, Sums> = BTreeMap::new();
        let mut total = Sums::default();
        for pod in &node.pods {
            if pod.pod.terminated {
                continue;
            }
            let Some(p) = pod_percents(slo, pod) else { continue };
            let be = pod.is_be();
            let key = pod.pod.id.key();
            let class = format!("{:?}", pod.pod.qos);
            let pod_req = if be {
                pod.containers
                    .iter()
                    .map(|c| positive(c.requests.get(ResourceName::BatchMemory)))
                    .fold(0i64, i64::saturating_add)
            } else {
                pod.pod.requests.memory().max(0)
            };
            let pod_ml = min_low(pod_req, p);
            write_min_low(plan, &pod.dir, &format!("{class} pod {key}"), pod_req, p, pod_ml);
            if let Some(qos_dir) = parent(&pod.dir) {
                qos_dirs.entry(qos_dir).or_default().add(pod_ml.0, pod_ml.1, p);
            }
            total.add(pod_ml.0, pod_ml.1, p);

            for c in &pod.containers {
                let Some(dir) = &c.dir else { continue };
                let what = format!("{class} container {key}/{}", c.name);
                let (req, limit) = if be {
                    (
                        c.requests.get(ResourceName::BatchMemory),
                        c.limits.get(ResourceName::BatchMemory),
                    )
                } else {
                    (c.requests.get(ResourceName::Memory), c.limits.get(ResourceName::Memory))
                };
                let req = positive(req);
                let limit = positive(limit);
                let ml = min_low(req, p);
                write_min_low(plan, dir, &what, req, p, ml);
                let (base, base_name) = if limit > 0 {
                    (limit, "limit")
                } else {
                    (node_memory, "node allocatable memory")
                };
                match high(req, base, p.throttling, ml.0) {
                    Some(h) => plan.write(
                        NAME,
                        CgroupWrite::int(dir, Resource::MemoryHigh, h),
                        format!(
                            "{what}: memory.high={h} (request {req} + ({base_name} {base} − request) × throttlingPercent {} / 100, page-aligned, at least memory.min {})",
                            p.throttling, ml.0
                        ),
                    ),
                    None => plan.write(
                        NAME,
                        CgroupWrite { dir: dir.clone(), resource: Resource::MemoryHigh, value: Value::Max },
                        format!(
                            "{what}: memory.high=max (throttlingPercent {}, {base_name} {base})",
                            p.throttling
                        ),
                    ),
                };
            }
        }
        let root = parent(&node.be_dir);
        if let Some(root) = &root {
            qos_dirs.remove(root);
        }
        let qos_writes = qos_dirs
            .iter()
            .map(|(d, s)| (d, s, "sum over its pods"))
            .chain(root.as_ref().map(|r| (r, &total, "sum over all pods")));
        for (dir, s, why) in qos_writes {
            if s.any_min {
                plan.write(
                    NAME,
                    CgroupWrite::int(dir, Resource::MemoryMin, s.min),
                    format!("QoS dir {dir}: memory.min={} ({why}' memory.min)", s.min),
                );
            }
            if s.any_low {
                plan.write(
                    NAME,
                    CgroupWrite::int(dir, Resource::MemoryLow, s.low),
                    format!("QoS dir {dir}: memory.low={} ({why}' memory.low)", s.low),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::crd::{ResourceQOS, ResourceQOSStrategy};
    use kolo_core::resources::ResourceName::{BatchMemory, Memory};

    use super::*;
    use crate::qos::Features;
    use crate::qos::testing_a::*;

    const MI: i64 = 1 << 20;
    const GI: i64 = 1 << 30;

    fn mem(
        enable: Option<bool>,
        min: Option<i64>,
        low: Option<i64>,
        throttling: Option<i64>,
    ) -> Option<ResourceQOS> {
        Some(ResourceQOS {
            memory_qos: Some(MemoryQOSCfg {
                enable,
                min_limit_percent: min,
                low_limit_percent: low,
                throttling_percent: throttling,
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn slo(
        ls: Option<ResourceQOS>,
        be: Option<ResourceQOS>,
        lsr: Option<ResourceQOS>,
    ) -> NodeSLOSpec {
        NodeSLOSpec {
            resource_qos_strategy: Some(ResourceQOSStrategy {
                ls_class: ls,
                be_class: be,
                lsr_class: lsr,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn node_with(pods: Vec<PodState>) -> NodeState {
        let mut n = node();
        n.features = Features { memory_qos: true, ..Default::default() };
        n.pods = pods;
        n
    }

    fn web() -> PodState {
        pod(
            "web",
            QoSClass::LS,
            vec![
                container("a", res(&[(Memory, GI)]), res(&[(Memory, 2 * GI)])),
                container("b", res(&[(Memory, 100 * MI)]), res(&[])),
            ],
        )
    }

    fn int(v: i64) -> Option<Value> {
        Some(Value::Int(v))
    }

    #[test]
    fn formulas() {
        let p = |min, low, throttling| Percents { min, low, throttling };
        // (request, percents, min, low)
        let table = [
            (GI, p(100, 0, 0), GI, 0),
            (GI, p(50, 80, 0), GI / 2, GI * 8 / 10),
            (GI, p(80, 50, 0), GI * 8 / 10, GI * 8 / 10), // low raised to min
            (0, p(100, 100, 0), 0, 0),
            (-5, p(100, 100, 0), 0, 0),
            (i64::MAX, p(200, 0, 0), i64::MAX, 0),
        ];
        for (req, percents, min, low) in table {
            assert_eq!(min_low(req, percents), (min, low), "{req} {percents:?}");
        }
        // (request, limit, throttling, min, high)
        let table = [
            (GI, 2 * GI, 50, 0, Some(GI + GI / 2)),
            (GI, 2 * GI, 0, 0, None),
            (GI, 0, 50, 0, None),
            (GI, 2 * GI, 100, 0, Some(2 * GI)),
            (1000, 10_000, 50, 0, Some(4096)), // 5500 → page-aligned 4096
            (1000, 5000, 10, 0, None),         // 1400 → 0 after page alignment: max
            (GI, 2 * GI, 10, 2 * GI, Some(2 * GI)), // raised to min
            (0, i64::MAX, 1000, 0, Some(i64::MAX / PAGE_SIZE * PAGE_SIZE)),
        ];
        for (req, limit, t, min, want) in table {
            assert_eq!(high(req, limit, t, min), want, "{req} {limit} {t} {min}");
        }
    }

    #[test]
    fn ls_pod_containers_and_qos_dirs() {
        let n = node_with(vec![web()]);
        let plan =
            run(&MemoryQos, &n, &slo(mem(Some(true), Some(50), Some(80), Some(50)), None, None));
        let pod_req = GI + 100 * MI;
        let table = [
            ("kubepods/burstable/podweb", Resource::MemoryMin, int(pod_req / 2)),
            ("kubepods/burstable/podweb", Resource::MemoryLow, int(pod_req * 8 / 10)),
            ("kubepods/burstable/podweb", Resource::MemoryHigh, None),
            ("kubepods/burstable/podweb/a", Resource::MemoryMin, int(GI / 2)),
            ("kubepods/burstable/podweb/a", Resource::MemoryLow, int(GI * 8 / 10)),
            ("kubepods/burstable/podweb/a", Resource::MemoryHigh, int(GI + GI / 2)),
            // No limit: node allocatable 32 GiB: 100 Mi + (32 Gi − 100 Mi) / 2.
            ("kubepods/burstable/podweb/b", Resource::MemoryMin, int(50 * MI)),
            ("kubepods/burstable/podweb/b", Resource::MemoryHigh, int(50 * MI + 16 * GI)),
            ("kubepods/burstable", Resource::MemoryMin, int(pod_req / 2)),
            ("kubepods/burstable", Resource::MemoryLow, int(pod_req * 8 / 10)),
            ("kubepods", Resource::MemoryMin, int(pod_req / 2)),
            ("kubepods", Resource::MemoryLow, int(pod_req * 8 / 10)),
            (BE_DIR, Resource::MemoryMin, None),
        ];
        for (dir, resource, want) in table {
            assert_eq!(written(&plan, dir, resource), want, "{resource:?} of {dir}");
        }
        let r = &plan.writes[0].reason;
        assert_eq!(
            r,
            &format!(
                "LS pod default/web: memory.min={} (memory request {pod_req} × minLimitPercent 50 / 100)",
                pod_req / 2
            )
        );
    }

    #[test]
    fn enable_and_defaults() {
        let n = node_with(vec![web()]);
        // Not enabled: nothing.
        for s in [
            NodeSLOSpec::default(),
            slo(mem(None, Some(50), Some(50), Some(50)), None, None),
            slo(mem(Some(false), Some(50), Some(50), Some(50)), None, None),
            slo(None, mem(Some(true), Some(50), None, None), None),
        ] {
            assert!(run(&MemoryQos, &n, &s).writes.is_empty(), "{s:?}");
        }
        // Enabled with default (0) percents: only memory.high = max on the containers.
        let plan = run(&MemoryQos, &n, &slo(mem(Some(true), None, Some(-3), None), None, None));
        assert_eq!(
            writes(&plan),
            vec![
                ("kubepods/burstable/podweb/a".to_string(), Resource::MemoryHigh, Value::Max),
                ("kubepods/burstable/podweb/b".to_string(), Resource::MemoryHigh, Value::Max),
            ]
        );
        // Kernel without memory QoS: nothing.
        let mut n = n;
        n.features.memory_qos = false;
        assert!(
            run(&MemoryQos, &n, &slo(mem(Some(true), Some(50), None, None), None, None))
                .writes
                .is_empty()
        );
    }

    #[test]
    fn pod_annotation() {
        let on = slo(mem(Some(true), Some(50), Some(80), Some(50)), None, None);
        let off = slo(mem(Some(false), Some(50), Some(80), Some(50)), None, None);
        let p = |min, low, throttling| Some(Percents { min, low, throttling });
        // (annotation, class on → percents, class off → percents)
        let table = [
            (None, p(50, 80, 50), None),
            (Some("not json"), p(50, 80, 50), None),
            (Some(r#"{}"#), p(50, 80, 50), None),
            (Some(r#"{"policy":"default"}"#), p(50, 80, 50), None),
            (Some(r#"{"policy":"none","minLimitPercent":10}"#), None, None),
            (Some(r#"{"policy":"auto"}"#), p(0, 0, 0), p(0, 0, 0)),
            (Some(r#"{"policy":"auto","lowLimitPercent":30}"#), p(0, 30, 0), p(0, 30, 0)),
            (Some(r#"{"minLimitPercent":100}"#), p(100, 80, 50), p(100, 0, 0)),
            (Some(r#"{"throttlingPercent":-4}"#), p(50, 80, 0), p(0, 0, 0)),
        ];
        for (a, want_on, want_off) in table {
            let mut w = web();
            if let Some(a) = a {
                w.annotations.insert(annotation::MEMORY_QOS.to_string(), a.to_string());
            }
            assert_eq!(pod_percents(&on, &w), want_on, "{a:?} class on");
            assert_eq!(pod_percents(&off, &w), want_off, "{a:?} class off");
        }
        // And the strategy uses it.
        let mut w = web();
        w.annotations
            .insert(annotation::MEMORY_QOS.to_string(), r#"{"minLimitPercent":100}"#.into());
        let plan = run(&MemoryQos, &node_with(vec![w]), &off);
        assert_eq!(written(&plan, "kubepods/burstable/podweb/a", Resource::MemoryMin), int(GI));
        assert_eq!(written(&plan, "kubepods/burstable/podweb/a", Resource::MemoryLow), None);
    }

    #[test]
    fn be_uses_batch_memory_and_root_sums_all_classes() {
        let be = pod(
            "spark",
            QoSClass::BE,
            vec![
                container(
                    "x",
                    res(&[(BatchMemory, GI), (Memory, 7)]),
                    res(&[(BatchMemory, 3 * GI)]),
                ),
                container("y", res(&[]), res(&[])),
            ],
        );
        let lsr = pod(
            "db",
            QoSClass::LSE,
            vec![container("c", res(&[(Memory, 2 * GI)]), res(&[(Memory, 2 * GI)]))],
        );
        let n = node_with(vec![web(), be, lsr]);
        let s = slo(
            mem(Some(true), Some(100), None, None),
            mem(Some(true), None, Some(50), Some(50)),
            mem(Some(true), Some(100), None, Some(100)),
        );
        let plan = run(&MemoryQos, &n, &s);
        let web_req = GI + 100 * MI;
        let table = [
            ("kubepods/besteffort/podspark", Resource::MemoryLow, int(GI / 2)),
            ("kubepods/besteffort/podspark", Resource::MemoryMin, None),
            ("kubepods/besteffort/podspark/x", Resource::MemoryLow, int(GI / 2)),
            ("kubepods/besteffort/podspark/x", Resource::MemoryHigh, int(2 * GI)),
            // y: no batch memory: low 0, high from node memory: 16 GiB.
            ("kubepods/besteffort/podspark/y", Resource::MemoryLow, int(0)),
            ("kubepods/besteffort/podspark/y", Resource::MemoryHigh, int(16 * GI)),
            (BE_DIR, Resource::MemoryLow, int(GI / 2)),
            (BE_DIR, Resource::MemoryMin, None),
            ("kubepods/poddb", Resource::MemoryMin, int(2 * GI)),
            ("kubepods/poddb/c", Resource::MemoryHigh, int(2 * GI)),
            ("kubepods/burstable", Resource::MemoryMin, int(web_req)),
            ("kubepods", Resource::MemoryMin, int(web_req + 2 * GI)),
            ("kubepods", Resource::MemoryLow, int(GI / 2)),
        ];
        for (dir, resource, want) in table {
            assert_eq!(written(&plan, dir, resource), want, "{resource:?} of {dir}");
        }
    }
}
