//! `kolo why pod`'s explanation, assembled from what the cluster and the
//! pod's node agent said: a pure function of the pod, its Events, the
//! scheduler's what-if and the agent's action history, so that each case
//! is a table test.

use k8s_openapi::api::core::v1::Pod;
use kolo_agent::history::{Action, ActionKind, Current, HistoryView, Target};
use serde::Serialize;

/// One Event about the pod, as `kolo why` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventView {
    /// `FailedScheduling`, `Killing`, ...
    pub reason: String,
    /// What it says.
    pub note: String,
    /// Who wrote it (`reportingController`, else the source component).
    pub reporter: String,
    /// When it was last seen (RFC 3339).
    pub time: String,
    /// How many times it was seen.
    pub count: i32,
}

/// What kolo's scheduler says now, from a what-if on the live cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhatIf {
    /// The node it would go to now; `null` if none.
    pub node: Option<String>,
    /// Why not (kube-scheduler's wording); `null` when it fits.
    pub message: Option<String>,
}

/// What the pod's node agent said.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum AgentAnswer {
    /// Not asked (the pod has no node, or it is not BE and not evicted).
    NotAsked,
    /// Its `/actions` answered.
    Reachable {
        /// Where.
        url: String,
        /// Its history.
        history: HistoryView,
    },
    /// Its `/actions` did not answer.
    Unreachable {
        /// Where it was asked.
        url: String,
        /// Why it failed.
        error: String,
    },
}

/// The pod's state, as far as `kolo why` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// Not bound to a node.
    Pending,
    /// Running (or starting) on a node.
    Running,
    /// Evicted, or being deleted after an eviction.
    Evicted,
    /// Being deleted (not known to be an eviction).
    Terminating,
    /// Ended (`Succeeded` / `Failed`) without an eviction.
    Finished,
}

/// `kolo why pod`'s answer (`-o json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodWhy {
    /// `namespace/name`.
    pub pod: String,
    /// The pod's state.
    pub verdict: Verdict,
    /// Its node, once bound.
    pub node: Option<String>,
    /// Its QoS class (`BE`, `LS`, ...).
    pub qos: String,
    /// The explanation, a sentence a line.
    pub lines: Vec<String>,
    /// The newest `FailedScheduling` Event (pending pods).
    pub scheduling_event: Option<EventView>,
    /// The scheduler's what-if on the cluster as it is now (pending pods).
    pub what_if: Option<WhatIf>,
    /// The values in force on its QoS class's cgroup (a running BE pod).
    pub class_state: Vec<Current>,
    /// The agent's actions on this pod (its eviction among them).
    pub pod_actions: Vec<Action>,
    /// The pod's other Events, newest last.
    pub events: Vec<EventView>,
    /// What the agent said.
    pub agent: AgentAnswer,
}

/// The inputs of [`explain_pod`].
#[derive(Debug, Clone)]
pub struct PodFacts<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// Its QoS class.
    pub qos: String,
    /// Its Events, oldest first.
    pub events: Vec<EventView>,
    /// The what-if, when one ran.
    pub what_if: Option<WhatIf>,
    /// The agent's answer.
    pub agent: AgentAnswer,
}

/// The explanation.
pub fn explain_pod(facts: PodFacts<'_>) -> PodWhy {
    let PodFacts { pod, qos, events, what_if, agent } = facts;
    let meta = &pod.metadata;
    let key = format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    );
    let uid = meta.uid.clone().unwrap_or_default();
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    let history = match &agent {
        AgentAnswer::Reachable { history, .. } => Some(history),
        _ => None,
    };
    let pod_actions: Vec<Action> = history
        .map(|h| h.actions.iter().filter(|a| is_pod(&a.target, &uid, &key)).cloned().collect())
        .unwrap_or_default();
    let eviction = pod_actions.iter().rev().find(|a| a.kind == ActionKind::Evicted);
    let verdict = verdict(pod, eviction.is_some());
    let scheduling_event = events.iter().rev().find(|e| e.reason == "FailedScheduling").cloned();
    let class_state: Vec<Current> = match (verdict, history) {
        (Verdict::Running, Some(h)) => h
            .current
            .iter()
            .filter(|c| matches!(&c.target, Target::QosClass { class } if *class == qos))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    let mut lines = vec![headline(&key, verdict, node.as_deref(), &qos)];
    match verdict {
        Verdict::Pending => {
            lines.extend(pending_lines(scheduling_event.as_ref(), what_if.as_ref()));
        }
        Verdict::Running => lines.extend(running_lines(&qos, &class_state, &pod_actions)),
        Verdict::Evicted | Verdict::Terminating | Verdict::Finished => {
            lines.extend(ended_lines(pod, eviction))
        }
    }
    lines.extend(agent_lines(&agent, verdict, &qos));
    PodWhy {
        pod: key,
        verdict,
        node,
        qos,
        lines,
        scheduling_event,
        what_if,
        class_state,
        pod_actions,
        events,
        agent,
    }
}

