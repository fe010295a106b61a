use std::time::Duration;

use kolo_api::crd::node_slo::ResourceThresholdStrategy;

use super::*;
use crate::cgroup::CgroupWrite;
use crate::qos::testing_b::{be_dir, be_pod, enabled, ls_pod, node, slo, ts};
use crate::qos::{BeGroupState, CollectSettings, Plan, PlannedWrite, QosLoop, default_strategies};

const GIB: i64 = 1 << 30;

fn collect() -> CollectSettings {
    CollectSettings {
        cfs_state: false,
        be_usage_window: None,
        report_interval: Duration::from_secs(60),
        policy_generation: 0,
    }
}

fn quota(value: i64) -> PlannedWrite {
    PlannedWrite {
        write: CgroupWrite::int(&be_dir(), Resource::CpuCfsQuota, value),
        strategy: "cpuSuppress",
        reason: format!("BE budget → quota {value}"),
        figures: Figures::None,
    }
}

fn pod_write(pod: &PodState, value: i64) -> PlannedWrite {
    PlannedWrite {
        write: CgroupWrite::int(&pod.dir, Resource::CpuShares, value),
        strategy: "cpuBurst",
        reason: "shares".into(),
        figures: Figures::None,
    }
}

fn eviction(pod: &PodState) -> PlannedEviction {
    PlannedEviction {
        pod: pod.pod.id.key(),
        uid: pod.pod.id.uid.clone(),
        strategy: "memoryEvict",
        reason: "node memory 90% ≥ 70%".into(),
        figures: Figures::None,
    }
}

/// One round: its probe, writes, evictions with outcomes, held-back pods.
struct Round {
    probe: Probe,
    writes: Vec<PlannedWrite>,
    evictions: Vec<(PlannedEviction, Option<EvictionOutcome>)>,
    held: Vec<PlannedEviction>,
}

fn slow(writes: Vec<PlannedWrite>) -> Round {
    Round { probe: Probe::Slow, writes, evictions: vec![], held: vec![] }
}

fn play(h: &mut ActionHistory, state: &NodeState, t: i64, r: Round) {
    let outcomes = r.evictions.iter().filter_map(|(e, o)| o.map(|o| (e.uid.clone(), o))).collect();
    let plan =
        Plan { writes: r.writes, evictions: r.evictions.into_iter().map(|(e, _)| e).collect() };
    let round = RoundPlan { probe: r.probe, plan, held_back: r.held, collect: collect() };
    h.record(ts(t), state, &round, &outcomes);
}

/// What each action says, compactly: kind, strategy, target, old → new.
fn summary(a: &Action) -> String {
    let target = a.target.to_string();
    let value = match (&a.old, &a.new) {
        (_, None) => String::new(),
        (old, Some(new)) => format!(" {}→{new}", old.as_deref().unwrap_or("?")),
    };
    format!("{}:{:?} {} {target}{value}", a.seq, a.kind, a.strategy)
}

#[test]
fn a_sequence_of_rounds_gives_exactly_the_expected_entries() {
    let mut state = node(8_000, 16 * GIB);
    state.usage = CpuMem::new(5_000, 9 * GIB);
    state.be = BeGroupState { cpuset: None, cfs_quota_us: Some(-1) };
    let (be0, be1) = (be_pod("be0", 100, GIB), be_pod("be1", 100, GIB));
    state.pods = vec![be0.clone(), be1.clone(), ls_pod("ls", 4_000, 4 * GIB)];
    let held = |p: &PodState| Round { held: vec![eviction(p)], ..slow(vec![quota(50_000)]) };
    // (round, the new entries it must add)
    let cases: Vec<(Round, Vec<&str>)> = vec![
        // The first quota: old is what the round read from the BE dir.
        (
            slow(vec![quota(200_000), pod_write(&be0, 2)]),
            vec!["1:Write cpuSuppress BE -1→200000", "2:Write cpuBurst default/be0 ?→2"],
        ),
        // The same decisions again: nothing.
        (slow(vec![quota(200_000), pod_write(&be0, 2)]), vec![]),
        // A new suppression level: one entry, from the old level.
        (
            slow(vec![quota(100_000), pod_write(&be0, 2)]),
            vec!["3:Write cpuSuppress BE 200000→100000"],
        ),
        // A fast round tightening: recorded, marked fast; the pod's write
        // it does not repeat is not forgotten (not re-added afterwards).
        (
            Round { probe: Probe::Fast, ..slow(vec![quota(50_000)]) },
            vec!["4:Write cpuSuppress BE 100000→50000"],
        ),
        (slow(vec![quota(50_000), pod_write(&be0, 2)]), vec![]),
        // Evictions: one done, one failed, one whose pod was gone (not
        // attempted: nothing).
        (
            Round {
                evictions: vec![
                    (eviction(&be0), Some(EvictionOutcome::Done)),
                    (eviction(&be1), Some(EvictionOutcome::Failed)),
                    (eviction(&ls_pod("gone", 0, 0)), None),
                ],
                ..slow(vec![quota(50_000)])
            },
            vec!["5:Evicted memoryEvict default/be0", "6:EvictionFailed memoryEvict default/be1"],
        ),
        // Held back by the rate limit: once while it stays held back.
        (held(&be1), vec!["7:HeldBack memoryEvict default/be1"]),
        (held(&be1), vec![]),
        // A slow round no longer writing the pod's file forgets it: the
        // file written again is a change (back under control).
        (slow(vec![quota(50_000), pod_write(&be0, 2)]), vec!["8:Write cpuBurst default/be0 ?→2"]),
        (held(&be1), vec!["9:HeldBack memoryEvict default/be1"]),
    ];
    let mut h = ActionHistory::new("node-a", DEFAULT_CAPACITY, false);
    for (i, (round, want)) in cases.into_iter().enumerate() {
        let before = h.view().total as usize;
        let fast = round.probe == Probe::Fast;
        play(&mut h, &state, 1000 + i as i64, round);
        let got: Vec<String> = h.actions().skip(before).map(summary).collect();
        assert_eq!(got, want, "round {i}");
        assert!(h.actions().skip(before).all(|a| a.fast == fast), "round {i}");
    }
    let view = h.view();
    assert_eq!(view.current.len(), 1, "{view:?}");
    let current = &view.current[0];
    assert_eq!((current.value.as_str(), current.seq), ("50000", 4));
    assert_eq!(current.since, ts(1003).to_string());
    let evicted = &view.actions[4];
    assert_eq!(evicted.reason, "node memory 90% ≥ 70%");
    // The counts the metrics export: every entry, by strategy, kind, path.
    let count = |strategy: &str, kind, fast| {
        h.counts().get(&(strategy.to_string(), kind, fast)).copied().unwrap_or(0)
    };
    assert_eq!(count("cpuSuppress", ActionKind::Write, false), 2);
    assert_eq!(count("cpuSuppress", ActionKind::Write, true), 1);
    assert_eq!(count("cpuBurst", ActionKind::Write, false), 2);
    assert_eq!(count("memoryEvict", ActionKind::Evicted, false), 1);
    assert_eq!(count("memoryEvict", ActionKind::EvictionFailed, false), 1);
    assert_eq!(count("memoryEvict", ActionKind::HeldBack, false), 2);
    assert_eq!(h.counts().values().sum::<u64>(), 9);
    assert_eq!(evicted.node_usage, Usage { cpu_milli: 5_000, memory_bytes: 9 * GIB });
}

