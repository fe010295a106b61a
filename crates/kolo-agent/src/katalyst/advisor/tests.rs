//! The advisor end to end: a hand-checked two-cycle table and property
//! tests over random pod mixes and usage histories.

use std::collections::BTreeMap;

use kolo_api::katalyst::KatalystQoSLevel;
use kolo_core::clock::Timestamp;
use kolo_core::cpuset::CpuSet;
use proptest::prelude::*;

use super::*;
use crate::katalyst::config::GIB;
use crate::katalyst::pod::testing::{dedicated, kpod, shared};

fn set(s: &str) -> CpuSet {
    CpuSet::parse(s).unwrap()
}

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

#[test]
fn two_cycles_by_hand() {
    // 2 NUMA × 8 CPUs (SMT pairs), 16 GiB each; default config (reclaim on,
    // no reserve, rfr 4 → 2 per node, rfa 4 → 2 per node).
    let m = Machine::uniform(2, 8, true, 16 * GIB);
    let cfg = KatalystConfig::default();
    let mut a = shared("a", 4_000, 2.0); // estimate 2.0 × 1.25 = 2.5
    a.usage.memory = Some(10 * GIB); // × 1.1 = 11 GiB
    let b = shared("b", 2_000, 0.8); // estimate 1.0; memory unknown: 8 GiB
    let mut d = dedicated("d", 4_000, false); // estimate 1.25
    d.usage.cpu = Some(1.0);
    d.usage.memory = Some(0);
    let r = kpod("r", KatalystQoSLevel::ReclaimedCores, 2_000);
    let pods = vec![a, b, d, r];
    // Per-CPU busy ratios: 4-7 at 0.25, 14-15 at 0.5; reclaimed pods use 0.5 on each node.
    let mut cpu_usage: BTreeMap<u32, f64> = (4..8).map(|c| (c, 0.25)).collect();
    cpu_usage.extend([(14, 0.5), (15, 0.5)]);
    let meas = CpuMeasurements {
        cpu_usage,
        reclaimed_usage: BTreeMap::from([(0, 0.5), (1, 0.5)]),
        reclaimed_quota: None,
    };
    let first = advise(AdvisorInput {
        machine: &m,
        cfg: &cfg,
        pods: &pods,
        measurements: &meas,
        previous: &AdvisorState::default(),
        now: at(1000),
    });
    // d: 4 CPUs on node 0 (shared pods need 6 ≤ node 1's 8): whole cores 0-3.
    assert_eq!(first.pools.dedicated["uid-d"].cpus, set("0-3"));
    // share region on node 1: requirement 2.5 + 1.0 = 3.5, + rfa 2 = 5.5 → 6 (even);
    // bounds [max(4, ceil 4) = 4, 8 − 2 = 6] → 6.
    let share = &first.regions[0];
    assert_eq!(share.name, "share-share");
    assert_eq!((share.requirement, share.lower, share.upper), (3.5, 4.0, 6.0));
    assert_eq!((share.regulated.with_reserve, share.regulated.size), (5.5, 6));
    // dedicated region: 1.25 + 2 = 3.25 → 4; bounds [4, limit 4] → 4; overlap 4 − 4 = 0.
    let ded = &first.regions[1];
    assert_eq!((ded.requirement, ded.regulated.size), (1.25, 4));
    // Assembler: available on node 1 = 8 − 2 = 6; share 6 fits, not stretched.
    assert_eq!((first.assembly.available, first.assembly.expanded), (6, false));
    // Pools: share = 6 CPUs of node 1 (whole cores: 8-13); node 0's leftovers and 14-15 reclaim.
    assert_eq!(first.pools.shared["share"], set("8-13"));
    assert_eq!(first.pools.reclaim, set("4-7,14-15"));
    assert_eq!(first.pools.reclaim_overlap, CpuSet::default());
    assert_eq!(first.pools.partition_error(&m), None);
    // CPU headroom: node 0 (bound) 4 − 4 × 0.25 + 0.5 = 3.5 → 4; node 1: 2 − 1.0 + 0.5 = 1.5 → 1.
    assert_eq!(first.cpu.per_numa, BTreeMap::from([(0, 4000), (1, 1000)]));
    assert_eq!(first.cpu.millicpu, 5000);
    // Memory: 32 − 5 − (11 + 8 + 0) = 8 GiB.
    assert_eq!(first.memory.bytes, 8 * GIB);

    // Cycle 2, 5 s later: a and b idle down to 0.4 cores each: 0.5 + 0.5 = 1.0,
    // + 2 = 3 → 4 (even); from 6 at most −2 → 4; the pool keeps 4 of its CPUs.
    let mut pods2 = pods.clone();
    pods2[0].usage.cpu = Some(0.4);
    pods2[1].usage.cpu = Some(0.4);
    let second = advise(AdvisorInput {
        machine: &m,
        cfg: &cfg,
        pods: &pods2,
        measurements: &meas,
        previous: &first.state,
        now: at(1005),
    });
    assert_eq!(second.regions[0].regulated.size, 4);
    assert_eq!(second.pools.shared["share"], set("8-11"));
    assert_eq!(second.pools.reclaim, set("4-7,12-15"));
    assert_eq!(second.pools.dedicated, first.pools.dedicated);
    // Cycle 3, 10 s after the decrease: a wants more (3.0 × 1.25 = 3.75, + 0.5 + 2 = 6.25 → 8
    // even), ramp-up is free (≤ +10) but the upper bound is 6.
    let mut pods3 = pods2.clone();
    pods3[0].usage.cpu = Some(3.0);
    let third = advise(AdvisorInput {
        machine: &m,
        cfg: &cfg,
        pods: &pods3,
        measurements: &meas,
        previous: &second.state,
        now: at(1015),
    });
    assert_eq!((third.regions[0].regulated.rounded, third.regions[0].regulated.size), (8, 6));
    assert_eq!(third.pools.shared["share"], set("8-13"));
}

