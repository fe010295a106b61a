//! Policies: which components decide, with which configuration, and how BE
//! pods ask for resources.
//!
//! * `baseline` — Kubernetes defaults: BE pods request ordinary `cpu` /
//!   `memory`, the scheduler fits requests only (no load awareness, no
//!   overcommit), no manager, no agent; on the node, CFS shares in
//!   proportion to requests.
//! * `colocation` — kolo: BE pods are `koord-batch` / `BE` and request
//!   `kubernetes.io/batch-cpu` / `batch-memory`, which the manager's
//!   noderesource computes from measured usage; the scheduler runs kolo's
//!   default plugins (load-aware included); the agent's QoS strategies
//!   suppress and evict BE pods; on the node, BE runs in `cpu.idle` groups.
//!
//! A scenario may define more policies (or redefine these) from either
//! kind, with its own `KubeSchedulerConfiguration` and
//! `slo-controller-config` keys (thresholds).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kolo_descheduler::Descheduler;
use kolo_descheduler::config::DeschedulerConfig;
use kolo_manager::config::{SloConfig, SloConfigStore};
use kolo_scheduler::config::{ConfigError, SchedulerConfig};
use kolo_scheduler::plugins::load_aware::LoadAwareSchedulingArgs;
use serde::{Deserialize, Serialize};

use crate::contention::Isolation;
use crate::scenario::Scenario;

/// The two kinds of policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PolicyKind {
    /// Kubernetes defaults.
    Baseline,
    /// kolo's co-location.
    Colocation,
}

/// A policy as a scenario writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicySpec {
    /// The kind: what BE pods request and which components run.
    pub kind: PolicyKind,
    /// What the policy is.
    #[serde(default)]
    pub description: String,
    /// A `KubeSchedulerConfiguration` (YAML text); default: the kind's.
    #[serde(default)]
    pub scheduler_config: Option<String>,
    /// `slo-controller-config` data (key → JSON text), laid over the kind's
    /// default keys. Colocation kind only.
    #[serde(default)]
    pub slo_config: BTreeMap<String, String>,
    /// A `DeschedulerConfiguration` (YAML text): the policy runs kolo's
    /// descheduler with it ([`crate::descheduler`]). Colocation kind only
    /// (the descheduler reads NodeMetrics). Default: no descheduler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub descheduler_config: Option<String>,
}

/// kube-scheduler's defaults as far as kolo has them: resource fit,
/// affinity, taints; no load awareness, no NUMA. Every node is scored (as
/// kube-scheduler does below 100 nodes, and as the equivalence cache needs
/// to reuse results).
const BASELINE_SCHEDULER: &str = r#"
percentageOfNodesToScore: 100
podMaxBackoffSeconds: 30
profiles:
- schedulerName: kolo-scheduler
  plugins:
    multiPoint:
      disabled:
      - {name: LoadAwareScheduling}
      - {name: NodeNUMAResource}
"#;

/// kolo's default profile.
const COLOCATION_SCHEDULER: &str = r#"
percentageOfNodesToScore: 100
podMaxBackoffSeconds: 30
profiles:
- schedulerName: kolo-scheduler
"#;

/// The colocation kind's `slo-controller-config`: co-location on with the
/// reference's default thresholds, suppression and memory eviction on.
fn default_colocation_slo() -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "colocation-config".to_string(),
            r#"{"enable": true, "metricAggregateDurationSeconds": 60, "cpuReclaimThresholdPercent": 65, "memoryReclaimThresholdPercent": 65}"#.to_string(),
        ),
        (
            "resource-threshold-config".to_string(),
            r#"{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 65, "memoryEvictThresholdPercent": 70}}"#.to_string(),
        ),
    ])
}

