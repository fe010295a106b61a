//! The runtime computation of spec §7.4: how a parent's runtime (its
//! share of the cluster) is divided among its children, one resource
//! dimension at a time, with exact integer arithmetic.
//!
//! Each child first gets what it is guaranteed (its min, or its limited
//! request if that is smaller and the child lends); what is left goes to
//! the children still asking for more, in proportion to their shared
//! weights, by Hamilton's largest-remainder method (ties by quota name, so
//! the result is deterministic). A child never gets more than it asks for;
//! what it cannot take goes round again. When the parent cannot cover the
//! children's mins, the mins are scaled down first ([`scale_mins`]).
//!
//! Amounts are quantities (`i64`); sums and products are taken in `i128`:
//! `weight × total` of two `i64`s never overflows.

use kolo_core::resources::{ResourceName, ResourceSet, ResourceVector};

/// One child of a parent, in one resource dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share<'a> {
    /// The quota's name (the Hamilton tie-break).
    pub name: &'a str,
    /// `min(Request, Max)`: what it asks for.
    pub request: i128,
    /// Its (possibly scaled) min.
    pub min: i128,
    /// Its guaranteed amount (0 unless guarantees are tracked).
    pub guaranteed: i128,
    /// Its shared weight.
    pub weight: i128,
    /// Whether it lends its unused min (`allow-lent-resource`).
    pub lend: bool,
}

/// §7.4 `redistribution`: each child's runtime out of `total`.
///
/// A child asking for more than its guarantee `m = max(min, guaranteed)`
/// starts at `m` and takes part in the weighted sharing of what is left;
/// the others get their request (or `m` when they do not lend). When the
/// guarantees exceed `total`, nothing is shared and each keeps `m`.
/// The children's amounts are quantities: beyond the `i64` range they are
/// clamped to it.
pub fn redistribute(total: i128, children: &[Share<'_>]) -> Vec<i128> {
    let asks: Vec<Ask> = children
        .iter()
        .map(|c| Ask {
            request: saturate(c.request),
            guarantee: saturate(c.min.max(c.guaranteed)),
            weight: saturate(c.weight),
            lend: c.lend,
        })
        .collect();
    let mut work = Work::default();
    redistribute_asks(total, &asks, |i| children[i].name, &mut work);
    work.runtime
}

/// One child in one dimension, as the redistribution reads it: amounts
/// of quantities, so `i64` (sums and products are taken in `i128`). Half
/// the size of `i128` fields, so a level of a thousand children stays in
/// the L1 cache through the passes over it.
#[derive(Debug, Clone, Copy, Default)]
struct Ask {
    /// `min(Request, Max)`.
    request: i64,
    /// `max(min, guaranteed)`.
    guarantee: i64,
    /// The shared weight.
    weight: i64,
    /// `allow-lent-resource`.
    lend: bool,
}

/// The redistribution's working lists, kept between levels so that a
/// level of a thousand children allocates nothing once they have grown.
#[derive(Debug, Clone, Default)]
struct Work {
    /// The result, one per child.
    runtime: Vec<i128>,
    /// The children taking part in this round of sharing.
    nodes: Vec<usize>,
    /// Those still short after it.
    next: Vec<usize>,
    /// Hamilton's (remainder, position) list.
    remainders: Vec<(i128, usize)>,
}

/// [`redistribute`] over `asks` (names through `name(i)`), leaving the
/// runtimes in `work.runtime`.
fn redistribute_asks<'n>(
    total: i128,
    asks: &[Ask],
    name: impl Fn(usize) -> &'n str,
    work: &mut Work,
) {
    work.runtime.clear();
    work.nodes.clear();
    let mut left = total;
    let mut weight = 0i128;
    for (i, a) in asks.iter().enumerate() {
        let runtime = i128::from(if a.request > a.guarantee {
            work.nodes.push(i);
            weight += i128::from(a.weight);
            a.guarantee
        } else if a.lend {
            a.request
        } else {
            a.guarantee
        });
        work.runtime.push(runtime);
        left -= runtime;
    }
    if left > 0 {
        iterate(left, weight, asks, name, work);
    }
}

