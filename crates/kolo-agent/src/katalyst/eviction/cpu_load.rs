//! CPU pressure by load on the shared pools (spec §4.2, Katalyst's QRM
//! `cpu-pressure-load-plugin`), the pressure reclaimed pods put on the
//! pools they overlap.
//!
//! Every cycle, per shared pool: the Σ 1-minute load of the pods running
//! on its CPUs goes into a ring of 10 samples, each with the pool's size
//! then. If at least 8 of the 10 exceed `size × 1.8` ⇒ hard-met; if at
//! least 8 exceed `size × 1.0` ⇒ soft-met; both report the node condition
//! `CPUPressure`. Candidates: the pods on the pool's CPUs, reclaimed first,
//! then by their summed load over the samples, largest first. At most one
//! hard eviction per 300 s. The reserve, dedicated and reclaim pools are
//! not watched (as in Katalyst), nor is Katalyst's "advised threshold"
//! mode implemented.

use std::cmp::Ordering;
use std::time::Duration;

use super::{
    EvictionInput, EvictionPlugin, EvictionPod, EvictionState, Met, Scope, Verdict, elapsed,
};

/// The plugin's name.
pub const NAME: &str = "cpu-pressure-load";

/// Samples kept per pool.
pub const RING: usize = 10;
/// Samples (of [`RING`]) over a bound that meet it (80 %).
pub const MET_SAMPLES: usize = 8;
/// Hard bound: load above `size × 1.8`.
pub const UPPER_RATIO: f64 = 1.8;
/// Soft bound: load above `size × 1.0`.
pub const LOWER_RATIO: f64 = 1.0;
/// Between two hard evictions.
pub const COOL_DOWN: Duration = Duration::from_secs(300);

/// The plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuLoadPressure;

impl EvictionPlugin for CpuLoadPressure {
    fn name(&self) -> &'static str {
        NAME
    }

    fn threshold_met(&self, input: &EvictionInput<'_>, state: &mut EvictionState) -> Verdict {
        let mut best: Option<(Met, String, f64, f64, Vec<&EvictionPod>)> = None;
        for (name, cpus) in input.pools {
            let on_pool: Vec<&EvictionPod> =
                input.pods.iter().filter(|p| p.cpus.intersects(cpus)).collect();
            let load: f64 = on_pool.iter().map(|p| p.load_1min).sum();
            let ring = state.load_samples.entry(name.clone()).or_default();
            ring.push((load, cpus.len()));
            if ring.len() > RING {
                ring.remove(0);
            }
            let over =
                |ratio: f64| ring.iter().filter(|(l, size)| *l > *size as f64 * ratio).count();
            let met = if over(UPPER_RATIO) >= MET_SAMPLES {
                Met::HardMet
            } else if over(LOWER_RATIO) >= MET_SAMPLES {
                Met::SoftMet
            } else {
                continue;
            };
            let ratio = if met == Met::HardMet { UPPER_RATIO } else { LOWER_RATIO };
            let reason = format!(
                "shared pool {name}: load {load:.2} on {} CPUs, {} of the last {} samples above × {ratio}",
                cpus.len(),
                over(ratio),
                ring.len()
            );
            let threshold = cpus.len() as f64 * ratio;
            if best.as_ref().is_none_or(|(m, ..)| met == Met::HardMet && *m != Met::HardMet) {
                best = Some((met, reason, load, threshold, on_pool));
            }
        }
        for p in input.pods {
            *state.load_history.entry(p.uid.clone()).or_default() += p.load_1min;
        }
        state.load_history.retain(|uid, _| input.pods.iter().any(|p| &p.uid == uid));
        let Some((mut met, mut reason, observed, threshold, mut pods)) = best else {
            return Verdict::not_met(NAME, Scope::Cpu, "no shared pool over its load bounds");
        };
        if met == Met::HardMet
            && state.last_eviction.get(NAME).is_some_and(|t| elapsed(input.now, *t) < COOL_DOWN)
        {
            met = Met::SoftMet;
            reason.push_str(" (hard eviction cooling down)");
        }
        let history = |p: &EvictionPod| state.load_history.get(&p.uid).copied().unwrap_or(0.0);
        pods.sort_by(|a, b| {
            b.is_reclaimed()
                .cmp(&a.is_reclaimed())
                .then(history(b).partial_cmp(&history(a)).unwrap_or(Ordering::Equal))
                .then(a.key.cmp(&b.key))
        });
        Verdict {
            plugin: NAME,
            met,
            observed,
            threshold,
            scope: Scope::Cpu,
            grace: Duration::ZERO,
            reason,
            condition: Some("CPUPressure"),
            candidates: pods.into_iter().map(|p| p.uid.clone()).collect(),
        }
    }
}
