//! Which reservation a pod uses on each node, and how each node scores:
//! pure functions over the reservations the pod may use.
//!
//! * Usable: not over, not expired, not `unschedulable`, not already used
//!   by an owner when `allocateOnce`; with `allocatePolicy: Restricted`,
//!   the pod's requests of every resource the reservation reserves must
//!   fit in what is left of it (with `Aligned`, the default, the rest may
//!   come from the node: NodeResourcesFit checks the node without the
//!   reservation's hold).
//! * One reservation per node (the nominee): the lowest non-zero
//!   `reservation-order` label first, then the most allocated after the
//!   pod (the score below), then the name. Only the nominee's hold is
//!   lifted for the pod on that node, so the pod never counts two
//!   reservations' resources while taking from one.
//! * Score (§9.1): 1000 for the nominees carrying the lowest non-zero
//!   order of all nominees; otherwise most-allocated:
//!   `Σ_r 100 × (request_r + allocated_r) / allocatable_r` over the
//!   resources the reservation reserves a non-zero amount of where the sum
//!   fits, divided by the number of those resources; 0 for a node without
//!   a nominee. The plugin normalizes these to 0..=100.

use kolo_core::clock::Timestamp;
use kolo_core::resources::ResourceVector;

use super::spec::ReservationSpec;
use crate::framework::NodeId;

/// The raw score of a node whose nominee has the lowest order.
pub const ORDER_SCORE: i64 = 1000;

/// A reservation counted on a node, as a pod may find it.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The reservation.
    pub spec: &'a ReservationSpec,
    /// The node its reserve pod is counted on.
    pub node: NodeId,
    /// What its owners took ([`allocated`]).
    pub allocated: ResourceVector,
    /// How many owners took a part.
    pub owners: usize,
}

impl Candidate<'_> {
    /// Whether a new owner may use it at `now`.
    pub fn available(&self, now: Timestamp) -> bool {
        let s = self.spec;
        let used_up = s.allocate_once && self.owners > 0;
        !(s.terminal || s.expired(now) || s.unschedulable || used_up)
    }

    /// What is left of it.
    pub fn remaining(&self) -> ResourceVector {
        self.spec.allocatable.sub_non_negative(&self.allocated)
    }

    /// Whether `request` may come from it: always under `Aligned`; under
    /// `Restricted`, the request of each reserved resource must fit in
    /// what is left.
    pub fn admits(&self, request: &ResourceVector) -> bool {
        if !self.spec.restricted {
            return true;
        }
        let remaining = self.remaining();
        self.spec
            .allocatable
            .iter()
            .filter(|&(_, amount)| amount > 0)
            .all(|(name, _)| request.value(name) <= remaining.value(name))
    }
}

/// What owners requesting `requests` take of a reservation reserving
/// `allocatable`: per reserved resource, the sum of their requests capped
/// at the reserved amount (each owner takes from the reservation first,
/// the rest from the node).
pub fn allocated<'a>(
    allocatable: &ResourceVector,
    requests: impl IntoIterator<Item = &'a ResourceVector>,
) -> ResourceVector {
    let names = allocatable.names();
    let sum = requests
        .into_iter()
        .fold(ResourceVector::EMPTY, |sum, r| sum.saturating_add(&r.mask(names)));
    // `min` keeps a resource only one side has: keep the sum's only.
    sum.min(allocatable).mask(sum.names()).clamp_non_negative()
}

/// Most-allocated score of a reservation for a pod (see the module
/// documentation).
pub fn most_allocated(
    request: &ResourceVector,
    allocated: &ResourceVector,
    allocatable: &ResourceVector,
) -> i64 {
    let mut sum = 0i64;
    let mut count = 0i64;
    for (name, capacity) in allocatable.iter().filter(|&(_, c)| c > 0) {
        count += 1;
        let used = request.value(name).saturating_add(allocated.value(name));
        if used <= capacity {
            sum += (100i128 * i128::from(used) / i128::from(capacity)) as i64;
        }
    }
    if count == 0 { 0 } else { sum / count }
}

