//! The manager with its built-in plugins and with scripted verdicts.

use std::collections::BTreeMap;
use std::time::Duration;

use kolo_api::katalyst::KatalystQoSLevel;
use kolo_core::clock::Timestamp;
use kolo_core::cpuset::CpuSet;

use super::cpu_load::CpuLoadPressure;
use super::system_memory::{MemoryPsi, SystemMemory, SystemMemoryPressure};
use super::*;

const GIB: u64 = 1 << 30;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

fn pod(name: &str, level: KatalystQoSLevel, priority: i32, memory_gib: u64) -> EvictionPod {
    EvictionPod {
        uid: format!("uid-{name}"),
        key: format!("ns/{name}"),
        level: Some(level),
        priority,
        memory: memory_gib * GIB,
        ..EvictionPod::default()
    }
}

/// A plugin whose verdict is given (to test the manager's own rules).
struct Scripted(Verdict);

impl EvictionPlugin for Scripted {
    fn name(&self) -> &'static str {
        self.0.plugin
    }
    fn threshold_met(&self, _: &EvictionInput<'_>, _: &mut EvictionState) -> Verdict {
        self.0.clone()
    }
}

fn verdict(
    plugin: &'static str,
    met: Met,
    scope: Scope,
    grace: u64,
    candidates: &[&str],
) -> Verdict {
    Verdict {
        plugin,
        met,
        observed: 1.0,
        threshold: 0.5,
        scope,
        grace: Duration::from_secs(grace),
        reason: format!("{plugin} says so"),
        condition: None,
        candidates: candidates.iter().map(|c| format!("uid-{c}")).collect(),
    }
}

fn input<'a>(
    now: i64,
    pods: &'a [EvictionPod],
    pools: &'a BTreeMap<String, CpuSet>,
) -> EvictionInput<'a> {
    EvictionInput { now: at(now), pods, system_memory: None, numa_memory: &[], pools }
}

fn evicted(plan: &EvictionPlan) -> Vec<(&str, bool)> {
    plan.evict.iter().map(|v| (v.pod.as_str(), v.force)).collect()
}

#[test]
fn hard_takes_the_first_valid_candidate_never_dedicated_system_or_critical() {
    let mut critical = pod("crit", KatalystQoSLevel::SharedCores, 0, 1);
    critical.critical = true;
    let pods = vec![
        pod("ded", KatalystQoSLevel::DedicatedCores, 0, 1),
        pod("sys", KatalystQoSLevel::SystemCores, 0, 1),
        critical,
        pod("shr", KatalystQoSLevel::SharedCores, 0, 1),
    ];
    let pools = BTreeMap::new();
    let p = Scripted(verdict("p", Met::HardMet, Scope::Memory, 0, &["ded", "sys", "crit", "shr"]));
    let (plan, _) = run(&[&p], &input(0, &pods, &pools), &EvictionState::default(), DEFAULT_BURST);
    assert_eq!(evicted(&plan), [("ns/shr", true)]);
    // Only invalid candidates: nothing.
    let p = Scripted(verdict("p", Met::HardMet, Scope::Memory, 0, &["ded", "sys", "crit"]));
    let (plan, _) = run(&[&p], &input(0, &pods, &pools), &EvictionState::default(), DEFAULT_BURST);
    assert!(plan.evict.is_empty());
}

#[test]
fn soft_picks_one_reclaimed_lowest_priority_first() {
    let pods = vec![
        pod("s-low", KatalystQoSLevel::SharedCores, 0, 1),
        pod("r-high", KatalystQoSLevel::ReclaimedCores, 100, 1),
        pod("r-low-b", KatalystQoSLevel::ReclaimedCores, 10, 1),
        pod("r-low-a", KatalystQoSLevel::ReclaimedCores, 10, 1),
    ];
    let pools = BTreeMap::new();
    let p = Scripted(verdict(
        "p",
        Met::SoftMet,
        Scope::Cpu,
        0,
        &["s-low", "r-high", "r-low-b", "r-low-a"],
    ));
    let (plan, _) = run(&[&p], &input(0, &pods, &pools), &EvictionState::default(), DEFAULT_BURST);
    // Reclaimed before shared, priority 10 before 100, then name ascending (sorted desc, last taken).
    assert_eq!(evicted(&plan), [("ns/r-low-a", false)]);
}

