//! BE CPU suppression (Koordinator spec §5.2, CPUSuppress): keeps BE pods
//! to the CPU that LS pods and the system leave under the threshold.
//!
//! Budget (milli-cores):
//!
//! * system = max(node usage − Σ pod usage, 0), then max(system, reserved);
//! * non-BE = Σ usage of pods that are neither kolo-BE nor kube BestEffort;
//! * suppress = capacity × `cpuSuppressThresholdPercent` (default 65) / 100
//!   − non-BE − system, at least capacity × `cpuSuppressMinPercent` / 100
//!   when that is set.
//!
//! Policy `cpuset` (default): the BE QoS dir, its BE pods' and their
//! containers' `cpuset.cpus` get ceil(suppress / 1000) CPUs (≥ 2, ≤ the BE
//! CPUs), grown by at most ceil(10% of the processors) per round, placed
//! as the reference does (whole cores first, round-robin over sockets),
//! never on LSE pods' CPUs and split between the LSR pods' CPUs and the
//! rest in proportion ([`super::cpu_pools`]). The CFS quota is recovered
//! to −1.
//!
//! **Hysteresis** (kolo; Koordinator issue #1103, the BE cpuset flapping
//! when LS usage hovers near a CPU boundary): the count only moves when the
//! budget has left the current count's interval by more than a dead band
//! H = max(3% of capacity, 100m): with c CPUs, shrink only when suppress ≤
//! (c − 1) × 1000 − H, grow only when suppress > c × 1000 + H. When it
//! moves, it moves to the reference's target. Noise smaller than H (±2% of
//! capacity usage noise included) then costs one write, not one per round.
//! The price: BE keeps up to H more (or gets up to H less) than the
//! budget's count until the budget moves further.
//!
//! Policy `cfsQuota`: the BE QoS dir's `cpu.cfs_quota_us` = suppress × 100
//! (per 100 ms period), at least 2000; skipped when it moves by less than
//! 1% of the node (capacity cores × 1000 µs) unless it is the floor, and
//! grown by at most capacity cores × 10000 µs per round. Cpusets are
//! recovered to all BE CPUs.
//!
//! When `enable` is not true: recover (quota −1, cpuset = all BE CPUs),
//! each only if the BE dir does not already hold it.

use std::collections::BTreeMap;

use kolo_api::crd::NodeSLOSpec;
use kolo_api::kube_qos::KubeQoSClass;
use kolo_core::cpuset::CpuSet;

use super::cpu_pools::{pools, usable_cpus};
use super::eviction_order::{enabled_thresholds, percent, percent_of};
use super::{Figures, NodeState, Plan, Strategy};
use crate::cgroup::resource::CFS_MAX_QUOTA_US;
use crate::cgroup::{CgroupDir, CgroupWrite, Resource, Value};

/// The strategy's name.
pub const NAME: &str = "cpuSuppress";
/// Default `cpuSuppressThresholdPercent`.
pub const DEFAULT_THRESHOLD_PERCENT: i64 = 65;
/// `cpuSuppressPolicy` value for the CFS quota policy (anything else is
/// `cpuset`).
pub const POLICY_CFS_QUOTA: &str = "cfsQuota";
/// Fewest CPUs the cpuset policy leaves BE pods.
pub const MIN_CPUS: usize = 2;
/// Smallest quota the cfsQuota policy writes, µs.
pub const MIN_QUOTA_US: i64 = 2_000;
/// Dead band of the cpuset hysteresis, percent of node capacity.
pub const DEAD_BAND_PERCENT: i64 = 3;
/// Smallest dead band, milli-cores.
pub const MIN_DEAD_BAND_MILLI: i64 = 100;

/// BE CPU suppression.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuSuppress;

/// The suppress budget and its terms, milli-cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// CPU left to BE pods (may be negative before the floors).
    pub suppress: i64,
    /// Usage of non-BE pods.
    pub non_be: i64,
    /// System usage (at least the reserved CPU).
    pub system: i64,
    /// The threshold it was computed with, percent.
    pub threshold: i64,
}