/// §7.4 `iterate`: shares `total` among `work.nodes` by weight; whatever a
/// node gets beyond its request is taken back and shared again among the
/// nodes still short, until nothing is left or no one is short.
fn iterate<'n>(
    mut total: i128,
    mut weight: i128,
    asks: &[Ask],
    name: impl Fn(usize) -> &'n str,
    work: &mut Work,
) {
    let Work { runtime, nodes, next, remainders } = work;
    while weight > 0 && total > 0 && !nodes.is_empty() {
        apportion(
            total,
            weight,
            nodes.len(),
            |k| (i128::from(asks[nodes[k]].weight), name(nodes[k])),
            |k, delta| runtime[nodes[k]] += delta,
            remainders,
        );
        let (mut spare, mut next_weight) = (0i128, 0i128);
        next.clear();
        for &i in nodes.iter() {
            let request = i128::from(asks[i].request);
            if runtime[i] < request {
                next.push(i);
                next_weight += i128::from(asks[i].weight);
            } else {
                spare += runtime[i] - request;
                runtime[i] = request;
            }
        }
        if spare <= 0 || next.is_empty() {
            return;
        }
        std::mem::swap(nodes, next);
        (total, weight) = (spare, next_weight);
    }
}

/// Hamilton's largest-remainder apportionment of `total` among `nodes`
/// (weight, name) whose weights sum to `weight`: each node with a positive
/// weight gets `floor(w·total / weight)`, and the units left over go one
/// each to the nodes with the largest remainders `(w·total) mod weight`,
/// ties to the smaller name. Nodes with weight ≤ 0 get 0.
pub fn hamilton(total: i128, weight: i128, nodes: &[(i128, &str)]) -> Vec<i128> {
    let mut out = vec![0i128; nodes.len()];
    apportion(total, weight, nodes.len(), |k| nodes[k], |k, d| out[k] += d, &mut Vec::new());
    out
}

/// [`hamilton`] over `n` nodes read through `node(k)` (weight, name),
/// handing each its share through `give(k, share)` (only nonzero shares):
/// the redistribution loop uses it in place, without building lists
/// (`remainders` is a buffer it refills).
fn apportion<'n>(
    total: i128,
    weight: i128,
    n: usize,
    node: impl Fn(usize) -> (i128, &'n str),
    mut give: impl FnMut(usize, i128),
    remainders: &mut Vec<(i128, usize)>,
) {
    if weight <= 0 || total <= 0 {
        return;
    }
    // Dividing every weight and their sum by a common factor changes no
    // quotient and scales every remainder alike (so their order stands),
    // and usually brings the products into i64, whose division is many
    // times cheaper than i128's.
    let g = common_factor(weight, total, (0..n).map(|k| node(k).0));
    let weight = if g == 1 { weight } else { div_rem(weight, g).0 };
    // Siblings often have equal weights (the default weight is the max,
    // and quotas are stamped from templates): a weight equal to the
    // previous one reuses its quotient and remainder, saving the divisions.
    let mut last = (0i128, 0i128, 0i128);
    let mut divide = |w: i128| {
        if w != last.0 {
            let reduced = if g == 1 { w } else { div_rem(w, g).0 };
            let (share, rem) = div_rem(reduced * total, weight);
            last = (w, share, rem);
        }
        (last.1, last.2)
    };
    // Only nonzero remainders are listed: when the weights add up to
    // `weight`, the remainders add up to `residual × weight`, so more than
    // `residual` of them are nonzero and a zero one is never picked.
    remainders.clear();
    let (mut given, mut positive) = (0i128, 0usize);
    for k in 0..n {
        let (w, _) = node(k);
        if w > 0 {
            let (share, rem) = divide(w);
            if share != 0 {
                give(k, share);
            }
            given += share;
            positive += 1;
            if rem != 0 {
                remainders.push((rem, k));
            }
        }
    }
    let residual = usize::try_from(total - given).unwrap_or(0).min(positive);
    if residual > remainders.len() {
        // The weights do not add up to `weight` (a caller's inconsistent
        // sum): the zero remainders take part too, as listed in order.
        remainders.clear();
        for k in 0..n {
            let (w, _) = node(k);
            if w > 0 {
                remainders.push((divide(w).1, k));
            }
        }
    }
    if residual > 0 {
        let order = |a: &(i128, usize), b: &(i128, usize)| {
            b.0.cmp(&a.0).then_with(|| node(a.1).1.cmp(node(b.1).1))
        };
        // Only the first `residual` need ordering among themselves: a
        // partial selection keeps large levels cheap.
        if residual < remainders.len() {
            remainders.select_nth_unstable_by(residual - 1, order);
        }
        for &(_, k) in &remainders[..residual] {
            give(k, 1);
        }
    }
}

