//! The PodGroup status controller's decisions (spec §8.3): count each
//! gang's member pods from the pod store, and decide the status to write
//! (phase, scheduled, running, succeeded, failed, scheduleStartTime), or
//! nothing when it is unchanged. Pure: the manager's jobs loop
//! ([`super::jobs`]) does the API calls.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kolo_api::crd::{PodGroup, PodGroupStatus};
use kolo_api::names::label;
use kolo_scheduler::plugins::coscheduling::status::{Phase, PodCounts, next_status};

/// A gang's member pods, by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemberCounts {
    /// Every member pod.
    pub total: u32,
    /// Members with a node (bound), whatever their phase.
    pub scheduled: u32,
    /// Members in phase `Running`.
    pub running: u32,
    /// Members in phase `Succeeded`.
    pub succeeded: u32,
    /// Members in phase `Failed`.
    pub failed: u32,
}

/// The gang a pod belongs to through a PodGroup: `(namespace, name)` from
/// the label `pod-group.scheduling.sigs.k8s.io`, else the deprecated
/// `pod-group.scheduling.sigs.k8s.io/name`.
pub fn pod_group_of(pod: &Pod) -> Option<(String, String)> {
    let labels = pod.metadata.labels.as_ref()?;
    let name = labels
        .get(label::POD_GROUP)
        .or_else(|| labels.get(label::POD_GROUP_NAME_DEPRECATED))
        .filter(|n| !n.is_empty())?;
    Some((pod.metadata.namespace.clone().unwrap_or_default(), name.clone()))
}

/// Counts every gang's members in one walk over the pods.
pub fn count_members<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
) -> HashMap<(String, String), MemberCounts> {
    let mut counts: HashMap<(String, String), MemberCounts> = HashMap::new();
    for pod in pods {
        let Some(group) = pod_group_of(pod) else { continue };
        let c = counts.entry(group).or_default();
        c.total += 1;
        if pod.spec.as_ref().is_some_and(|s| s.node_name.as_deref().is_some_and(|n| !n.is_empty()))
        {
            c.scheduled += 1;
        }
        match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
            Some("Running") => c.running += 1,
            Some("Succeeded") => c.succeeded += 1,
            Some("Failed") => c.failed += 1,
            _ => {}
        }
    }
    counts
}

/// The status a PodGroup should have given its members, or `None` when
/// what it has is already that (nothing to write). The phase takes one
/// step of the Coscheduling plugin's machine (`status::next_status`) per
/// call, as Koordinator's controller does (each
/// write comes back through the watch and the next pass takes the next
/// step). `scheduleStartTime` is set to `now` when the gang first leaves
/// `Pending` (it has its `minMember` pods and can be scheduled), and kept
/// afterwards.
pub fn status_to_write(
    group: &PodGroup,
    members: MemberCounts,
    now: &Time,
) -> Option<PodGroupStatus> {
    let current = group.status.clone().unwrap_or_default();
    let min_member = group.spec.min_member.unwrap_or(0);
    let counts = PodCounts {
        pods: members.total,
        bound: members.scheduled,
        running: members.running,
        succeeded: members.succeeded,
        failed: members.failed,
    };
    let min_member = u32::try_from(min_member).unwrap_or(0);
    let plan = next_status(Phase::parse(current.phase.as_deref()), min_member, counts);
    let start = match (&current.schedule_start_time, plan.phase) {
        (Some(t), _) => Some(t.clone()),
        (None, Phase::Empty | Phase::Pending) => None,
        (None, _) => Some(now.clone()),
    };
    let count = |n: u32| Some(i32::try_from(n).unwrap_or(i32::MAX));
    let wanted = PodGroupStatus {
        phase: Some(plan.phase.as_str().to_string()),
        occupied_by: current.occupied_by.clone(),
        scheduled: count(plan.scheduled),
        running: count(plan.running),
        succeeded: count(plan.succeeded),
        failed: count(plan.failed),
        schedule_start_time: start,
    };
    (wanted != current).then_some(wanted)
}

