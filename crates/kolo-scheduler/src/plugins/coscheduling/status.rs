//! The PodGroup status controller's phase machine (spec §8.3 "PodGroup
//! status controller"), pure: from the group's current phase and counts of
//! its pods, the status to write. The controller that lists the pods and
//! writes the status lives with the other controllers (kolo-kube).

use kolo_api::crd::pod_group::{
    POD_GROUP_PHASE_FAILED, POD_GROUP_PHASE_FINISHED, POD_GROUP_PHASE_PENDING,
    POD_GROUP_PHASE_PRE_SCHEDULING, POD_GROUP_PHASE_RUNNING, POD_GROUP_PHASE_SCHEDULED,
    POD_GROUP_PHASE_SCHEDULING, POD_GROUP_PHASE_UNKNOWN,
};

/// A PodGroup's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// No phase written yet (`""`).
    Empty,
    /// `Pending`: not enough pods yet.
    Pending,
    /// `PreScheduling`: enough pods exist.
    PreScheduling,
    /// `Scheduling`: fewer than minMember bound.
    Scheduling,
    /// `Scheduled`: at least minMember bound.
    Scheduled,
    /// `Running`: at least minMember running or succeeded.
    Running,
    /// `Finished`: at least minMember succeeded.
    Finished,
    /// `Failed`: a pod failed, and failed + running + succeeded reach
    /// minMember.
    Failed,
    /// `Unknown`.
    Unknown,
}

impl Phase {
    /// The phase a status names (an unknown name is [`Phase::Unknown`]).
    pub fn parse(text: Option<&str>) -> Phase {
        match text.unwrap_or_default() {
            "" => Phase::Empty,
            POD_GROUP_PHASE_PENDING => Phase::Pending,
            POD_GROUP_PHASE_PRE_SCHEDULING => Phase::PreScheduling,
            POD_GROUP_PHASE_SCHEDULING => Phase::Scheduling,
            POD_GROUP_PHASE_SCHEDULED => Phase::Scheduled,
            POD_GROUP_PHASE_RUNNING => Phase::Running,
            POD_GROUP_PHASE_FINISHED => Phase::Finished,
            POD_GROUP_PHASE_FAILED => Phase::Failed,
            _ => Phase::Unknown,
        }
    }

    /// The name written to `status.phase`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Empty => "",
            Phase::Pending => POD_GROUP_PHASE_PENDING,
            Phase::PreScheduling => POD_GROUP_PHASE_PRE_SCHEDULING,
            Phase::Scheduling => POD_GROUP_PHASE_SCHEDULING,
            Phase::Scheduled => POD_GROUP_PHASE_SCHEDULED,
            Phase::Running => POD_GROUP_PHASE_RUNNING,
            Phase::Finished => POD_GROUP_PHASE_FINISHED,
            Phase::Failed => POD_GROUP_PHASE_FAILED,
            Phase::Unknown => POD_GROUP_PHASE_UNKNOWN,
        }
    }
}

/// What the controller counted among the group's pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PodCounts {
    /// Every pod of the group.
    pub pods: u32,
    /// Pods bound to a node.
    pub bound: u32,
    /// Pods in phase Running.
    pub running: u32,
    /// Pods in phase Succeeded.
    pub succeeded: u32,
    /// Pods in phase Failed.
    pub failed: u32,
}

/// The status to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusPlan {
    /// `status.phase`.
    pub phase: Phase,
    /// `status.scheduled`: the bound pods.
    pub scheduled: u32,
    /// `status.running`.
    pub running: u32,
    /// `status.succeeded`.
    pub succeeded: u32,
    /// `status.failed`.
    pub failed: u32,
}

/// The next status of a PodGroup in `phase` with `min_member` and these
/// pods. `""` becomes Pending; Pending becomes PreScheduling once there are
/// minMember (> 0) pods; from then on the phase follows the counts:
/// Scheduling / Scheduled by the bound pods, Running when Scheduled and
/// running + succeeded reach min, Failed when a pod failed and failed +
/// running + succeeded reach min, Finished when succeeded reaches min (the
/// later rules win).
pub fn next_status(phase: Phase, min_member: u32, counts: PodCounts) -> StatusPlan {
    let min = min_member;
    let phase = match phase {
        Phase::Empty => Phase::Pending,
        Phase::Pending if counts.pods >= min && min > 0 => Phase::PreScheduling,
        Phase::Pending => Phase::Pending,
        _ => {
            let mut next = if counts.bound < min { Phase::Scheduling } else { Phase::Scheduled };
            let active = counts.running.saturating_add(counts.succeeded);
            if next == Phase::Scheduled && active >= min {
                next = Phase::Running;
            }
            if counts.failed > 0 && active.saturating_add(counts.failed) >= min {
                next = Phase::Failed;
            }
            if counts.succeeded >= min {
                next = Phase::Finished;
            }
            next
        }
    };
    StatusPlan {
        phase,
        scheduled: counts.bound,
        running: counts.running,
        succeeded: counts.succeeded,
        failed: counts.failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pods: u32, bound: u32, running: u32, succeeded: u32, failed: u32) -> PodCounts {
        PodCounts { pods, bound, running, succeeded, failed }
    }

    #[test]
    fn every_transition() {
        use Phase::*;
        // (from, minMember, counts, expected phase)
        let cases = [
            (Empty, 3, counts(5, 5, 5, 0, 0), Pending),
            (Pending, 3, counts(2, 0, 0, 0, 0), Pending),
            (Pending, 3, counts(3, 0, 0, 0, 0), PreScheduling),
            (Pending, 0, counts(3, 0, 0, 0, 0), Pending),
            (PreScheduling, 3, counts(3, 2, 0, 0, 0), Scheduling),
            (PreScheduling, 3, counts(3, 3, 0, 0, 0), Scheduled),
            (Scheduling, 3, counts(3, 3, 2, 0, 0), Scheduled),
            (Scheduled, 3, counts(3, 3, 2, 1, 0), Running),
            // Running needs Scheduled in the same pass: too few bound.
            (Scheduling, 3, counts(4, 2, 3, 0, 0), Scheduling),
            (Running, 3, counts(3, 3, 1, 1, 1), Failed),
            // Too few running any more: back to Scheduled.
            (Running, 3, counts(4, 4, 1, 0, 1), Scheduled),
            (Scheduling, 3, counts(4, 1, 0, 0, 3), Failed),
            (Running, 3, counts(3, 3, 0, 3, 0), Finished),
            // Finished wins over Failed.
            (Failed, 2, counts(3, 3, 0, 2, 1), Finished),
            (Finished, 2, counts(3, 3, 0, 2, 0), Finished),
            (Unknown, 2, counts(2, 0, 0, 0, 0), Scheduling),
        ];
        for (from, min, c, want) in cases {
            let got = next_status(from, min, c);
            assert_eq!(got.phase, want, "{from:?} min {min} {c:?}");
            let numbers = (got.scheduled, got.running, got.succeeded, got.failed);
            assert_eq!(numbers, (c.bound, c.running, c.succeeded, c.failed));
        }
    }

    #[test]
    fn phases_round_trip_their_names() {
        use Phase::*;
        for p in [Empty, Pending, PreScheduling, Scheduling, Scheduled, Running, Finished, Failed] {
            assert_eq!(Phase::parse(Some(p.as_str())), p);
        }
        assert_eq!(Phase::parse(None), Empty);
        assert_eq!(Phase::parse(Some("Bogus")), Unknown);
    }
}
