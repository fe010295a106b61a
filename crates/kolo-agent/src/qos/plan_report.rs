//! A round's plan as `kolo agent plan` and the agent's `--dry-run` print
//! it: each write with its cgroup directory, the file it goes to on this
//! cgroup version, the value, and the pod and container it belongs to;
//! each eviction with its pod; the numbers behind each as typed
//! [`Figures`].

use serde::Serialize;

use super::{Figures, NodeState, PlannedEviction, Probe, RoundPlan};
use crate::cgroup::{CgroupDir, CgroupVersion};

/// A printable [`RoundPlan`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReport {
    /// The kind of round.
    pub probe: Probe,
    /// Cgroup writes.
    pub writes: Vec<WriteReport>,
    /// Evictions to carry out.
    pub evictions: Vec<EvictionReport>,
    /// Evictions the rate limit held back.
    pub held_back: Vec<EvictionReport>,
}

/// One write of a [`PlanReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteReport {
    /// The cgroup directory, relative to the hierarchy root.
    pub cgroup: String,
    /// The file (v1 or v2 name).
    pub file: String,
    /// The value as the file takes it.
    pub value: String,
    /// `namespace/name` of the pod whose cgroup (or container's) this is;
    /// absent for QoS-level directories.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// The container's name, for a container's cgroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The strategy.
    pub strategy: &'static str,
    /// Why.
    pub reason: String,
    /// The numbers behind it.
    pub figures: Figures,
}

/// One eviction of a [`PlanReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvictionReport {
    /// `namespace/name`.
    pub pod: String,
    /// The pod's UID.
    pub uid: String,
    /// The strategy.
    pub strategy: &'static str,
    /// Why.
    pub reason: String,
    /// The numbers behind it.
    pub figures: Figures,
}

impl EvictionReport {
    fn new(e: &PlannedEviction) -> EvictionReport {
        EvictionReport {
            pod: e.pod.clone(),
            uid: e.uid.clone(),
            strategy: e.strategy,
            reason: e.reason.clone(),
            figures: e.figures,
        }
    }
}

/// The pod and container whose cgroup `dir` is on `node`.
fn owner(node: &NodeState, dir: &CgroupDir) -> (Option<String>, Option<String>) {
    for p in &node.pods {
        if &p.dir == dir {
            return (Some(p.pod.id.key()), None);
        }
        if let Some(c) = p.containers.iter().find(|c| c.dir.as_ref() == Some(dir)) {
            return (Some(p.pod.id.key()), Some(c.name.clone()));
        }
    }
    (None, None)
}

impl PlanReport {
    /// The report of `round`, planned on `node`, for a cgroup `version`.
    pub fn new(round: &RoundPlan, node: &NodeState, version: CgroupVersion) -> PlanReport {
        let writes = round
            .plan
            .writes
            .iter()
            .map(|w| {
                let resource = w.write.resource;
                let file = resource.file(version).unwrap_or(resource.name()).to_string();
                let value = resource.to_file_value(version, w.write.value.clone());
                let (pod, container) = owner(node, &w.write.dir);
                WriteReport {
                    cgroup: w.write.dir.as_path().display().to_string(),
                    file,
                    value: value.to_string(),
                    pod,
                    container,
                    strategy: w.strategy,
                    reason: w.reason.clone(),
                    figures: w.figures,
                }
            })
            .collect();
        PlanReport {
            probe: round.probe,
            writes,
            evictions: round.plan.evictions.iter().map(EvictionReport::new).collect(),
            held_back: round.held_back.iter().map(EvictionReport::new).collect(),
        }
    }

    /// One line per write and eviction, as `kolo agent plan` and the
    /// agent's `--dry-run` print them.
    pub fn lines(&self) -> Vec<String> {
        let writes = self.writes.iter().map(|w| {
            format!("write  {}/{} = {}   [{}] {}", w.cgroup, w.file, w.value, w.strategy, w.reason)
        });
        let evictions = self
            .evictions
            .iter()
            .map(|e| format!("evict  {}   [{}] {}", e.pod, e.strategy, e.reason));
        let held = self.held_back.iter().map(|e| {
            format!("held   {}   [{}] {} (rate limit: not now)", e.pod, e.strategy, e.reason)
        });
        writes.chain(evictions).chain(held).collect()
    }
}
