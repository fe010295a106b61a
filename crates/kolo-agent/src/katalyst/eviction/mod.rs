//! The eviction manager (spec §4): plugins report whether their threshold
//! is met and rank candidates; the manager applies grace periods, picks
//! victims and rate-limits them. Decisions are data ([`EvictionPlan`]);
//! time is passed in; what a cycle carries to the next is
//! [`EvictionState`].
//!
//! One cycle ([`run`], §4.1):
//!
//! 1. every plugin's [`Verdict`]; a met threshold only counts once it has
//!    been met continuously for the verdict's grace period;
//! 2. a counted hard threshold evicts its first valid candidate (top 1);
//!    a counted soft threshold adds all its valid candidates to the soft
//!    set;
//! 3. exactly one soft candidate is chosen per cycle: sorted by
//!    (non-reclaimed before reclaimed, higher priority first, scope memory
//!    before CPU, name descending), the **last** — reclaimed first, lowest
//!    priority first;
//! 4. a candidate is valid unless it is a `system_cores` pod, a
//!    Kubernetes-critical pod, or — kolo, stricter than Katalyst — a
//!    `dedicated_cores` pod;
//! 5. hard victims, then the soft one, at most `burst` (3) per cycle; the
//!    rest are held back.
//!
//! Built-in plugins: [`system_memory`] (watermark and PSI), [`numa_memory`]
//! (per-node watermarks), [`cpu_load`] (shared pools' load).

use std::collections::BTreeMap;
use std::time::Duration;

use kolo_api::katalyst::KatalystQoSLevel;
use kolo_core::clock::Timestamp;
use kolo_core::cpuset::CpuSet;
use serde::Serialize;

pub mod cpu_load;
pub mod numa_memory;
pub mod system_memory;

/// Force evictions (and the chosen soft one) carried out per cycle.
pub const DEFAULT_BURST: usize = 3;

/// How far a threshold is met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Met {
    /// Not met.
    NotMet,
    /// Soft: the plugin's candidates may be evicted, one per cycle.
    SoftMet,
    /// Hard: the first candidate is evicted.
    HardMet,
}

/// What resource a threshold is about (the soft ordering's scope rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// Memory.
    Memory,
    /// CPU.
    Cpu,
}

/// A pod as the eviction manager sees it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EvictionPod {
    /// UID.
    pub uid: String,
    /// `namespace/name`.
    pub key: String,
    /// Katalyst level (`None`: shared).
    pub level: Option<KatalystQoSLevel>,
    /// `spec.priority`.
    pub priority: i32,
    /// Static or mirror pod, or priority ≥ 2,000,000,000.
    pub critical: bool,
    /// Memory use, bytes.
    pub memory: u64,
    /// Memory use per NUMA node, bytes.
    pub memory_by_numa: BTreeMap<u32, u64>,
    /// Its cpuset.
    pub cpus: CpuSet,
    /// Its 1-minute load.
    pub load_1min: f64,
}

impl EvictionPod {
    /// Its level (no annotation: shared).
    pub fn level(&self) -> KatalystQoSLevel {
        self.level.unwrap_or(KatalystQoSLevel::SharedCores)
    }

    /// Whether it is reclaimed.
    pub fn is_reclaimed(&self) -> bool {
        self.level() == KatalystQoSLevel::ReclaimedCores
    }

    /// Whether the manager may evict it at all.
    pub fn evictable(&self) -> bool {
        !self.critical
            && !matches!(
                self.level(),
                KatalystQoSLevel::SystemCores | KatalystQoSLevel::DedicatedCores
            )
    }
}

/// Ranks `pods` the way the memory plugins do: reclaimed first, lower
/// priority first, then larger `usage` first, then name.
pub fn rank_by_usage(pods: &mut [&EvictionPod], usage: impl Fn(&EvictionPod) -> u64) {
    pods.sort_by(|a, b| {
        b.is_reclaimed()
            .cmp(&a.is_reclaimed())
            .then(a.priority.cmp(&b.priority))
            .then(usage(b).cmp(&usage(a)))
            .then(a.key.cmp(&b.key))
    });
}

/// A plugin's verdict for one cycle.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// The plugin.
    pub plugin: &'static str,
    /// How far the threshold is met.
    pub met: Met,
    /// The figure compared.
    pub observed: f64,
    /// The threshold it was compared with.
    pub threshold: f64,
    /// The resource.
    pub scope: Scope,
    /// How long it must be met before it counts.
    #[serde(skip)]
    pub grace: Duration,
    /// Why, with the numbers.
    pub reason: String,
    /// The node condition it reports while met (`MemoryPressure`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<&'static str>,
    /// Candidates by UID, best victim first.
    pub candidates: Vec<String>,
}

impl Verdict {
    /// A verdict that is not met.
    pub fn not_met(plugin: &'static str, scope: Scope, reason: impl Into<String>) -> Verdict {
        Verdict {
            plugin,
            met: Met::NotMet,
            observed: 0.0,
            threshold: 0.0,
            scope,
            grace: Duration::ZERO,
            reason: reason.into(),
            condition: None,
            candidates: Vec::new(),
        }
    }
}