#[test]
fn grace_periods_and_the_burst_limit() {
    let pods: Vec<EvictionPod> =
        (0..5).map(|i| pod(&format!("r{i}"), KatalystQoSLevel::ReclaimedCores, 0, 1)).collect();
    let pools = BTreeMap::new();
    // A hard threshold with a 10 s grace period: not at 0 s or 9 s, at 10 s.
    let p = Scripted(verdict("graced", Met::HardMet, Scope::Memory, 10, &["r0"]));
    let mut state = EvictionState::default();
    for (now, want) in [(0, 0), (9, 0), (10, 1)] {
        let (plan, next) = run(&[&p], &input(now, &pods, &pools), &state, DEFAULT_BURST);
        assert_eq!(plan.evict.len(), want, "at {now}s");
        state = next;
    }
    // Not met once: the clock starts again.
    let off = Scripted(verdict("graced", Met::NotMet, Scope::Memory, 10, &[]));
    let (_, state) = run(&[&off], &input(11, &pods, &pools), &state, DEFAULT_BURST);
    let (plan, _) = run(&[&p], &input(12, &pods, &pools), &state, DEFAULT_BURST);
    assert!(plan.evict.is_empty());
    // Five hard plugins with one victim each: three evicted, two held back.
    let plugins: Vec<Scripted> = (0..5)
        .map(|i| {
            let name: &'static str = ["a", "b", "c", "d", "e"][i];
            Scripted(verdict(name, Met::HardMet, Scope::Memory, 0, &[&format!("r{i}")]))
        })
        .collect();
    let refs: Vec<&dyn EvictionPlugin> = plugins.iter().map(|p| p as &dyn EvictionPlugin).collect();
    let (plan, state) =
        run(&refs, &input(0, &pods, &pools), &EvictionState::default(), DEFAULT_BURST);
    assert_eq!(plan.evict.len(), 3);
    assert_eq!(plan.held_back.len(), 2);
    assert_eq!(state.last_eviction.len(), 3);
}

#[test]
fn system_memory_watermark_psi_and_cool_down() {
    let pods = vec![
        pod("shared", KatalystQoSLevel::SharedCores, 0, 10),
        pod("r-small", KatalystQoSLevel::ReclaimedCores, 0, 1),
        pod("r-big", KatalystQoSLevel::ReclaimedCores, 0, 4),
    ];
    let pools = BTreeMap::new();
    // 64 GiB, wsf 10: watermark 64 GiB × 10 / 10000 = 68719476 bytes (≈ 65.5 MiB).
    let mut mem = SystemMemory {
        total: 64 * GIB,
        free: 60 << 20,
        watermark_scale_factor: 10,
        ..SystemMemory::default()
    };
    let plugin = SystemMemoryPressure;
    let run_at = |now: i64, mem: &SystemMemory, state: &EvictionState| {
        let inp = EvictionInput { system_memory: Some(mem), ..input(now, &pods, &pools) };
        run(&[&plugin], &inp, state, DEFAULT_BURST)
    };
    let (plan, state) = run_at(0, &mem, &EvictionState::default());
    // 60 MiB < 65.5 MiB: the biggest reclaimed pod; condition MemoryPressure.
    assert_eq!(evicted(&plan), [("ns/r-big", true)]);
    assert_eq!(plan.conditions, ["MemoryPressure"]);
    // 20 s later still low: cooling down (35 s) — nothing.
    let (plan, _) = run_at(20, &mem, &state);
    assert!(plan.evict.is_empty());
    assert!(plan.verdicts[0].reason.ends_with("(cooling down)"));
    // PSI: free memory fine, pressure on 3 shared pods (mean 5 ≥ 4), burstable 20 ≥ 15.
    mem.free = 30 * GIB;
    let many: Vec<EvictionPod> = (0..3)
        .map(|i| pod(&format!("s{i}"), KatalystQoSLevel::SharedCores, 0, 2))
        .chain([pod("r", KatalystQoSLevel::ReclaimedCores, 0, 1)])
        .collect();
    mem.psi = Some(MemoryPsi {
        burstable_avg10: 20.0,
        pod_avg10: (0..3).map(|i| (format!("uid-s{i}"), 5.0)).collect(),
    });
    let mut state = EvictionState::default();
    let mut seen = Vec::new();
    for now in [100, 110, 115, 145] {
        let inp = EvictionInput { system_memory: Some(&mem), ..input(now, &many, &pools) };
        let (plan, next) = run(&[&plugin], &inp, &state, DEFAULT_BURST);
        seen.push(evicted(&plan).into_iter().map(|(p, _)| p.to_string()).collect::<Vec<_>>());
        state = next;
        state.last_eviction.clear(); // look at the PSI timing alone
    }
    // 0 s, 10 s: not yet; 15 s: the reclaimed pod; 45 s: any pod (the reclaimed one still ranks first).
    assert_eq!(seen, [vec![], vec![], vec!["ns/r".to_string()], vec!["ns/r".to_string()]]);
    // At 45 s a shared pod is a candidate too.
    let inp = EvictionInput { system_memory: Some(&mem), ..input(145, &many[..3], &pools) };
    let (plan, _) = run(&[&plugin], &inp, &state, DEFAULT_BURST);
    assert_eq!(plan.evict.len(), 1);
}

