//! The gangs' state and the decisions of the flow (spec §8.2 "Gang state",
//! §8.3), pure: no locks, no framework calls. The plugin feeds it what the
//! cluster says and asks it at each extension point; the verdicts it makes
//! about other waiting pods queue up in [`Gangs::verdicts`].
//!
//! A gang's members are its *children*: the pods without a node
//! (`pending`, which holds the members `waiting` at Permit and those
//! allowed and `binding`) and the pods seen `bound`.
//!
//! **Attempts.** In Strict mode a group is tried member by member; when a
//! member fails (it fits nowhere, or is unreserved) the *attempt* fails:
//! the waiting members are rejected, and the members not tried in it yet
//! fail fast at PreFilter with the same message instead of taking room for
//! a gang that cannot complete. A member that was tried in the failed
//! attempt (or failed fast already) starts the next attempt when it comes
//! back. This stands in for Koordinator's per-gang schedule cycles.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::args::MatchPolicy;
use super::gang::{Defined, GangFieldError, GangMode, GangSource, GangSpec};
use crate::framework::{PermitOutcome, Rejection, WaitingVerdict};

/// One gang's members and rules.
#[derive(Debug, Default)]
pub struct GangState {
    /// The rules; `None` until initialised (its PodGroup seen, or a pod
    /// with valid annotations).
    pub spec: Option<Arc<GangSpec>>,
    /// Whether a PodGroup object defines it (it outlives its pods).
    pub has_pod_group: bool,
    /// Members without a node (waiting and binding ones included).
    pub pending: HashSet<Box<str>>,
    /// Members held at Permit.
    pub waiting: HashSet<Box<str>>,
    /// Members allowed at Permit, not yet seen bound.
    pub binding: HashSet<Box<str>>,
    /// Members seen bound to a node.
    pub bound: HashSet<Box<str>>,
    /// What the last definition could not read (defaults were used), or
    /// why it was refused.
    pub notes: Vec<GangFieldError>,
}

impl GangState {
    /// Every member: pending or bound.
    pub fn children(&self) -> usize {
        self.pending.len() + self.bound.len()
    }

    /// Members that passed Permit and are not bound yet (Koordinator's
    /// `WaitingForBindChildren`).
    pub fn waiting_for_bind(&self) -> usize {
        self.waiting.len() + self.binding.len()
    }

    /// Whether the gang is complete for Permit under its match policy.
    fn valid_for_permit(&self, once_satisfied: bool) -> bool {
        let Some(spec) = &self.spec else { return false };
        let min = spec.min_member as usize;
        match spec.match_policy {
            MatchPolicy::OnlyWaiting => self.waiting_for_bind() >= min,
            MatchPolicy::WaitingAndRunning => self.waiting_for_bind() + self.bound.len() >= min,
            MatchPolicy::OnceSatisfied => self.waiting_for_bind() >= min || once_satisfied,
        }
    }
}

/// What a group of gangs shares.
#[derive(Debug, Default)]
pub struct GroupState {
    /// A member of the group was bound once (irreversible).
    pub once_satisfied: bool,
    /// The members allowed together by the last complete Permit.
    pub binding_members: HashSet<Box<str>>,
    /// Members tried in the current attempt.
    tried: HashSet<Box<str>>,
    /// Why the current attempt failed, and the members that need not fail
    /// fast for it (tried in it, or failed fast already).
    failed: Option<(Arc<str>, HashSet<Box<str>>)>,
}

/// Every gang, every group, and the verdicts not yet taken.
#[derive(Debug, Default)]
pub struct Gangs {
    /// Gangs by id.
    pub gangs: HashMap<Box<str>, GangState>,
    /// Groups by group id.
    pub groups: HashMap<Arc<str>, GroupState>,
    /// Pods this state rejected while they waited, whose Unreserve is yet
    /// to come (it must not fail their group again).
    rejected: HashSet<Box<str>>,
    /// Decisions about waiting pods for the framework.
    pub verdicts: Vec<WaitingVerdict>,
    /// Pods whose queue key may have moved (their gang's time changed).
    pub stale_keys: Vec<Box<str>>,
}

/// The group a gang belongs to (itself while it has no rules).
fn group_of(id: &str, gang: &GangState) -> Arc<str> {
    gang.spec.as_ref().map_or_else(|| Arc::from(id), |s| s.group_id.clone())
}

/// Whether a group's members are past all-or-nothing: the policy is
/// once-satisfied and the group was satisfied once.
fn satisfied(spec: &GangSpec, group: Option<&GroupState>) -> bool {
    spec.match_policy == MatchPolicy::OnceSatisfied && group.is_some_and(|g| g.once_satisfied)
}

impl Gangs {
    /// The gang of a pod, created empty if unknown.
    fn gang(&mut self, id: &str) -> &mut GangState {
        self.gangs.entry(id.into()).or_default()
    }