/// A random mix of pods with random usage.
fn pods() -> impl Strategy<Value = Vec<KPod>> {
    let pod = (0u8..6, 1i64..=6_000, any::<bool>(), 0.0f64..6.0, 0u8..2, any::<bool>());
    proptest::collection::vec(pod, 0..10).prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(|(i, (kind, cpu, flag, usage, pool, allowed))| {
                let name = format!("p{i}");
                let mut p = match kind {
                    0 => dedicated(&name, cpu, flag),
                    1 => kpod(&name, KatalystQoSLevel::ReclaimedCores, cpu),
                    2 => kpod(&name, KatalystQoSLevel::SystemCores, cpu),
                    _ => shared(&name, cpu, usage),
                };
                p.pool = format!("pool{pool}");
                p.reclaim_allowed = allowed;
                p
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn pools_stay_a_partition_over_usage_histories(
        numa in 1u32..=3,
        half in 2u32..=6,
        reserved in 0usize..3,
        overlap in any::<bool>(),
        reclaim in any::<bool>(),
        pods in pods(),
        history in proptest::collection::vec(proptest::collection::vec(0.0f64..8.0, 10), 1..6),
    ) {
        let m = Machine::uniform(numa, half * 2, true, 8 * GIB);
        let cfg = KatalystConfig {
            reserved_cpus: reserved,
            allow_shared_overlap_reclaimed: overlap,
            enable_reclaim: reclaim,
            ..KatalystConfig::default()
        };
        let mut state = AdvisorState::default();
        let mut first_allocations: BTreeMap<String, CpuSet> = BTreeMap::new();
        for (cycle, usage) in history.iter().enumerate() {
            let mut now_pods = pods.clone();
            for (p, u) in now_pods.iter_mut().zip(usage) {
                p.usage.cpu = Some(*u);
            }
            let advice = advise(AdvisorInput {
                machine: &m,
                cfg: &cfg,
                pods: &now_pods,
                measurements: &CpuMeasurements::default(),
                previous: &state,
                now: at(1000 + 5 * cycle as i64),
            });
            let pools = &advice.pools;
            prop_assert_eq!(pools.partition_error(&m), None);
            // Dedicated cpusets never change once given.
            for (uid, a) in &pools.dedicated {
                let first = first_allocations.entry(uid.clone()).or_insert_with(|| a.cpus.clone());
                prop_assert_eq!(&a.cpus, first);
            }
            // Reclaimed pods always have CPUs.
            prop_assert!(!pools.reclaimed_cpus().is_empty());
            // A shared pod's pool holds at least ceil(its request) when the
            // unbound nodes can hold every pool's floor (its largest request,
            // at least 4) at once.
            if advice.assembly.floors <= advice.assembly.capacity {
                let cpusets = pools.pod_cpusets(&m, &now_pods);
                for p in now_pods.iter().filter(|p| p.level == KatalystQoSLevel::SharedCores) {
                    prop_assert!(cpusets[&p.uid].len() >= p.cpus_needed().min(advice.assembly.capacity),
                        "{} requests {} CPUs, has {}", p.key, p.cpus_needed(), cpusets[&p.uid]);
                }
            }
            state = advice.state;
        }
    }
}