impl Budget {
    /// The budget as a plan's figures.
    pub fn figures(&self) -> Figures {
        Figures::BeBudget {
            budget_milli: self.suppress,
            non_be_milli: self.non_be,
            system_milli: self.system,
            threshold_percent: self.threshold,
        }
    }
}

/// The budget for `node` with `threshold` and optional `min` percent.
pub fn budget(node: &NodeState, threshold: i64, min: Option<i64>) -> Budget {
    let mut pods_used: i64 = 0;
    let mut non_be: i64 = 0;
    for p in &node.pods {
        let used = p.usage.map_or(0, |u| u.cpu.max(0));
        pods_used = pods_used.saturating_add(used);
        if !p.is_be() && p.pod.kube_qos != KubeQoSClass::BestEffort {
            non_be = non_be.saturating_add(used);
        }
    }
    let system = node.usage.cpu.saturating_sub(pods_used).max(0).max(node.reserved.cpu);
    let capacity = node.capacity.cpu.max(0);
    let mut suppress =
        percent_of(capacity, percent(threshold)).saturating_sub(non_be).saturating_sub(system);
    if let Some(min) = min {
        suppress = suppress.max(percent_of(capacity, percent(min)));
    }
    Budget { suppress, non_be, system, threshold: percent(threshold) }
}

/// The dead band of the cpuset hysteresis for a node of `capacity` milli.
pub fn dead_band(capacity: i64) -> i64 {
    percent_of(capacity.max(0), DEAD_BAND_PERCENT).max(MIN_DEAD_BAND_MILLI)
}

fn ceil_cpus(milli: i64) -> usize {
    if milli <= 0 {
        return 0;
    }
    usize::try_from(milli.saturating_add(999) / 1000).unwrap_or(usize::MAX)
}

fn milli(cpus: usize) -> i64 {
    i64::try_from(cpus).unwrap_or(i64::MAX).saturating_mul(1000)
}

/// The BE CPU count for `suppress` milli.
///
/// `current` is the BE dir's current count (`None`: unknown, no
/// hysteresis, no step limit), `available` the BE CPUs, `processors` all
/// logical CPUs (for the +10% step limit), `band` the dead band.
pub fn target_cpus(
    suppress: i64,
    current: Option<usize>,
    available: usize,
    processors: usize,
    band: i64,
) -> usize {
    let clamp = |n: usize| n.max(MIN_CPUS).min(available);
    let target = clamp(ceil_cpus(suppress));
    let Some(cur) = current.filter(|c| *c <= available) else { return target };
    let shrink = suppress <= milli(cur.saturating_sub(1)).saturating_sub(band);
    let grow = suppress > milli(cur).saturating_add(band);
    if shrink && target < cur {
        target
    } else if grow && target > cur {
        let max_inc = processors.div_ceil(10).max(1);
        target.min(cur.saturating_add(max_inc))
    } else if cur < clamp(cur) {
        // Below the floor (e.g. 1 CPU set by someone else): raise it.
        clamp(cur)
    } else {
        cur
    }
}

