//! The resource advisor (spec §2): from the pods, what they use and the
//! previous cycle's state, the pools' sizes and the reclaimed resources.
//!
//! One cycle ([`advise`]):
//!
//! 1. the reserve pool and the dedicated allocations ([`crate::katalyst::dedicated`]);
//! 2. regions and essentials ([`region`]);
//! 3. each region's requirement by the `canonical` policy ([`canonical`]);
//! 4. the regulator ([`regulator`]) → each region's size;
//! 5. the assembler ([`assembler`]) → pool sizes and reclaimed overlaps;
//! 6. the pools laid out on CPUs ([`crate::katalyst::pools`]);
//! 7. CPU and memory headroom ([`cpu_headroom`], [`memory_headroom`]) →
//!    `reclaimed_millicpu`, `reclaimed_memory`.
//!
//! Everything a cycle carries to the next is [`AdvisorState`], returned
//! with the [`Advice`]: no clock, no I/O.

use std::collections::{BTreeMap, BTreeSet};

use kolo_core::clock::Timestamp;
use kolo_core::cpuset::CpuSet;
use serde::Serialize;

use super::config::KatalystConfig;
use super::dedicated::{DedicatedCheckpoint, DedicatedOutcome, allocate};
use super::machine::Machine;
use super::pod::KPod;
use super::pools::{Pools, build, reserve_pool, unbound_numas};

pub mod assembler;
pub mod canonical;
pub mod cpu_headroom;
pub mod memory_headroom;
pub mod region;
pub mod regulator;

use assembler::{Assembly, Sized, assemble};
use canonical::{Estimate, requirement};
use cpu_headroom::{CpuHeadroom, CpuMeasurements, cpu_headroom};
use memory_headroom::{MemoryHeadroom, memory_headroom};
use region::{Essentials, RegionKind, regions};
use regulator::{Regulated, RegulatorState, regulate};

/// What one cycle hands the next.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AdvisorState {
    /// The dedicated allocations (the act side persists them).
    pub dedicated: DedicatedCheckpoint,
    /// Each region's regulator state, by region name.
    pub regulators: BTreeMap<String, RegulatorState>,
    /// The shared pools' CPUs.
    pub shared: BTreeMap<String, CpuSet>,
}

/// The inputs of a cycle.
#[derive(Debug, Clone, Copy)]
pub struct AdvisorInput<'a> {
    /// The machine.
    pub machine: &'a Machine,
    /// The configuration.
    pub cfg: &'a KatalystConfig,
    /// The node's running pods.
    pub pods: &'a [KPod],
    /// What was measured for the CPU headroom.
    pub measurements: &'a CpuMeasurements,
    /// The previous cycle's state.
    pub previous: &'a AdvisorState,
    /// Now.
    pub now: Timestamp,
}

/// One region's figures, as `kolo agent plan` shows them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RegionAdvice {
    /// The region's name.
    pub name: String,
    /// NUMA nodes.
    pub numas: Vec<u32>,
    /// Its pods' estimates, by `namespace/name`.
    pub estimates: BTreeMap<String, Estimate>,
    /// Σ requests, cores.
    pub request: f64,
    /// The canonical requirement (Σ estimates), cores.
    pub requirement: f64,
    /// Bounds, CPUs.
    pub lower: f64,
    /// Upper bound, CPUs.
    pub upper: f64,
    /// ReservedForAllocate, CPUs.
    pub reserved_for_allocate: f64,
    /// The regulator's steps and the size.
    pub regulated: Regulated,
}

/// A cycle's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    /// The dedicated allocation round (refusals included).
    pub dedicated: DedicatedOutcome,
    /// Per-node essentials.
    pub essentials: Essentials,
    /// Each region.
    pub regions: Vec<RegionAdvice>,
    /// The assembler's result.
    pub assembly: Assembly,
    /// The pools.
    pub pools: Pools,
    /// `reclaimed_millicpu`.
    pub cpu: CpuHeadroom,
    /// `reclaimed_memory`.
    pub memory: MemoryHeadroom,
    /// For the next cycle.
    pub state: AdvisorState,
}

/// Runs one cycle.
pub fn advise(input: AdvisorInput<'_>) -> Advice {
    let AdvisorInput { machine, cfg, pods, measurements, previous, now } = input;
    let reserve = reserve_pool(machine, cfg.reserved_cpus);
    let dedicated = allocate(machine, &reserve, &previous.dedicated, pods);
    let checkpoint = &dedicated.checkpoint;
    let ess = Essentials::new(machine, &reserve, cfg);
    let regions = regions(machine, cfg, &ess, pods, checkpoint);
    let by_uid: BTreeMap<&str, &KPod> = pods.iter().map(|p| (p.uid.as_str(), p)).collect();
    let even = machine.smt() && !cfg.allow_shared_overlap_reclaimed;
    let mut state = AdvisorState { dedicated: checkpoint.clone(), ..AdvisorState::default() };
    let mut advice = Vec::new();
    for r in &regions {
        let (req, estimates) = requirement(r, &by_uid, cfg, &ess, checkpoint);
        let prev = previous.regulators.get(&r.name).copied().unwrap_or_default();
        let regulated = regulate(req, r, even, prev, now, cfg);
        state.regulators.insert(r.name.clone(), regulated.state);
        let estimates =
            estimates.into_iter().map(|(uid, e)| (by_uid[uid.as_str()].key.clone(), e)).collect();
        advice.push(RegionAdvice {
            name: r.name.clone(),
            numas: r.numas.clone(),
            estimates,
            request: r.request,
            requirement: req,
            lower: r.lower,
            upper: r.upper,
            reserved_for_allocate: r.reserved_for_allocate,
            regulated,
        });
    }
    let sized: Vec<Sized<'_>> = regions
        .iter()
        .zip(&advice)
        .map(|(region, a)| Sized { region, size: a.regulated.size })
        .collect();
    let unbound = unbound_numas(machine, checkpoint);
    let assembly = assemble(cfg, &ess, &unbound, &sized);
    let pools = build(machine, &reserve, checkpoint, &assembly.targets, &previous.shared);
    state.shared = pools.shared.clone();
    let disabled: BTreeSet<u32> = regions
        .iter()
        .filter(|r| matches!(r.kind, RegionKind::Dedicated { exclusive: true, .. }))
        .filter(|r| !r.reclaim_allowed)
        .flat_map(|r| r.numas.clone())
        .collect();
    let cpu = cpu_headroom(cfg, machine, &pools, measurements, &disabled);
    let memory = memory_headroom(cfg, machine, pods, checkpoint);
    Advice { dedicated, essentials: ess, regions: advice, assembly, pools, cpu, memory, state }
}

#[cfg(test)]
mod tests;
