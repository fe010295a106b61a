//! System memory pressure (spec §4.2), as a plugin of the manager.
//!
//! * **Watermark**: `free < max(min_free, total × watermark_scale_factor /
//!   10000)` ⇒ reclaimed pods may be evicted.
//! * **PSI** (cgroup v2): the burstable QoS group's memory `some avg10 ≥
//!   15`, at least 3 shared or dedicated pods with their own `some avg10 >
//!   1`, and those pods' mean `some avg10 ≥ 4` — continuously for 15 s ⇒
//!   reclaimed pods may be evicted, for 45 s ⇒ any evictable pod.
//!   (Katalyst's flag calls it a "full" threshold but reads the `some`
//!   line; so does this.)
//! * Always hard-met with the node condition `MemoryPressure`; at most one
//!   eviction per 35 s.
//! * Candidates: the pods using ≥ 0.1 % of the memory of the NUMA node
//!   with the least free memory (of the machine when per-node figures are
//!   missing), reclaimed first, lower priority first, larger use first.
//!
//! Katalyst's kswapd-rate detector is dead code there (§10.8) and is not
//! implemented.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{
    EvictionInput, EvictionPlugin, EvictionPod, EvictionState, Met, Scope, Verdict, elapsed,
    rank_by_usage,
};

/// The plugin's name.
pub const NAME: &str = "system-memory-pressure";

/// The PSI episode needed before reclaimed pods are evicted.
pub const PSI_RECLAIMED_AFTER: Duration = Duration::from_secs(15);
/// The PSI episode needed before any pod is evicted.
pub const PSI_ANY_AFTER: Duration = Duration::from_secs(45);
/// Between two evictions.
pub const COOL_DOWN: Duration = Duration::from_secs(35);

/// Memory figures of the machine.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemMemory {
    /// Total, bytes.
    pub total: u64,
    /// Free, bytes.
    pub free: u64,
    /// `vm.watermark_scale_factor` (default 10).
    pub watermark_scale_factor: u64,
    /// The floor of the watermark, bytes (default 0).
    pub min_free: u64,
    /// Per NUMA node (free, total), bytes; empty when unknown.
    pub numa: BTreeMap<u32, (u64, u64)>,
    /// Memory PSI, when the kernel has it for cgroups.
    pub psi: Option<MemoryPsi>,
}

/// Memory PSI `some avg10` figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemoryPsi {
    /// Of the burstable QoS cgroup.
    pub burstable_avg10: f64,
    /// Of each pod, by UID.
    pub pod_avg10: BTreeMap<String, f64>,
}

/// The plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemMemoryPressure;

/// Whether the PSI figures show pressure now.
fn psi_pressure(psi: &MemoryPsi, pods: &[EvictionPod]) -> bool {
    let levels: Vec<f64> = pods
        .iter()
        .filter(|p| {
            !p.is_reclaimed() && p.level() != kolo_api::katalyst::KatalystQoSLevel::SystemCores
        })
        .filter_map(|p| psi.pod_avg10.get(&p.uid).copied())
        .collect();
    let pressured = levels.iter().filter(|v| **v > 1.0).count();
    let mean =
        if levels.is_empty() { 0.0 } else { levels.iter().sum::<f64>() / levels.len() as f64 };
    psi.burstable_avg10 >= 15.0 && pressured >= 3 && mean >= 4.0
}

impl EvictionPlugin for SystemMemoryPressure {
    fn name(&self) -> &'static str {
        NAME
    }

    fn threshold_met(&self, input: &EvictionInput<'_>, state: &mut EvictionState) -> Verdict {
        let Some(m) = input.system_memory else {
            return Verdict::not_met(NAME, Scope::Memory, "no memory figures");
        };
        let watermark = m.min_free.max(m.total.saturating_mul(m.watermark_scale_factor) / 10_000);
        let psi_now = m.psi.as_ref().is_some_and(|psi| psi_pressure(psi, input.pods));
        if !psi_now {
            state.psi_since = None;
        }
        let episode =
            psi_now.then(|| elapsed(input.now, *state.psi_since.get_or_insert(input.now)));
        let any_pod = episode.is_some_and(|e| e >= PSI_ANY_AFTER);
        let reclaimed = m.free < watermark || episode.is_some_and(|e| e >= PSI_RECLAIMED_AFTER);
        if !reclaimed && !any_pod {
            let why = format!("free {} ≥ watermark {watermark}, PSI episode {episode:?}", m.free);
            return Verdict::not_met(NAME, Scope::Memory, why);
        }
        let mut reason = if m.free < watermark {
            format!("free memory {} below the watermark {watermark}", m.free)
        } else {
            format!("memory PSI pressure for {:?}", episode.unwrap_or_default())
        };
        let cooling =
            state.last_eviction.get(NAME).is_some_and(|t| elapsed(input.now, *t) < COOL_DOWN);
        let candidates = if cooling {
            reason.push_str(" (cooling down)");
            Vec::new()
        } else {
            candidates(m, input.pods, !any_pod)
        };
        Verdict {
            plugin: NAME,
            met: Met::HardMet,
            observed: m.free as f64,
            threshold: watermark as f64,
            scope: Scope::Memory,
            grace: Duration::ZERO,
            reason,
            condition: Some("MemoryPressure"),
            candidates,
        }
    }
}

/// Pods on the node with least free memory using ≥ 0.1 % of it.
fn candidates(m: &SystemMemory, pods: &[EvictionPod], reclaimed_only: bool) -> Vec<String> {
    let tightest =
        m.numa.iter().min_by_key(|(_, (free, _))| *free).map(|(id, (_, total))| (*id, *total));
    let usage = |p: &EvictionPod| match tightest {
        Some((id, _)) => p.memory_by_numa.get(&id).copied().unwrap_or(0),
        None => p.memory,
    };
    let total = tightest.map_or(m.total, |(_, t)| t);
    let mut list: Vec<&EvictionPod> = pods
        .iter()
        .filter(|p| !reclaimed_only || p.is_reclaimed())
        .filter(|p| usage(p) >= total / 1000)
        .collect();
    rank_by_usage(&mut list, usage);
    list.into_iter().map(|p| p.uid.clone()).collect()
}