/// Picks `n` CPUs of `cpus` the way the reference does: bucket by socket
/// (buckets by size descending, then first CPU), each sorted by (core,
/// CPU); take whole cores (sibling pairs) round-robin over the buckets
/// while two or more CPUs are needed, then single CPUs round-robin.
/// Without topology for every CPU, the lowest `n` ids.
pub fn place(n: usize, cpus: &CpuSet, cores: &BTreeMap<u32, (u32, u32)>) -> CpuSet {
    if n >= cpus.len() {
        return cpus.clone();
    }
    if cpus.iter().any(|c| !cores.contains_key(&c)) {
        return cpus.iter().take(n).collect();
    }
    let mut by_socket: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new();
    for cpu in cpus {
        if let Some(&(socket, core)) = cores.get(&cpu) {
            by_socket.entry(socket).or_default().push((core, cpu));
        }
    }
    let mut buckets: Vec<Vec<(u32, u32)>> = by_socket.into_values().collect();
    for b in &mut buckets {
        b.sort_unstable();
    }
    buckets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.first().cmp(&b.first())));
    let mut used: Vec<Vec<bool>> = buckets.iter().map(|b| vec![false; b.len()]).collect();
    let mut picked = CpuSet::default();
    let mut need = n;
    let count = buckets.len();
    let mut idx = 0;
    let mut idle = 0;
    while need > 1 && count > 0 && idle < count {
        let (bucket, taken) = (&buckets[idx], &mut used[idx]);
        let pair = (0..bucket.len().saturating_sub(1))
            .find(|&j| !taken[j] && !taken[j + 1] && bucket[j].0 == bucket[j + 1].0);
        if let Some(j) = pair {
            taken[j] = true;
            taken[j + 1] = true;
            picked.insert(bucket[j].1);
            picked.insert(bucket[j + 1].1);
            need -= 2;
            idle = 0;
        } else {
            idle += 1;
        }
        idx = (idx + 1) % count;
    }
    idle = 0;
    while need > 0 && count > 0 && idle < count {
        if let Some(j) = used[idx].iter().position(|t| !t) {
            used[idx][j] = true;
            picked.insert(buckets[idx][j].1);
            need -= 1;
            idle = 0;
        } else {
            idle += 1;
        }
        idx = (idx + 1) % count;
    }
    picked
}

/// The quota to write for `suppress` milli, or `None` to leave it.
///
/// `current` is the BE dir's quota (`-1`/≤ 0: unlimited; `None`: unknown,
/// always write), `capacity` the node's milli-cores. The quota is at most
/// [`CFS_MAX_QUOTA_US`], the kernel's bound.
pub fn target_quota(suppress: i64, current: Option<i64>, capacity: i64) -> Option<i64> {
    let mut quota = suppress.saturating_mul(100).clamp(MIN_QUOTA_US, CFS_MAX_QUOTA_US);
    let Some(cur) = current else { return Some(quota) };
    let cores = capacity.max(0) / 1000;
    let min_delta = cores.saturating_mul(1000);
    let max_increase = cores.saturating_mul(10_000);
    if quota == cur
        || (quota.saturating_sub(cur).saturating_abs() < min_delta && quota != MIN_QUOTA_US)
    {
        return None;
    }
    if cur > 0 && quota.saturating_sub(cur) > max_increase {
        quota = cur.saturating_add(max_increase);
    }
    Some(quota)
}

/// The dirs a BE cpuset goes to: the BE dir, then its BE pods and their
/// containers.
fn cpuset_dirs(node: &NodeState) -> Vec<&CgroupDir> {
    let mut dirs = vec![&node.be_dir];
    for p in node
        .pods
        .iter()
        .filter(|p| p.is_be() && !p.pod.terminated && p.dir.starts_with(&node.be_dir))
    {
        dirs.push(&p.dir);
        dirs.extend(p.containers.iter().filter_map(|c| c.dir.as_ref()));
    }
    dirs
}

fn write_cpuset(node: &NodeState, set: &CpuSet, plan: &mut Plan, reason: &str, figures: Figures) {
    for dir in cpuset_dirs(node) {
        let write = CgroupWrite {
            dir: dir.clone(),
            resource: Resource::CpusetCpus,
            value: Value::Cpuset(set.clone()),
        };
        plan.write(NAME, write, reason).figures = figures;
    }
}

/// Writes the full BE cpuset (all BE CPUs but LSE pods') unless the BE
/// dir already has it.
fn recover_cpuset(node: &NodeState, plan: &mut Plan, why: &str) {
    let usable = usable_cpus(node);
    if usable.is_empty() || node.be.cpuset.as_ref() == Some(&usable) {
        return;
    }
    let reason = format!("{why}: recover cpuset to all BE CPUs {usable}");
    write_cpuset(node, &usable, plan, &reason, Figures::None);
}