    /// Sets a gang's rules, marking its pending members' queue keys stale
    /// when its time moved.
    fn define(&mut self, id: &str, defined: Defined) {
        let gang = self.gang(id);
        let moved = gang.spec.as_ref().is_none_or(|s| s.created != defined.spec.created);
        gang.spec = Some(Arc::new(defined.spec));
        gang.notes = defined.notes;
        if moved {
            let pending: Vec<Box<str>> = gang.pending.iter().cloned().collect();
            self.stale_keys.extend(pending);
        }
    }

    /// A PodGroup was created or changed: its gang's rules, or why they
    /// were refused (the last good rules stay).
    pub fn apply_pod_group(&mut self, id: &str, defined: Result<Defined, GangFieldError>) {
        self.gang(id).has_pod_group = true;
        match defined {
            Ok(defined) => self.define(id, defined),
            Err(error) => self.gang(id).notes = vec![error],
        }
    }

    /// A PodGroup was deleted: its gang has no rules any more.
    pub fn remove_pod_group(&mut self, id: &str) {
        if let Some(gang) = self.gangs.get_mut(id) {
            gang.has_pod_group = false;
            gang.spec = None;
        }
        self.drop_if_empty(id);
    }

    /// A pod of gang `id` without a node appeared or changed; `define`
    /// reads an annotation gang's rules from it if the gang has none yet.
    pub fn pod_pending(
        &mut self,
        id: &str,
        source: GangSource,
        pod: &str,
        define: impl FnOnce() -> Result<Defined, GangFieldError>,
    ) {
        self.gang(id).pending.insert(pod.into());
        self.init_from_pod(id, source, define);
    }

    /// An annotation gang without rules takes them from this pod.
    fn init_from_pod(
        &mut self,
        id: &str,
        source: GangSource,
        define: impl FnOnce() -> Result<Defined, GangFieldError>,
    ) {
        let gang = self.gang(id);
        if source != GangSource::Annotations || gang.spec.is_some() || gang.has_pod_group {
            return;
        }
        match define() {
            Ok(defined) => self.define(id, defined),
            Err(error) => self.gang(id).notes = vec![error],
        }
    }

    /// A pod of gang `id` is pending no more (deleted, finished, or bound:
    /// [`pod_bound`](Self::pod_bound) follows then).
    pub fn pod_not_pending(&mut self, id: &str, pod: &str) {
        self.rejected.remove(pod);
        let Some(gang) = self.gangs.get_mut(id) else { return };
        gang.pending.remove(pod);
        gang.waiting.remove(pod);
        gang.binding.remove(pod);
        let group = group_of(id, gang);
        if let Some(g) = self.groups.get_mut(&group) {
            g.tried.remove(pod);
        }
        self.drop_if_empty(id);
    }

    /// A pod of gang `id` is seen bound: its group is satisfied once.
    pub fn pod_bound(
        &mut self,
        id: &str,
        source: GangSource,
        pod: &str,
        define: impl FnOnce() -> Result<Defined, GangFieldError>,
    ) {
        self.init_from_pod(id, source, define);
        let gang = self.gang(id);
        gang.pending.remove(pod);
        gang.waiting.remove(pod);
        gang.binding.remove(pod);
        gang.bound.insert(pod.into());
        let group = group_of(id, gang);
        self.groups.entry(group).or_default().once_satisfied = true;
    }

    /// A bound pod of gang `id` is counted on its node no more (deleted,
    /// finished); a pending one (an assumption forgotten) stays.
    pub fn pod_unbound(&mut self, id: &str, pod: &str) {
        if let Some(gang) = self.gangs.get_mut(id)
            && gang.bound.remove(pod)
        {
            self.drop_if_empty(id);
        }
    }

    /// Forgets an annotation gang (and its group's state, when no gang of
    /// the group is left) once its last member is gone.
    fn drop_if_empty(&mut self, id: &str) {
        let Some(gang) = self.gangs.get(id) else { return };
        if gang.has_pod_group || gang.children() > 0 {
            return;
        }
        let Some(gang) = self.gangs.remove(id) else { return };
        let group = group_of(id, &gang);
        let members = gang.spec.as_ref().map_or_else(Vec::new, |s| s.groups.clone());
        if !members.iter().any(|m| self.gangs.contains_key(m)) {
            self.groups.remove(&group);
        }
    }

    /// The time a gang's members are queued by, once it has rules.
    pub fn gang_time(&self, id: &str) -> Option<i64> {
        self.gangs.get(id)?.spec.as_ref()?.created
    }

