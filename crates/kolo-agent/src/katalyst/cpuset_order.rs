//! The order of cpuset writes when pools change: **expand before shrink**.
//!
//! Given every cgroup's current and target cpuset, the writes come in two
//! phases:
//!
//! 1. **expand**: each cgroup whose target holds CPUs it does not have
//!    gets `current ∪ target`;
//! 2. **shrink**: each cgroup whose target is smaller than what it has
//!    then gets its target.
//!
//! So at every point between two writes a cgroup's cpuset contains its
//! current or its target cpuset (both, during the change): it never has
//! fewer CPUs than it is entitled to before or after, never loses a CPU it
//! keeps, and is never empty unless both are. A target that is empty is
//! never written (the cgroup keeps what it has). CPUs moving from one pod
//! to another are shared for the time between the phases rather than
//! missing from both.
//!
//! Each phase becomes one batch for the cgroup executor
//! ([`crate::cgroup::Executor`]), which orders a batch's writes by depth
//! (a pod's cgroup before its containers' when growing, after when
//! shrinking) as cgroup v1 requires.

use std::collections::BTreeMap;

use kolo_core::cpuset::CpuSet;

use crate::cgroup::{CgroupDir, CgroupWrite, Resource, Value};

/// Which phase a write belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Growing to current ∪ target.
    Expand,
    /// Shrinking to the target.
    Shrink,
}

/// One cpuset write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpusetStep<K> {
    /// The cgroup (a pod's UID, a pool's name: the caller's key).
    pub cgroup: K,
    /// The cpuset to write.
    pub cpus: CpuSet,
    /// Its phase.
    pub phase: Phase,
}

/// The writes that take every cgroup of `target` from `current` (absent:
/// empty) to its target, in a safe order (see the module docs).
pub fn order_writes<K: Ord + Clone>(
    current: &BTreeMap<K, CpuSet>,
    target: &BTreeMap<K, CpuSet>,
) -> Vec<CpusetStep<K>> {
    let empty = CpuSet::default();
    let mut expand = Vec::new();
    let mut shrink = Vec::new();
    for (k, want) in target {
        if want.is_empty() {
            continue;
        }
        let have = current.get(k).unwrap_or(&empty);
        let grown = have.union(want);
        if grown != *have {
            expand.push(CpusetStep {
                cgroup: k.clone(),
                cpus: grown.clone(),
                phase: Phase::Expand,
            });
        }
        if *want != grown {
            shrink.push(CpusetStep { cgroup: k.clone(), cpus: want.clone(), phase: Phase::Shrink });
        }
    }
    expand.extend(shrink);
    expand
}

/// The steps as executor batches (expand, then shrink): each step's
/// cpuset to every cgroup directory of its key (a pod's and its
/// containers'). Keys without directories are left out.
pub fn batches<K: Ord>(
    steps: &[CpusetStep<K>],
    dirs: &BTreeMap<K, Vec<CgroupDir>>,
) -> [Vec<CgroupWrite>; 2] {
    let mut out = [Vec::new(), Vec::new()];
    for s in steps {
        let batch = &mut out[usize::from(s.phase == Phase::Shrink)];
        for dir in dirs.get(&s.cgroup).into_iter().flatten() {
            batch.push(CgroupWrite {
                dir: dir.clone(),
                resource: Resource::CpusetCpus,
                value: Value::Cpuset(s.cpus.clone()),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse(s).unwrap()
    }

    fn map(pairs: &[(&'static str, &str)]) -> BTreeMap<&'static str, CpuSet> {
        pairs.iter().map(|(k, v)| (*k, set(v))).collect()
    }

    #[test]
    fn a_shared_pool_shrinks_for_a_new_dedicated_pod() {
        // share 0-7 gives 4-5 to the new dedicated pod d; reclaim 8-11 grows by 6-7.
        let current = map(&[("share", "0-7"), ("reclaim", "8-11")]);
        let target = map(&[("share", "0-3"), ("d", "4-5"), ("reclaim", "6-11"), ("gone", "")]);
        let steps = order_writes(&current, &target);
        let got: Vec<(Phase, &str, String)> =
            steps.iter().map(|s| (s.phase, s.cgroup, s.cpus.to_string())).collect();
        assert_eq!(
            got,
            [
                (Phase::Expand, "d", "4-5".to_string()),
                (Phase::Expand, "reclaim", "6-11".to_string()),
                (Phase::Shrink, "share", "0-3".to_string()),
            ]
        );
        let dirs: BTreeMap<&str, Vec<CgroupDir>> = BTreeMap::from([(
            "share",
            vec![
                CgroupDir::parse("kubepods/pod1").unwrap(),
                CgroupDir::parse("kubepods/pod1/c").unwrap(),
            ],
        )]);
        let [expand, shrink] = batches(&steps, &dirs);
        assert!(expand.is_empty(), "d and reclaim have no directories here");
        assert_eq!(shrink.len(), 2);
        assert_eq!(shrink[1].value, Value::Cpuset(set("0-3")));
    }

    /// A random cpuset of CPUs 0..16.
    fn cpuset() -> impl Strategy<Value = CpuSet> {
        proptest::collection::btree_set(0u32..16, 0..10).prop_map(|s| s.into_iter().collect())
    }

    proptest! {
        #[test]
        fn every_intermediate_state_keeps_what_each_cgroup_is_entitled_to(
            before in proptest::collection::vec(cpuset(), 1..6),
            after in proptest::collection::vec(cpuset(), 1..6),
        ) {
            let current: BTreeMap<usize, CpuSet> = before.into_iter().enumerate().collect();
            let target: BTreeMap<usize, CpuSet> = after.into_iter().enumerate().collect();
            let steps = order_writes(&current, &target);
            let mut state = current.clone();
            let empty = CpuSet::default();
            let check = |state: &BTreeMap<usize, CpuSet>| -> Result<(), TestCaseError> {
                for (k, have) in state {
                    let cur = current.get(k).unwrap_or(&empty);
                    let want = target.get(k).filter(|w| !w.is_empty()).unwrap_or(cur);
                    // Holds all of its current or all of its target cpuset.
                    prop_assert!(cur.is_subset(have) || want.is_subset(have), "{k}: {have}");
                    // Never loses a CPU it keeps; never fewer CPUs than both ends allow.
                    prop_assert!(cur.intersection(want).is_subset(have));
                    prop_assert!(have.len() >= cur.len().min(want.len()));
                    // Never emptied (a cgroup new to the node starts empty).
                    prop_assert!(!have.is_empty() || cur.is_empty());
                }
                Ok(())
            };
            for s in &steps {
                state.insert(s.cgroup, s.cpus.clone());
                check(&state)?;
            }
            // The end state is the target (empty targets left as they were).
            for (k, want) in &target {
                let end = state.get(k).unwrap_or(&empty);
                if want.is_empty() {
                    prop_assert_eq!(end, current.get(k).unwrap_or(&empty));
                } else {
                    prop_assert_eq!(end, want);
                }
            }
            // Expands all come before shrinks.
            prop_assert!(steps.windows(2).all(|w| w[0].phase <= w[1].phase));
        }
    }
}