/// Writes quota −1 unless the BE dir is already unlimited.
fn recover_quota(node: &NodeState, plan: &mut Plan, why: &str) {
    if node.be.cfs_quota_us == Some(-1) {
        return;
    }
    plan.write(
        NAME,
        CgroupWrite::int(&node.be_dir, Resource::CpuCfsQuota, -1),
        format!("{why}: recover cfs quota to -1"),
    );
}

fn by_cpuset(node: &NodeState, b: Budget, plan: &mut Plan) {
    // Most rounds keep the count (hysteresis): the pools' split is only
    // built when the cpuset moves.
    let usable = usable_cpus(node);
    let available = usable.len();
    if available == 0 {
        return;
    }
    let processors =
        if node.cpu_cores.is_empty() { ceil_cpus(node.capacity.cpu) } else { node.cpu_cores.len() };
    let current = node.be.cpuset.as_ref().filter(|c| c.is_subset(&usable));
    let n = target_cpus(
        b.suppress,
        current.map(CpuSet::len),
        available,
        processors,
        dead_band(node.capacity.cpu),
    );
    if current.is_none_or(|c| c.len() != n) {
        let set = pools(node).place(n, &node.cpu_cores);
        let reason = format!(
            "BE budget {}m (non-BE {}m, system {}m) → {n} CPUs {set} (was {})",
            b.suppress,
            b.non_be,
            b.system,
            node.be.cpuset.as_ref().map_or_else(|| "unknown".to_string(), ToString::to_string),
        );
        write_cpuset(node, &set, plan, &reason, b.figures());
    }
    recover_quota(node, plan, "policy cpuset");
}

fn by_quota(node: &NodeState, b: Budget, plan: &mut Plan) {
    if let Some(quota) = target_quota(b.suppress, node.be.cfs_quota_us, node.capacity.cpu) {
        plan.write(
            NAME,
            CgroupWrite::int(&node.be_dir, Resource::CpuCfsQuota, quota),
            format!(
                "BE budget {}m (non-BE {}m, system {}m) → cfs quota {quota} (was {})",
                b.suppress,
                b.non_be,
                b.system,
                node.be.cfs_quota_us.map_or_else(|| "unknown".to_string(), |q| q.to_string()),
            ),
        )
        .figures = b.figures();
    }
    recover_cpuset(node, plan, "policy cfsQuota");
}

/// The suppression threshold, percent of the node's CPU: the NodeSLO's
/// `cpuSuppressThresholdPercent` or [`DEFAULT_THRESHOLD_PERCENT`] (also
/// what the agent's fast path calls hot, whether suppression is on or not).
pub fn threshold_percent(slo: &NodeSLOSpec) -> i64 {
    let threshold = slo.resource_used_threshold_with_be.as_ref();
    threshold.and_then(|t| t.cpu_suppress_threshold_percent).unwrap_or(DEFAULT_THRESHOLD_PERCENT)
}