/// Floor division and remainder of non-negative numbers, in i64 when both
/// fit.
fn div_rem(n: i128, d: i128) -> (i128, i128) {
    match (i64::try_from(n), i64::try_from(d)) {
        (Ok(n), Ok(d)) => (i128::from(n / d), i128::from(n % d)),
        _ => (n / d, n % d),
    }
}

/// The greatest common divisor of `weight` and the positive weights (1
/// when one of them does not fit a u64, or when `weight·total` fits an
/// i64: the weights are not negative, so every product `w·total` does
/// too and there is nothing to gain). The factor only speeds the
/// division up: any common divisor gives the same shares.
fn common_factor(weight: i128, total: i128, weights: impl Iterator<Item = i128>) -> i128 {
    if weight.checked_mul(total).is_some_and(|p| p <= i128::from(i64::MAX)) {
        return 1;
    }
    let mut g = match u64::try_from(weight) {
        Ok(w) => w,
        Err(_) => return 1,
    };
    let mut previous = 0;
    for w in weights {
        // A repeated weight cannot lower the factor.
        if w > 0 && w != previous {
            previous = w;
            match u64::try_from(w) {
                Ok(w) => g = binary_gcd(g, w),
                Err(_) => return 1,
            }
            if g == 1 {
                break;
            }
        }
    }
    i128::from(g.max(1))
}

/// Stein's binary GCD (no division).
fn binary_gcd(mut a: u64, mut b: u64) -> u64 {
    if a == 0 || b == 0 {
        return a | b;
    }
    let shift = (a | b).trailing_zeros();
    a >>= a.trailing_zeros();
    loop {
        b >>= b.trailing_zeros();
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        b -= a;
        if b == 0 {
            return a << shift;
        }
    }
}

/// §7.4 min scaling in one dimension: when `total` cannot cover the sum of
/// the children's mins, each scalable child's min becomes
/// `floor((total − Σ non-scalable mins) × min / Σ scalable mins)` (0 when
/// the non-scalable mins take everything); otherwise the mins stand.
pub fn scale_mins(total: i128, mins: &[i128], scalable: &[bool]) -> Vec<i128> {
    let sum: i128 = mins.iter().sum();
    if total >= sum {
        return mins.to_vec();
    }
    let fixed: i128 = mins.iter().zip(scalable).filter(|(_, s)| !**s).map(|(m, _)| m).sum();
    let scalable_sum = sum - fixed;
    let room = total - fixed;
    mins.iter()
        .zip(scalable)
        .map(|(&m, &s)| match s {
            false => m,
            true if room <= 0 || scalable_sum <= 0 => 0,
            true => room * m / scalable_sum,
        })
        .collect()
}

/// One child of a parent, over all dimensions: the inputs of
/// [`level_runtimes`].
#[derive(Debug, Clone, Copy)]
pub struct LevelChild<'a> {
    /// The quota's name.
    pub name: &'a str,
    /// `min(Request, Max)` over the keys of Request.
    pub request: &'a ResourceVector,
    /// Its min (raw; scaled here when asked).
    pub min: &'a ResourceVector,
    /// Its shared weight.
    pub weight: &'a ResourceVector,
    /// The resources its max names: dimensions computed even if the parent
    /// has none of them (the runtime is then 0 or its min).
    pub max_keys: ResourceSet,
    /// `allow-lent-resource`.
    pub lend: bool,
}

