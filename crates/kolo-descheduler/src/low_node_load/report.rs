//! What a LowNodeLoad round saw and decided, per node pool: the data behind
//! `kolo deschedule`'s table and JSON, the simulator's counters and the
//! driver's metrics (nodes by class per pool).

use serde::Serialize;

/// A node's class in one pool's round (spec §9.2 step 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum NodeClass {
    /// Every resource at or under its low threshold (and schedulable):
    /// a target.
    Low,
    /// Low on node usage and low on prod usage: a target for both passes.
    BothLow,
    /// Low on prod usage only: a target for the prod pass.
    ProdLow,
    /// Prod usage over a prod high threshold: a prod source.
    ProdHigh,
    /// Some resource over its high threshold: a source.
    Source,
    /// Between the thresholds: neither source nor target.
    Normal,
    /// No usage report, none in it, or an expired one: not considered.
    NoMetric,
}

impl NodeClass {
    /// The camelCase name used in tables, JSON and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeClass::Low => "low",
            NodeClass::BothLow => "bothLow",
            NodeClass::ProdLow => "prodLow",
            NodeClass::ProdHigh => "prodHigh",
            NodeClass::Source => "source",
            NodeClass::Normal => "normal",
            NodeClass::NoMetric => "noMetric",
        }
    }
}

/// One resource of one node against its thresholds, in the resource's
/// units (milli-cores for `cpu`, bytes for `memory`, a count for `pods`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUsage {
    /// The resource (`cpu`, `memory`, `pods`, ...).
    pub resource: String,
    /// Usage: systemUsage + Σ pod usages (pod count for `pods`).
    pub used: i64,
    /// The node's allocatable (raw allocatable when annotated).
    pub allocatable: i64,
    /// The low threshold.
    pub low: i64,
    /// The high threshold.
    pub high: i64,
    /// Usage of prod pods only.
    pub prod_used: i64,
    /// The prod low threshold.
    pub prod_low: i64,
    /// The prod high threshold.
    pub prod_high: i64,
}

/// One node in one pool's round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    /// The node.
    pub node: String,
    /// Its class.
    pub class: NodeClass,
    /// Why it has no usage (`class == NoMetric`), else empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Each threshold resource, sorted by name.
    pub usage: Vec<ResourceUsage>,
    /// For a source (or prod source): whether its anomaly detector says
    /// it is really abnormal this round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abnormal: Option<bool>,
    /// The usage score sources are sorted by (0–1000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
}

/// What happened to one candidate pod on a source node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "verdict", content = "detail")]
pub enum CandidateVerdict {
    /// Evicted (a migration was created, or recorded in a dry run), with
    /// the eviction reason text.
    Evicted(String),
    /// The evictor filter or the pool's pod selectors / namespaces forbid it.
    Filtered(String),
    /// It has no usage in the node's report (node fit needs one).
    NoMetric,
    /// It fits no target node (names the first rule each target broke,
    /// or that it would push a target over its high threshold).
    NoFit(String),
    /// The round stopped before reaching it (names the stop condition).
    NotReached(String),
    /// A limit refused the eviction (names it).
    Refused(String),
}

/// One candidate pod on a source node, in eviction order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateReport {
    /// `namespace/name`.
    pub pod: String,
    /// The source node.
    pub node: String,
    /// Whether this was the prod pass.
    pub prod: bool,
    /// Its usage score among the candidates (higher goes first among pods
    /// that tie on the keys before it), scaled by 1000; -1 without a metric.
    pub usage_score: i64,
    /// The target node it fit (node fit on), which holds its usage from
    /// then on in the round's arithmetic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// What happened to it.
    #[serde(flatten)]
    pub verdict: CandidateVerdict,
}

/// One node pool's round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolReport {
    /// The pool's name (`__default_node_pool__` for the top-level one).
    pub pool: String,
    /// Every node of the pool, sources first in the order they were
    /// processed, then the rest by name.
    pub nodes: Vec<NodeReport>,
    /// Every candidate considered, per source node in processing order.
    pub candidates: Vec<CandidateReport>,
    /// Why the pool's round ended before evicting (`no source nodes`,
    /// `no abnormal nodes`, `no low nodes`, `low nodes 1 <= numberOfNodes
    /// 1`, `all nodes are low`), or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stopped: String,
}

impl PoolReport {
    /// The pods evicted, in order.
    pub fn evicted(&self) -> impl Iterator<Item = &CandidateReport> {
        self.candidates.iter().filter(|c| matches!(c.verdict, CandidateVerdict::Evicted(_)))
    }
}