impl Strategy for CpuSuppress {
    fn name(&self) -> &'static str {
        NAME
    }

    fn plan(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan) {
        let Some(t) = enabled_thresholds(slo) else {
            recover_quota(node, plan, "suppression disabled");
            recover_cpuset(node, plan, "suppression disabled");
            return;
        };
        let b = budget(node, threshold_percent(slo), t.cpu_suppress_min_percent);
        if t.cpu_suppress_policy.as_deref() == Some(POLICY_CFS_QUOTA) {
            by_quota(node, b, plan);
        } else {
            by_cpuset(node, b, plan);
        }
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::QoSClass;
    use kolo_api::crd::node_slo::ResourceThresholdStrategy;

    use super::*;
    use crate::qos::ContainerState;
    use crate::qos::testing_b::{be_pod, enabled, ls_pod, node, slo};

    fn quota_policy() -> ResourceThresholdStrategy {
        ResourceThresholdStrategy {
            cpu_suppress_policy: Some(POLICY_CFS_QUOTA.to_string()),
            ..enabled()
        }
    }

    /// 16 cores, LS pods use 6 cores, BE 2 cores, node 9 cores → system 1
    /// core: budget 16 × 0.65 − 6 − 1 = 3.4 cores.
    fn spec_node() -> NodeState {
        let mut n = node(16_000, 64 << 30);
        n.usage.cpu = 9_000;
        n.pods = vec![ls_pod("ls1", 4_000, 0), ls_pod("ls2", 2_000, 0), be_pod("be", 2_000, 0)];
        n
    }

    fn run(n: &NodeState, t: ResourceThresholdStrategy) -> Plan {
        let mut plan = Plan::default();
        CpuSuppress.plan(n, &slo(t), &mut plan);
        plan
    }

    fn written(plan: &Plan, resource: Resource) -> Vec<(String, String)> {
        plan.writes
            .iter()
            .filter(|w| w.write.resource == resource)
            .map(|w| (w.write.dir.to_string(), w.write.value.to_string()))
            .collect()
    }

    #[test]
    fn budget_table() {
        let n = spec_node();
        assert_eq!(
            budget(&n, 65, None),
            Budget { suppress: 3_400, non_be: 6_000, system: 1_000, threshold: 65 }
        );
        // Reserved above the measured system usage wins.
        let mut r = spec_node();
        r.reserved.cpu = 2_000;
        assert_eq!(budget(&r, 65, None).suppress, 2_400);
        // Pods using more than the node: system 0 (then reserved 0).
        let mut over = spec_node();
        over.usage.cpu = 1_000;
        assert_eq!(
            budget(&over, 65, None),
            Budget { suppress: 4_400, non_be: 6_000, system: 0, threshold: 65 }
        );
        // Min percent floor: 16 × 30% = 4.8 cores.
        assert_eq!(budget(&n, 65, Some(30)).suppress, 4_800);
        // Negative budget stays negative without a floor; percents clamp.
        assert_eq!(budget(&n, 10, None).suppress, 1_600 - 7_000);
        assert_eq!(budget(&n, 500, None).suppress, 16_000 - 7_000);
        // kube BestEffort pods count on the BE side even when not kolo BE.
        let mut kbe = spec_node();
        let mut p = ls_pod("ls-in-be", 1_000, 0);
        p.pod.kube_qos = KubeQoSClass::BestEffort;
        kbe.pods.push(p);
        kbe.usage.cpu = 10_000;
        assert_eq!(budget(&kbe, 65, None).non_be, 6_000);
    }

    #[test]
    fn target_cpus_table() {
        // (suppress, current, available, processors, band) → CPUs
        let band = 480;
        let table = [
            (3_400, None, 16, 16, band, 4),       // ceil(3.4)
            (3_400, Some(16), 16, 16, band, 4),   // shrink is never step-limited
            (500, Some(16), 16, 16, band, 2),     // at least 2
            (-9_000, Some(16), 16, 16, band, 2),  // negative budget
            (500, Some(16), 1, 16, band, 1),      // but no more than available
            (16_000, Some(2), 16, 16, band, 4),   // grow +ceil(1.6) = 2 per round
            (60_000, Some(10), 64, 64, band, 17), // +ceil(6.4) = 7
            (40_000, Some(16), 16, 16, band, 16), // capped by available
            (3_600, Some(4), 16, 16, band, 4),    // in [3000 − 480, 4000 + 480]: keep
            (4_480, Some(4), 16, 16, band, 4),    // edge of the band: keep
            (4_481, Some(4), 16, 16, band, 5),    // past it: grow to ceil
            (2_520, Some(4), 16, 16, band, 3),    // at 3000 − 480: shrink to ceil(2.52)
            (2_521, Some(4), 16, 16, band, 4),    // inside the band
            (2_520, Some(5), 16, 16, band, 3),    // well below: straight to ceil(2.52) = 3
            (3_000, Some(1), 16, 16, band, 3),    // past the band: grow
            (1_200, Some(1), 16, 16, band, 2),    // in the band but below the floor: raised
            (3_000, Some(20), 16, 16, band, 3),   // current larger than available: no hysteresis
        ];
        for (suppress, current, available, processors, band, want) in table {
            let got = target_cpus(suppress, current, available, processors, band);
            assert_eq!(got, want, "{suppress} {current:?} {available} {processors}");
        }
    }

    #[test]
    fn place_table() {
        // One socket, 4 cores × 2 threads: cpu i and i + 4 share core i.
        let ht: BTreeMap<u32, (u32, u32)> = (0..8).map(|c| (c, (0, c % 4))).collect();
        // Two sockets of 2 cores × 2 threads: cpus 2k, 2k + 1 share a core.
        let two: BTreeMap<u32, (u32, u32)> = (0..8).map(|c| (c, (c / 4, c / 2))).collect();
        let all = CpuSet::from_range(0, 7);
        let table = [
            (3, &all, &ht, "0-1,4"),
            (4, &all, &ht, "0-1,4-5"),
            (4, &all, &two, "0-1,4-5"),
            (3, &all, &two, "0-1,4"),
            (5, &all, &two, "0-2,4-5"),
            (8, &all, &two, "0-7"),
            (1, &all, &two, "0"),
            (0, &all, &two, ""),
        ];
        for (n, cpus, cores, want) in table {
            assert_eq!(place(n, cpus, cores).to_string(), want, "{n} {cores:?}");
        }
        // Socket 1 larger (socket 0 lost cpus 0-1 to an LSE pod): it goes first.
        let partial = CpuSet::from_range(2, 7);
        assert_eq!(place(4, &partial, &two).to_string(), "2-5");
        // No topology: lowest ids.
        assert_eq!(place(3, &partial, &BTreeMap::new()).to_string(), "2-4");
    }

    #[test]
    fn quota_table() {
        // (suppress, current, capacity) → quota
        let table = [
            (3_400, None, 16_000, Some(340_000)),
            (3_400, Some(-1), 16_000, Some(340_000)),
            (3_400, Some(340_000), 16_000, None),
            (3_400, Some(325_000), 16_000, None), // |Δ| 15000 < 16000
            (3_400, Some(324_000), 16_000, Some(340_000)), // |Δ| = 16000
            (3_400, Some(100_000), 16_000, Some(260_000)), // +160000 max
            (3_400, Some(900_000), 16_000, Some(340_000)), // shrink unlimited
            (10, Some(3_000), 16_000, Some(2_000)), // floor, written despite |Δ| < minDelta
            (-500, Some(2_000), 16_000, None),    // already at the floor
            // The kernel's bound, never 2^63-1 (a node of absurd capacity).
            (i64::MAX, Some(-1), 16_000, Some(CFS_MAX_QUOTA_US)),
            (i64::MAX, None, i64::MAX, Some(CFS_MAX_QUOTA_US)),
        ];
        for (suppress, current, capacity, want) in table {
            assert_eq!(target_quota(suppress, current, capacity), want, "{suppress} {current:?}");
        }
    }

    #[test]
    fn cpuset_policy_writes_be_dir_pods_and_containers() {
        let mut n = spec_node();
        let container_dir = n.pods[2].dir.join("cri-containerd-abc.scope").unwrap();
        n.pods[2].containers.push(ContainerState {
            name: "c".to_string(),
            dir: Some(container_dir),
            requests: Default::default(),
            limits: Default::default(),
            usage: None,
        });
        n.be.cpuset = Some(n.be_cpus.clone());
        n.be.cfs_quota_us = Some(-1);
        let plan = run(&n, enabled());
        assert_eq!(
            written(&plan, Resource::CpusetCpus),
            [
                ("/kubepods/besteffort".to_string(), "0-3".to_string()),
                ("/kubepods/besteffort/poduid-be".to_string(), "0-3".to_string()),
                (
                    "/kubepods/besteffort/poduid-be/cri-containerd-abc.scope".to_string(),
                    "0-3".to_string()
                ),
            ]
        );
        assert!(written(&plan, Resource::CpuCfsQuota).is_empty(), "quota already -1");
        assert!(plan.writes.iter().all(|w| w.strategy == NAME && w.reason.contains("3400m")));
        // Quota not yet recovered: also -1.
        n.be.cfs_quota_us = Some(50_000);
        let plan = run(&n, enabled());
        assert_eq!(
            written(&plan, Resource::CpuCfsQuota),
            [("/kubepods/besteffort".to_string(), "-1".to_string())]
        );
    }

    #[test]
    fn cpuset_policy_keeps_off_lse_cpus_and_splits_lsr_pool() {
        let bound = |name: &str, qos: QoSClass, cpus: &str| {
            let mut p = ls_pod(name, 0, 0);
            p.pod.qos = qos;
            p.annotations.insert(
                kolo_api::names::annotation::RESOURCE_STATUS.to_string(),
                format!(r#"{{"cpuset":"{cpus}"}}"#),
            );
            p
        };
        // (bound pods) → BE cpuset for the 3.4-core budget (4 CPUs), and the
        // cpuset recovered when suppression is off.
        type Row<'a> = (&'a [(QoSClass, &'a str)], &'a str, &'a str);
        let table: [Row; 4] = [
            (&[], "0-3", "0-15"),
            (&[(QoSClass::LSE, "0-3")], "4-7", "4-15"),
            // usable 4-15, lsr 8-11: ⌊4 × 4/12⌋ = 1 from lsr.
            (&[(QoSClass::LSE, "0-3"), (QoSClass::LSR, "8-11")], "4-6,8", "4-15"),
            // An LS pod's binding is not a pool.
            (&[(QoSClass::LS, "0-3")], "0-3", "0-15"),
        ];
        for (pods, want, recovered) in table {
            let mut n = spec_node();
            for (i, (qos, cpus)) in pods.iter().enumerate() {
                n.pods.push(bound(&format!("b{i}"), *qos, cpus));
            }
            n.be.cpuset = Some(CpuSet::from_range(0, 15));
            n.be.cfs_quota_us = Some(-1);
            let plan = run(&n, enabled());
            let be_dir = written(&plan, Resource::CpusetCpus)
                .into_iter()
                .find(|(d, _)| d == "/kubepods/besteffort")
                .map(|(_, v)| v);
            assert_eq!(be_dir.as_deref(), Some(want), "{pods:?}");
            let plan = run(&n, ResourceThresholdStrategy { enable: Some(false), ..enabled() });
            let got = written(&plan, Resource::CpusetCpus).first().map(|(_, v)| v.clone());
            let want_recovered = (recovered != "0-15").then(|| recovered.to_string());
            assert_eq!(got, want_recovered, "recovery with {pods:?}");
        }
    }

    #[test]
    fn quota_policy_writes_quota_and_recovers_cpuset() {
        let mut n = spec_node();
        n.be.cfs_quota_us = Some(-1);
        n.be.cpuset = Some(CpuSet::from_range(0, 3));
        let plan = run(&n, quota_policy());
        assert_eq!(
            written(&plan, Resource::CpuCfsQuota),
            [("/kubepods/besteffort".to_string(), "340000".to_string())]
        );
        assert_eq!(written(&plan, Resource::CpusetCpus).len(), 2); // BE dir + BE pod, 0-15
        assert!(written(&plan, Resource::CpusetCpus).iter().all(|(_, v)| v == "0-15"));
        // Steady state: nothing.
        n.be.cfs_quota_us = Some(340_000);
        n.be.cpuset = Some(n.be_cpus.clone());
        assert!(run(&n, quota_policy()).writes.is_empty());
    }

    #[test]
    fn recovery_when_disabled() {
        let mut n = spec_node();
        n.be.cfs_quota_us = Some(200_000);
        n.be.cpuset = Some(CpuSet::from_range(0, 1));
        for t in [
            ResourceThresholdStrategy::default(),
            ResourceThresholdStrategy { enable: Some(false), ..enabled() },
        ] {
            let plan = run(&n, t);
            assert_eq!(
                written(&plan, Resource::CpuCfsQuota),
                [("/kubepods/besteffort".to_string(), "-1".to_string())]
            );
            assert_eq!(written(&plan, Resource::CpusetCpus).len(), 2);
        }
        n.be.cfs_quota_us = Some(-1);
        n.be.cpuset = Some(n.be_cpus.clone());
        assert!(
            run(&n, ResourceThresholdStrategy::default()).writes.is_empty(),
            "already recovered"
        );
    }

    #[test]
    fn never_writes_non_be_pods() {
        let mut n = spec_node();
        n.be.cpuset = Some(n.be_cpus.clone());
        let plan = run(&n, enabled());
        assert!(!plan.writes.is_empty());
        assert!(plan.writes.iter().all(|w| w.write.dir.starts_with(&n.be_dir)));
    }

    /// Koordinator #1103: LS usage oscillating ±2% of the node around a CPU
    /// boundary. Budget = 10400 − LS − 1000; LS 5400 puts it on 4000 (the
    /// 4 ↔ 5 CPU boundary); ±320m (2% of 16 cores) swings it 3680 ↔ 4320.
    /// Whichever side the oscillation starts on, one write, then none.
    #[test]
    fn oscillation_around_a_boundary_writes_once() {
        for start_high in [true, false] {
            let mut n = node(16_000, 64 << 30);
            n.be.cpuset = Some(n.be_cpus.clone());
            n.be.cfs_quota_us = Some(-1);
            let mut writes_per_round = Vec::new();
            for round in 0..20 {
                let high = (round % 2 == 0) == start_high;
                let ls = if high { 5_400 - 320 } else { 5_400 + 320 };
                n.pods = vec![ls_pod("ls", ls, 0), be_pod("be", 1_000, 0)];
                n.usage.cpu = ls + 1_000 + 1_000; // system 1 core
                let plan = run(&n, enabled());
                writes_per_round.push(plan.writes.len());
                // Act: the BE dir now holds what was written.
                if let Some(w) = plan.writes.iter().find(|w| w.write.dir == n.be_dir)
                    && let Value::Cpuset(set) = &w.write.value
                {
                    n.be.cpuset = Some(set.clone());
                }
            }
            assert_eq!(writes_per_round[0], 2, "first round: BE dir + BE pod");
            assert!(
                writes_per_round[1..].iter().all(|w| *w == 0),
                "{start_high}: {writes_per_round:?}"
            );
            let want = if start_high { 5 } else { 4 };
            assert_eq!(n.be.cpuset.as_ref().map(CpuSet::len), Some(want));
        }
    }

    /// Without the dead band (band 0) the same oscillation flaps.
    #[test]
    fn oscillation_without_band_would_flap() {
        let (mut cur, mut changes) = (16, 0);
        for round in 0..10 {
            let suppress = if round % 2 == 0 { 4_320 } else { 3_680 };
            let next = target_cpus(suppress, Some(cur), 16, 16, 0);
            changes += usize::from(next != cur);
            cur = next;
        }
        assert_eq!(changes, 10);
    }

    #[test]
    fn steady_budget_moves_past_band_then_settles() {
        let mut n = spec_node();
        n.be.cpuset = Some(CpuSet::from_range(0, 3));
        n.be.cfs_quota_us = Some(-1);
        assert!(run(&n, enabled()).writes.is_empty(), "3.4 cores on 4 CPUs");
        // LS drops by 3 cores: budget 6.4 > 4 + 0.48 → grow to 6 (step ≤ +2).
        n.pods[0].usage = Some(kolo_core::CpuMem::new(1_000, 0));
        n.usage.cpu = 6_000;
        let plan = run(&n, enabled());
        assert_eq!(written(&plan, Resource::CpusetCpus)[0].1, "0-5");
    }
}
