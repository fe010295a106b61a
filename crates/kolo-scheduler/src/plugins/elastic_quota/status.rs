//! What the manager's quota controller needs (spec §7.1, §7.5), as pure
//! functions over a [`QuotaTree`]:
//!
//! * [`quota_statuses`]: each quota's used, runtime and request, and
//!   [`QuotaStatus::annotations`] / [`QuotaStatus::status_used`], the
//!   values the controller writes back to the object;
//! * [`select_revocations`]: which pods to evict from a quota whose use
//!   exceeds its runtime, and [`OverUseClock`], which says when a quota has
//!   been over long enough (`delayEvictTime`).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::names;
use kolo_api::crd::common::ResourceList;
use kolo_core::clock::Timestamp;
use kolo_core::resources::ResourceVector;

use super::args::ElasticQuotaArgs;
use super::tree::{QuotaKind, QuotaTree};

/// One quota's values, as the controller writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaStatus {
    /// The quota's name.
    pub name: String,
    /// Its kind (root, system, default or a user quota).
    pub kind: QuotaKind,
    /// What its assigned pods (and its descendants') use: `status.used`.
    pub used: ResourceVector,
    /// Its runtime, masked to its max. The system and default quotas
    /// report their max; the root its total.
    pub runtime: ResourceVector,
    /// Its Request (§7.3).
    pub request: ResourceVector,
    /// Its ChildRequest (§7.3).
    pub child_request: ResourceVector,
    /// What its non-preemptible pods request.
    pub non_preemptible_request: ResourceVector,
    /// What its assigned non-preemptible pods use.
    pub non_preemptible_used: ResourceVector,
}

impl QuotaStatus {
    /// `status.used` as a resource list.
    pub fn status_used(&self) -> ResourceList {
        self.used.to_resource_list()
    }

    /// The controller-written annotations (`runtime`, `request`,
    /// `child-request`, `non-preemptible-request`, `non-preemptible-used`),
    /// each a JSON resource list.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        let json = |v: &ResourceVector| {
            serde_json::to_string(&v.to_resource_list()).unwrap_or_else(|_| "{}".to_string())
        };
        [
            (names::RUNTIME, &self.runtime),
            (names::REQUEST, &self.request),
            (names::CHILD_REQUEST, &self.child_request),
            (names::NON_PREEMPTIBLE_REQUEST, &self.non_preemptible_request),
            (names::NON_PREEMPTIBLE_USED, &self.non_preemptible_used),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), json(v)))
        .collect()
    }

    /// Whether it uses more than its runtime (over the runtime's keys).
    pub fn over_used(&self) -> bool {
        self.kind == QuotaKind::User && !self.used.less_than_or_equal(&self.runtime)
    }
}

/// Every quota's status, in the tree's order (root, system, default, then
/// the user quotas by name), runtimes refreshed first.
pub fn quota_statuses(tree: &mut QuotaTree, args: &ElasticQuotaArgs) -> Vec<QuotaStatus> {
    tree.ensure_current();
    (0..tree.nodes().len())
        .map(|i| {
            let runtime = match tree.node(i).kind {
                QuotaKind::User if args.enable_runtime_quota => {
                    tree.refresh_runtime(i, args.enable_min_quota_scale)
                }
                QuotaKind::Root => tree.root_total(),
                _ => tree.node(i).max,
            };
            let n = tree.node(i);
            QuotaStatus {
                name: n.name.clone(),
                kind: n.kind,
                used: n.used,
                runtime,
                request: n.request,
                child_request: n.child_request,
                non_preemptible_request: n.non_preemptible_request,
                non_preemptible_used: n.non_preemptible_used,
            }
        })
        .collect()
}

/// A pod of an over-used quota, as the revoke selection sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevokeCandidate {
    /// `namespace/name` (the last tie-break, for determinism).
    pub key: String,
    /// Its priority value.
    pub priority: i32,
    /// When it started (or was created).
    pub start: Timestamp,
    /// Its request, masked to the quota's max.
    pub request: ResourceVector,
    /// `false` for a non-preemptible pod: never revoked.
    pub preemptible: bool,
}

/// §7.5 over-use revoke: which of a quota's assigned `pods` to evict so
/// that `used` fits `runtime`. Walks the pods from least to most important
/// (lower priority first, then the newest), skipping non-preemptible ones,
/// taking them out until the use fits; then puts back, from the most
/// important of those taken, each one that still fits. Returns the indices
/// of the pods to evict, least important first. When even removing every
/// preemptible pod does not make the use fit, they all go.
pub fn select_revocations(
    used: &ResourceVector,
    runtime: &ResourceVector,
    pods: &[RevokeCandidate],
) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pods.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&pods[a], &pods[b]);
        a.priority.cmp(&b.priority).then(b.start.cmp(&a.start)).then(a.key.cmp(&b.key))
    });
    let mut left = *used;
    let mut taken = Vec::new();
    for i in order {
        if left.less_than_or_equal(runtime) {
            break;
        }
        if pods[i].preemptible {
            left -= pods[i].request;
            taken.push(i);
        }
    }
    // Most important first: the ones most worth keeping get back first.
    let mut evict = Vec::new();
    for &i in taken.iter().rev() {
        let back = left + pods[i].request;
        if back.less_than_or_equal(runtime) {
            left = back;
        } else {
            evict.push(i);
        }
    }
    evict.reverse();
    evict
}