/// Whether `target` is the pod: by UID, or by `namespace/name` when the
/// UID is unknown (the pod is gone).
fn is_pod(target: &Target, uid: &str, key: &str) -> bool {
    match target {
        Target::Pod { uid: u, .. } if !uid.is_empty() => u == uid,
        Target::Pod { namespace, name, .. } => format!("{namespace}/{name}") == key,
        _ => false,
    }
}

fn verdict(pod: &Pod, evicted_by_agent: bool) -> Verdict {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    let evicted = evicted_by_agent
        || status.and_then(|s| s.reason.as_deref()) == Some("Evicted")
        || status.and_then(|s| s.conditions.as_ref()).is_some_and(|c| {
            c.iter().any(|c| {
                c.type_ == "DisruptionTarget"
                    && c.status == "True"
                    && c.reason.as_deref() == Some("EvictionByEvictionAPI")
            })
        });
    if evicted {
        Verdict::Evicted
    } else if pod.metadata.deletion_timestamp.is_some() {
        Verdict::Terminating
    } else if matches!(phase, "Succeeded" | "Failed") {
        Verdict::Finished
    } else if pod.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_none() {
        Verdict::Pending
    } else {
        Verdict::Running
    }
}

fn headline(key: &str, verdict: Verdict, node: Option<&str>, qos: &str) -> String {
    let on = node.map(|n| format!(" on node {n}")).unwrap_or_default();
    let state = match verdict {
        Verdict::Pending => "is pending (not bound to a node)",
        Verdict::Running => "is running",
        Verdict::Evicted => "was evicted",
        Verdict::Terminating => "is being deleted",
        Verdict::Finished => "has ended",
    };
    format!("pod {key} ({qos}) {state}{on}.")
}

fn pending_lines(event: Option<&EventView>, what_if: Option<&WhatIf>) -> Vec<String> {
    let mut lines = Vec::new();
    match event {
        Some(e) => lines.push(format!(
            "scheduler ({}) at {}, seen {}×: {}",
            e.reporter, e.time, e.count, e.note
        )),
        None => lines.push("no FailedScheduling Event: no scheduler has tried it yet".into()),
    }
    match what_if {
        Some(WhatIf { node: Some(n), .. }) => lines.push(format!(
            "now: kolo's scheduler would place it on {n} (the cluster changed since)"
        )),
        Some(WhatIf { node: None, message }) => lines.push(format!(
            "now: still unschedulable: {}",
            message.as_deref().unwrap_or("no node fits")
        )),
        None => lines.push("now: not kolo's scheduler's pod (schedulerName): no what-if".into()),
    }
    lines
}

fn running_lines(qos: &str, class_state: &[Current], actions: &[Action]) -> Vec<String> {
    let mut lines = Vec::new();
    for c in class_state {
        lines.push(format!(
            "{qos} {} = {} since {} [{}] {}",
            c.resource, c.value, c.since, c.strategy, c.reason
        ));
    }
    for a in actions.iter().rev().take(5) {
        lines.push(action_line(a));
    }
    lines
}

fn ended_lines(pod: &Pod, eviction: Option<&Action>) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(a) = eviction {
        lines.push(format!(
            "evicted by kolo's agent ({}) at {}: {} (node usage then: {}m CPU, {} MiB)",
            a.strategy,
            a.time,
            a.reason,
            a.node_usage.cpu_milli,
            a.node_usage.memory_bytes >> 20
        ));
    }
    let status = pod.status.as_ref();
    let conditions = status.and_then(|s| s.conditions.as_ref());
    for c in conditions.into_iter().flatten().filter(|c| c.type_ == "DisruptionTarget") {
        lines.push(format!(
            "condition DisruptionTarget={} reason {}: {}",
            c.status,
            c.reason.as_deref().unwrap_or("-"),
            c.message.as_deref().unwrap_or("-")
        ));
    }
    if let Some(reason) = status.and_then(|s| s.reason.as_deref()) {
        let message = status.and_then(|s| s.message.as_deref()).unwrap_or("-");
        lines.push(format!("status reason {reason}: {message}"));
    }
    lines
}

fn action_line(a: &Action) -> String {
    let change = match (&a.old, &a.new, &a.resource) {
        (old, Some(new), Some(r)) => {
            format!("{r} {} → {new}", old.as_deref().unwrap_or("?"))
        }
        _ => format!("{:?}", a.kind).to_lowercase(),
    };
    format!("{} [{}] {change}: {}", a.time, a.strategy, a.reason)
}

fn agent_lines(agent: &AgentAnswer, verdict: Verdict, qos: &str) -> Vec<String> {
    match agent {
        AgentAnswer::Unreachable { url, error } => {
            vec![format!(
                "the node's agent at {url} did not answer ({error}): its actions are unknown"
            )]
        }
        AgentAnswer::Reachable { history, .. }
            if verdict == Verdict::Running
                && qos == "BE"
                && !history
                    .current
                    .iter()
                    .any(|c| matches!(&c.target, Target::QosClass { class } if class == "BE")) =>
        {
            vec!["the agent has not changed the BE cgroup since it started: not suppressed".into()]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "explain_tests.rs"]
mod tests;
