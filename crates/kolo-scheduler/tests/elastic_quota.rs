//! ElasticQuota through the in-memory scheduler: max enforced with the
//! spec's message, runtime shared by weight, non-preemptible pods held to
//! min, the parent chain, and preemption kept inside a quota.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kolo_api::crd::{ElasticQuota, ElasticQuotaSpec};
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::framework::SchedulingObject;
use kolo_scheduler::plugins::elastic_quota::names;
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{CycleReport, Outcome, Scheduler};

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn node(name: &str, cpu: &str) -> Node {
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\nstatus:\n  allocatable: {{cpu: '{cpu}', memory: 64Gi, pods: '110'}}\n  capacity: {{cpu: '{cpu}', memory: 64Gi, pods: '110'}}\n"
    ))
    .unwrap()
}

/// A pod `ns/<name>` in `quota` (label), of a koord class and priority,
/// asking for `cpu`; on `node` if given; `labels` and `spec` add to it.
fn pod(name: &str, quota: &str, class: &str, priority: i32, cpu: &str, on: Option<&str>) -> Pod {
    pod_with(name, quota, class, priority, cpu, on, "", "")
}

#[allow(clippy::too_many_arguments)]
fn pod_with(
    name: &str,
    quota: &str,
    class: &str,
    priority: i32,
    cpu: &str,
    on: Option<&str>,
    labels: &str,
    spec: &str,
) -> Pod {
    let on = on.map(|n| format!("  nodeName: {n}\n")).unwrap_or_default();
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, namespace: ns, uid: u-{name}, labels: {{koordinator.sh/priority-class: {class}, quota.scheduling.koordinator.sh/name: {quota}{labels}}}}}\nspec:\n  schedulerName: kolo-scheduler\n  priority: {priority}\n{on}{spec}  containers:\n  - name: c\n    resources:\n      requests: {{cpu: '{cpu}'}}\n"
    ))
    .unwrap()
}

/// A quota with cpu min / max (empty min: none), labels and annotations.
fn quota(
    name: &str,
    min: &str,
    max: &str,
    labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
) -> SchedulingObject {
    let list = |cpu: &str| {
        (!cpu.is_empty()).then(|| BTreeMap::from([("cpu".to_string(), Quantity(cpu.to_string()))]))
    };
    let mut q = ElasticQuota::new(name, ElasticQuotaSpec { min: list(min), max: list(max) });
    q.metadata.namespace = Some("quotas".to_string());
    let map = |pairs: &[(&str, &str)]| {
        Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    };
    q.metadata.labels = map(labels);
    q.metadata.annotations = map(annotations);
    SchedulingObject::ElasticQuota(Arc::new(q))
}

fn scheduler(args: &str) -> Scheduler {
    let yaml = format!("profiles:\n- pluginConfig:\n  - name: ElasticQuota\n    args: {args}\n");
    let config = SchedulerConfig::from_yaml(&yaml).unwrap();
    Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, Arc::new(InMemoryBinder::new())).unwrap()
}

fn unschedulable(report: &CycleReport) -> (&str, Option<&str>, BTreeSet<&str>) {
    match &report.outcome {
        Outcome::Unschedulable { message, nominated, victims, .. } => (
            message.as_str(),
            nominated.as_deref(),
            victims.iter().map(|v| v.pod.as_str()).collect(),
        ),
        other => panic!("{} was not unschedulable: {other:?}", report.pod),
    }
}

fn scheduled(report: &CycleReport) -> bool {
    matches!(report.outcome, Outcome::Scheduled { .. })
}

