//! The record of a scheduling cycle, as data: what the scheduler returns
//! for each pod and what `kolo schedule -o json` prints (every type here
//! serializes; field names are the JSON names).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::explain::RejectionCount;
use crate::framework::{Code, Facts};

/// How much a cycle records for explaining its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExplainLevel {
    /// Only the outcome (fastest).
    #[default]
    None,
    /// The outcome and the best `n` feasible nodes with per-plugin scores.
    Top(usize),
    /// Every evaluated node: its verdict, reasons and scores.
    All,
}

/// One node as a cycle saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeReport {
    /// The node.
    pub node: String,
    /// Whether it passed every filter.
    pub feasible: bool,
    /// Why not (empty when feasible).
    pub reasons: Vec<String>,
    /// The plugin that rejected it.
    pub rejected_by: Option<&'static str>,
    /// The rejection's status code (`None` when feasible).
    pub code: Option<Code>,
    /// Per-plugin scores (normalized, before weights), feasible nodes only.
    pub scores: BTreeMap<&'static str, i64>,
    /// Weighted sum of the scores, feasible nodes only.
    pub total: Option<i64>,
    /// Per plugin, what it knew of the node for the pod (with
    /// [`Scheduler::set_facts`](crate::scheduler::Scheduler::set_facts)).
    pub facts: BTreeMap<&'static str, Facts>,
}

/// How a cycle ended for its pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    /// Assumed on `node` and handed to the binder.
    Scheduled {
        /// The chosen node.
        node: String,
        /// Its weighted total score.
        total: i64,
        /// Its per-plugin scores (normalized, before weights).
        scores: BTreeMap<&'static str, i64>,
    },
    /// Reserved on `node`, waiting for a Permit plugin to allow it.
    Waiting {
        /// The reserved node.
        node: String,
    },
    /// No node can take the pod now; it waits for a cluster change.
    Unschedulable {
        /// kube-scheduler style summary (`0/5000 nodes are available: ...`).
        message: String,
        /// The node a PostFilter plugin (preemption) nominated in this
        /// cycle, if any (a nomination from an earlier cycle that still
        /// stands: `Scheduler::nominated_node`).
        nominated: Option<String>,
        /// The pods to evict from the nominated node so the pod fits there
        /// (preemption); empty when nothing is nominated.
        victims: Vec<Victim>,
        /// The rejections the message counts: per plugin, reason and
        /// status code, on how many nodes.
        rejections: Vec<RejectionCount>,
    },
    /// An error (a plugin error, a failed Reserve); retried after backoff.
    Failed {
        /// What went wrong.
        message: String,
    },
}

/// A pod that must go so that a preemptor fits its nominated node.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Victim {
    /// `namespace/name`.
    pub pod: String,
    /// Its UID (an eviction names the pod by name; the UID tells a
    /// re-created pod of the same name apart).
    pub uid: String,
    /// Its priority (`spec.priority`, else its class's default).
    pub priority: i32,
}

/// What a PostFilter plugin (preemption) decided for a pod no node could
/// take: the node it should retry on, and the pods to remove there first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Nomination {
    /// The nominated node (`status.nominatedNodeName`).
    pub node: String,
    /// The victims, most important first.
    pub victims: Vec<Victim>,
}

/// The record of one scheduling cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CycleReport {
    /// `namespace/name`.
    pub pod: String,
    /// What happened.
    pub outcome: Outcome,
    /// How many nodes were evaluated (filtered) in this cycle.
    pub evaluated_nodes: usize,
    /// How many of them were feasible (and scored).
    pub feasible_nodes: usize,
    /// Per-node details, as asked for with
    /// [`Scheduler::set_explain`](crate::scheduler::Scheduler::set_explain).
    pub nodes: Vec<NodeReport>,
    /// The annotations PreBind plugins wrote for the bind (with
    /// [`Scheduler::set_facts`](crate::scheduler::Scheduler::set_facts);
    /// empty for a pod that was not bound).
    pub annotations: BTreeMap<String, String>,
    /// Per plugin, what its decisions for the pod rested on, and once the
    /// pod passed PreBind, what it decided there (with `set_facts`).
    pub facts: BTreeMap<&'static str, Facts>,
    /// Per plugin, what it knew of the chosen node before the pod was
    /// placed there (with `set_facts`).
    pub node_facts: BTreeMap<&'static str, Facts>,
}

impl CycleReport {
    /// A report for `pod` with nothing recorded yet.
    pub fn new(pod: String, outcome: Outcome) -> CycleReport {
        CycleReport {
            pod,
            outcome,
            evaluated_nodes: 0,
            feasible_nodes: 0,
            nodes: Vec::new(),
            annotations: BTreeMap::new(),
            facts: BTreeMap::new(),
            node_facts: BTreeMap::new(),
        }
    }
}
