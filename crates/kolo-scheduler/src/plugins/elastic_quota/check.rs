//! The quota checks of PreFilter (spec §7.5 checks 1–5 and 7) and who may
//! preempt whom inside a quota (`canPreempt`), over the tree.

use kolo_core::resources::{ResourceSet, ResourceVector};

use super::args::ElasticQuotaArgs;
use super::tree::{DEFAULT, PodFacts, QuotaTree};

/// One level a pod is checked against: its quota, then (with
/// `enableCheckParentQuota`) each ancestor below the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Level {
    /// The quota's index.
    pub quota: usize,
    /// Its limit: the runtime (or max without runtime quota), masked as
    /// the check masks it.
    pub limit: ResourceVector,
    /// What it uses.
    pub used: ResourceVector,
}

/// The outcome of the checks for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaCheck {
    /// The pod's quota.
    pub quota: usize,
    /// The pod's request masked to the quota's max.
    pub pod_request: ResourceVector,
    /// The levels checked: the quota first, then its ancestors if checked.
    pub levels: Vec<Level>,
    /// The first failed level (check 4 or 7) and its message: preemption
    /// inside the quota may resolve it.
    pub over: Option<(usize, String)>,
    /// Check 5's message: the non-preemptible min would be exceeded
    /// (preemption cannot help).
    pub non_preemptible: Option<String>,
}

impl QuotaCheck {
    /// Whether every check passed.
    pub fn passes(&self) -> bool {
        self.over.is_none() && self.non_preemptible.is_none()
    }

    /// The message of the first failed check, in the spec's order (4, 5,
    /// 7).
    pub fn message(&self) -> Option<&str> {
        match (&self.over, &self.non_preemptible) {
            (Some((0, m)), _) => Some(m),
            (_, Some(m)) => Some(m),
            (Some((_, m)), None) => Some(m),
            (None, None) => None,
        }
    }

    /// The first level that fails with `freed` (per level) taken out of its
    /// use: what is left to resolve once victims are gone. `None` when all
    /// pass.
    pub fn first_failure_without(&self, freed: &ResourceVector) -> Option<usize> {
        self.levels.iter().position(|level| {
            !(level.used - *freed + self.pod_request).less_than_or_equal(&level.limit)
        })
    }
}

/// Runs checks 1–5 and 7 for a pod: maps it to its quota, refreshes the
/// runtimes on the way (with runtime quota on), and compares.
pub fn check_pod(tree: &mut QuotaTree, args: &ElasticQuotaArgs, pod: &PodFacts) -> QuotaCheck {
    tree.ensure_current();
    let quota = tree.quota_for(pod.quota_label.as_deref(), &pod.namespace);
    let runtime = if args.enable_runtime_quota {
        tree.refresh_runtime(quota, args.enable_min_quota_scale)
    } else {
        tree.node(quota).max
    };
    let node = tree.node(quota);
    let pod_request = pod.request.mask(node.max_keys());
    let mut levels = vec![Level { quota, limit: runtime, used: node.used }];
    let mut over = None;
    if let Some(text) = exceeded(&node.used, &pod_request, &runtime) {
        over = Some((
            0,
            insufficient(
                &format!("quotaName: {}", node.name),
                &runtime,
                &node.used,
                &pod_request,
                &text,
            ),
        ));
    }
    // Check 5: the raw min, never the scaled one.
    let non_preemptible = pod.non_preemptible.then(|| {
        exceeded(&node.non_preemptible_used, &pod_request, &node.min).map(|text| {
            format!(
                "Insufficient non-preemptible quotas, quotaName: {}, min: {}, nonPreemptibleUsed: {}, pod's request: {}, exceedDimensions: [{text}]",
                node.name, node.min, node.non_preemptible_used, pod_request
            )
        })
    });
    let non_preemptible = non_preemptible.flatten();
    if args.enable_check_parent_quota {
        let keys = pod_request.names();
        let ancestors: Vec<usize> = tree.ancestors(quota).collect();
        let mut topo = vec![tree.node(quota).name.clone()];
        for a in ancestors {
            let ancestor = tree.node(a);
            topo.push(ancestor.name.clone());
            let limit = limit_of(ancestor, args).mask(keys);
            if over.is_none()
                && let Some(text) = exceeded(&ancestor.used, &pod_request, &limit)
            {
                let at = format!("quotaNameTopo: [{}]", topo.join(" "));
                over = Some((
                    levels.len(),
                    insufficient(&at, &limit, &ancestor.used, &pod_request, &text),
                ));
            }
            levels.push(Level { quota: a, limit, used: ancestor.used });
        }
    }
    QuotaCheck { quota, pod_request, levels, over, non_preemptible }
}

