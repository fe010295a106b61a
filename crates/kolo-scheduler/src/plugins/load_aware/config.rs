//! [`LoadAwareConfig`]: the validated arguments compiled once, when the
//! plugin is built, into the vectors Filter and Score read.

use std::time::Duration;

use k8s_openapi::jiff::SignedDuration;
use kolo_api::crd::AggregationType;
use kolo_core::pod::PodView;
use kolo_core::resources::ResourceName;

use super::args::{LoadAwareArgsError, LoadAwareSchedulingArgs, parse_aggregation_type};
use super::estimator::{EstimationAnnotationError, estimate_pod};
use super::vector::{LoadVector, ResourceLayout};

/// An aggregated-usage threshold block: Filter compares this statistic of
/// the node usage, over this window, with these thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggregatedThresholds {
    /// The statistic (`p95`, ...).
    pub aggregation: AggregationType,
    /// The window; zero means the largest window the node reports.
    pub duration: Duration,
    /// Percent per resource, in layout order; 0 disables a resource.
    pub thresholds: LoadVector,
}

/// The plugin's arguments, defaulted, validated and vectorised.
///
/// Build it once per plugin instance; every decision takes it by reference.
#[derive(Debug, Clone)]
pub struct LoadAwareConfig {
    args: LoadAwareSchedulingArgs,
    layout: ResourceLayout,
    usage_thresholds: LoadVector,
    prod_thresholds: LoadVector,
    aggregated: Option<AggregatedThresholds>,
    score_aggregation: Option<(AggregationType, Duration)>,
    weights: LoadVector,
    expiration: SignedDuration,
}

impl LoadAwareConfig {
    /// Applies the defaults, validates, and lays out the plugin's
    /// resources (spec §1.2).
    pub fn new(args: LoadAwareSchedulingArgs) -> Result<LoadAwareConfig, LoadAwareArgsError> {
        let args = args.defaulted();
        args.validate()?;

        let mut names = vec![ResourceName::Cpu, ResourceName::Memory];
        let mut add = |field: &'static str, name: &str| {
            ResourceName::parse(name)
                .map(|n| names.push(n))
                .map_err(|error| LoadAwareArgsError::Resource { field, error })
        };
        for name in args.usage_thresholds.keys() {
            add("usageThresholds", name)?;
        }
        for name in args.prod_usage_thresholds.keys() {
            add("prodUsageThresholds", name)?;
        }
        if let Some(agg) = &args.aggregated {
            for name in agg.usage_thresholds.keys() {
                add("aggregated.usageThresholds", name)?;
            }
        }
        for name in args.resource_weights.keys() {
            add("resourceWeights", name)?;
        }
        for name in args.estimated_scaling_factors.keys() {
            add("estimatedScalingFactors", name)?;
        }
        for name in &args.supported_resources {
            add("supportedResources", name)?;
        }
        let layout = ResourceLayout::new(names)?;

        let aggregated = args.aggregated.as_ref().and_then(|agg| {
            // A block counts only with both a statistic and thresholds, the
            // rule the reference applies to the node annotation's block
            // (spec §1.5 step 2); applied to the arguments too so that a
            // lone `usageAggregationType` cannot switch Filter off.
            let aggregation = parse_aggregation_type(&agg.usage_aggregation_type)?;
            let thresholds = layout.vector_from_ints(&agg.usage_thresholds);
            (!agg.usage_thresholds.is_empty()).then_some(AggregatedThresholds {
                aggregation,
                duration: agg.usage_aggregated_duration,
                thresholds,
            })
        });
        let score_aggregation = args.aggregated.as_ref().and_then(|agg| {
            parse_aggregation_type(&agg.score_aggregation_type)
                .map(|t| (t, agg.score_aggregated_duration))
        });