/// The reservation a pod uses on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nominee {
    /// The node.
    pub node: NodeId,
    /// The reservation's name.
    pub name: Box<str>,
    /// The reservation's UID.
    pub uid: Box<str>,
    /// The node's raw score ([`ORDER_SCORE`] or most-allocated).
    pub score: i64,
}

/// The nominee of each node among `usable` — reservations the pod may use
/// (available, owner and affinity matched; [`Candidate::admits`] is
/// checked here) — sorted by node.
pub fn nominate<'a>(
    request: &ResourceVector,
    usable: impl IntoIterator<Item = Candidate<'a>>,
) -> Vec<Nominee> {
    // (node, order or MAX, −score, name) sorts each node's best first.
    let mut ranked: Vec<(NodeId, i64, i64, Candidate<'a>)> = usable
        .into_iter()
        .filter(|c| c.admits(request))
        .map(|c| {
            let score = most_allocated(request, &c.allocated, &c.spec.allocatable);
            (c.node, c.spec.order.unwrap_or(i64::MAX), score, c)
        })
        .collect();
    ranked.sort_by(|a, b| (a.0, a.1, -a.2, &a.3.spec.name).cmp(&(b.0, b.1, -b.2, &b.3.spec.name)));
    ranked.dedup_by_key(|r| r.0);
    let lowest = ranked.iter().map(|r| r.1).min().unwrap_or(i64::MAX);
    ranked
        .into_iter()
        .map(|(node, order, score, c)| Nominee {
            node,
            name: c.spec.name.clone(),
            uid: c.spec.uid.clone(),
            score: if order != i64::MAX && order == lowest { ORDER_SCORE } else { score },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::reservation;
    use super::*;
    use kolo_api::names::label;

    fn spec(name: &str, requests: &str, extra: &str, order: Option<i64>) -> ReservationSpec {
        let mut r = reservation(name, requests, extra);
        if let Some(order) = order {
            r.metadata.labels = Some([(label::RESERVATION_ORDER.into(), order.to_string())].into());
        }
        ReservationSpec::read(&r).unwrap()
    }

    fn cpu_mem(cpu: i64, gib: i64) -> ResourceVector {
        ResourceVector::cpu_memory(cpu, gib << 30)
    }

    #[test]
    fn most_allocated_counts_only_resources_that_fit() {
        // allocatable 4 CPU / 8 GiB.
        let cases = [
            // (request, allocated, score): cpu 100×(1+1)/4 = 50, mem 100×(2+2)/8 = 50.
            (cpu_mem(1000, 2), cpu_mem(1000, 2), 50),
            // cpu 100×4/4 = 100, mem 100×1/8 = 12 → (100 + 12) / 2 = 56.
            (cpu_mem(4000, 1), cpu_mem(0, 0), 56),
            // cpu does not fit (5 > 4): 0 + mem 100×8/8 = 100 → 50.
            (cpu_mem(3000, 4), cpu_mem(2000, 4), 50),
            (cpu_mem(0, 0), cpu_mem(0, 0), 0),
        ];
        for (request, allocated, want) in cases {
            assert_eq!(most_allocated(&request, &allocated, &cpu_mem(4000, 8)), want);
        }
    }

    #[test]
    fn allocated_is_capped_at_what_is_reserved() {
        let gpu = kolo_core::resources::ResourceName::parse("nvidia.com/gpu").unwrap();
        let reserved = cpu_mem(4000, 8);
        let owners = [cpu_mem(3000, 2), cpu_mem(2000, 2).with(gpu, 1)];
        // cpu 5 capped at 4; memory 4 GiB; the GPU is not reserved.
        assert_eq!(allocated(&reserved, &owners), cpu_mem(4000, 4));
        assert_eq!(allocated(&reserved, []), ResourceVector::EMPTY);
        let cpu_only = [ResourceVector::EMPTY.with(kolo_core::resources::ResourceName::Cpu, 500)];
        assert_eq!(allocated(&reserved, &cpu_only).memory(), 0);
    }

    #[test]
    fn availability_and_restricted_admission() {
        let once = spec("a", "cpu: 4", "", None);
        let many = spec("b", "cpu: 4", "allocateOnce: false\n  allocatePolicy: Restricted", None);
        let t0 = Timestamp::from_second(1_800_000_000).unwrap();
        let used = ResourceVector::cpu_memory(3000, 0);
        let c = |spec, owners| Candidate { spec, node: NodeId(0), allocated: used, owners };
        assert!(c(&once, 0).available(t0));
        assert!(!c(&once, 1).available(t0));
        assert!(c(&many, 1).available(t0));
        // Default TTL: a day after creation.
        assert!(!c(&many, 1).available(t0.checked_add(DAY).unwrap()));
        // Restricted: 1 CPU left.
        assert!(c(&many, 1).admits(&ResourceVector::cpu_memory(1000, 1 << 30)));
        assert!(!c(&many, 1).admits(&ResourceVector::cpu_memory(1001, 0)));
        // Aligned admits anything (the node supplies the rest).
        assert!(c(&once, 0).admits(&ResourceVector::cpu_memory(9000, 0)));
    }

    const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);

    #[test]
    fn one_nominee_per_node_and_the_lowest_order_scores_1000() {
        let a = spec("a", "cpu: 4", "", None);
        let b = spec("b", "cpu: 2", "", None);
        let c = spec("c", "cpu: 8", "", Some(5));
        let d = spec("d", "cpu: 8", "", Some(3));
        let none = ResourceVector::EMPTY;
        let at = |spec, node| Candidate { spec, node: NodeId(node), allocated: none, owners: 0 };
        let request = ResourceVector::cpu_memory(2000, 0);
        let got = nominate(&request, [at(&a, 1), at(&b, 1), at(&c, 2), at(&d, 3), at(&c, 3)]);
        let got: Vec<(u32, &str, i64)> =
            got.iter().map(|n| (n.node.0, &*n.name, n.score)).collect();
        // Node 1: b is fuller after the pod (100×2/2 = 100 > 100×2/4 = 50).
        // Node 2: c, order 5, not the lowest: 100×2/8 = 25.
        // Node 3: d, order 3 (before c's 5): the lowest order, 1000.
        assert_eq!(got, vec![(1, "b", 100), (2, "c", 25), (3, "d", 1000)]);
    }

    proptest::proptest! {
        /// Owners taking, one after another, min(request, what is left)
        /// of each resource leave exactly `allocated` taken, whatever
        /// their order; it never exceeds what is reserved, and the
        /// most-allocated score stays within 0..=100.
        #[test]
        fn allocated_is_the_sum_of_sequential_takes(
            reserved in (0i64..10_000, 0i64..10_000),
            owners in proptest::collection::vec((0i64..6_000, 0i64..6_000), 0..6),
        ) {
            let allocatable = ResourceVector::cpu_memory(reserved.0, reserved.1);
            let requests: Vec<ResourceVector> =
                owners.iter().map(|&(c, m)| ResourceVector::cpu_memory(c, m)).collect();
            let (mut left_cpu, mut left_mem) = reserved;
            for r in &requests {
                let (c, m) = (r.cpu().min(left_cpu), r.memory().min(left_mem));
                left_cpu -= c;
                left_mem -= m;
            }
            let got = allocated(&allocatable, &requests);
            proptest::prop_assert_eq!(got.cpu(), reserved.0 - left_cpu);
            proptest::prop_assert_eq!(got.memory(), reserved.1 - left_mem);
            let mut reversed = requests.clone();
            reversed.reverse();
            proptest::prop_assert_eq!(allocated(&allocatable, &reversed), got);
            for r in &requests {
                let score = most_allocated(r, &got, &allocatable);
                proptest::prop_assert!((0..=100).contains(&score));
            }
        }
    }
}
