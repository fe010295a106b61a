//! The DefaultPreemption plugin: who may preempt whom, and the search for
//! the node to preempt on, over the framework's what-if checks.
//!
//! Differences from kube-scheduler, all documented in `docs/scheduler.md`:
//!
//! * **PodDisruptionBudgets** come as scheduling objects
//!   ([`SchedulingObject::PodDisruptionBudget`]); victims are counted
//!   against them as kube-scheduler does ([`Budgets`]). The eviction the
//!   cluster driver sends is still the final word: the API server refuses
//!   an eviction a budget forbids.
//! * **Every candidate node is tried** (kube samples at least 10% / 100 of
//!   them from a random offset); in node order, so the choice is
//!   deterministic.
//! * **kolo's class rule**: a koord-batch or koord-free pod never preempts
//!   a koord-prod pod or a latency-sensitive (LS, LSR, LSE) one, whatever
//!   their priority values say.

use std::sync::{Arc, RwLock};

use kolo_api::names::annotation;
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::HasMeta;
use kolo_core::clock::Timestamp;
use kolo_core::usage_report::NodeUsageReport;
use rayon::prelude::*;

use super::budgets::Budgets;
use super::decide::{Candidate, PotentialVictim, pick_one_node, select_victims};
use crate::framework::{
    ClusterEvent, ClusterEventHandler, Code, CycleContext, CycleState, ExtensionPoints, NodeInfo,
    ObjectEvent, ObjectKind, Plugin, PodInfo, PostFilter, PostFilterCluster, PostFilterOutcome,
    Rejected, SchedulingObject,
};
use crate::registry::PluginArgsError;
use crate::report::{Nomination, Victim};

/// The plugin's registered name.
pub const NAME: &str = "DefaultPreemption";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct DefaultPreemption {
    budgets: RwLock<Budgets>,
}

impl DefaultPreemption {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(DefaultPreemption::default()))
    }

    fn budgets(&self) -> std::sync::RwLockReadGuard<'_, Budgets> {
        self.budgets.read().unwrap_or_else(|p| p.into_inner())
    }
}

impl ClusterEventHandler for DefaultPreemption {
    // The plugin keeps state from budgets only: per-node events and
    // NodeMetric rounds (whose default delivery is one call per node) are
    // ignored outright.
    fn on_event(&self, _event: &ClusterEvent<'_>) {}

    fn on_node_metrics(&self, _updates: &[(&NodeInfo, &Arc<NodeUsageReport>)]) {}

    fn on_object(&self, event: &ObjectEvent<'_>) {
        let budgets = || self.budgets.write().unwrap_or_else(|p| p.into_inner());
        match event {
            ObjectEvent::Applied(SchedulingObject::PodDisruptionBudget(pdb)) => {
                budgets().apply(pdb)
            }
            ObjectEvent::Removed(r) if r.kind == ObjectKind::PodDisruptionBudget => {
                budgets().remove(&r.key)
            }
            _ => {}
        }
    }
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).post_filter().event_handler().into()
    }
}

/// Whether `preemptor` may evict `victim`: lower priority, and kolo's rule
/// that a best-effort class (koord-batch, koord-free) never evicts a
/// koord-prod or latency-sensitive pod.
pub fn may_preempt(preemptor: &PodInfo, victim: &PodInfo) -> bool {
    let (p, v) = (preemptor.view(), victim.view());
    // A reservation's placeholder is no pod to evict (Koordinator).
    if v.priority() >= p.priority() || v.annotation(annotation::RESERVE_POD).is_some() {
        return false;
    }
    let best_effort = matches!(p.priority_class(), PriorityClass::Batch | PriorityClass::Free);
    let protected = v.priority_class() == PriorityClass::Prod
        || matches!(v.qos(), QoSClass::LS | QoSClass::LSR | QoSClass::LSE);
    !(best_effort && protected)
}

/// Whether the pod asks never to preempt (`spec.preemptionPolicy: Never`).
fn never_preempts(pod: &PodInfo) -> bool {
    let spec = pod.pod().spec.as_ref();
    spec.and_then(|s| s.preemption_policy.as_deref()) == Some("Never")
}

/// A node where preemption works, with its victims.
struct Found<'a> {
    node: &'a NodeInfo,
    victims: Vec<&'a PodInfo>,
    candidate: Candidate,
}

impl PostFilter for DefaultPreemption {
    fn post_filter(
        &self,
        ctx: &CycleContext,
        _state: &CycleState,
        pod: &PodInfo,
        rejections: &[(&NodeInfo, &Rejected)],
        cluster: &dyn PostFilterCluster,
    ) -> PostFilterOutcome {
        // kube-scheduler's PodEligibleToPreemptOthers: these pods do not
        // preempt (and keep any nomination they hold).
        if never_preempts(pod) || still_waits(rejections, cluster.awaiting_victims_on()) {
            return PostFilterOutcome::Unchanged;
        }
        let budgets = self.budgets();
        // Only an Unschedulable rejection may be undone by removing pods;
        // an unresolvable one (a selector, a taint) or an error never.
        let found: Vec<Found<'_>> = rejections
            .par_iter()
            .filter(|(_, r)| r.rejection.code == Code::Unschedulable)
            .filter_map(|&(node, _)| candidate(ctx.now, pod, node, cluster, &budgets))
            .collect();
        let candidates: Vec<Candidate> = found.iter().map(|f| f.candidate.clone()).collect();
        let Some(best) = pick_one_node(&candidates) else { return PostFilterOutcome::Clear };
        let chosen = &found[best];
        let victims = chosen
            .victims
            .iter()
            .map(|v| Victim {
                pod: v.key().to_string(),
                uid: v.view().uid().to_string(),
                priority: v.view().priority(),
            })
            .collect();
        PostFilterOutcome::Nominate(Nomination { node: chosen.node.name().to_string(), victims })
    }
}