    /// PreEnqueue and BeforePreFilter (spec §8.3): whether pod `pod` of
    /// gang `id` may be tried now.
    pub fn pre_filter(&mut self, id: &str, pod: &str) -> Result<(), Rejection> {
        let Some(gang) = self.gangs.get(id) else {
            return Err(Rejection::unresolvable(format!(
                "can't find gang, gangName: {id}, podName: {pod}"
            )));
        };
        let Some(spec) = gang.spec.clone() else {
            return Err(Rejection::unresolvable(format!(
                "gang has not init, gangName: {id}, podName: {pod}"
            )));
        };
        if satisfied(&spec, self.groups.get(&spec.group_id)) {
            return Ok(());
        }
        let short: Vec<&str> = spec
            .groups
            .iter()
            .filter(|m| {
                !self.gangs.get(&***m).is_some_and(|g| {
                    g.spec.as_ref().is_some_and(|s| g.children() >= s.min_member as usize)
                })
            })
            .map(|m| &**m)
            .collect();
        if !short.is_empty() {
            return Err(Rejection::unschedulable(format!(
                "gangGroup [{}] basic check: memberGangs [{}] child pod not collect enough, \
                 current gang: {id}, podName: {pod}",
                spec.groups.join(" "),
                short.join(" ")
            )));
        }
        if spec.mode == GangMode::Strict {
            let group = self.groups.entry(spec.group_id.clone()).or_default();
            if let Some((message, spared)) = &mut group.failed {
                if spared.insert(pod.into()) {
                    return Err(Rejection::unschedulable(message.to_string()));
                }
                // Back after the failed attempt: this starts the next one.
                group.failed = None;
            }
            group.tried.insert(pod.into());
        }
        Ok(())
    }

    /// Permit (spec §8.3): waits until every gang of the group is complete
    /// under its policy, then allows this pod and every waiting member.
    pub fn permit(&mut self, id: &str, pod: &str) -> PermitOutcome {
        let Some(gang) = self.gangs.get_mut(id) else {
            return PermitOutcome::Reject(Rejection::unschedulable("Gang not found"));
        };
        gang.waiting.insert(pod.into());
        let Some(spec) = gang.spec.clone() else { return PermitOutcome::Wait(Duration::ZERO) };
        let once = self.groups.get(&spec.group_id).is_some_and(|g| g.once_satisfied);
        let complete = spec
            .groups
            .iter()
            .all(|m| self.gangs.get(&**m).is_some_and(|g| g.valid_for_permit(once)));
        if !complete {
            return PermitOutcome::Wait(spec.wait_time);
        }
        let mut members = HashSet::new();
        for m in &spec.groups {
            let Some(g) = self.gangs.get_mut(&**m) else { continue };
            for waiting in g.waiting.drain() {
                if *waiting != *pod {
                    self.verdicts.push(WaitingVerdict::Allow(waiting.clone()));
                }
                g.binding.insert(waiting.clone());
                members.insert(waiting);
            }
        }
        let group = self.groups.entry(spec.group_id.clone()).or_default();
        group.binding_members = members;
        // This attempt succeeded: the next starts afresh.
        group.tried.clear();
        group.failed = None;
        PermitOutcome::Allow
    }

    /// Unreserve (spec §8.3): the pod leaves the waiting set; in Strict
    /// mode, unless the group is past all-or-nothing, the attempt fails and
    /// every waiting member of the group is rejected.
    pub fn unreserve(&mut self, id: &str, pod: &str) {
        if self.rejected.remove(pod) {
            // Rejected by this state already: its group failed then.
            return;
        }
        let Some(gang) = self.gangs.get_mut(id) else { return };
        gang.waiting.remove(pod);
        gang.binding.remove(pod);
        let Some(spec) = gang.spec.clone() else { return };
        if spec.mode == GangMode::Strict && !satisfied(&spec, self.groups.get(&spec.group_id)) {
            let message = format!("Gang {id:?} gets rejected due to member {pod} was unreserved");
            self.fail_attempt(&spec, message);
        }
    }

    /// AfterPostFilter (spec §8.3): in Strict mode, unless the group is
    /// past all-or-nothing, the attempt fails and the group's waiting
    /// members are rejected.
    pub fn post_filter(&mut self, id: &str) {
        let Some(spec) = self.gangs.get(id).and_then(|g| g.spec.clone()) else { return };
        if spec.mode == GangMode::Strict && !satisfied(&spec, self.groups.get(&spec.group_id)) {
            let message = format!("Gang {id:?} gets rejected due to pod is unschedulable");
            self.fail_attempt(&spec, message);
        }
    }

    /// Fails the group's attempt with `message` and rejects its waiting
    /// members.
    fn fail_attempt(&mut self, spec: &GangSpec, message: String) {
        let rejection = Rejection::unschedulable(message.clone());
        for m in &spec.groups {
            let Some(g) = self.gangs.get_mut(&**m) else { continue };
            for pod in g.waiting.drain() {
                self.rejected.insert(pod.clone());
                self.verdicts.push(WaitingVerdict::Reject { pod, rejection: rejection.clone() });
            }
        }
        let group = self.groups.entry(spec.group_id.clone()).or_default();
        let spared = std::mem::take(&mut group.tried);
        group.failed = Some((message.into(), spared));
    }

    /// PreBind (spec §8.3): the group id and member count to annotate, when
    /// the pod was allowed with more than one member.
    pub fn binding_annotation(&self, id: &str, pod: &str) -> Option<(Arc<str>, usize)> {
        let spec = self.gangs.get(id)?.spec.as_ref()?;
        let group = self.groups.get(&spec.group_id)?;
        let members = &group.binding_members;
        (members.len() > 1 && members.contains(pod)).then(|| (spec.group_id.clone(), members.len()))
    }
}

#[cfg(test)]
mod tests;
