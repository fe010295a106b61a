//! Whole rounds over small hand-made clusters, numbers checked by hand.

use std::sync::Arc;

use kolo_api::PriorityClass;
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::pod::PodView;
use kolo_core::resources::{ResourceName, ResourceVector};
use kolo_core::usage_report::{NodeUsageReport, PodUsage};
use kolo_scheduler::framework::PodInfo;
use serde_json::json;

use super::*;
use crate::evictor::EvictionRequest;

const GI: i64 = 1 << 30;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(1_000_000 + s).unwrap()
}

fn node(name: &str) -> NodeView {
    let alloc = ResourceVector::cpu_memory(4000, 8 * GI).with(ResourceName::Pods, 110);
    NodeView::new(name).with_resources(alloc, alloc)
}

fn pod(name: &str, node: &str, class: PriorityClass) -> PodInfo {
    let view = PodView::new("ns", name)
        .with_node_name(node)
        .with_priority(class, class.default_priority())
        .with_requests(ResourceVector::cpu_memory(100, 0));
    PodInfo::from_parts(Arc::new(Default::default()), view)
}

fn report(
    node: &str,
    now: Timestamp,
    system_cpu: i64,
    pods: &[(&str, i64)],
) -> Arc<NodeUsageReport> {
    Arc::new(NodeUsageReport {
        node: node.into(),
        update_time: Some(now),
        node_usage: Some(ResourceVector::EMPTY),
        system_usage: ResourceVector::cpu_memory(system_cpu, 0),
        pods: pods
            .iter()
            .map(|(p, cpu)| PodUsage {
                key: format!("ns/{p}").into(),
                priority: None,
                usage: ResourceVector::cpu_memory(*cpu, 0).into(),
            })
            .collect(),
        ..Default::default()
    })
}

/// A hot node (3200m of 4000m: 400m system + four pods) and two nodes at
/// 400m; thresholds cpu 20 % / 50 %.
fn cluster(now: Timestamp) -> Cluster {
    let hot_pods = [("p1", 1000), ("p2", 800), ("p3", 600), ("p4", 400)];
    let pods = hot_pods.iter().map(|(p, _)| pod(p, "hot", PriorityClass::Batch)).collect();
    Cluster::new(
        vec![node("hot"), node("t1"), node("t2")],
        pods,
        [
            report("hot", now, 400, &hot_pods),
            report("t1", now, 400, &[]),
            report("t2", now, 400, &[]),
        ],
    )
}

fn plugin(extra: serde_json::Value) -> LowNodeLoad {
    let deviation = extra.get("useDeviationThresholds").is_some();
    let (low, high) = if deviation { (10, 10) } else { (20, 50) };
    let mut args = json!({"lowThresholds": {"cpu": low}, "highThresholds": {"cpu": high},
        "anomalyCondition": {"consecutiveAbnormalities": 1}});
    if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    LowNodeLoad::new(LowNodeLoadArgs::from_value(args).unwrap()).unwrap()
}

#[derive(Default)]
struct Recorder {
    forbid: Vec<String>,
    evicted: Vec<EvictionRequest>,
}

impl Evictor for Recorder {
    fn filter(&self, pod: &PodInfo) -> Result<(), String> {
        if self.forbid.iter().any(|f| f == pod.key()) { Err("forbidden".into()) } else { Ok(()) }
    }
    fn evict(&mut self, _: &PodInfo, request: EvictionRequest) -> Result<(), String> {
        self.evicted.push(request);
        Ok(())
    }
}

fn verdicts(r: &PoolReport) -> Vec<(&str, &CandidateVerdict, Option<&str>)> {
    r.candidates.iter().map(|c| (c.pod.as_str(), &c.verdict, c.target.as_deref())).collect()
}

