//! The node contention model: how a node's CPU is shared when its pods want
//! more than it has, as the kernel would share it under the isolation in
//! force.
//!
//! * [`Isolation::Idle`] (kolo: BE pods in `cpu.idle` / lowest-share
//!   groups, the BE QoS group capped by suppression): LS pods are served
//!   first, sharing among themselves in proportion to their requests
//!   (`cpu.shares`); BE pods get what is left, at most the BE cap (the
//!   suppression cpuset size or CFS quota), shared in proportion to their
//!   requests.
//! * [`Isolation::Shares`] (Kubernetes defaults): every pod competes with
//!   `cpu.shares` ∝ its CPU request; nobody is preferred.
//!
//! Sharing is max-min fair with weights ([`water_fill`]): a pod wanting
//! less than its weighted fair share gets its demand, the rest is split
//! among the others by weight. Amounts are milli-cores.
//!
//! Limits (documented in `docs/sim.md`): CPU is fungible within a node (no
//! per-core placement, no SMT or cache contention except through the
//! latency proxy's interference term), and a step is a steady state (no
//! CFS period effects, no burst).

/// How the node's CPU is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Isolation {
    /// Everyone by `cpu.shares` ∝ request.
    Shares,
    /// LS first; BE in idle groups, capped.
    Idle,
}

/// Max-min fair allocation of `available` among `demand` with `weight`
/// (weights ≤ 0 count as a tiny weight). Writes `alloc`; returns the total
/// allocated. `order` is scratch space.
pub fn water_fill(
    demand: &[f64],
    weight: &[f64],
    available: f64,
    alloc: &mut [f64],
    order: &mut Vec<usize>,
) -> f64 {
    let total: f64 = demand.iter().sum();
    let available = available.max(0.0);
    if total <= available {
        alloc.copy_from_slice(demand);
        return total;
    }
    let w = |i: usize| weight[i].max(1e-6);
    order.clear();
    order.extend(0..demand.len());
    // Pods wanting the least per unit of weight are satisfied first.
    order.sort_by(|&a, &b| (demand[a] / w(a)).total_cmp(&(demand[b] / w(b))));
    let mut remaining = available;
    let mut weight_left: f64 = order.iter().map(|&i| w(i)).sum();
    let mut given = 0.0;
    for (k, &i) in order.iter().enumerate() {
        let fair = remaining * w(i) / weight_left;
        if demand[i] <= fair {
            alloc[i] = demand[i];
            remaining -= demand[i];
            weight_left -= w(i);
            given += demand[i];
        } else {
            // Everyone from here on wants more than the fair level.
            let level = remaining / weight_left;
            for &j in &order[k..] {
                alloc[j] = level * w(j);
                given += alloc[j];
            }
            break;
        }
    }
    given
}

/// One node's CPU situation in a step.
#[derive(Debug, Clone, Copy)]
pub struct NodeCpu {
    /// Node capacity, milli.
    pub capacity: f64,
    /// What the system uses first, milli.
    pub system: f64,
    /// The BE group's cap (`None`: unlimited).
    pub be_cap: Option<f64>,
    /// The isolation in force.
    pub isolation: Isolation,
}

/// What a node's pods got.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Shared {
    /// CPU the system got.
    pub system: f64,
    /// Total to LS pods.
    pub ls: f64,
    /// Total to BE pods.
    pub be: f64,
}

/// Per-pod vectors of one class of pods (demand, weight, allocation).
#[derive(Debug, Clone, Default)]
pub struct Class {
    /// Demands, milli.
    pub demand: Vec<f64>,
    /// Weights (CPU requests).
    pub weight: Vec<f64>,
    /// Allocations, milli (written).
    pub alloc: Vec<f64>,
}

impl Class {
    /// Empties the class.
    pub fn clear(&mut self) {
        self.demand.clear();
        self.weight.clear();
        self.alloc.clear();
    }

    /// Adds a pod.
    pub fn push(&mut self, demand: f64, weight: f64) {
        self.demand.push(demand);
        self.weight.push(weight);
        self.alloc.push(0.0);
    }
}

/// Shares the node's CPU between `ls` and `be` (allocations written into
/// them). `scratch` holds working space for the shares mode.
pub fn share(node: &NodeCpu, ls: &mut Class, be: &mut Class, scratch: &mut Scratch) -> Shared {
    let system = node.system.min(node.capacity).max(0.0);
    let available = node.capacity - system;
    let cap = node.be_cap.unwrap_or(f64::INFINITY).max(0.0);
    match node.isolation {
        Isolation::Idle => {
            let ls_got =
                water_fill(&ls.demand, &ls.weight, available, &mut ls.alloc, &mut scratch.order);
            let be_room = (available - ls_got).min(cap);
            let be_got =
                water_fill(&be.demand, &be.weight, be_room, &mut be.alloc, &mut scratch.order);
            Shared { system, ls: ls_got, be: be_got }
        }
        Isolation::Shares => {
            let all = &mut scratch.all;
            all.clear();
            all.demand.extend_from_slice(&ls.demand);
            all.demand.extend(be.demand.iter().copied());
            all.weight.extend_from_slice(&ls.weight);
            all.weight.extend(be.weight.iter().copied());
            all.alloc.resize(all.demand.len(), 0.0);
            water_fill(&all.demand, &all.weight, available, &mut all.alloc, &mut scratch.order);
            let n = ls.demand.len();
            be.alloc.copy_from_slice(&all.alloc[n..]);
            let mut be_got: f64 = be.alloc.iter().sum();
            if be_got > cap {
                // The cap binds: BE gets the cap, LS shares the rest.
                be_got = water_fill(&be.demand, &be.weight, cap, &mut be.alloc, &mut scratch.order);
                let ls_got = water_fill(
                    &ls.demand,
                    &ls.weight,
                    available - be_got,
                    &mut ls.alloc,
                    &mut scratch.order,
                );
                return Shared { system, ls: ls_got, be: be_got };
            }
            ls.alloc.copy_from_slice(&all.alloc[..n]);
            Shared { system, ls: ls.alloc.iter().sum(), be: be_got }
        }
    }
}