/// When each quota became over-used, so revocation waits
/// `delayEvictTime` of continuous over-use.
#[derive(Debug, Clone, Default)]
pub struct OverUseClock {
    since: HashMap<String, Timestamp>,
}

impl OverUseClock {
    /// Records whether `quota` is over-used at `now`; true when it has been
    /// continuously for longer than `delay`.
    pub fn observe(&mut self, quota: &str, over: bool, now: Timestamp, delay: Duration) -> bool {
        if !over {
            self.since.remove(quota);
            return false;
        }
        let since = *self.since.entry(quota.to_string()).or_insert(now);
        let delay = i64::try_from(delay.as_nanos()).unwrap_or(i64::MAX);
        now.as_nanosecond() - since.as_nanosecond() > i128::from(delay)
    }

    /// Forgets quotas that no longer exist.
    pub fn retain(&mut self, mut exists: impl FnMut(&str) -> bool) {
        self.since.retain(|q, _| exists(q));
    }
}

/// Whether the revoke controller runs: `monitorAllQuotas` and
/// `enableRuntimeQuota` both set.
pub fn revoke_enabled(args: &ElasticQuotaArgs) -> bool {
    args.monitor_all_quotas && args.enable_runtime_quota
}

#[cfg(test)]
mod tests {
    use kolo_core::resources::ResourceName::Cpu;

    use super::super::spec::QuotaSpec;
    use super::super::spec::testing::object;
    use super::super::tree::PodFacts;
    use super::*;

    fn cpu(milli: i64) -> ResourceVector {
        ResourceVector::EMPTY.with(Cpu, milli)
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).unwrap()
    }

    fn candidate(
        key: &str,
        priority: i32,
        start: i64,
        milli: i64,
        preemptible: bool,
    ) -> RevokeCandidate {
        RevokeCandidate {
            key: key.into(),
            priority,
            start: at(start),
            request: cpu(milli),
            preemptible,
        }
    }

    #[test]
    fn revocation_takes_the_least_important_and_puts_back_what_fits() {
        // Runtime 10, used 16: 6 must go.
        let pods = [
            candidate("prod", 9500, 0, 4_000, true),    // 0
            candidate("old-be", 5500, 0, 4_000, true),  // 1
            candidate("new-be", 5500, 10, 1_000, true), // 2
            candidate("free", 3500, 5, 2_000, true),    // 3
            candidate("pinned", 3000, 0, 5_000, false), // 4
        ];
        // Least important first, skipping the non-preemptible 'pinned':
        // free (2: 14 left), new-be (1: 13), old-be (4: 9 ≤ 10: stop).
        // Back, most important first: old-be (9 + 4 = 13 > 10: goes),
        // new-be (9 + 1 = 10: stays), free (10 + 2: goes).
        let got = select_revocations(&cpu(16_000), &cpu(10_000), &pods);
        assert_eq!(got, vec![3, 1]);
        // Within the runtime: nobody.
        assert!(select_revocations(&cpu(10_000), &cpu(10_000), &pods).is_empty());
        // Everything preemptible cannot make it fit: all of them go.
        let got = select_revocations(&cpu(40_000), &cpu(10_000), &pods);
        assert_eq!(got, vec![3, 2, 1, 0]);
    }

    #[test]
    fn over_use_must_last_longer_than_the_delay() {
        let mut clock = OverUseClock::default();
        let delay = Duration::from_secs(120);
        assert!(!clock.observe("q", true, at(0), delay));
        assert!(!clock.observe("q", true, at(120), delay));
        assert!(clock.observe("q", true, at(121), delay));
        // Back within its runtime: the clock restarts.
        assert!(!clock.observe("q", false, at(122), delay));
        assert!(!clock.observe("q", true, at(200), delay));
        assert!(clock.observe("q", true, at(321), delay));
        clock.retain(|_| false);
        assert!(!clock.observe("q", true, at(400), delay));
    }

    #[test]
    fn statuses_report_used_runtime_and_request() {
        let mut tree = QuotaTree::new(cpu(1_000_000), cpu(2_000_000));
        tree.set_cluster_total(cpu(10_000));
        let spec =
            QuotaSpec::from_object(&object("q", "ns", &[], &[("cpu", "4")], &[], &[])).unwrap();
        tree.apply(spec).unwrap();
        let pod = |key: &str, milli| PodFacts {
            key: key.into(),
            namespace: "ns".into(),
            quota_label: Some("q".into()),
            request: cpu(milli),
            non_preemptible: false,
            priority: 0,
            protected: false,
        };
        tree.pod_assigned(pod("ns/a", 3_000));
        tree.pod_pending(pod("ns/b", 2_000));
        let statuses = quota_statuses(&mut tree, &ElasticQuotaArgs::default());
        let names: Vec<&str> = statuses.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [names::ROOT_QUOTA, names::SYSTEM_QUOTA, names::DEFAULT_QUOTA, "q"]);
        let q = &statuses[3];
        // Request 5, capped by max 4 for the runtime.
        assert_eq!((q.used, q.request, q.runtime), (cpu(3_000), cpu(5_000), cpu(4_000)));
        assert!(!q.over_used());
        assert_eq!(statuses[2].runtime, cpu(2_000_000));
        assert_eq!(statuses[0].runtime, cpu(10_000));
        let annotations = q.annotations();
        assert_eq!(annotations[names::RUNTIME], r#"{"cpu":"4"}"#);
        assert_eq!(annotations[names::REQUEST], r#"{"cpu":"5"}"#);
        assert_eq!(q.status_used()["cpu"].0, "3");
    }
}
