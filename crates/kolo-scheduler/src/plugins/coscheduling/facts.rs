//! What Coscheduling knew of a pod's gang, for explanations (`kolo
//! schedule -o json`): its rules and how many members stand where.

use serde::Serialize;

use super::args::MatchPolicy;
use super::gang::GangMode;
use super::state::Gangs;

/// A gang as the plugin saw it during a pod's cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GangFacts {
    /// `namespace/name`.
    pub gang: String,
    /// Whether the gang has rules (its PodGroup seen, or a pod with valid
    /// annotations).
    pub initialised: bool,
    /// The group id (the gang ids joined with `,`); the gang's own id
    /// while it has no rules.
    pub group: String,
    /// minMember (0 without rules).
    pub min_member: u32,
    /// `Strict` or `NonStrict`.
    pub mode: &'static str,
    /// `only-waiting`, `waiting-and-running` or `once-satisfied`.
    pub match_policy: &'static str,
    /// The wait at Permit, in seconds.
    pub wait_seconds: u64,
    /// Members known: pending or bound.
    pub children: usize,
    /// Members held at Permit.
    pub waiting: usize,
    /// Members allowed, not yet seen bound.
    pub binding: usize,
    /// Members seen bound.
    pub bound: usize,
    /// How many more members must pass Permit before the gang is complete
    /// under its policy (0 once its group was satisfied once).
    pub waiting_for: usize,
    /// A member of the group was bound once.
    pub once_satisfied: bool,
    /// Annotations or fields that could not be read.
    pub notes: Vec<String>,
}

impl GangFacts {
    /// The facts of gang `id`, if known.
    pub fn of(gangs: &Gangs, id: &str) -> Option<GangFacts> {
        let gang = gangs.gangs.get(id)?;
        let spec = gang.spec.as_deref();
        let group = spec.map_or(id, |s| &s.group_id);
        let once_satisfied = gangs.groups.get(group).is_some_and(|g| g.once_satisfied);
        let min = spec.map_or(0, |s| s.min_member) as usize;
        let policy = spec.map_or(MatchPolicy::OnceSatisfied, |s| s.match_policy);
        let counted = match policy {
            MatchPolicy::WaitingAndRunning => gang.waiting_for_bind() + gang.bound.len(),
            _ => gang.waiting_for_bind(),
        };
        let satisfied = policy == MatchPolicy::OnceSatisfied && once_satisfied;
        Some(GangFacts {
            gang: id.to_string(),
            initialised: spec.is_some(),
            group: group.to_string(),
            min_member: min as u32,
            mode: match spec.map_or(GangMode::Strict, |s| s.mode) {
                GangMode::Strict => "Strict",
                GangMode::NonStrict => "NonStrict",
            },
            match_policy: match policy {
                MatchPolicy::OnlyWaiting => "only-waiting",
                MatchPolicy::WaitingAndRunning => "waiting-and-running",
                MatchPolicy::OnceSatisfied => "once-satisfied",
            },
            wait_seconds: spec.map_or(0, |s| s.wait_time.as_secs()),
            children: gang.children(),
            waiting: gang.waiting.len(),
            binding: gang.binding.len(),
            bound: gang.bound.len(),
            waiting_for: if satisfied { 0 } else { min.saturating_sub(counted) },
            once_satisfied,
            notes: gang.notes.iter().map(ToString::to_string).collect(),
        })
    }
}
