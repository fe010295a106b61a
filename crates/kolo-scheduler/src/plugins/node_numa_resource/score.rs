//! The resource scorers (spec §6.8): Kubernetes' LeastAllocated and
//! MostAllocated, weighted, with integer arithmetic.

use kolo_core::resources::{ResourceName, ResourceVector};

use super::args::ScoringStrategyType;

/// `MaxNodeScore`.
pub const MAX_NODE_SCORE: i64 = 100;

/// One resource's score: LeastAllocated `(cap - req) * 100 / cap` (0 when
/// the request exceeds the capacity), MostAllocated `req * 100 / cap` with
/// the request capped at the capacity. 0 for a zero capacity.
pub fn resource_score(kind: ScoringStrategyType, requested: i64, capacity: i64) -> i64 {
    if capacity <= 0 {
        return 0;
    }
    // i128: `requested * 100` overflows i64 for byte amounts above 92 PB.
    let (req, cap) = (i128::from(requested.max(0)), i128::from(capacity));
    let score = match kind {
        ScoringStrategyType::LeastAllocated if req > cap => 0,
        ScoringStrategyType::LeastAllocated => (cap - req) * i128::from(MAX_NODE_SCORE) / cap,
        ScoringStrategyType::MostAllocated => req.min(cap) * i128::from(MAX_NODE_SCORE) / cap,
    };
    score as i64
}

/// The weighted mean of [`resource_score`] over `weights`, integer
/// division. Like kube-scheduler, resources with no capacity are left out of
/// the mean rather than scoring 0; no scorable resource scores 0.
pub fn weighted_score(
    kind: ScoringStrategyType,
    weights: &[(ResourceName, i64)],
    requested: &ResourceVector,
    capacity: &ResourceVector,
) -> i64 {
    weighted_score_of(kind, weights, &|name| requested.value(name), capacity)
}

/// [`weighted_score`] with the requested amounts given per resource.
pub fn weighted_score_of(
    kind: ScoringStrategyType,
    weights: &[(ResourceName, i64)],
    requested: &dyn Fn(ResourceName) -> i64,
    capacity: &ResourceVector,
) -> i64 {
    let (mut sum, mut weight_sum) = (0i64, 0i64);
    for &(name, weight) in weights {
        let cap = capacity.value(name);
        if cap <= 0 {
            continue;
        }
        sum += resource_score(kind, requested(name), cap) * weight;
        weight_sum += weight;
    }
    if weight_sum == 0 { 0 } else { sum / weight_sum }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScoringStrategyType::{LeastAllocated, MostAllocated};

    #[test]
    fn formulas() {
        assert_eq!(resource_score(LeastAllocated, 3000, 8000), 62);
        assert_eq!(resource_score(MostAllocated, 3000, 8000), 37);
        assert_eq!(resource_score(LeastAllocated, 9000, 8000), 0);
        assert_eq!(resource_score(MostAllocated, 9000, 8000), 100);
        assert_eq!(resource_score(MostAllocated, 1, 0), 0);
        assert_eq!(resource_score(LeastAllocated, i64::MAX, i64::MAX), 0);
        let w = [(ResourceName::Cpu, 3), (ResourceName::Memory, 1)];
        let req = ResourceVector::cpu_memory(3000, 1 << 30);
        let cap = ResourceVector::cpu_memory(8000, 4 << 30);
        // (62*3 + 75*1) / 4 = 261/4 = 65.
        assert_eq!(weighted_score(LeastAllocated, &w, &req, &cap), 65);
        let cpu_only = ResourceVector::cpu_memory(8000, 0);
        assert_eq!(weighted_score(LeastAllocated, &w, &req, &cpu_only), 62);
        assert_eq!(weighted_score(LeastAllocated, &[], &req, &cap), 0);
    }
}
