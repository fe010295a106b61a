use kolo_agent::history::{DEFAULT_CAPACITY, Usage};
use kolo_agent::qos::Figures;

use super::*;

fn pod(node: Option<&str>, phase: &str, extra: serde_json::Value) -> Pod {
    let mut v = serde_json::json!({
        "metadata": {"namespace": "batch", "name": "job-1", "uid": "u-1"},
        "spec": {"containers": [{"name": "main"}]},
        "status": {"phase": phase},
    });
    if let Some(n) = node {
        v["spec"]["nodeName"] = n.into();
    }
    merge(&mut v, extra);
    serde_json::from_value(v).unwrap()
}

fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

fn event(reason: &str, note: &str, time: &str) -> EventView {
    EventView {
        reason: reason.into(),
        note: note.into(),
        reporter: "kolo-scheduler".into(),
        time: time.into(),
        count: 3,
    }
}

fn be_quota(value: &str) -> Current {
    Current {
        target: Target::QosClass { class: "BE".into() },
        resource: "cpu.cfs_quota_us".into(),
        value: value.into(),
        since: "2026-11-28T00:10:00Z".into(),
        seq: 4,
        strategy: "cpuSuppress".into(),
        reason: "BE budget 1.5 cores".into(),
        figures: Figures::None,
    }
}

fn evicted(uid: &str) -> Action {
    Action {
        seq: 7,
        time: "2026-11-28T00:20:00Z".into(),
        kind: ActionKind::Evicted,
        strategy: "memoryEvict".into(),
        target: Target::Pod {
            namespace: "batch".into(),
            name: "job-1".into(),
            uid: uid.into(),
            container: None,
        },
        resource: None,
        old: None,
        new: None,
        reason: "node memory 92% ≥ 70%".into(),
        figures: Figures::None,
        node_usage: Usage { cpu_milli: 3_000, memory_bytes: 15 << 30 },
        fast: false,
    }
}

fn reachable(current: Vec<Current>, actions: Vec<Action>) -> AgentAnswer {
    let history = HistoryView {
        node: "n1".into(),
        dry_run: false,
        capacity: DEFAULT_CAPACITY,
        total: actions.len() as u64,
        current,
        actions,
    };
    AgentAnswer::Reachable { url: "http://10.0.0.1:9316".into(), history }
}

struct Case {
    name: &'static str,
    pod: Pod,
    qos: &'static str,
    events: Vec<EventView>,
    what_if: Option<WhatIf>,
    agent: AgentAnswer,
    verdict: Verdict,
    lines: Vec<&'static str>,
}