/// An ancestor's limit: its runtime as the refresh left it (masked to its
/// max), or its max without runtime quota.
fn limit_of(node: &super::tree::QuotaNode, args: &ElasticQuotaArgs) -> ResourceVector {
    if args.enable_runtime_quota { node.runtime.mask(node.max_keys()) } else { node.max }
}

/// `LessThanOrEqual(used + request, limit)` over the keys of `limit`; on
/// failure, the exceeded dimensions as the message lists them.
fn exceeded(
    used: &ResourceVector,
    request: &ResourceVector,
    limit: &ResourceVector,
) -> Option<String> {
    let dims: ResourceSet = (*used + *request).exceeding(limit);
    (!dims.is_empty()).then(|| dims.iter().map(|d| d.as_str()).collect::<Vec<_>>().join(" "))
}

/// The spec's check-4 / check-7 message.
fn insufficient(
    at: &str,
    limit: &ResourceVector,
    used: &ResourceVector,
    request: &ResourceVector,
    dims: &str,
) -> String {
    format!(
        "Insufficient quotas, {at}, runtime: {limit}, used: {used}, pod's request: {request}, exceedDimensions: [{dims}]"
    )
}

/// `canPreempt` (§7.5) for a victim charged to the tree (by key): it is
/// preemptible, of strictly lower priority, in the preemptor's quota, and
/// not in the default quota when `disableDefaultQuotaPreemption` is set.
pub fn can_preempt(
    tree: &QuotaTree,
    args: &ElasticQuotaArgs,
    preemptor_quota: usize,
    preemptor_priority: i32,
    victim: &str,
) -> bool {
    let Some(charge) = tree.pod(victim) else { return false };
    !charge.facts.non_preemptible
        && charge.facts.priority < preemptor_priority
        && charge.quota == preemptor_quota
        && !(args.disable_default_quota_preemption && charge.quota == DEFAULT)
}

#[cfg(test)]
mod tests {
    use kolo_core::resources::ResourceName::Cpu;

    use super::super::names;
    use super::super::spec::QuotaSpec;
    use super::super::spec::testing::object;
    use super::*;

    fn cpu(milli: i64) -> ResourceVector {
        ResourceVector::EMPTY.with(Cpu, milli)
    }

    fn pod(key: &str, label: &str, milli: i64, non_preemptible: bool) -> PodFacts {
        PodFacts {
            key: key.into(),
            namespace: "ns".into(),
            quota_label: Some(label.into()),
            request: cpu(milli),
            non_preemptible,
            priority: 100,
            protected: false,
        }
    }

    /// Cluster of 10 cores; `p` (parent, max 10) over `a` (min 2, max 4)
    /// and `b` (max 10); a uses 3 cores (one assigned pod, non-preemptible
    /// for 1 core of them).
    fn tree() -> QuotaTree {
        let mut t = QuotaTree::new(cpu(i64::MAX), cpu(i64::MAX));
        t.set_cluster_total(cpu(10_000));
        let spec = |name, min: &[(&str, &str)], max, labels: &[(&str, &str)]| {
            QuotaSpec::from_object(&object(name, "ns", min, &[("cpu", max)], labels, &[])).unwrap()
        };
        t.apply(spec("p", &[], "10", &[(names::IS_PARENT, "true")])).unwrap();
        t.apply(spec("a", &[("cpu", "2")], "4", &[(names::PARENT, "p")])).unwrap();
        t.apply(spec("b", &[], "10", &[(names::PARENT, "p")])).unwrap();
        t.pod_assigned(pod("ns/a1", "a", 2_000, false));
        t.pod_assigned(pod("ns/a2", "a", 1_000, true));
        t
    }

    fn args(runtime: bool, parent: bool) -> ElasticQuotaArgs {
        ElasticQuotaArgs {
            enable_runtime_quota: runtime,
            enable_check_parent_quota: parent,
            ..ElasticQuotaArgs::default()
        }
    }

    #[test]
    fn max_is_enforced_with_the_specs_message() {
        let mut t = tree();
        // Runtime quota off: the limit is max (4 cores); 3 + 2 > 4.
        let check = check_pod(&mut t, &args(false, false), &pod("ns/new", "a", 2_000, false));
        assert_eq!(
            check.message(),
            Some(
                "Insufficient quotas, quotaName: a, runtime: cpu=4, used: cpu=3, pod's request: cpu=2, exceedDimensions: [cpu]"
            )
        );
        // 1 core fits exactly.
        assert!(check_pod(&mut t, &args(false, false), &pod("ns/new", "a", 1_000, false)).passes());
    }

