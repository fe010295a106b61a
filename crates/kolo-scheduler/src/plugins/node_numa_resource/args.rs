//! [`NodeNUMAResourceArgs`]: the plugin's configuration (spec §6.1).

use kolo_core::resources::ResourceName;
use serde::{Deserialize, Serialize};

use super::annotations::{CpuBindPolicy, NumaAllocateStrategy};

/// The two resource scorers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ScoringStrategyType {
    /// Prefer emptier nodes: `(cap - req) * 100 / cap`.
    #[default]
    LeastAllocated,
    /// Prefer fuller nodes: `req * 100 / cap`.
    MostAllocated,
}

/// One weighted resource of a scoring strategy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceWeight {
    /// The resource name (`cpu`, `memory`, ...).
    pub name: String,
    /// Its weight, in `1..=100`.
    pub weight: i64,
}

/// `scoringStrategy` / `numaScoringStrategy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScoringStrategy {
    /// `type`.
    #[serde(rename = "type")]
    pub strategy_type: ScoringStrategyType,
    /// `resources`: what is scored, with weights.
    pub resources: Vec<ResourceWeight>,
}

impl Default for ScoringStrategy {
    /// LeastAllocated over cpu and memory, weight 1 each.
    fn default() -> Self {
        ScoringStrategy {
            strategy_type: ScoringStrategyType::LeastAllocated,
            resources: vec![
                ResourceWeight { name: "cpu".to_owned(), weight: 1 },
                ResourceWeight { name: "memory".to_owned(), weight: 1 },
            ],
        }
    }
}

/// The configuration of NodeNUMAResource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeNUMAResourceArgs {
    /// `defaultCPUBindPolicy`: what `Default` (or no policy) means for an
    /// LSE/LSR pod. `""` in the configuration reads as FullPCPUs.
    #[serde(rename = "defaultCPUBindPolicy", deserialize_with = "default_bind_policy")]
    pub default_cpu_bind_policy: CpuBindPolicy,
    /// `scoringStrategy`: the node scorer, and (§10.12) the weights of the
    /// NUMA scorer too.
    #[serde(rename = "scoringStrategy")]
    pub scoring_strategy: ScoringStrategy,
    /// `numaScoringStrategy`: only its `type` is used (§10.12).
    #[serde(rename = "numaScoringStrategy")]
    pub numa_scoring_strategy: ScoringStrategy,
}

impl Default for NodeNUMAResourceArgs {
    fn default() -> Self {
        NodeNUMAResourceArgs {
            default_cpu_bind_policy: CpuBindPolicy::FullPCPUs,
            scoring_strategy: ScoringStrategy::default(),
            numa_scoring_strategy: ScoringStrategy::default(),
        }
    }
}

fn default_bind_policy<'de, D: serde::Deserializer<'de>>(d: D) -> Result<CpuBindPolicy, D::Error> {
    let text = String::deserialize(d)?;
    if text.is_empty() {
        return Ok(CpuBindPolicy::FullPCPUs);
    }
    CpuBindPolicy::parse(&text).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown CPU bind policy {text:?} (expected one of {})",
            CpuBindPolicy::expected()
        ))
    })
}

/// An invalid configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// `defaultCPUBindPolicy` is not FullPCPUs or SpreadByPCPUs.
    #[error("defaultCPUBindPolicy: {0} is not allowed (expected FullPCPUs or SpreadByPCPUs)")]
    DefaultCpuBindPolicy(CpuBindPolicy),
    /// A weight outside `1..=100`.
    #[error("{strategy}.resources[{index}] ({name}): weight {weight} is outside 1..=100")]
    Weight {
        /// `scoringStrategy` or `numaScoringStrategy`.
        strategy: &'static str,
        /// Position in `resources`.
        index: usize,
        /// The resource.
        name: String,
        /// The weight given.
        weight: i64,
    },
    /// A resource name that is not a valid resource.
    #[error("{strategy}.resources[{index}]: invalid resource name {name:?}")]
    ResourceName {
        /// `scoringStrategy` or `numaScoringStrategy`.
        strategy: &'static str,
        /// Position in `resources`.
        index: usize,
        /// The name given.
        name: String,
    },
}