#[test]
fn cpu_load_on_a_shared_pool_evicts_the_overlapping_reclaimed_pod() {
    // Pool "share" 0-3 (4 CPUs): hard above 7.2, soft above 4.
    let pools = BTreeMap::from([("share".to_string(), CpuSet::parse("0-3").unwrap())]);
    let mut s = pod("s", KatalystQoSLevel::SharedCores, 0, 1);
    s.cpus = CpuSet::parse("0-3").unwrap();
    let mut r = pod("r", KatalystQoSLevel::ReclaimedCores, 0, 1);
    r.cpus = CpuSet::parse("3-7").unwrap(); // overlaps the pool on CPU 3
    let mut far = pod("far", KatalystQoSLevel::ReclaimedCores, 0, 1);
    far.cpus = CpuSet::parse("8-9").unwrap();
    let plugin = CpuLoadPressure;
    let mut state = EvictionState::default();
    let cycle = |load_s: f64, load_r: f64, now: i64, state: &mut EvictionState| {
        let (mut s, mut r) = (s.clone(), r.clone());
        s.load_1min = load_s;
        r.load_1min = load_r;
        let pods = [s, r, far.clone()];
        let (plan, next) = run(&[&plugin], &input(now, &pods, &pools), state, DEFAULT_BURST);
        *state = next;
        plan
    };
    // 7 samples of 5.0 (> 4, < 7.2): not yet 8 of 10.
    for i in 0..7 {
        assert!(cycle(3.0, 2.0, i * 5, &mut state).evict.is_empty());
    }
    // The 8th: soft-met → one soft pick, the reclaimed pod on the pool (not "far").
    let plan = cycle(3.0, 2.0, 35, &mut state);
    assert_eq!(evicted(&plan), [("ns/r", false)]);
    assert_eq!(plan.conditions, ["CPUPressure"]);
    // Load 8.0 > 7.2 for 8 more samples → hard-met, but within 300 s of the
    // plugin's last eviction it is demoted to soft.
    let mut last = EvictionPlan::default();
    for i in 0..8 {
        last = cycle(6.0, 2.0, 40 + i * 5, &mut state);
    }
    assert_eq!(last.verdicts[0].met, Met::SoftMet);
    assert!(last.verdicts[0].reason.ends_with("(hard eviction cooling down)"));
    // 300 s after the last (soft) eviction at 75 s: hard, victim r again (reclaimed first).
    let last = cycle(6.0, 2.0, 375, &mut state);
    assert_eq!(last.verdicts[0].met, Met::HardMet);
    assert_eq!(evicted(&last), [("ns/r", true)]);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const PLUGINS: [&str; 4] = ["p0", "p1", "p2", "p3"];
    const LEVELS: [KatalystQoSLevel; 4] = [
        KatalystQoSLevel::DedicatedCores,
        KatalystQoSLevel::SharedCores,
        KatalystQoSLevel::ReclaimedCores,
        KatalystQoSLevel::SystemCores,
    ];

    proptest! {
        #[test]
        fn never_dedicated_system_or_critical_and_at_most_burst(
            pods in proptest::collection::vec((0usize..4, -5i32..5, any::<bool>()), 1..8),
            verdicts in proptest::collection::vec((0u8..3, proptest::collection::vec(0usize..8, 0..6)), 4),
            burst in 0usize..4,
        ) {
            let pods: Vec<EvictionPod> = pods
                .iter()
                .enumerate()
                .map(|(i, (level, priority, critical))| {
                    let mut p = pod(&format!("x{i}"), LEVELS[*level], *priority, 1);
                    p.critical = *critical;
                    p
                })
                .collect();
            let plugins: Vec<Scripted> = verdicts
                .iter()
                .enumerate()
                .map(|(i, (met, cands))| {
                    let met = [Met::NotMet, Met::SoftMet, Met::HardMet][usize::from(*met)];
                    let names: Vec<String> = cands.iter().map(|c| format!("x{c}")).collect();
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    Scripted(verdict(PLUGINS[i], met, Scope::Memory, 0, &refs))
                })
                .collect();
            let refs: Vec<&dyn EvictionPlugin> = plugins.iter().map(|p| p as &dyn EvictionPlugin).collect();
            let pools = BTreeMap::new();
            let (plan, _) = run(&refs, &input(0, &pods, &pools), &EvictionState::default(), burst);
            prop_assert!(plan.evict.len() <= burst);
            prop_assert!(plan.evict.iter().filter(|v| !v.force).count() <= 1);
            let mut seen = std::collections::BTreeSet::new();
            for v in plan.evict.iter().chain(&plan.held_back) {
                let p = pods.iter().find(|p| p.uid == v.uid).unwrap();
                prop_assert!(p.evictable(), "{} evicted", p.key);
                prop_assert!(seen.insert(v.uid.clone()), "{} twice", p.key);
            }
            // A soft pick is reclaimed whenever a reclaimed soft candidate was valid.
            let soft_valid: Vec<&EvictionPod> = plugins
                .iter()
                .filter(|s| s.0.met == Met::SoftMet)
                .flat_map(|s| s.0.candidates.iter())
                .filter_map(|u| pods.iter().find(|p| &p.uid == u))
                .filter(|p| p.evictable() && !plan.evict.iter().chain(&plan.held_back).any(|v| v.force && v.uid == p.uid))
                .collect();
            if let Some(pick) = plan.evict.iter().chain(&plan.held_back).find(|v| !v.force) {
                let pick = pods.iter().find(|p| p.uid == pick.uid).unwrap();
                if soft_valid.iter().any(|p| p.is_reclaimed()) {
                    prop_assert!(pick.is_reclaimed());
                }
            }
        }
    }
}