/// The runtimes of a parent's children out of the parent's `total`, one
/// [`redistribute`] per dimension (the total's resources and the
/// children's max resources; a missing amount counts 0), with the mins
/// scaled first when `scale` is set. Each result holds every computed
/// dimension; callers mask it to the child's max.
pub fn level_runtimes(
    total: &ResourceVector,
    children: &[LevelChild<'_>],
    scale: bool,
) -> Vec<ResourceVector> {
    let mut scratch = LevelScratch::default();
    level_runtimes_into(total, children, scale, &mut scratch);
    let mut out = vec![ResourceVector::EMPTY; children.len()];
    for (dim, column) in scratch.columns() {
        for (slot, &r) in out.iter_mut().zip(column) {
            slot.set(dim, r);
        }
    }
    out
}

/// The buffers of [`level_runtimes_into`] and its result, one column per
/// dimension. Kept by the tree and refilled at every level, so that
/// recomputing a level of a thousand quotas allocates nothing and reads
/// each child's vectors once.
#[derive(Debug, Clone, Default)]
pub struct LevelScratch {
    /// The computed dimensions.
    set: ResourceSet,
    /// The same, in order (listed once: iterating a resource set is not
    /// free).
    dims: Vec<ResourceName>,
    /// The number of children.
    n: usize,
    /// The inputs, dimension-major (`dims.len()` runs of `n`).
    asks: Vec<Ask>,
    work: Work,
    /// The runtimes, dimension-major like `asks`.
    out: Vec<i64>,
}

impl LevelScratch {
    /// The dimensions the last level computed.
    pub fn dims(&self) -> ResourceSet {
        self.set
    }

    /// The last level's runtimes: per dimension, one per child in order.
    pub fn columns(&self) -> impl Iterator<Item = (ResourceName, &[i64])> {
        self.dims.iter().copied().zip(self.out.chunks_exact(self.n.max(1)))
    }
}

/// [`level_runtimes`] into `scratch` (read it with
/// [`LevelScratch::columns`]): no vector is built per child.
pub fn level_runtimes_into(
    total: &ResourceVector,
    children: &[LevelChild<'_>],
    scale: bool,
    scratch: &mut LevelScratch,
) {
    let mut dims = total.names();
    for c in children {
        dims = dims | c.max_keys;
    }
    let n = children.len();
    scratch.set = dims;
    scratch.dims.clear();
    scratch.dims.extend(dims.iter());
    scratch.n = n;
    scratch.asks.clear();
    scratch.out.clear();
    if n == 0 {
        return;
    }
    for &dim in &scratch.dims {
        scratch.asks.extend(children.iter().map(|c| Ask {
            request: c.request.value(dim),
            guarantee: c.min.value(dim),
            weight: c.weight.value(dim),
            lend: c.lend,
        }));
    }
    for (&dim, asks) in scratch.dims.iter().zip(scratch.asks.chunks_exact_mut(n)) {
        let t = i128::from(total.value(dim));
        if scale {
            scale_guarantees(t, asks);
        }
        redistribute_asks(t, asks, |i| children[i].name, &mut scratch.work);
        scratch.out.extend(scratch.work.runtime.iter().map(|&r| saturate(r)));
    }
}

/// [`scale_mins`] with every child scalable, in place (the level's
/// guarantees are its children's mins).
fn scale_guarantees(total: i128, asks: &mut [Ask]) {
    let sum: i128 = asks.iter().map(|a| i128::from(a.guarantee)).sum();
    if total >= sum {
        return;
    }
    for a in asks {
        // Scaling down keeps it within its i64 min.
        a.guarantee = if total <= 0 || sum <= 0 {
            0
        } else {
            saturate(total * i128::from(a.guarantee) / sum)
        };
    }
}

/// An `i128` amount back in `i64` range.
fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kolo_core::resources::ResourceName::{Cpu, Memory};

    /// A child: (name, request, min, weight, lend).
    fn share(name: &str, request: i128, min: i128, weight: i128, lend: bool) -> Share<'_> {
        Share { name, request, min, guaranteed: 0, weight, lend }
    }

    #[test]
    fn redistribution_hand_checked() {
        // (case, total, children, runtimes)
        let cases: Vec<(&str, i128, Vec<Share<'_>>, Vec<i128>)> = vec![
            (
                // 100 by weights 1:3, both asking 100: 25 and 75 exactly.
                "weighted sharing",
                100,
                vec![share("a", 100, 0, 1, true), share("b", 100, 0, 3, true)],
                vec![25, 75],
            ),
            (
                // 50/50 first; a only wants 10, its 40 go round to b: 90.
                "what one cannot take goes round again",
                100,
                vec![share("a", 10, 0, 1, true), share("b", 100, 0, 1, true)],
                vec![10, 90],
            ),
            (
                // a does not lend: it keeps its min 30 though it asks for
                // nothing; b gets the other 70.
                "a non-lending quota keeps its min",
                100,
                vec![share("a", 0, 30, 1, false), share("b", 100, 0, 1, true)],
                vec![30, 70],
            ),
            (
                "a lending quota lends its min",
                100,
                vec![share("a", 0, 30, 1, true), share("b", 100, 0, 1, true)],
                vec![0, 100],
            ),
            (
                // Mins 100 × 3 over a total of 200, unscaled: left < 0,
                // nothing is shared, each keeps its min (the reference's
                // WithScaledMinQuota3).
                "mins above the total: each keeps its min",
                200,
                vec![
                    share("a", 150, 100, 1, true),
                    share("b", 150, 100, 1, true),
                    share("c", 150, 100, 1, true),
                ],
                vec![100, 100, 100],
            ),
            (
                // b takes its 20; the 80 left cannot go to a (weight 0):
                // it stays undistributed.
                "weight 0 gets nothing beyond its min",
                100,
                vec![share("a", 50, 0, 0, true), share("b", 20, 0, 1, true)],
                vec![0, 20],
            ),
            (
                // Min 40 first, then 60 shared 30/30 among both (a asks
                // for 100 > 40): a 70, b 30.
                "min first, then the weighted share",
                100,
                vec![share("a", 100, 40, 1, true), share("b", 100, 0, 1, true)],
                vec![70, 30],
            ),
            ("no children", 100, vec![], vec![]),
            ("nothing to share", 0, vec![share("a", 10, 0, 1, true)], vec![0]),
        ];
        for (name, total, children, want) in cases {
            assert_eq!(redistribute(total, &children), want, "{name}");
        }
    }

    #[test]
    fn hamilton_gives_residual_units_by_remainder_then_name() {
        // 1 unit over three equal weights: the smallest name wins.
        assert_eq!(hamilton(1, 3, &[(1, "c"), (1, "a"), (1, "b")]), vec![0, 1, 0]);
        // 2 over weights 1 and 2 (W 3): 2/3 → 0 rem 2, 4/3 → 1 rem 1; the
        // residual unit goes to the larger remainder (the first).
        assert_eq!(hamilton(2, 3, &[(1, "x"), (2, "y")]), vec![1, 1]);
        // Weight 0 gets nothing, even a residual unit.
        assert_eq!(hamilton(3, 2, &[(0, "a"), (1, "b"), (1, "c")]), vec![0, 2, 1]);
        // Products past i64: 10^18 × 10^18 stays exact in i128.
        let big = 1_000_000_000_000_000_000i128;
        assert_eq!(hamilton(big, 2 * big, &[(big, "a"), (big, "b")]), vec![big / 2, big / 2]);
    }

    #[test]
    fn min_scaling_hand_checked() {
        // Fits: unchanged.
        assert_eq!(scale_mins(300, &[100, 100, 100], &[true; 3]), vec![100, 100, 100]);
        // 200 for 300 of mins: 200·100/300 = 66.6 → 66 each.
        assert_eq!(scale_mins(200, &[100, 100, 100], &[true; 3]), vec![66, 66, 66]);
        // A non-scalable 20 first: 80 left for 120 → 60·80/120 = 40.
        assert_eq!(scale_mins(100, &[60, 60, 20], &[true, true, false]), vec![40, 40, 20]);
        // The non-scalable min takes everything: the others get 0.
        assert_eq!(scale_mins(10, &[60, 20], &[true, false]), vec![0, 20]);
    }

    /// The spec's worked example: three children with min 100 cores, each
    /// asking for 150, under 200 cores. Mins scale to 66666m; the 2m left
    /// go one each to the first two names.
    #[test]
    fn spec_example_three_children_under_200_cores() {
        let total = ResourceVector::EMPTY.with(Cpu, 200_000);
        let min = ResourceVector::EMPTY.with(Cpu, 100_000);
        let request = ResourceVector::EMPTY.with(Cpu, 150_000);
        let weight = ResourceVector::EMPTY.with(Cpu, 150_000);
        let keys = ResourceSet::single(Cpu);
        let child = |name| LevelChild {
            name,
            request: &request,
            min: &min,
            weight: &weight,
            max_keys: keys,
            lend: true,
        };
        let children = [child("q-a"), child("q-b"), child("q-c")];
        let got: Vec<i64> =
            level_runtimes(&total, &children, true).iter().map(|r| r.cpu()).collect();
        assert_eq!(got, vec![66_667, 66_667, 66_666]);
        // Without scaling each keeps its unscaled min (sum 300 > 200).
        let got: Vec<i64> =
            level_runtimes(&total, &children, false).iter().map(|r| r.cpu()).collect();
        assert_eq!(got, vec![100_000, 100_000, 100_000]);
    }

    #[test]
    fn dimensions_are_independent_and_include_the_childrens_max() {
        // Memory is shared 1:1, cpu 1:3; gpu is in a's max only and the
        // total has none: 0.
        let gpu = kolo_core::resources::ResourceName::parse("nvidia.com/gpu").unwrap();
        let total = ResourceVector::cpu_memory(4_000, 1_000);
        let req = ResourceVector::cpu_memory(4_000, 1_000).with(gpu, 2);
        let (wa, wb) = (ResourceVector::cpu_memory(1, 1), ResourceVector::cpu_memory(3, 1));
        let none = ResourceVector::EMPTY;
        let children = [
            LevelChild {
                name: "a",
                request: &req,
                min: &none,
                weight: &wa,
                max_keys: req.names(),
                lend: true,
            },
            LevelChild {
                name: "b",
                request: &req,
                min: &none,
                weight: &wb,
                max_keys: total.names(),
                lend: true,
            },
        ];
        let got = level_runtimes(&total, &children, true);
        assert_eq!(got[0], ResourceVector::cpu_memory(1_000, 500).with(gpu, 0));
        assert_eq!(got[1], ResourceVector::cpu_memory(3_000, 500).with(gpu, 0));
        assert_eq!(got[0].get(Memory), Some(500));
    }

    fn children_strategy()
    -> impl proptest::strategy::Strategy<Value = Vec<(i128, i128, i128, bool)>> {
        proptest::collection::vec((0i128..1_000, 0i128..400, 0i128..20, proptest::bool::ANY), 0..8)
    }

    const NAMES: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

    fn shares(raw: &[(i128, i128, i128, bool)]) -> Vec<Share<'static>> {
        raw.iter()
            .zip(NAMES)
            .map(|(&(request, min, weight, lend), name)| share(name, request, min, weight, lend))
            .collect()
    }

    /// The level computation done the plain way (one list of shares per
    /// dimension, [`scale_mins`] then [`redistribute`]): what the buffered
    /// [`level_runtimes_into`] must reproduce.
    fn plain_level(
        total: &ResourceVector,
        children: &[LevelChild<'_>],
        scale: bool,
    ) -> Vec<(ResourceName, Vec<i64>)> {
        let mut dims = total.names();
        for c in children {
            dims = dims | c.max_keys;
        }
        dims.iter()
            .map(|dim| {
                let t = i128::from(total.value(dim));
                let mins: Vec<i128> = children.iter().map(|c| c.min.value(dim).into()).collect();
                let mins =
                    if scale { scale_mins(t, &mins, &vec![true; children.len()]) } else { mins };
                let shares: Vec<Share<'_>> = children
                    .iter()
                    .zip(mins)
                    .map(|(c, min)| Share {
                        name: c.name,
                        request: c.request.value(dim).into(),
                        min,
                        guaranteed: 0,
                        weight: c.weight.value(dim).into(),
                        lend: c.lend,
                    })
                    .collect();
                (dim, redistribute(t, &shares).into_iter().map(saturate).collect())
            })
            .collect()
    }

    /// §7.4's redistribution written out naively (fresh lists every
    /// round, Hamilton by a full sort of the remainders): the reference
    /// for the in-place [`redistribute`].
    fn naive_redistribute(total: i128, children: &[Share<'_>]) -> Vec<i128> {
        let mut runtime: Vec<i128> = Vec::new();
        let (mut left, mut weight, mut nodes) = (total, 0i128, Vec::new());
        for (i, c) in children.iter().enumerate() {
            let m = c.min.max(c.guaranteed);
            let r = if c.request > m {
                nodes.push(i);
                weight += c.weight;
                m
            } else if c.lend {
                c.request
            } else {
                m
            };
            runtime.push(r);
            left -= r;
        }
        let mut total = left;
        while total > 0 && weight > 0 && !nodes.is_empty() {
            let mut rems: Vec<(i128, &str, usize)> = Vec::new();
            let mut given = 0;
            for &i in &nodes {
                let w = children[i].weight;
                if w > 0 {
                    runtime[i] += w * total / weight;
                    given += w * total / weight;
                    rems.push((w * total % weight, children[i].name, i));
                }
            }
            rems.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
            for &(_, _, i) in rems.iter().take(usize::try_from(total - given).unwrap_or(0)) {
                runtime[i] += 1;
            }
            let (mut spare, mut next) = (0, Vec::new());
            weight = 0;
            for &i in &nodes {
                if runtime[i] < children[i].request {
                    next.push(i);
                    weight += children[i].weight;
                } else {
                    spare += runtime[i] - children[i].request;
                    runtime[i] = children[i].request;
                }
            }
            if spare <= 0 || next.is_empty() {
                break;
            }
            (total, nodes) = (spare, next);
        }
        runtime
    }

    /// A level's child: (request cpu, request memory, min cpu, min memory,
    /// weight cpu, weight memory, lend, gpu in max).
    type RawChild = (i64, i64, i64, i64, i64, i64, bool, bool);

    fn level_strategy() -> impl proptest::strategy::Strategy<Value = Vec<RawChild>> {
        proptest::collection::vec(
            (
                0i64..1_000,
                0i64..(1 << 40),
                0i64..300,
                0i64..(1 << 38),
                0i64..20,
                0i64..(1 << 34),
                proptest::bool::ANY,
                proptest::bool::ANY,
            ),
            0..12,
        )
    }

    proptest::proptest! {
        /// No child gets more than it asks for, except a non-lending child
        /// kept at its min.
        #[test]
        fn runtime_never_exceeds_the_limited_request(raw in children_strategy(), total in 0i128..3_000) {
            let children = shares(&raw);
            let got = redistribute(total, &children);
            for (c, r) in children.iter().zip(&got) {
                proptest::prop_assert!(*r <= c.request || (!c.lend && *r == c.min), "{c:?} got {r}");
                proptest::prop_assert!(*r >= 0);
            }
        }

        /// When the mins fit, the runtimes never add up to more than the
        /// total; and when the total covers every request (and mins), each
        /// child with a weight gets exactly what it asks for.
        #[test]
        fn runtimes_fit_the_total_when_the_mins_do(raw in children_strategy(), total in 0i128..3_000) {
            let children = shares(&raw);
            let mins: i128 = children.iter().map(|c| c.min).sum();
            proptest::prop_assume!(mins <= total);
            let got = redistribute(total, &children);
            proptest::prop_assert!(got.iter().sum::<i128>() <= total);
            let asked: i128 = children.iter().map(|c| c.request.max(c.min)).sum();
            if asked <= total {
                for (c, r) in children.iter().zip(&got) {
                    // Without weight a child keeps its min; a non-lender at
                    // least its min; everyone else gets the request.
                    let keeps_min = (c.request > c.min && c.weight == 0)
                        || (c.request <= c.min && !c.lend);
                    let want = if keeps_min { c.min } else { c.request };
                    proptest::prop_assert_eq!(*r, want, "{:?}", c);
                }
            }
        }

        /// The result depends on the children, not their order: reversing
        /// them reverses the runtimes (ties go by name), and a second run
        /// gives the same.
        #[test]
        fn deterministic_and_order_independent(raw in children_strategy(), total in 0i128..3_000) {
            let children = shares(&raw);
            let got = redistribute(total, &children);
            proptest::prop_assert_eq!(&redistribute(total, &children), &got);
            let mut reversed = children.clone();
            reversed.reverse();
            let mut back = redistribute(total, &reversed);
            back.reverse();
            proptest::prop_assert_eq!(back, got);
        }

        /// Hamilton hands out exactly the total among positive weights.
        #[test]
        fn hamilton_is_exact(weights in proptest::collection::vec(0i128..50, 1..8), total in 0i128..10_000) {
            let nodes: Vec<(i128, &str)> = weights.iter().copied().zip(NAMES).collect();
            let sum: i128 = weights.iter().sum();
            let got = hamilton(total, sum, &nodes);
            if sum > 0 {
                proptest::prop_assert_eq!(got.iter().sum::<i128>(), total);
            }
            for ((w, _), g) in nodes.iter().zip(&got) {
                if sum > 0 && *w > 0 {
                    // Within one unit of the exact proportional share.
                    proptest::prop_assert!((g * sum - w * total).abs() < sum);
                } else {
                    proptest::prop_assert_eq!(*g, 0);
                }
            }
        }

        /// The in-place redistribution equals the naive one (ties and
        /// several rounds included: small weights, names out of order).
        #[test]
        fn redistribute_matches_the_naive_computation(raw in children_strategy(), total in 0i128..3_000) {
            let mut children = shares(&raw);
            children.reverse();
            proptest::prop_assert_eq!(redistribute(total, &children), naive_redistribute(total, &children));
        }

        /// The buffered level computation (one scratch reused across
        /// levels of different sizes and dimensions, mins scaled in place)
        /// equals the plain per-dimension one.
        #[test]
        fn buffered_level_matches_the_plain_computation(
            levels in proptest::collection::vec(
                (level_strategy(), 0i64..6_000, 0i64..(1 << 42), proptest::bool::ANY),
                1..4,
            ),
        ) {
            let gpu = ResourceName::parse("nvidia.com/gpu").unwrap();
            let names: Vec<String> = (0..12).map(|i| format!("q-{}", (i * 7) % 12)).collect();
            let mut scratch = LevelScratch::default();
            for (raw, cpu, memory, scale) in levels {
                let vectors: Vec<[ResourceVector; 3]> = raw
                    .iter()
                    .map(|&(rc, rm, mc, mm, wc, wm, _, _)| {
                        [
                            ResourceVector::cpu_memory(rc, rm),
                            ResourceVector::cpu_memory(mc, mm),
                            ResourceVector::cpu_memory(wc, wm),
                        ]
                    })
                    .collect();
                let children: Vec<LevelChild<'_>> = raw
                    .iter()
                    .zip(&vectors)
                    .zip(&names)
                    .map(|((&(.., lend, has_gpu), [request, min, weight]), name)| LevelChild {
                        name,
                        request,
                        min,
                        weight,
                        max_keys: if has_gpu { request.names() | ResourceSet::single(gpu) } else { request.names() },
                        lend,
                    })
                    .collect();
                let total = ResourceVector::cpu_memory(cpu, memory);
                level_runtimes_into(&total, &children, scale, &mut scratch);
                let got: Vec<(ResourceName, Vec<i64>)> = if children.is_empty() {
                    Vec::new()
                } else {
                    scratch.columns().map(|(d, c)| (d, c.to_vec())).collect()
                };
                let mut want = plain_level(&total, &children, scale);
                if children.is_empty() {
                    want.clear();
                }
                proptest::prop_assert_eq!(got, want);
            }
        }
    }
}