impl NodeNUMAResourceArgs {
    /// Checks the configuration: the default bind policy, and every weight
    /// in `1..=100` with a non-empty resource name.
    pub fn validate(&self) -> Result<(), ArgsError> {
        if !self.default_cpu_bind_policy.binds_cpus() {
            return Err(ArgsError::DefaultCpuBindPolicy(self.default_cpu_bind_policy));
        }
        for (strategy, s) in [
            ("scoringStrategy", &self.scoring_strategy),
            ("numaScoringStrategy", &self.numa_scoring_strategy),
        ] {
            for (index, r) in s.resources.iter().enumerate() {
                if r.name.is_empty() {
                    return Err(ArgsError::ResourceName { strategy, index, name: r.name.clone() });
                }
                if !(1..=100).contains(&r.weight) {
                    return Err(ArgsError::Weight {
                        strategy,
                        index,
                        name: r.name.clone(),
                        weight: r.weight,
                    });
                }
            }
        }
        Ok(())
    }

    /// The cluster-wide NUMA allocate strategy: MostAllocated when
    /// `numaScoringStrategy.type` is, else LeastAllocated. A node label
    /// overrides it per node.
    pub fn numa_allocate_strategy(&self) -> NumaAllocateStrategy {
        match self.numa_scoring_strategy.strategy_type {
            ScoringStrategyType::MostAllocated => NumaAllocateStrategy::MostAllocated,
            ScoringStrategyType::LeastAllocated => NumaAllocateStrategy::LeastAllocated,
        }
    }

    /// The scoring weights resolved to resource names (§10.12: both scorers
    /// use `scoringStrategy`'s). A name this process never saw cannot be in
    /// any vector, so it scores as a resource nobody has and is skipped.
    pub fn weights(&self) -> Vec<(ResourceName, i64)> {
        self.scoring_strategy
            .resources
            .iter()
            .filter_map(|r| ResourceName::lookup(&r.name).map(|n| (n, r.weight)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let args: NodeNUMAResourceArgs = serde_json::from_str("{}").unwrap();
        assert_eq!(args, NodeNUMAResourceArgs::default());
        assert_eq!(args.default_cpu_bind_policy, CpuBindPolicy::FullPCPUs);
        assert_eq!(args.numa_allocate_strategy(), NumaAllocateStrategy::LeastAllocated);
        assert_eq!(args.weights(), vec![(ResourceName::Cpu, 1), (ResourceName::Memory, 1)]);
        args.validate().unwrap();
        let args: NodeNUMAResourceArgs =
            serde_json::from_str(r#"{"defaultCPUBindPolicy":""}"#).unwrap();
        assert_eq!(args.default_cpu_bind_policy, CpuBindPolicy::FullPCPUs);
    }

    #[test]
    fn parse_and_validate() {
        let args: NodeNUMAResourceArgs = serde_json::from_str(
            r#"{"defaultCPUBindPolicy":"SpreadByPCPUs",
                "scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":3}]},
                "numaScoringStrategy":{"type":"MostAllocated"}}"#,
        )
        .unwrap();
        args.validate().unwrap();
        assert_eq!(args.numa_allocate_strategy(), NumaAllocateStrategy::MostAllocated);
        assert_eq!(args.numa_scoring_strategy.resources.len(), 2, "defaulted");
        assert_eq!(args.weights(), vec![(ResourceName::Cpu, 3)]);

        let mut bad = args.clone();
        bad.default_cpu_bind_policy = CpuBindPolicy::ConstrainedBurst;
        assert!(bad.validate().unwrap_err().to_string().contains("ConstrainedBurst"));
        let mut bad = args.clone();
        bad.scoring_strategy.resources[0].weight = 101;
        assert_eq!(
            bad.validate().unwrap_err().to_string(),
            "scoringStrategy.resources[0] (cpu): weight 101 is outside 1..=100"
        );
        let mut bad = args;
        bad.numa_scoring_strategy.resources[1].weight = 0;
        assert!(bad.validate().unwrap_err().to_string().starts_with("numaScoringStrategy"));
        assert!(
            serde_json::from_str::<NodeNUMAResourceArgs>(r#"{"defaultCPUBindPolicy":"Full"}"#)
                .is_err()
        );
    }
}
