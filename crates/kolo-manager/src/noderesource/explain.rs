//! The formulas of a [`NodeResource`] written out with their numbers, one
//! line per published resource (plus the steps that changed it), for logs,
//! events and `kolo noderesource`.
//!
//! ```text
//! batch-cpu (cores): capacity 100.00 - safety margin 35.00 - max(system used 7.00, node reserved 0.00) - HP used 33.00 = 25.00 [usage]
//! ```

use super::NodeResource;
use super::amount::CpuMem;
use super::batch::BatchTerms;
use super::mid::{MidMode, MidTerms};
use crate::config::CalculatePolicy;

/// How amounts are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    /// Exact integers: CPU in milli-cores, memory in bytes.
    Exact,
    /// For people: CPU in cores, memory in GiB, two decimals.
    Human,
}

impl Units {
    /// An amount of CPU (milli-cores in).
    pub fn cpu(self, milli: i64) -> String {
        match self {
            Units::Exact => milli.to_string(),
            Units::Human => format!("{:.2}", milli as f64 / 1000.0),
        }
    }

    /// An amount of memory (bytes in).
    pub fn memory(self, bytes: i64) -> String {
        match self {
            Units::Exact => bytes.to_string(),
            Units::Human => format!("{:.2}", bytes as f64 / (1u64 << 30) as f64),
        }
    }

    fn amount(self, cpu: bool, v: i64) -> String {
        if cpu { self.cpu(v) } else { self.memory(v) }
    }

    fn cpu_unit(self) -> &'static str {
        match self {
            Units::Exact => "milli-cores",
            Units::Human => "cores",
        }
    }

    fn memory_unit(self) -> &'static str {
        match self {
            Units::Exact => "bytes",
            Units::Human => "GiB",
        }
    }
}

fn pick(v: CpuMem, cpu: bool) -> i64 {
    if cpu { v.cpu } else { v.memory }
}

/// The lines explaining `result`.
pub fn explain(result: &NodeResource, units: Units) -> Vec<String> {
    if let Some(reason) = &result.reset {
        return vec![format!("batch and mid withdrawn: {reason}")];
    }
    let mut lines = Vec::new();
    if let Some(batch) = &result.batch {
        explain_batch(batch, units, &mut lines);
    }
    if let Some(mid) = &result.mid {
        explain_mid(mid, units, &mut lines);
    }
    lines
}

fn explain_batch(b: &BatchTerms, u: Units, lines: &mut Vec<String>) {
    for cpu in [true, false] {
        let (name, unit) =
            if cpu { ("batch-cpu", u.cpu_unit()) } else { ("batch-memory", u.memory_unit()) };
        let a = |v: CpuMem| u.amount(cpu, pick(v, cpu));
        let policy = if cpu { b.cpu_policy } else { b.memory_policy };
        let (subtracted, raw) = match policy {
            CalculatePolicy::Usage => (
                format!(
                    "max(system used {}, node reserved {}) - HP used {}",
                    a(b.system_used),
                    a(b.node_reserved),
                    a(b.hp_used)
                ),
                b.capacity - b.safety_margin - b.sys_used_or_reserved - b.hp_used,
            ),
            CalculatePolicy::Request => (
                format!("node reserved {} - HP request {}", a(b.node_reserved), a(b.hp_request)),
                b.capacity - b.safety_margin - b.node_reserved - b.hp_request,
            ),
            CalculatePolicy::MaxUsageRequest => (
                format!(
                    "max(system used {}, node reserved {}) - HP max(used, request) {}",
                    a(b.system_used),
                    a(b.node_reserved),
                    a(b.hp_max_used_request)
                ),
                b.capacity - b.safety_margin - b.sys_used_or_reserved - b.hp_max_used_request,
            ),
        };
        let value = pick(b.by_policy, cpu);
        let clamped =
            if pick(raw, cpu) < 0 { format!(" (clamped from {})", a(raw)) } else { String::new() };
        lines.push(format!(
            "{name} ({unit}): capacity {} - safety margin {} - {subtracted} = {}{clamped} [{}]",
            a(b.capacity),
            a(b.safety_margin),
            u.amount(cpu, value),
            policy.as_str(),
        ));
        let percent = if cpu { b.threshold_percent.cpu } else { b.threshold_percent.memory };
        let cap = if cpu { b.cap.cpu } else { b.cap.memory };
        if let (Some(p), Some(cap)) = (percent, cap) {
            lines.push(format!(
                "{name}: capped at {p}% of capacity: min({}, {}) = {}",
                u.amount(cpu, value),
                u.amount(cpu, cap),
                a(b.capped)
            ));
        }
        if let (true, Some(ratio)) = (cpu, b.cpu_normalization_ratio) {
            lines.push(format!(
                "{name}: {} x cpu-normalization-ratio {ratio} = {}",
                a(b.capped),
                a(b.result)
            ));
        }
    }
}

fn explain_mid(m: &MidTerms, u: Units, lines: &mut Vec<String>) {
    for cpu in [true, false] {
        let (name, unit) =
            if cpu { ("mid-cpu", u.cpu_unit()) } else { ("mid-memory", u.memory_unit()) };
        let a = |v: CpuMem| u.amount(cpu, pick(v, cpu));
        let cap_percent = if cpu { m.threshold_percent.cpu } else { m.threshold_percent.memory };
        let formula = match &m.mode {
            MidMode::Static(s) => {
                let p = if cpu { s.reserved_percent.cpu } else { s.reserved_percent.memory };
                format!("static: capacity {} x {p}% = {}", a(m.capacity), a(m.uncapped))
            }
            MidMode::Default(d) => {
                let unused = match d.node_usage {
                    Some(usage) => format!("capacity {} - node usage {}", a(m.capacity), a(usage)),
                    None => "node unused 0 (no node usage)".to_string(),
                };
                let reclaimable = match d.prod_reclaimable {
                    Some(r) => a(r),
                    None => "0 (not reported)".to_string(),
                };
                format!(
                    "max(min(prodReclaimable {reclaimable}, {unused}), 0) + unallocated {} x {}% = {}",
                    a(d.unallocated),
                    d.unallocated_percent,
                    a(m.uncapped)
                )
            }
        };
        lines.push(format!(
            "{name} ({unit}): {formula}; capped at {cap_percent}% of capacity ({}) = {}",
            a(m.cap),
            a(m.result)
        ));
        if let MidMode::Default(d) = &m.mode
            && pick(d.unallocated, cpu) > 0
            && d.unallocated_percent > 0
        {
            lines.push(format!(
                "{name}: unallocated = max(capacity {} - max(node reserved {}, system used {}) - prod requests {}, 0) = {}",
                a(m.capacity),
                a(d.node_reserved),
                a(d.system_used),
                a(d.prod_request),
                a(d.unallocated)
            ));
        }
    }
}
