//! The pure core of preemption: which pods of a node must go for the
//! preemptor to fit there (kube-scheduler's `selectVictimsOnNode`), and
//! which candidate node to preempt on (`pickOneNodeForPreemption`).
//!
//! Pods are plain numbers here ([`PotentialVictim`]); whether the preemptor
//! fits is a closure the plugin answers by running the Filter plugins.

use std::cmp::Reverse;

use kolo_core::clock::Timestamp;

/// A pod of lower priority than the preemptor on a candidate node, as
/// victim selection sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PotentialVictim {
    /// Its priority.
    pub priority: i32,
    /// When it started (`status.startTime`; the cycle's time for a pod
    /// that has not started, as kube-scheduler's `GetPodStartTime`).
    pub start: Timestamp,
    /// Whether evicting it would violate a PodDisruptionBudget.
    pub violates_pdb: bool,
}

impl PotentialVictim {
    /// kube-scheduler's `MoreImportantPod` as a sort key (smaller is more
    /// important): higher priority, then the earlier start.
    pub fn importance(&self) -> (Reverse<i32>, Timestamp) {
        (Reverse(self.priority), self.start)
    }
}

/// The victims chosen on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Indices into the potential victims, most important first.
    pub victims: Vec<usize>,
    /// How many of them violate a PodDisruptionBudget.
    pub pdb_violations: usize,
}

/// kube-scheduler's `selectVictimsOnNode`: with every potential victim
/// removed, does the preemptor fit (`fits(removed)`, `removed[i]` for the
/// `i`-th potential victim)? If not, preempting on this node cannot help
/// (`None`). If so, put pods back one by one, most important first — those
/// whose eviction would violate a PodDisruptionBudget before the others —
/// keeping each back while the preemptor still fits; the rest are the
/// victims.
pub fn select_victims(
    potential: &[PotentialVictim],
    mut fits: impl FnMut(&[bool]) -> bool,
) -> Option<Selection> {
    let mut removed = vec![true; potential.len()];
    if !fits(&removed) {
        return None;
    }
    let mut order: Vec<usize> = (0..potential.len()).collect();
    order.sort_by_key(|&i| potential[i].importance());
    // PDB-violating pods are reprieved first: they are the ones to keep if
    // possible.
    order.sort_by_key(|&i| !potential[i].violates_pdb);
    let mut victims = Vec::new();
    let mut pdb_violations = 0;
    for i in order {
        removed[i] = false;
        if !fits(&removed) {
            removed[i] = true;
            victims.push(i);
            pdb_violations += usize::from(potential[i].violates_pdb);
        }
    }
    victims.sort_by_key(|&i| potential[i].importance());
    Some(Selection { victims, pdb_violations })
}

/// A node where preemption would work: its victims, most important first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The victims, most important first.
    pub victims: Vec<PotentialVictim>,
    /// How many of them violate a PodDisruptionBudget.
    pub pdb_violations: usize,
}

/// kube-scheduler's `pickOneNodeForPreemption`: a candidate without
/// victims if there is one (the first); otherwise, narrowing down in turn,
/// the fewest PDB violations, the lowest highest victim priority, the
/// smallest sum of victim priorities, the fewest victims, the latest
/// earliest start among each node's highest-priority victims; then the
/// first. Returns its index.
pub fn pick_one_node(candidates: &[Candidate]) -> Option<usize> {
    if let Some(i) = candidates.iter().position(|c| c.victims.is_empty()) {
        return Some(i);
    }
    let mut remaining: Vec<usize> = (0..candidates.len()).collect();
    // Each criterion is a score, higher better, as kube writes them.
    let criteria: [fn(&Candidate) -> i128; 5] = [
        |c| -(c.pdb_violations as i128),
        |c| -i128::from(c.victims[0].priority),
        // Shifted by 2^31 so negative priorities add up as kube's do.
        |c| -c.victims.iter().map(|v| i128::from(v.priority) + (1 << 31)).sum::<i128>(),
        |c| -(c.victims.len() as i128),
        |c| earliest_start_of_highest(&c.victims).as_nanosecond(),
    ];
    for score in criteria {
        let best = remaining.iter().map(|&i| score(&candidates[i])).max()?;
        remaining.retain(|&i| score(&candidates[i]) == best);
        if remaining.len() == 1 {
            break;
        }
    }
    remaining.first().copied()
}