#[test]
fn evicts_the_best_covering_pods_until_the_node_is_under_high() {
    let now = at(0);
    let mut ev = Recorder::default();
    let reports = plugin(json!({})).balance(&cluster(now), &mut ev, now);
    let r = &reports[0];
    assert_eq!(r.pool, args::DEFAULT_POOL);
    assert_eq!(r.stopped, "");
    // Excess 3200 - 2000 = 1200m: scores p1 1000/1200 = 833, p2 666,
    // p3 500, p4 333. p1 leaves 2200 (still over), p2 leaves 1400.
    let reason = "node is overutilized, node cpu usage(80.00%)>threshold(50.00%)";
    let second = "node is overutilized, node cpu usage(55.00%)>threshold(50.00%)";
    let stop =
        CandidateVerdict::NotReached("node usage is no longer over its high thresholds".into());
    // Fit fills the targets (high 2000m, at 400m): p1 → t1 (1400), p2 → t2
    // (1200), p3 → t1 (2000), p4 → t2 (1600).
    assert_eq!(
        verdicts(r),
        [
            ("ns/p1", &CandidateVerdict::Evicted(reason.into()), Some("t1")),
            ("ns/p2", &CandidateVerdict::Evicted(second.into()), Some("t2")),
            ("ns/p3", &stop, Some("t1")),
            ("ns/p4", &stop, Some("t2")),
        ]
    );
    let scores: Vec<i64> = r.candidates.iter().map(|c| c.usage_score).collect();
    assert_eq!(scores, [833, 666, 500, 333]);
    assert_eq!(ev.evicted.len(), 2);
    assert_eq!((ev.evicted[0].node.as_str(), ev.evicted[0].plugin), ("hot", NAME));
    // Nodes: the source first, its score (cpu 800 and memory 0, weights
    // 1 and 1) = 400, then the rest by name.
    let classes: Vec<(&str, NodeClass)> =
        r.nodes.iter().map(|n| (n.node.as_str(), n.class)).collect();
    assert_eq!(
        classes,
        [("hot", NodeClass::Source), ("t1", NodeClass::BothLow), ("t2", NodeClass::BothLow)]
    );
    assert_eq!((r.nodes[0].score, r.nodes[0].abnormal), (Some(400), Some(true)));
    let cpu = &r.nodes[0].usage[0];
    assert_eq!((cpu.resource.as_str(), cpu.used, cpu.low, cpu.high), ("cpu", 3200, 800, 2000));
}

#[test]
fn filtered_pods_are_skipped_and_dry_run_never_calls_the_evictor() {
    let now = at(0);
    let mut ev = Recorder { forbid: vec!["ns/p1".into()], ..Default::default() };
    let r = &plugin(json!({"dryRun": true})).balance(&cluster(now), &mut ev, now)[0];
    assert!(ev.evicted.is_empty());
    assert_eq!(r.candidates[0].verdict, CandidateVerdict::Filtered("forbidden".into()));
    // p2 (800) then p3 (600): 3200 → 2400 → 1800.
    let evicted: Vec<&str> = r.evicted().map(|c| c.pod.as_str()).collect();
    assert_eq!(evicted, ["ns/p2", "ns/p3"]);
}

#[test]
fn consecutive_abnormalities_five_fire_on_the_sixth_round_and_one_bypasses() {
    let mut p = plugin(json!({"anomalyCondition": {"consecutiveAbnormalities": 5}}));
    for round in 0..5 {
        let now = at(round * 10);
        let r = &p.balance(&cluster(now), &mut Recorder::default(), now)[0];
        assert_eq!(r.stopped, "no abnormal nodes", "round {round}");
        assert_eq!(r.nodes[0].abnormal, Some(false));
    }
    let now = at(50);
    let r = &p.balance(&cluster(now), &mut Recorder::default(), now)[0];
    assert_eq!((r.stopped.as_str(), r.evicted().count()), ("", 2), "the sixth round");
    let r = &plugin(json!({})).balance(&cluster(now), &mut Recorder::default(), now)[0];
    assert_eq!(r.evicted().count(), 2, "consecutiveAbnormalities 1: the first round");
}

#[test]
fn stop_conditions() {
    let now = at(0);
    let run = |p: &mut LowNodeLoad, c: &Cluster| {
        p.balance(c, &mut Recorder::default(), now)[0].stopped.clone()
    };
    assert_eq!(
        run(&mut plugin(json!({"numberOfNodes": 2})), &cluster(now)),
        "low nodes 2 <= numberOfNodes 2"
    );
    assert_eq!(
        run(&mut plugin(json!({"highThresholds": {"cpu": 90}})), &cluster(now)),
        "no source nodes"
    );
    // The only other node is cordoned: neither low nor prod-low. (A
    // schedulable node between the thresholds would be prod-low: missing
    // prod thresholds are 100 %.)
    let busy = Cluster::new(
        vec![node("hot"), node("t1").with_unschedulable(true)],
        vec![pod("p1", "hot", PriorityClass::Batch)],
        [report("hot", now, 2400, &[("p1", 800)]), report("t1", now, 1200, &[])],
    );
    assert_eq!(run(&mut plugin(json!({})), &busy), "no low nodes");
    // An expired report makes the node NoMetric.
    let stale = Cluster::new(vec![node("hot")], Vec::new(), [report("hot", at(-180), 3900, &[])]);
    let r = &plugin(json!({})).balance(&stale, &mut Recorder::default(), now)[0];
    assert_eq!(
        (r.nodes[0].class, r.nodes[0].note.as_str()),
        (NodeClass::NoMetric, "NodeMetric expired")
    );
    assert!(
        plugin(json!({"paused": true}))
            .balance(&cluster(now), &mut Recorder::default(), now)
            .is_empty()
    );
}