/// Working space of [`share`].
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    order: Vec<usize>,
    all: Class,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn class(pods: &[(f64, f64)]) -> Class {
        let mut c = Class::default();
        for &(d, w) in pods {
            c.push(d, w);
        }
        c
    }

    #[test]
    fn water_fill_cases() {
        // (demands+weights, available, expected allocations)
        type Case<'a> = (&'a [(f64, f64)], f64, &'a [f64]);
        let cases: &[Case] = &[
            (&[(100.0, 1.0), (200.0, 1.0)], 1000.0, &[100.0, 200.0]),
            (&[(1000.0, 1.0), (1000.0, 1.0)], 1000.0, &[500.0, 500.0]),
            (&[(100.0, 1.0), (1000.0, 1.0)], 600.0, &[100.0, 500.0]),
            (&[(1000.0, 1.0), (1000.0, 3.0)], 800.0, &[200.0, 600.0]),
            (&[(1000.0, 1.0)], 0.0, &[0.0]),
        ];
        for (pods, available, want) in cases {
            let mut c = class(pods);
            water_fill(&c.demand, &c.weight, *available, &mut c.alloc, &mut Vec::new());
            for (got, want) in c.alloc.iter().zip(want.iter()) {
                assert!((got - want).abs() < 1e-6, "{pods:?} {available}: {:?}", c.alloc);
            }
        }
    }

    #[test]
    fn idle_serves_ls_first_and_caps_be() {
        let node = NodeCpu {
            capacity: 4000.0,
            system: 500.0,
            be_cap: Some(1000.0),
            isolation: Isolation::Idle,
        };
        let mut ls = class(&[(2000.0, 2000.0)]);
        let mut be = class(&[(3000.0, 3000.0)]);
        let s = share(&node, &mut ls, &mut be, &mut Scratch::default());
        assert_eq!((s.system, s.ls, s.be), (500.0, 2000.0, 1000.0));
        // Without the cap BE gets all that is left.
        let node = NodeCpu { be_cap: None, ..node };
        let s = share(&node, &mut ls, &mut be, &mut Scratch::default());
        assert_eq!(s.be, 1500.0);
    }

    #[test]
    fn shares_split_by_request() {
        let node =
            NodeCpu { capacity: 4000.0, system: 0.0, be_cap: None, isolation: Isolation::Shares };
        let mut ls = class(&[(4000.0, 1000.0)]);
        let mut be = class(&[(4000.0, 3000.0)]);
        let s = share(&node, &mut ls, &mut be, &mut Scratch::default());
        assert_eq!((s.ls, s.be), (1000.0, 3000.0));
    }

    proptest! {
        #[test]
        fn conservation(
            pods in proptest::collection::vec((0.0f64..8000.0, 1.0f64..8000.0, any::<bool>()), 0..20),
            capacity in 1000.0f64..64000.0,
            system in 0.0f64..2000.0,
            cap in proptest::option::of(0.0f64..64000.0),
            idle in any::<bool>(),
        ) {
            let isolation = if idle { Isolation::Idle } else { Isolation::Shares };
            let node = NodeCpu { capacity, system, be_cap: cap, isolation };
            let mut ls = Class::default();
            let mut be = Class::default();
            for (d, w, is_ls) in pods {
                if is_ls { ls.push(d, w) } else { be.push(d, w) }
            }
            let s = share(&node, &mut ls, &mut be, &mut Scratch::default());
            let eps = 1e-6 * capacity.max(1.0);
            // Nobody gets more than it wants or less than nothing.
            for c in [&ls, &be] {
                for (a, d) in c.alloc.iter().zip(&c.demand) {
                    prop_assert!(*a >= -eps && *a <= d + eps);
                }
            }
            // The node is not over-committed, the cap holds.
            prop_assert!(s.system + s.ls + s.be <= capacity + eps);
            if let Some(cap) = cap { prop_assert!(s.be <= cap + eps); }
            // Work-conserving: if someone is short, the CPU (or the cap) is used up.
            let want: f64 = ls.demand.iter().chain(&be.demand).sum();
            if s.ls + s.be + eps < want {
                let be_short = be.alloc.iter().zip(&be.demand).any(|(a, d)| a + eps < *d);
                let ls_short = ls.alloc.iter().zip(&ls.demand).any(|(a, d)| a + eps < *d);
                let full = s.system + s.ls + s.be >= capacity - eps;
                let capped = cap.is_some_and(|c| s.be >= c - eps);
                prop_assert!(full || (be_short && !ls_short && capped));
            }
            // With idle isolation LS is short only when LS alone exceeds the node.
            if idle {
                let ls_want: f64 = ls.demand.iter().sum();
                if s.ls + eps < ls_want { prop_assert!(ls_want > capacity - s.system - eps); }
            }
        }
    }
}