/// kube-scheduler's `GetEarliestPodStartTime`: the earliest start among
/// the victims of the highest priority (`victims` is not empty).
fn earliest_start_of_highest(victims: &[PotentialVictim]) -> Timestamp {
    let highest = victims.iter().map(|v| v.priority).max().unwrap_or(i32::MIN);
    victims
        .iter()
        .filter(|v| v.priority == highest)
        .map(|v| v.start)
        .min()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    fn v(priority: i32, start: i64) -> PotentialVictim {
        PotentialVictim { priority, start: at(start), violates_pdb: false }
    }

    fn pdb(priority: i32, start: i64) -> PotentialVictim {
        PotentialVictim { violates_pdb: true, ..v(priority, start) }
    }

    /// A node of `capacity` units with pods of these sizes; the preemptor
    /// needs `need` units (one resource, hand-checked cases).
    fn fits(capacity: i64, sizes: &[i64], need: i64) -> impl FnMut(&[bool]) -> bool + '_ {
        move |removed| {
            let used: i64 = sizes.iter().zip(removed).filter(|(_, r)| !**r).map(|(s, _)| s).sum();
            capacity - used >= need
        }
    }

    /// (potential victims, sizes, capacity, need, (victims, PDB violations)).
    type VictimCase = (Vec<PotentialVictim>, Vec<i64>, i64, i64, Option<(Vec<usize>, usize)>);

    #[test]
    fn victims_are_the_least_important_pods_that_must_go() {
        let cases: Vec<VictimCase> = vec![
            // Removing everything does not make room: not a candidate.
            (vec![v(1, 0), v(2, 0)], vec![2, 2], 5, 6, None),
            // Room without removing anything: no victims.
            (vec![v(1, 0)], vec![2], 10, 3, Some((vec![], 0))),
            // 10 units, pods 4 (prio 1), 4 (prio 2), 2 (prio 3); need 5.
            // Reprieve prio 3 (used 2, free 8: stays), prio 2 (used 6,
            // free 4 < 5: victim), prio 1 (used 6 again, free 4: victim).
            // Both 4-unit pods go, prio 2 listed first.
            (vec![v(1, 0), v(2, 0), v(3, 0)], vec![4, 4, 2], 10, 5, Some((vec![1, 0], 0))),
            // Need 4: prio 3 back (2), prio 2 back (6, free 4 ok), prio 1
            // back (10, free 0): victim. Only the least important goes.
            (vec![v(1, 0), v(2, 0), v(3, 0)], vec![4, 4, 2], 10, 4, Some((vec![0], 0))),
            // Equal priority: the earlier-started pod is more important, so
            // it is reprieved first and the later one goes.
            (vec![v(1, 20), v(1, 10)], vec![3, 3], 6, 3, Some((vec![0], 0))),
            // A PDB-violating pod is reprieved before a more important
            // non-violating one: the prio-5 pod goes instead of the
            // violating prio-1 pod.
            (vec![pdb(1, 0), v(5, 0)], vec![3, 3], 6, 3, Some((vec![1], 0))),
            // Both violate and one must go: one violation counted.
            (vec![pdb(1, 0), pdb(5, 0)], vec![3, 3], 6, 3, Some((vec![0], 1))),
        ];
        for (i, (potential, sizes, capacity, need, want)) in cases.into_iter().enumerate() {
            let got = select_victims(&potential, fits(capacity, &sizes, need));
            let got = got.map(|s| (s.victims, s.pdb_violations));
            assert_eq!(got, want, "case {i}");
        }
    }

    #[test]
    fn selected_victims_are_sorted_most_important_first() {
        let potential = [v(1, 0), v(3, 0), v(2, 0)];
        // Nothing can stay: all three go, highest priority first.
        let s = select_victims(&potential, fits(9, &[3, 3, 3], 9)).unwrap();
        assert_eq!(s.victims, vec![1, 2, 0]);
    }

    fn candidate(victims: Vec<PotentialVictim>) -> Candidate {
        let pdb_violations = victims.iter().filter(|v| v.violates_pdb).count();
        Candidate { victims, pdb_violations }
    }

    /// `pickOneNodeForPreemption`'s criteria, one hand-checked case per
    /// tie-breaker (in the spirit of kube-scheduler's
    /// `TestSelectBestCandidate`, not its cases verbatim).
    #[test]
    fn node_choice_follows_kube_schedulers_order() {
        let cases: Vec<(&str, Vec<Candidate>, Option<usize>)> = vec![
            ("no candidates", vec![], None),
            (
                "a node that needs no preemption wins outright",
                vec![candidate(vec![v(1, 0)]), candidate(vec![]), candidate(vec![])],
                Some(1),
            ),
            (
                "fewest PDB violations first, even with higher priorities",
                vec![candidate(vec![pdb(1, 0)]), candidate(vec![v(100, 0)])],
                Some(1),
            ),
            (
                "lowest highest-priority victim",
                vec![candidate(vec![v(20, 0)]), candidate(vec![v(10, 0), v(10, 0), v(10, 0)])],
                Some(1),
            ),
            (
                "same highest priority: smallest sum of priorities",
                vec![candidate(vec![v(10, 0), v(9, 0)]), candidate(vec![v(10, 0), v(5, 0)])],
                Some(1),
            ),
            (
                // Sums shifted by 2^31 each: two victims of -1 sum more
                // than one victim of -1, so the single victim wins.
                "negative priorities are summed as kube does",
                vec![candidate(vec![v(-1, 0), v(-1, 0)]), candidate(vec![v(-1, 0)])],
                Some(1),
            ),
            (
                // Shifted, i32::MIN adds 0: [10, MIN] sums 10 + 2^31, as
                // [10] does; same highest, same sum, one pod fewer wins.
                "same highest and sum: fewest victims",
                vec![candidate(vec![v(10, 0), v(i32::MIN, 0)]), candidate(vec![v(10, 0)])],
                Some(1),
            ),
            (
                "same victims' priorities: latest start of the highest-priority victims",
                vec![
                    candidate(vec![v(10, 100), v(1, 0)]),
                    candidate(vec![v(10, 300), v(10, 200), v(1, 0)]),
                    candidate(vec![v(10, 250), v(1, 0)]),
                ],
                // Node 1 has a larger sum (21 + 3·2^31) and drops out; of 0
                // and 2 (11 + 2·2^31 each, two pods each), 2's prio-10
                // victim started later (250 > 100).
                Some(2),
            ),
            (
                "complete tie: the first",
                vec![candidate(vec![v(3, 5)]), candidate(vec![v(3, 5)])],
                Some(0),
            ),
        ];
        for (name, candidates, want) in cases {
            assert_eq!(pick_one_node(&candidates), want, "{name}");
        }
    }

    #[test]
    fn earliest_start_reads_only_the_highest_priority_victims() {
        // The prio-1 pod started earliest but is ignored: 200 is the
        // earliest start among the prio-10 victims.
        let victims = [v(10, 300), v(10, 200), v(1, 0)];
        assert_eq!(earliest_start_of_highest(&victims), at(200));
    }

    proptest::proptest! {
        /// Whatever the sizes and priorities, the chosen victims make room,
        /// and no victim could be put back alone with the preemptor still
        /// fitting (the reprieve is maximal one pod at a time).
        #[test]
        fn victims_make_room_and_none_could_stay_alone(
            pods in proptest::collection::vec((0i32..5, 0i64..4, 1i64..5), 0..7),
            capacity in 0i64..20,
            need in 0i64..10,
        ) {
            let potential: Vec<_> = pods.iter().map(|&(p, s, _)| v(p, s)).collect();
            let sizes: Vec<i64> = pods.iter().map(|&(_, _, size)| size).collect();
            let total: i64 = sizes.iter().sum();
            let result = select_victims(&potential, fits(capacity, &sizes, need));
            proptest::prop_assert_eq!(result.is_some(), capacity >= need);
            if let Some(s) = result {
                let freed: i64 = s.victims.iter().map(|&i| sizes[i]).sum();
                proptest::prop_assert!(capacity - (total - freed) >= need);
                for &i in &s.victims {
                    proptest::prop_assert!(capacity - (total - freed + sizes[i]) < need);
                }
            }
        }
    }
}