#[test]
fn the_sort_keys_come_before_the_usage_score_and_age_breaks_ties() {
    let now = at(0);
    let hot_pods = [("big", 1200), ("free", 100), ("old", 300), ("new", 300)];
    let mut pods =
        vec![pod("big", "hot", PriorityClass::Batch), pod("free", "hot", PriorityClass::Free)];
    for (name, t) in [("old", 10), ("new", 20)] {
        let view =
            pod(name, "hot", PriorityClass::Batch).view().clone().with_creation_timestamp(at(t));
        pods.push(PodInfo::from_parts(Arc::new(Default::default()), view));
    }
    // 2000 + 1900 = 3900m, high 2000: excess 1900.
    let c = Cluster::new(
        vec![node("hot"), node("t1"), node("t2")],
        pods,
        [report("hot", now, 2000, &hot_pods), report("t1", now, 0, &[]), report("t2", now, 0, &[])],
    );
    let r = &plugin(json!({"dryRun": true})).balance(&c, &mut Recorder::default(), now)[0];
    let order: Vec<(&str, i64)> =
        r.candidates.iter().map(|c| (c.pod.as_str(), c.usage_score)).collect();
    // free first (class), then big (1200/1900 = 631), then the 300m pods
    // (157) newer first.
    assert_eq!(order, [("ns/free", 52), ("ns/big", 631), ("ns/new", 157), ("ns/old", 157)]);
}

#[test]
fn the_prod_pass_moves_prod_pods_off_prod_hot_nodes() {
    let now = at(0);
    let pods = vec![
        pod("a", "phot", PriorityClass::Prod),
        pod("b", "phot", PriorityClass::Prod),
        pod("c", "phot", PriorityClass::Batch),
    ];
    // phot: 200 + 1000 + 500 + 100 = 1800m (45 %: normal for node usage),
    // prod 1500m (37.5 % > prod high 30 %). t1 at 200m is both-low.
    let c = Cluster::new(
        vec![node("phot"), node("t1"), node("mid")],
        pods,
        [
            report("phot", now, 200, &[("a", 1000), ("b", 500), ("c", 100)]),
            report("t1", now, 200, &[]),
            report("mid", now, 1200, &[]),
        ],
    );
    let args = json!({"prodLowThresholds": {"cpu": 10}, "prodHighThresholds": {"cpu": 30}});
    let mut ev = Recorder::default();
    let r = &plugin(args).balance(&c, &mut ev, now)[0];
    assert_eq!(r.nodes[0].class, NodeClass::ProdHigh);
    // Excess 1500 - 1200 = 300: b (500/300 → 1/1.67 + 1 = 1600) before
    // a (1000/300 → 1300); b alone brings prod usage to 1000 ≤ 1200.
    let evicted: Vec<(&str, bool, &str)> =
        r.evicted().map(|c| (c.pod.as_str(), c.prod, c.node.as_str())).collect();
    assert_eq!(evicted, [("ns/b", true, "phot")]);
    assert_eq!(
        ev.evicted[0].reason,
        "node is overutilized, prod cpu usage(37.50%)>threshold(30.00%)"
    );
    assert!(r.candidates.iter().all(|c| c.pod != "ns/c"), "only prod pods are prod candidates");
}

#[test]
fn deviation_mode_reports_the_effective_threshold() {
    let now = at(0);
    // Mean cpu usage (80 + 10 + 10) / 3 = 33.33 %: low 23.33 % (933m),
    // high 43.33 % (1733m).
    let c = Cluster::new(
        vec![node("hot"), node("t1"), node("t2")],
        vec![pod("p1", "hot", PriorityClass::Batch)],
        [
            report("hot", now, 2000, &[("p1", 1200)]),
            report("t1", now, 400, &[]),
            report("t2", now, 400, &[]),
        ],
    );
    let mut ev = Recorder::default();
    let r = &plugin(json!({"useDeviationThresholds": true})).balance(&c, &mut ev, now)[0];
    let cpu = &r.nodes[0].usage[0];
    assert_eq!((cpu.low, cpu.high), (933, 1733));
    // Koordinator prints the configured deviation (10.00 %) here; kolo
    // prints the threshold the node was compared with.
    assert_eq!(
        ev.evicted[0].reason,
        "node is overutilized, node cpu usage(80.00%)>threshold(43.33%)"
    );
}

#[test]
fn the_reason_names_every_resource_over_high_sorted_by_name() {
    let now = at(0);
    let mut hot = (*report("hot", now, 2000, &[("p1", 1200)])).clone();
    hot.system_usage.set(ResourceName::Memory, 6 * GI);
    let c = Cluster::new(
        vec![node("hot"), node("t1"), node("t2")],
        vec![pod("p1", "hot", PriorityClass::Batch)],
        [Arc::new(hot), report("t1", now, 400, &[]), report("t2", now, 400, &[])],
    );
    let mut ev = Recorder::default();
    let args = json!({"lowThresholds": {"memory": 20, "cpu": 20}, "highThresholds": {"memory": 50, "cpu": 50}});
    plugin(args).balance(&c, &mut ev, now);
    assert_eq!(
        ev.evicted[0].reason,
        "node is overutilized, node cpu usage(80.00%)>threshold(50.00%), node memory usage(75.00%)>threshold(50.00%)"
    );
}