        Ok(LoadAwareConfig {
            usage_thresholds: layout.vector_from_ints(&args.usage_thresholds),
            prod_thresholds: layout.vector_from_ints(&args.prod_usage_thresholds),
            weights: layout.vector_from_ints(&args.resource_weights),
            expiration: SignedDuration::from_secs(args.node_metric_expiration_seconds),
            aggregated,
            score_aggregation,
            layout,
            args,
        })
    }

    /// The defaulted arguments.
    pub fn args(&self) -> &LoadAwareSchedulingArgs {
        &self.args
    }

    /// The plugin's resources in vector order.
    pub fn layout(&self) -> &ResourceLayout {
        &self.layout
    }

    /// `usageThresholds` in layout order.
    pub fn usage_thresholds(&self) -> &LoadVector {
        &self.usage_thresholds
    }

    /// `prodUsageThresholds` in layout order (all zero when unset).
    pub fn prod_thresholds(&self) -> &LoadVector {
        &self.prod_thresholds
    }

    /// The aggregated Filter block, if configured.
    pub fn aggregated(&self) -> Option<&AggregatedThresholds> {
        self.aggregated.as_ref()
    }

    /// The statistic and window Score reads, if configured.
    pub fn score_aggregation(&self) -> Option<(AggregationType, Duration)> {
        self.score_aggregation
    }

    /// `resourceWeights` in layout order (0 for unweighted resources).
    pub fn weights(&self) -> &LoadVector {
        &self.weights
    }

    /// `nodeMetricExpirationSeconds`.
    pub fn expiration(&self) -> SignedDuration {
        self.expiration
    }

    /// The estimate of `pod` (spec §1.3) in layout order, and the problem
    /// with its estimation annotation if there is one (the arguments were
    /// used instead).
    pub fn estimate_pod(&self, pod: &PodView) -> (LoadVector, Option<EstimationAnnotationError>) {
        let estimate = estimate_pod(pod, &self.args);
        (self.layout.vector(&estimate.resources), estimate.annotation_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_collects_every_named_resource() {
        let args: LoadAwareSchedulingArgs = serde_json::from_str(
            r#"{"usageThresholds": {"cpu": 70, "ephemeral-storage": 80},
                "estimatedScalingFactors": {"kubernetes.io/batch-cpu": 50},
                "supportedResources": ["pods"],
                "aggregated": {"usageThresholds": {"memory": 90}, "usageAggregationType": "p95"}}"#,
        )
        .unwrap();
        let cfg = LoadAwareConfig::new(args).unwrap();
        let names: Vec<&str> = cfg.layout().names().iter().map(|n| n.as_str()).collect();
        assert_eq!(
            names,
            ["cpu", "ephemeral-storage", "kubernetes.io/batch-cpu", "memory", "pods"]
        );
        assert_eq!(cfg.usage_thresholds().0[..5], [70, 80, 0, 0, 0]);
        assert_eq!(cfg.weights().0[..5], [1, 0, 0, 1, 0]);
        let agg = cfg.aggregated().unwrap();
        assert_eq!(agg.aggregation, AggregationType::P95);
        assert_eq!(agg.duration, Duration::ZERO);
        assert_eq!(agg.thresholds.0[..5], [0, 0, 0, 90, 0]);
        assert_eq!(cfg.score_aggregation(), None);
    }

    #[test]
    fn aggregated_block_needs_type_and_thresholds() {
        for json in [
            r#"{"aggregated": {"usageAggregationType": "p95"}}"#,
            r#"{"aggregated": {"usageThresholds": {"cpu": 50}}}"#,
        ] {
            let args: LoadAwareSchedulingArgs = serde_json::from_str(json).unwrap();
            assert!(LoadAwareConfig::new(args).unwrap().aggregated().is_none(), "{json}");
        }
    }

    #[test]
    fn invalid_arguments_are_refused() {
        let args: LoadAwareSchedulingArgs =
            serde_json::from_str(r#"{"resourceWeights": {"cpu": 0}}"#).unwrap();
        assert!(LoadAwareConfig::new(args).is_err());
    }
}