/// The merge patch that writes `status` (the PodGroup CRD has no status
/// subresource: the status is part of the object).
pub fn status_patch(status: &PodGroupStatus) -> serde_json::Value {
    serde_json::json!({ "status": status })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};
    use kube::api::ObjectMeta;

    use super::*;

    fn pod(ns: &str, group: &str, node: Option<&str>, phase: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some(ns.into()),
                labels: Some([(label::POD_GROUP.to_string(), group.to_string())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec { node_name: node.map(String::from), ..PodSpec::default() }),
            status: Some(PodStatus { phase: Some(phase.into()), ..PodStatus::default() }),
        }
    }

    fn counts(
        total: u32,
        scheduled: u32,
        running: u32,
        succeeded: u32,
        failed: u32,
    ) -> MemberCounts {
        MemberCounts { total, scheduled, running, succeeded, failed }
    }

    #[test]
    fn members_are_counted_per_namespace_and_group() {
        let mut deprecated = pod("a", "", None, "Pending");
        deprecated.metadata.labels =
            Some([(label::POD_GROUP_NAME_DEPRECATED.to_string(), "g".to_string())].into());
        let mut none = pod("a", "g", None, "Pending");
        none.metadata.labels = None;
        let pods = [
            pod("a", "g", None, "Pending"),
            pod("a", "g", Some("n1"), "Pending"),
            pod("a", "g", Some("n1"), "Running"),
            pod("a", "g", Some("n2"), "Succeeded"),
            pod("a", "g", Some("n2"), "Failed"),
            deprecated,
            pod("b", "g", Some("n1"), "Running"),
            none,
        ];
        let got = count_members(&pods);
        assert_eq!(got.len(), 2);
        assert_eq!(got[&("a".into(), "g".into())], counts(6, 4, 1, 1, 1));
        assert_eq!(got[&("b".into(), "g".into())], counts(1, 1, 1, 0, 0));
    }

    fn group(min: i32, status: Option<PodGroupStatus>) -> PodGroup {
        let mut g = PodGroup::new(
            "g",
            kolo_api::crd::PodGroupSpec { min_member: Some(min), ..Default::default() },
        );
        g.metadata.namespace = Some("a".into());
        g.status = status;
        g
    }

    fn time(s: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap())
    }

    #[test]
    fn writes_only_on_change_and_keeps_the_start_time() {
        let t0 = time(1_000);
        // A new group becomes Pending, without a start time.
        let s = status_to_write(&group(3, None), counts(1, 0, 0, 0, 0), &t0).unwrap();
        assert_eq!(s.phase.as_deref(), Some("Pending"));
        assert_eq!(s.schedule_start_time, None);
        assert_eq!(
            (s.scheduled, s.running, s.succeeded, s.failed),
            (Some(0), Some(0), Some(0), Some(0))
        );
        // Same members again: nothing to write.
        assert_eq!(status_to_write(&group(3, Some(s.clone())), counts(1, 0, 0, 0, 0), &t0), None);
        // Enough members: PreScheduling, and the start time is now.
        let s = status_to_write(&group(3, Some(s)), counts(3, 0, 0, 0, 0), &t0).unwrap();
        assert_eq!(s.phase.as_deref(), Some("PreScheduling"));
        assert_eq!(s.schedule_start_time, Some(t0.clone()));
        // Later steps keep the first start time.
        let s = status_to_write(&group(3, Some(s)), counts(3, 1, 0, 0, 0), &time(2_000)).unwrap();
        assert_eq!(s.phase.as_deref(), Some("Scheduling"));
        assert_eq!(s.scheduled, Some(1));
        let s = status_to_write(&group(3, Some(s)), counts(3, 3, 0, 0, 0), &time(3_000)).unwrap();
        assert_eq!(s.phase.as_deref(), Some("Scheduled"));
        assert_eq!(s.scheduled, Some(3));
        assert_eq!(s.schedule_start_time, Some(t0));
        assert_eq!(status_to_write(&group(3, Some(s)), counts(3, 3, 0, 0, 0), &time(4_000)), None);
    }

    #[test]
    fn the_patch_writes_the_status_object() {
        let s = PodGroupStatus {
            phase: Some("Scheduled".into()),
            scheduled: Some(3),
            ..Default::default()
        };
        assert_eq!(
            status_patch(&s),
            serde_json::json!({"status": {"phase": "Scheduled", "scheduled": 3}})
        );
    }
}