/// The durations a profile of `scheduler` has LoadAwareScheduling filter
/// or score on (0: the largest window a node reports), shortest first.
/// Arguments that do not parse count as none: the scheduler refuses them
/// when the run starts, naming the field.
fn aggregated_windows_read(scheduler: &SchedulerConfig) -> Vec<Duration> {
    let mut read: Vec<Duration> = scheduler
        .profiles()
        .iter()
        .flat_map(|p| p.plugin_config.clone())
        .filter(|c| c.name == "LoadAwareScheduling")
        .filter_map(|c| serde_json::from_value::<LoadAwareSchedulingArgs>(c.args?).ok()?.aggregated)
        .flat_map(|a| {
            [
                (a.usage_aggregation_type, a.usage_aggregated_duration),
                (a.score_aggregation_type, a.score_aggregated_duration),
            ]
        })
        .filter(|(statistic, _)| !statistic.is_empty())
        .map(|(_, d)| d)
        .collect();
    read.sort();
    read.dedup();
    read
}

/// A policy ready to run.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: PolicyKind,
    /// What it is.
    pub description: String,
    /// The scheduler's configuration.
    pub scheduler: SchedulerConfig,
    /// The manager's configuration (`None`: no manager, no agent).
    pub slo: Option<Arc<SloConfig>>,
    /// How the node's CPU is shared between LS and BE.
    pub isolation: Isolation,
    /// The durations a profile's LoadAwareScheduling filters or scores
    /// on (`aggregated.usageAggregationType` / `scoreAggregationType` with
    /// their durations; 0: the largest window), shortest first. Empty:
    /// none. See [`Policy::aggregated_windows`].
    pub aggregated_reads: Vec<Duration>,
    /// The descheduler's configuration (`None`: no descheduler).
    pub descheduler: Option<DeschedulerConfig>,
}

impl Policy {
    /// The windows of a node's `aggregatedNodeUsages` that the policy's
    /// LoadAwareScheduling reads, of the windows `reported` (the node's
    /// NodeMetric spec's): the nodes keep their usage history for those
    /// only ([`crate::usage_history`]). A duration the node does not report
    /// is read by no one (the plugin then falls back to its estimate, as
    /// against a real agent).
    pub fn aggregated_windows(&self, reported: &[Duration]) -> Vec<Duration> {
        let largest = reported.iter().max().copied();
        let mut windows: Vec<Duration> = self
            .aggregated_reads
            .iter()
            .filter_map(|d| if d.is_zero() { largest } else { reported.contains(d).then_some(*d) })
            .collect();
        windows.sort();
        windows.dedup();
        windows
    }
}

/// The policy's descheduler configuration, read and checked (a baseline
/// policy has no NodeMetrics for it to read).
fn descheduler_config(
    name: &str,
    spec: &PolicySpec,
) -> Result<Option<DeschedulerConfig>, PolicyError> {
    let Some(text) = spec.descheduler_config.as_deref() else { return Ok(None) };
    let refused = |message: String| PolicyError::Descheduler { policy: name.to_string(), message };
    if spec.kind == PolicyKind::Baseline {
        return Err(refused(
            "a baseline policy runs no agent, so no NodeMetric for the descheduler to read; \
             use kind: colocation"
                .into(),
        ));
    }
    let config = DeschedulerConfig::from_yaml(text).map_err(|e| refused(e.to_string()))?;
    // Plugins check their args when the descheduler is built: refuse a bad
    // one now, naming the policy, rather than when the run starts.
    Descheduler::new(&config).map_err(|e| refused(e.to_string()))?;
    Ok(Some(config))
}

/// A policy that cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// Neither built in nor defined by the scenario.
    #[error("unknown policy {0:?} (built in: baseline, colocation; or define it under `policies`)")]
    Unknown(String),
    /// The scheduler configuration was refused.
    #[error("policies.{policy}.schedulerConfig: {source}")]
    Scheduler {
        /// The policy.
        policy: String,
        /// What is wrong.
        source: ConfigError,
    },
    /// The descheduler configuration was refused.
    #[error("policies.{policy}.deschedulerConfig: {message}")]
    Descheduler {
        /// The policy.
        policy: String,
        /// What is wrong (names the field).
        message: String,
    },
    /// A `slo-controller-config` key was refused.
    #[error("policies.{policy}.sloConfig: {message}")]
    Slo {
        /// The policy.
        policy: String,
        /// The errors, each naming the key and path.
        message: String,
    },
}