    #[test]
    fn runtime_is_the_limit_with_runtime_quota() {
        let mut t = tree();
        // a asks for 3 (its pods) + 1 pending; b asks for nothing: a's
        // runtime is its request 4 (capped by max 4).
        t.pod_pending(pod("ns/new", "a", 1_000, false));
        let check = check_pod(&mut t, &args(true, false), &pod("ns/new", "a", 1_000, false));
        assert!(check.passes(), "{check:?}");
        assert_eq!(check.levels[0].limit, cpu(4_000));
        // b now asks for 9 cores. a (request 4 > min 2) starts at 2, b at
        // 0; the 8 left go by weight (the maxes, 4000 : 10000 in milli):
        // a 8000·4000/14000 = 2285 rem 10000, b 5714 rem 4000; the
        // residual unit to a (larger remainder): a 4286, capped at its
        // request 4000; the 286 over go to b: 6000.
        t.pod_pending(pod("ns/b1", "b", 9_000, false));
        let check = check_pod(&mut t, &args(true, false), &pod("ns/new", "a", 1_000, false));
        let b = t.index("b").unwrap();
        assert_eq!(t.node(b).runtime, cpu(6_000));
        assert_eq!(check.levels[0].limit, cpu(4_000));
        assert!(check.passes());
        // One more pending core for a changes nothing (capped by max 4),
        // but 2 more cores of use do not fit.
        let check = check_pod(&mut t, &args(true, false), &pod("ns/new2", "a", 2_000, false));
        assert!(check.over.is_some());
    }

    #[test]
    fn non_preemptible_pods_are_held_to_the_raw_min() {
        let mut t = tree();
        t.pod_unassigned("ns/a1");
        // min 2, 1 non-preemptible in use: 1 more fits, 1.5 does not
        // (though a's max has room: 1 + 1.5 <= 4).
        let fits = check_pod(&mut t, &args(false, false), &pod("ns/np", "a", 1_000, true));
        assert!(fits.passes(), "{fits:?}");
        let check = check_pod(&mut t, &args(false, false), &pod("ns/np", "a", 1_500, true));
        assert_eq!(
            check.message(),
            Some(
                "Insufficient non-preemptible quotas, quotaName: a, min: cpu=2, nonPreemptibleUsed: cpu=1, pod's request: cpu=1500m, exceedDimensions: [cpu]"
            )
        );
        assert!(check.over.is_none());
        // A preemptible pod of the same size is not held to the min.
        assert!(check_pod(&mut t, &args(false, false), &pod("ns/p", "a", 1_000, false)).passes());
    }

    #[test]
    fn the_parent_chain_is_checked_when_enabled() {
        let mut t = tree();
        // b (max 10) fits 8 cores alone, but p holds a's 3 already: 3 + 8
        // > 10 at p.
        let big = pod("ns/big", "b", 8_000, false);
        assert!(check_pod(&mut t, &args(false, false), &big).passes());
        let check = check_pod(&mut t, &args(false, true), &big);
        assert_eq!(
            check.message(),
            Some(
                "Insufficient quotas, quotaNameTopo: [b p], runtime: cpu=10, used: cpu=3, pod's request: cpu=8, exceedDimensions: [cpu]"
            )
        );
        assert_eq!(check.over.as_ref().map(|(level, _)| *level), Some(1));
        // Freeing 1 core at p (a victim of b would) resolves it.
        assert_eq!(check.first_failure_without(&cpu(1_000)), None);
        assert_eq!(check.first_failure_without(&cpu(999)), Some(1));
    }

    #[test]
    fn default_and_system_quotas_always_pass() {
        let mut t = tree();
        let huge = PodFacts { quota_label: None, ..pod("ns/x", "", 1_000_000, false) };
        assert!(check_pod(&mut t, &args(true, true), &huge).passes());
    }

    #[test]
    fn can_preempt_only_inside_the_quota() {
        let mut t = tree();
        t.pod_assigned(pod("ns/b1", "b", 1_000, false));
        t.pod_assigned(PodFacts { quota_label: None, ..pod("ns/d1", "", 1_000, false) });
        t.ensure_current();
        let (a, b) = (t.index("a").unwrap(), t.index("b").unwrap());
        let args = ElasticQuotaArgs::default();
        // (preemptor quota, preemptor priority, victim, may)
        let cases = [
            (a, 101, "ns/a1", true),
            (a, 100, "ns/a1", false), // equal priority
            (a, 101, "ns/a2", false), // non-preemptible
            (b, 101, "ns/a1", false), // another quota
            (b, 101, "ns/b1", true),
            (DEFAULT, 101, "ns/d1", false), // the default quota
            (a, 101, "ns/unknown", false),
        ];
        for (quota, priority, victim, want) in cases {
            assert_eq!(can_preempt(&t, &args, quota, priority, victim), want, "{victim}");
        }
        let open = ElasticQuotaArgs { disable_default_quota_preemption: false, ..args };
        assert!(can_preempt(&t, &open, DEFAULT, 101, "ns/d1"));
    }
}