/// Whether a pod whose nomination on `nominated` still waits for victims
/// should go on waiting: yes, unless that node now rejects it for good
/// (`UnschedulableAndUnresolvable`: a taint, a selector) or is gone, when
/// kube-scheduler lets it preempt again (and clears the nomination if
/// there is nowhere to preempt).
fn still_waits(rejections: &[(&NodeInfo, &Rejected)], nominated: Option<&str>) -> bool {
    let Some(nominated) = nominated else { return false };
    rejections.iter().any(|(node, r)| {
        node.name() == nominated && r.rejection.code != Code::UnschedulableAndUnresolvable
    })
}

/// The victims on `node` if preempting there makes the pod fit.
fn candidate<'a>(
    now: Timestamp,
    pod: &PodInfo,
    node: &'a NodeInfo,
    cluster: &'a dyn PostFilterCluster,
    budgets: &Budgets,
) -> Option<Found<'a>> {
    // Other plugins may veto victims (a quota keeps preemption inside it).
    let potential: Vec<&PodInfo> = cluster
        .pods_on(node)
        .iter()
        .map(|p| &**p)
        .filter(|v| may_preempt(pod, v) && cluster.may_evict(v))
        .collect();
    if potential.is_empty() {
        // The node rejected the pod as it is; removing nothing changes
        // nothing.
        return None;
    }
    let mut facts: Vec<PotentialVictim> = potential
        .iter()
        .map(|v| PotentialVictim {
            priority: v.view().priority(),
            start: start_time(v).unwrap_or(now),
            violates_pdb: false,
        })
        .collect();
    if !budgets.is_empty() {
        // Budgets are used up most important victim first.
        let mut order: Vec<usize> = (0..facts.len()).collect();
        order.sort_by_key(|&i| facts[i].importance());
        let ordered: Vec<&PodInfo> = order.iter().map(|&i| potential[i]).collect();
        for (&i, violates) in order.iter().zip(budgets.violations(&ordered)) {
            facts[i].violates_pdb = violates;
        }
    }
    let mut gone = Vec::with_capacity(potential.len());
    let selection = select_victims(&facts, |removed| {
        gone.clear();
        gone.extend(potential.iter().zip(removed).filter(|(_, r)| **r).map(|(p, _)| *p));
        cluster.fits_without(node, &gone).is_ok()
    })?;
    let candidate = Candidate {
        victims: selection.victims.iter().map(|&i| facts[i]).collect(),
        pdb_violations: selection.pdb_violations,
    };
    let victims = selection.victims.iter().map(|&i| potential[i]).collect();
    Some(Found { node, victims, candidate })
}

/// `status.startTime`.
fn start_time(pod: &PodInfo) -> Option<Timestamp> {
    pod.pod().status.as_ref()?.start_time.as_ref().map(|t| t.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod_from_yaml;

    fn pod(labels: &str, priority: i32) -> PodInfo {
        let yaml = format!(
            "metadata: {{name: p, namespace: default, labels: {{{labels}}}}}\nspec: {{priority: {priority}, containers: []}}"
        );
        PodInfo::new(pod_from_yaml(&yaml)).unwrap()
    }

    #[test]
    fn who_may_preempt_whom() {
        let class = |c: &str| format!("koordinator.sh/priority-class: {c}");
        let qos = |q: &str, c: &str| format!("koordinator.sh/qosClass: {q}, {}", class(c));
        let cases = [
            // (preemptor, victim, may preempt)
            (pod(&class("koord-prod"), 9500), pod(&class("koord-batch"), 5500), true),
            (pod(&class("koord-prod"), 9000), pod(&class("koord-prod"), 9000), false),
            (pod(&class("koord-prod"), 9000), pod(&class("koord-prod"), 9999), false),
            (pod(&class("koord-prod"), 9999), pod(&class("koord-prod"), 9000), true),
            // kolo's rule: a batch pod given a priority above a prod pod's
            // still does not evict it, nor an LS pod of another class.
            (pod(&class("koord-batch"), 9999), pod(&class("koord-prod"), 9000), false),
            (pod(&class("koord-free"), 9999), pod(&qos("LS", "koord-mid"), 7000), false),
            (pod(&class("koord-batch"), 5900), pod(&qos("BE", "koord-batch"), 5000), true),
            (pod(&class("koord-batch"), 5900), pod(&class("koord-free"), 3500), true),
        ];
        for (i, (preemptor, victim, want)) in cases.iter().enumerate() {
            assert_eq!(may_preempt(preemptor, victim), *want, "case {i}");
        }
    }

    #[test]
    fn preemption_policy_never() {
        let never = PodInfo::new(pod_from_yaml(
            "metadata: {name: p}\nspec: {preemptionPolicy: Never, containers: []}",
        ))
        .unwrap();
        assert!(never_preempts(&never));
        assert!(!never_preempts(&pod("", 10)));
    }
}