#[test]
fn the_ring_drops_the_oldest_beyond_its_bound() {
    let state = node(8_000, 16 * GIB);
    let mut h = ActionHistory::new("node-a", 3, true);
    for (i, q) in [10_000, 20_000, 30_000, 40_000, 50_000].into_iter().enumerate() {
        play(&mut h, &state, 1000 + i as i64, slow(vec![quota(q)]));
    }
    let view = h.view();
    let seqs: Vec<u64> = view.actions.iter().map(|a| a.seq).collect();
    assert_eq!(seqs, [3, 4, 5]);
    assert_eq!(h.counts().values().sum::<u64>(), 5, "counts outlive the ring");
    assert_eq!(view.actions[0].old.as_deref(), Some("20000"));
    assert_eq!((view.total, view.capacity, view.dry_run), (5, 3, true));
    // The value in force outlives the ring.
    assert_eq!(view.current[0].value, "50000");
    // What /actions serves reads back as the same data.
    let json = serde_json::to_string(&view).unwrap();
    assert_eq!(serde_json::from_str::<HistoryView>(&json).unwrap(), view);
}

#[test]
fn the_real_strategies_repeat_nothing_and_record_a_new_suppression_level() {
    let mut n = node(16_000, 100 * GIB);
    n.usage = CpuMem::new(6_000, 20 * GIB);
    n.pods = vec![be_pod("be0", 500, GIB), ls_pod("ls", 5_000, 10 * GIB)];
    n.pods[1].usage = Some(CpuMem::new(5_000, 10 * GIB));
    n.be = BeGroupState { cpuset: None, cfs_quota_us: Some(-1) };
    let t = ResourceThresholdStrategy { cpu_suppress_policy: Some("cfsQuota".into()), ..enabled() };
    let mut q = QosLoop::new(default_strategies().into(), Duration::from_secs(60));
    q.set_node_slo(Some(slo(t)));
    let mut h = ActionHistory::new("n", DEFAULT_CAPACITY, false);
    let mut round = |h: &mut ActionHistory, n: &mut NodeState, t: i64| {
        let plan = q.round(n, ts(t), Probe::Slow);
        h.record(ts(t), n, &plan, &BTreeMap::new());
    };
    round(&mut h, &mut n, 1000);
    let first = h.view().total;
    let quota = |h: &ActionHistory| {
        h.view().current.iter().find(|c| c.resource == "cpu.cfs_quota_us").cloned()
    };
    let before = quota(&h).expect("cpuSuppress set the BE quota");
    assert_eq!(before.strategy, "cpuSuppress");
    assert!(matches!(before.figures, Figures::BeBudget { .. }), "{before:?}");
    round(&mut h, &mut n, 1001);
    assert_eq!(h.view().total, first, "an identical round adds nothing");
    // LS CPU rises: a lower quota, one entry.
    n.usage.cpu = 9_000;
    n.pods[1].usage = Some(CpuMem::new(8_000, 10 * GIB));
    round(&mut h, &mut n, 1002);
    let view = h.view();
    let new: Vec<&Action> = view.actions.iter().skip(first as usize).collect();
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0].old.as_deref(), Some(before.value.as_str()));
    let after = quota(&h).unwrap();
    assert!(after.value.parse::<i64>().unwrap() < before.value.parse::<i64>().unwrap());
    assert_eq!(after.since, ts(1002).to_string());
    assert_eq!(new[0].node_usage.cpu_milli, 9_000);
}