impl Policy {
    /// Resolves the policy `name` of `scenario`.
    pub fn resolve(name: &str, scenario: &Scenario) -> Result<Policy, PolicyError> {
        let spec = match (scenario.policies.get(name), name) {
            (Some(spec), _) => spec.clone(),
            (None, "baseline") => PolicySpec {
                kind: PolicyKind::Baseline,
                description: "Kubernetes defaults: BE pods on requested capacity only".into(),
                scheduler_config: None,
                slo_config: BTreeMap::new(),
                descheduler_config: None,
            },
            (None, "colocation") => PolicySpec {
                kind: PolicyKind::Colocation,
                description: "kolo: batch overcommit, load-aware scheduling, isolation, suppression, eviction".into(),
                scheduler_config: None,
                slo_config: BTreeMap::new(),
                descheduler_config: None,
            },
            (None, _) => return Err(PolicyError::Unknown(name.to_string())),
        };
        let default_scheduler = match spec.kind {
            PolicyKind::Baseline => BASELINE_SCHEDULER,
            PolicyKind::Colocation => COLOCATION_SCHEDULER,
        };
        let text = spec.scheduler_config.as_deref().unwrap_or(default_scheduler);
        let scheduler = SchedulerConfig::from_yaml(text)
            .map_err(|source| PolicyError::Scheduler { policy: name.to_string(), source })?;
        let slo = match spec.kind {
            PolicyKind::Baseline if !spec.slo_config.is_empty() => {
                return Err(PolicyError::Slo {
                    policy: name.to_string(),
                    message: "a baseline policy runs no manager or agent; use kind: colocation"
                        .into(),
                });
            }
            PolicyKind::Baseline => None,
            PolicyKind::Colocation => {
                let mut data = default_colocation_slo();
                data.extend(spec.slo_config.clone());
                let mut store = SloConfigStore::new();
                store.update(Some(&data));
                if !store.status().errors.is_empty() {
                    return Err(PolicyError::Slo {
                        policy: name.to_string(),
                        message: store.status().errors.join("; "),
                    });
                }
                Some(store.config())
            }
        };
        let descheduler = descheduler_config(name, &spec)?;
        let isolation = match spec.kind {
            PolicyKind::Baseline => Isolation::Shares,
            PolicyKind::Colocation => Isolation::Idle,
        };
        Ok(Policy {
            name: name.to_string(),
            kind: spec.kind,
            description: spec.description,
            aggregated_reads: aggregated_windows_read(&scheduler),
            scheduler,
            slo,
            isolation,
            descheduler,
        })
    }