#[test]
fn explanations_say_why_from_events_what_if_and_agent() {
    let unreachable = AgentAnswer::Unreachable {
        url: "http://10.0.0.1:9316".into(),
        error: "connection refused".into(),
    };
    let cases = vec![
        Case {
            name: "pending: the newest FailedScheduling and the what-if now",
            pod: pod(None, "Pending", serde_json::json!({})),
            qos: "BE",
            events: vec![
                event("FailedScheduling", "old", "2026-11-28T00:01:00Z"),
                event(
                    "FailedScheduling",
                    "0/2 nodes are available: 2 Insufficient kubernetes.io/batch-cpu.",
                    "2026-11-28T00:02:00Z",
                ),
            ],
            what_if: Some(WhatIf {
                node: None,
                message: Some(
                    "0/2 nodes are available: 2 Insufficient kubernetes.io/batch-cpu.".into(),
                ),
            }),
            agent: AgentAnswer::NotAsked,
            verdict: Verdict::Pending,
            lines: vec![
                "pod batch/job-1 (BE) is pending (not bound to a node).",
                "scheduler (kolo-scheduler) at 2026-11-28T00:02:00Z, seen 3×: 0/2 nodes are available: 2 Insufficient kubernetes.io/batch-cpu.",
                "now: still unschedulable: 0/2 nodes are available: 2 Insufficient kubernetes.io/batch-cpu.",
            ],
        },
        Case {
            name: "pending, untried, fits now",
            pod: pod(None, "Pending", serde_json::json!({})),
            qos: "LS",
            events: vec![],
            what_if: Some(WhatIf { node: Some("n2".into()), message: None }),
            agent: AgentAnswer::NotAsked,
            verdict: Verdict::Pending,
            lines: vec![
                "pod batch/job-1 (LS) is pending (not bound to a node).",
                "no FailedScheduling Event: no scheduler has tried it yet",
                "now: kolo's scheduler would place it on n2 (the cluster changed since)",
            ],
        },
        Case {
            name: "running BE: the class's quota since when",
            pod: pod(Some("n1"), "Running", serde_json::json!({})),
            qos: "BE",
            events: vec![],
            what_if: None,
            agent: reachable(vec![be_quota("150000")], vec![]),
            verdict: Verdict::Running,
            lines: vec![
                "pod batch/job-1 (BE) is running on node n1.",
                "BE cpu.cfs_quota_us = 150000 since 2026-11-28T00:10:00Z [cpuSuppress] BE budget 1.5 cores",
            ],
        },
        Case {
            name: "running BE, agent never touched BE",
            pod: pod(Some("n1"), "Running", serde_json::json!({})),
            qos: "BE",
            events: vec![],
            what_if: None,
            agent: reachable(vec![], vec![]),
            verdict: Verdict::Running,
            lines: vec![
                "pod batch/job-1 (BE) is running on node n1.",
                "the agent has not changed the BE cgroup since it started: not suppressed",
            ],
        },
        Case {
            name: "running, agent unreachable: said so",
            pod: pod(Some("n1"), "Running", serde_json::json!({})),
            qos: "BE",
            events: vec![],
            what_if: None,
            agent: unreachable,
            verdict: Verdict::Running,
            lines: vec![
                "pod batch/job-1 (BE) is running on node n1.",
                "the node's agent at http://10.0.0.1:9316 did not answer (connection refused): its actions are unknown",
            ],
        },
        Case {
            name: "evicted by the agent: which rule and the usage then",
            pod: pod(
                Some("n1"),
                "Running",
                serde_json::json!({
                    "metadata": {"deletionTimestamp": "2026-11-28T00:20:01Z"},
                    "status": {"conditions": [{"type": "DisruptionTarget", "status": "True",
                        "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}]},
                }),
            ),
            qos: "BE",
            events: vec![],
            what_if: None,
            agent: reachable(vec![], vec![evicted("u-1"), evicted("other")]),
            verdict: Verdict::Evicted,
            lines: vec![
                "pod batch/job-1 (BE) was evicted on node n1.",
                "evicted by kolo's agent (memoryEvict) at 2026-11-28T00:20:00Z: node memory 92% ≥ 70% (node usage then: 3000m CPU, 15360 MiB)",
                "condition DisruptionTarget=True reason EvictionByEvictionAPI: Eviction API: evicting",
            ],
        },
        Case {
            name: "failed by the kubelet's eviction, not kolo's",
            pod: pod(
                Some("n1"),
                "Failed",
                serde_json::json!({
                    "status": {"reason": "Evicted", "message": "The node was low on resource: memory."},
                }),
            ),
            qos: "BE",
            events: vec![],
            what_if: None,
            agent: reachable(vec![], vec![]),
            verdict: Verdict::Evicted,
            lines: vec![
                "pod batch/job-1 (BE) was evicted on node n1.",
                "status reason Evicted: The node was low on resource: memory.",
            ],
        },
    ];
    for c in cases {
        let why = explain_pod(PodFacts {
            pod: &c.pod,
            qos: c.qos.into(),
            events: c.events,
            what_if: c.what_if,
            agent: c.agent,
        });
        assert_eq!(why.verdict, c.verdict, "{}", c.name);
        assert_eq!(why.lines, c.lines, "{}", c.name);
        if c.verdict == Verdict::Evicted && !why.pod_actions.is_empty() {
            assert!(
                why.pod_actions.iter().all(|a| a.target != evicted("other").target),
                "{}",
                c.name
            );
        }
    }
}

#[test]
fn a_gone_pod_matches_the_agents_actions_by_name() {
    let gone: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"namespace": "batch", "name": "job-1",
                     "deletionTimestamp": "2026-11-28T00:21:00Z"},
    }))
    .unwrap();
    let why = explain_pod(PodFacts {
        pod: &gone,
        qos: "unknown: the pod is gone".into(),
        events: vec![],
        what_if: None,
        agent: reachable(vec![], vec![evicted("u-1")]),
    });
    assert_eq!(why.verdict, Verdict::Evicted);
    assert_eq!(why.pod_actions.len(), 1);
}
