//! A round's plan as `kolo agent plan` and the agent's `--dry-run` print
//! it: each write with its cgroup directory, the file it goes to on this
//! cgroup version, the value, and the pod and container it belongs to;
//! each eviction with its pod; the numbers behind each as typed
//! [`Figures`].

use std::collections::HashMap;

use serde::Serialize;

use super::{Figures, NodeState, PlannedEviction, PodState, Probe, RoundPlan};
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

/// The pod and container whose cgroup each directory of `node` is: the
/// first pod (in node order) with that dir or a container in it, as a
/// search through the pods would find it.
fn owners(node: &NodeState) -> HashMap<&CgroupDir, (&PodState, Option<&str>)> {
    let mut owners = HashMap::new();
    for p in &node.pods {
        owners.entry(&p.dir).or_insert((p, None));
        for c in &p.containers {
            if let Some(dir) = &c.dir {
                owners.entry(dir).or_insert((p, Some(c.name.as_str())));
            }
        }
    }
    owners
}

impl PlanReport {
    /// The report of `round`, planned on `node`, for a cgroup `version`.
    pub fn new(round: &RoundPlan, node: &NodeState, version: CgroupVersion) -> PlanReport {
        let owners = owners(node);
        let writes = round
            .plan
            .writes
            .iter()
            .map(|w| {
                let resource = w.write.resource;
                let file = resource.file(version).unwrap_or(resource.name()).to_string();
                let value = resource.to_file_value(version, w.write.value.clone());
                let owner = owners.get(&w.write.dir);
                let pod = owner.map(|(p, _)| p.pod.id.key());
                let container = owner.and_then(|(_, c)| c.map(str::to_string));
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