    /// Whether BE pods request `kubernetes.io/batch-*` (else `cpu` /
    /// `memory`).
    pub fn batch_resources(&self) -> bool {
        self.kind == PolicyKind::Colocation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_resolve() {
        let s = Scenario::builtin();
        let b = Policy::resolve("baseline", &s).unwrap();
        assert!(b.slo.is_none() && !b.batch_resources());
        let c = Policy::resolve("colocation", &s).unwrap();
        let slo = c.slo.unwrap();
        assert!(slo.colocation.as_ref().unwrap().cluster.is_enabled());
        assert!(matches!(Policy::resolve("nope", &s), Err(PolicyError::Unknown(_))));
    }

    #[test]
    fn bad_slo_key_is_named() {
        let mut s = Scenario::builtin();
        s.policies.insert(
            "tight".into(),
            PolicySpec {
                kind: PolicyKind::Colocation,
                description: String::new(),
                scheduler_config: None,
                slo_config: BTreeMap::from([(
                    "colocation-config".into(),
                    r#"{"cpuReclaimThresholdPercent": "x"}"#.into(),
                )]),
                descheduler_config: None,
            },
        );
        let e = Policy::resolve("tight", &s).unwrap_err().to_string();
        assert!(e.contains("policies.tight.sloConfig") && e.contains("colocation-config"), "{e}");
    }

    #[test]
    fn descheduler_configs_are_read_and_refusals_name_the_policy() {
        let spec = |kind, text: &str| PolicySpec {
            kind,
            description: String::new(),
            scheduler_config: None,
            slo_config: BTreeMap::new(),
            descheduler_config: Some(text.into()),
        };
        let mut s = Scenario::builtin();
        let good = "deschedulingInterval: 2m\n";
        s.policies.insert("on".into(), spec(PolicyKind::Colocation, good));
        s.policies.insert("base".into(), spec(PolicyKind::Baseline, good));
        s.policies.insert("bad".into(), spec(PolicyKind::Colocation, "deschedulingInterval: x"));
        let on = Policy::resolve("on", &s).unwrap();
        let interval = on.descheduler.as_ref().map(|c| c.interval().unwrap());
        assert_eq!(interval, Some(Duration::from_secs(120)));
        assert!(Policy::resolve("colocation", &s).unwrap().descheduler.is_none());
        for (name, named) in [("base", "baseline"), ("bad", "deschedulingInterval")] {
            let e = Policy::resolve(name, &s).unwrap_err().to_string();
            assert!(e.contains(&format!("policies.{name}.deschedulerConfig")), "{e}");
            assert!(e.contains(named), "{e}");
        }
    }

    #[test]
    fn aggregated_windows_follow_the_load_aware_args() {
        use crate::usage_history::agent_windows;
        let profile = |args: &str| {
            format!(
                "profiles:\n- schedulerName: kolo-scheduler\n  pluginConfig:\n  - name: LoadAwareScheduling\n    args: {args}\n"
            )
        };
        let min = |m: u64| Duration::from_secs(m * 60);
        let mut s = Scenario::builtin();
        for (name, config, want) in [
            ("default", None, vec![]),
            (
                "p95-filter",
                Some(profile(
                    r#"{aggregated: {usageThresholds: {cpu: 70}, usageAggregationType: p95, usageAggregatedDuration: 5m}}"#,
                )),
                vec![min(5)],
            ),
            (
                "avg-score-largest",
                Some(profile(r#"{aggregated: {scoreAggregationType: avg}}"#)),
                vec![min(30)],
            ),
            (
                "both",
                Some(profile(
                    r#"{aggregated: {usageAggregationType: p90, usageAggregatedDuration: 10m, scoreAggregationType: p50, scoreAggregatedDuration: 5m}}"#,
                )),
                vec![min(5), min(10)],
            ),
            (
                "not-reported",
                Some(profile(
                    r#"{aggregated: {usageAggregationType: p90, usageAggregatedDuration: 7m}}"#,
                )),
                vec![],
            ),
            ("empty-types", Some(profile(r#"{aggregated: {usageThresholds: {cpu: 70}}}"#)), vec![]),
            ("no-aggregated", Some(profile(r#"{usageThresholds: {cpu: 65}}"#)), vec![]),
        ] {
            s.policies.insert(
                name.into(),
                PolicySpec {
                    kind: PolicyKind::Colocation,
                    description: String::new(),
                    scheduler_config: config,
                    slo_config: BTreeMap::new(),
                    descheduler_config: None,
                },
            );
            let policy = Policy::resolve(name, &s).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(policy.aggregated_windows(&agent_windows()), want, "{name}");
            // Nodes whose NodeMetric spec reports other windows.
            let only_10m = policy.aggregated_windows(&[min(10)]);
            let want_10m: Vec<_> = if policy.aggregated_reads.is_empty() {
                vec![]
            } else if want.contains(&min(10)) || policy.aggregated_reads.contains(&Duration::ZERO) {
                vec![min(10)]
            } else {
                vec![]
            };
            assert_eq!(only_10m, want_10m, "{name} with only a 10m window");
        }
    }
}