/// What the plugins look at.
#[derive(Debug, Clone, Copy)]
pub struct EvictionInput<'a> {
    /// Now.
    pub now: Timestamp,
    /// The node's active pods.
    pub pods: &'a [EvictionPod],
    /// System memory figures.
    pub system_memory: Option<&'a system_memory::SystemMemory>,
    /// Per-NUMA memory figures.
    pub numa_memory: &'a [numa_memory::NumaMemory],
    /// Shared pools' CPUs (for the load plugin).
    pub pools: &'a BTreeMap<String, CpuSet>,
}

/// What the plugins and the manager remember between cycles.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EvictionState {
    /// Since when each plugin's threshold has been met.
    pub met_since: BTreeMap<&'static str, Timestamp>,
    /// Each plugin's last eviction.
    pub last_eviction: BTreeMap<&'static str, Timestamp>,
    /// The system memory plugin's PSI episode start.
    pub psi_since: Option<Timestamp>,
    /// The NUMA memory plugin's counter per node.
    pub numa_counters: BTreeMap<u32, u32>,
    /// The load plugin's samples per pool: (load, pool size).
    pub load_samples: BTreeMap<String, Vec<(f64, usize)>>,
    /// The load plugin's summed load history per pod UID.
    pub load_history: BTreeMap<String, f64>,
}

/// A plugin.
pub trait EvictionPlugin {
    /// Its name.
    fn name(&self) -> &'static str;
    /// Its verdict; it may update its part of `state`.
    fn threshold_met(&self, input: &EvictionInput<'_>, state: &mut EvictionState) -> Verdict;
}

/// One eviction decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Victim {
    /// UID.
    pub uid: String,
    /// `namespace/name`.
    pub pod: String,
    /// The plugin.
    pub plugin: &'static str,
    /// Hard (forced) or the cycle's soft pick.
    pub force: bool,
    /// Why.
    pub reason: String,
}

/// A cycle's decisions.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvictionPlan {
    /// Every plugin's verdict.
    pub verdicts: Vec<Verdict>,
    /// Evict these now.
    pub evict: Vec<Victim>,
    /// Held back by the burst limit.
    pub held_back: Vec<Victim>,
    /// Node conditions currently met.
    pub conditions: Vec<&'static str>,
}

fn elapsed(now: Timestamp, since: Timestamp) -> Duration {
    let ms = now.as_millisecond().saturating_sub(since.as_millisecond());
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Runs one cycle of the manager.
pub fn run(
    plugins: &[&dyn EvictionPlugin],
    input: &EvictionInput<'_>,
    previous: &EvictionState,
    burst: usize,
) -> (EvictionPlan, EvictionState) {
    let mut state = previous.clone();
    let mut plan = EvictionPlan::default();
    let by_uid: BTreeMap<&str, &EvictionPod> =
        input.pods.iter().map(|p| (p.uid.as_str(), p)).collect();
    let valid = |uid: &String| by_uid.get(uid.as_str()).filter(|p| p.evictable()).copied();
    let mut force: Vec<Victim> = Vec::new();
    let mut soft: Vec<(&EvictionPod, Scope, &'static str, String)> = Vec::new();
    for plugin in plugins {
        let v = plugin.threshold_met(input, &mut state);
        let counted = if v.met == Met::NotMet {
            state.met_since.remove(v.plugin);
            false
        } else {
            let since = *state.met_since.entry(v.plugin).or_insert(input.now);
            if let Some(c) = v.condition {
                plan.conditions.push(c);
            }
            elapsed(input.now, since) >= v.grace
        };
        if counted && v.met == Met::HardMet {
            // The first valid candidate another plugin did not take already.
            let fresh = |p: &&EvictionPod| !force.iter().any(|f| f.uid == p.uid);
            if let Some(p) = v.candidates.iter().filter_map(valid).find(fresh) {
                let reason = v.reason.clone();
                force.push(Victim {
                    uid: p.uid.clone(),
                    pod: p.key.clone(),
                    plugin: v.plugin,
                    force: true,
                    reason,
                });
            }
        } else if counted {
            soft.extend(
                v.candidates
                    .iter()
                    .filter_map(valid)
                    .map(|p| (p, v.scope, v.plugin, v.reason.clone())),
            );
        }
        plan.verdicts.push(v);
    }
    soft.retain(|(p, ..)| !force.iter().any(|f| f.uid == p.uid));
    soft.sort_by(|(a, sa, ..), (b, sb, ..)| {
        a.is_reclaimed()
            .cmp(&b.is_reclaimed())
            .then(b.priority.cmp(&a.priority))
            .then(sa.cmp(sb))
            .then(b.key.cmp(&a.key))
    });
    if let Some((p, _, plugin, reason)) = soft.pop() {
        force.push(Victim { uid: p.uid.clone(), pod: p.key.clone(), plugin, force: false, reason });
    }
    let held = force.split_off(burst.min(force.len()));
    for v in &force {
        state.last_eviction.insert(v.plugin, input.now);
    }
    plan.evict = force;
    plan.held_back = held;
    (plan, state)
}

#[cfg(test)]
mod tests;