#[test]
fn max_is_enforced_with_the_specs_message() {
    let mut s = scheduler("{}");
    s.apply_node(node("n", "8"), t(0)).unwrap();
    s.apply_object(quota("team", "", "2", &[], &[]), t(0));
    s.apply_pod(pod("p1", "team", "koord-prod", 9500, "1", None), t(0)).unwrap();
    assert!(scheduled(&s.schedule_next(t(0)).unwrap()));
    s.apply_pod(pod("p2", "team", "koord-prod", 9500, "2", None), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    let (message, nominated, victims) = unschedulable(&report);
    // Request 3, limited to max 2: the runtime is 2.
    let want = "Insufficient quotas, quotaName: team, runtime: cpu=2, used: cpu=1, pod's request: cpu=2, exceedDimensions: [cpu]";
    assert!(message.contains(want), "{message}");
    assert_eq!((nominated, victims.len()), (None, 0));
    // The first pod goes: quota frees, the second fits.
    s.remove_pod("ns/p1", t(1));
    let reports = s.run_until_idle(t(30));
    assert_eq!(reports.iter().filter(|r| scheduled(r)).count(), 1, "{reports:?}");
}

/// 10 cores shared by two quotas asking for 10 each, weights 1 : 3: the
/// runtimes are 2.5 and 7.5 cores, so 2 and 7 one-core pods run.
#[test]
fn siblings_share_the_runtime_by_weight() {
    let mut s = scheduler("{}");
    s.apply_node(node("n", "10"), t(0)).unwrap();
    s.apply_object(quota("a", "", "10", &[], &[(names::SHARED_WEIGHT, r#"{"cpu":"1"}"#)]), t(0));
    s.apply_object(quota("b", "", "10", &[], &[(names::SHARED_WEIGHT, r#"{"cpu":"3"}"#)]), t(0));
    for i in 0..10 {
        for q in ["a", "b"] {
            let name = format!("{q}-{i}");
            s.apply_pod(pod(&name, q, "koord-prod", 9500, "1", None), t(0)).unwrap();
        }
    }
    let reports = s.run_until_idle(t(0));
    let placed = |q: &str| {
        reports.iter().filter(|r| scheduled(r) && r.pod.starts_with(&format!("ns/{q}-"))).count()
    };
    assert_eq!((placed("a"), placed("b")), (2, 7));
}

#[test]
fn non_preemptible_pods_are_held_to_min() {
    let mut s = scheduler("{}");
    s.apply_node(node("n", "10"), t(0)).unwrap();
    s.apply_object(quota("q", "2", "10", &[], &[]), t(0));
    let np = ", quota.scheduling.koordinator.sh/preemptible: 'false'";
    for i in 0..3 {
        let p = pod_with(&format!("np-{i}"), "q", "koord-prod", 9500, "1", None, np, "");
        s.apply_pod(p, t(0)).unwrap();
    }
    let reports = s.run_until_idle(t(0));
    assert_eq!(reports.iter().filter(|r| scheduled(r)).count(), 2);
    let rejected = reports.iter().find(|r| !scheduled(r)).unwrap();
    let want = "Insufficient non-preemptible quotas, quotaName: q, min: cpu=2, nonPreemptibleUsed: cpu=2, pod's request: cpu=1, exceedDimensions: [cpu]";
    assert!(unschedulable(rejected).0.contains(want), "{rejected:?}");
    // A preemptible pod of the quota still fits (max 10).
    s.apply_pod(pod("free", "q", "koord-prod", 9500, "1", None), t(1)).unwrap();
    let reports = s.run_until_idle(t(1));
    let placed: Vec<&str> =
        reports.iter().filter(|r| scheduled(r)).map(|r| r.pod.as_str()).collect();
    assert_eq!(placed, ["ns/free"], "{reports:?}");
}

/// Parent p (max 4) over a and b (max 4 each); a uses 3. A 2-core pod of b
/// fits b but not p: refused only with the parent check on.
#[test]
fn the_parent_chain_is_checked_when_enabled() {
    for (args, fits) in [
        ("{enableRuntimeQuota: false, enableCheckParentQuota: true}", false),
        ("{enableRuntimeQuota: false}", true),
    ] {
        let mut s = scheduler(args);
        s.apply_node(node("n", "100"), t(0)).unwrap();
        s.apply_object(quota("p", "", "4", &[(names::IS_PARENT, "true")], &[]), t(0));
        s.apply_object(quota("a", "", "4", &[(names::PARENT, "p")], &[]), t(0));
        s.apply_object(quota("b", "", "4", &[(names::PARENT, "p")], &[]), t(0));
        s.apply_pod(pod("a1", "a", "koord-prod", 9500, "3", Some("n")), t(0)).unwrap();
        s.apply_pod(pod("b1", "b", "koord-prod", 9500, "2", None), t(0)).unwrap();
        let report = s.schedule_next(t(0)).unwrap();
        assert_eq!(scheduled(&report), fits, "{args}: {report:?}");
        if !fits {
            let want = "Insufficient quotas, quotaNameTopo: [b p], runtime: cpu=4, used: cpu=3, pod's request: cpu=2, exceedDimensions: [cpu]";
            assert!(unschedulable(&report).0.contains(want), "{report:?}");
        }
    }
}

/// Node n (8 cores) runs a-low (quota a, 2 cores, prio 5500) and b-low
/// (quota b, 1 core, prio 5000). a's max is 2: a-high (prio 9500, 2
/// cores) fits the node but not its quota, and may evict only a-low —
/// never b-low, though b-low has the lowest priority.
fn full_quota() -> Scheduler {
    let mut s = scheduler("{enableRuntimeQuota: false}");
    s.apply_node(node("n", "8"), t(0)).unwrap();
    s.apply_object(quota("a", "", "2", &[], &[]), t(0));
    s.apply_object(quota("b", "", "8", &[], &[]), t(0));
    s.apply_pod(pod("a-low", "a", "koord-batch", 5500, "2", Some("n")), t(0)).unwrap();
    s.apply_pod(pod("b-low", "b", "koord-batch", 5000, "1", Some("n")), t(0)).unwrap();
    s
}

#[test]
fn quota_preemption_evicts_only_lower_priority_pods_of_the_same_quota() {
    let mut s = full_quota();
    s.apply_pod(pod("a-high", "a", "koord-prod", 9500, "2", None), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    let (message, nominated, victims) = unschedulable(&report);
    assert!(message.contains("Insufficient quotas, quotaName: a"), "{message}");
    assert_eq!((nominated, victims), (Some("n"), BTreeSet::from(["ns/a-low"])));
    // The victim goes; the preemptor lands.
    s.remove_pod("ns/a-low", t(1));
    let reports = s.run_until_idle(t(30));
    assert!(reports.iter().any(|r| r.pod == "ns/a-high" && scheduled(r)), "{reports:?}");
}

#[test]
fn no_preemption_across_quotas_nor_of_prod_by_batch_nor_with_policy_never() {
    // c-high fits its quota c but not the node (5 of 8 cores free, it
    // asks for 6): DefaultPreemption runs, and the quota guard keeps it
    // off a-low and b-low, both of other quotas, though evicting them
    // would make room.
    let mut s = full_quota();
    s.apply_object(quota("c", "", "8", &[], &[]), t(0));
    s.apply_pod(pod("c-high", "c", "koord-prod", 9500, "6", None), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    let (message, nominated, victims) = unschedulable(&report);
    assert!(message.contains("Insufficient cpu"), "{message}");
    assert_eq!((nominated, victims.len()), (None, 0), "{report:?}");

    // A batch pod with a priority value above a prod pod's never evicts it.
    let mut s = full_quota();
    s.apply_object(quota("c", "", "2", &[], &[]), t(0));
    s.apply_pod(pod("c-prod", "c", "koord-prod", 9000, "2", Some("n")), t(0)).unwrap();
    s.apply_pod(pod("c-batch", "c", "koord-batch", 9999, "1", None), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    let (message, nominated, victims) = unschedulable(&report);
    assert!(message.contains("quotaName: c"), "{message}");
    assert_eq!((nominated, victims.len()), (None, 0));

    // preemptionPolicy: Never.
    let mut s = full_quota();
    let never = "  preemptionPolicy: Never\n";
    s.apply_pod(pod_with("polite", "a", "koord-prod", 9500, "2", None, "", never), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    let (_, nominated, victims) = unschedulable(&report);
    assert_eq!((nominated, victims.len()), (None, 0));
}

/// With quotas in use, a pod of the default quota that does not fit a node
/// does not preempt pods of the default quota
/// (`disableDefaultQuotaPreemption`); without any quota, preemption is
/// unchanged.
#[test]
fn default_quota_preemption_only_while_no_quota_exists() {
    for (with_quota, preempts) in [(true, false), (false, true)] {
        let mut s = scheduler("{}");
        s.apply_node(node("n", "2"), t(0)).unwrap();
        if with_quota {
            s.apply_object(quota("other", "", "1", &[], &[]), t(0));
        }
        let plain = |name: &str, class: &str, prio: i32, on: Option<&str>| -> Pod {
            serde_saphyr::from_str(&format!(
                "metadata: {{name: {name}, namespace: ns, uid: u-{name}, labels: {{koordinator.sh/priority-class: {class}}}}}\nspec:\n  schedulerName: kolo-scheduler\n  priority: {prio}\n{}  containers:\n  - name: c\n    resources:\n      requests: {{cpu: '2'}}\n",
                on.map(|n| format!("  nodeName: {n}\n")).unwrap_or_default()
            ))
            .unwrap()
        };
        s.apply_pod(plain("low", "koord-batch", 5500, Some("n")), t(0)).unwrap();
        s.apply_pod(plain("high", "koord-prod", 9500, None), t(0)).unwrap();
        let report = s.schedule_next(t(0)).unwrap();
        let (_, nominated, _) = unschedulable(&report);
        assert_eq!(nominated.is_some(), preempts, "with quota: {with_quota}");
    }
}
