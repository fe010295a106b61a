//! `MigrationControllerArgs`: the migration controller's configuration,
//! with Koordinator's v1alpha2 JSON names
//! (`pkg/descheduler/apis/config/v1alpha2/types_pluginargs.go`), defaults
//! (`defaults.go`) and validation.
//!
//! Accepted but not acted on (kolo's pure controller has no use for them):
//! `maxConcurrentReconciles`, `nodeFit`, `nodeSelector`,
//! `defaultDeleteOptions` (kept, handed to the driver with each job).
//! kolo additions: `maxMigratingGlobally` (a cap on all migrating jobs)
//! and `evictLSEAndLSRPods`.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, LabelSelector};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kolo_api::crd::parse_go_duration;
use kolo_api::crd::pod_migration_job::{PMJ_MODE_EVICT_DIRECTLY, PMJ_MODE_RESERVATION_FIRST};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::evictor_filter::{
    EvictorFilter, FilterArgs, FilterError, Namespaces, PriorityThreshold,
};

/// The only object limiter kind Koordinator defines.
pub const OBJECT_LIMITER_WORKLOAD: &str = "workload";

/// A Go duration (`5m`, `500ms`), kept as a [`Duration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GoDuration(pub Duration);

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}ms", self.0.as_millis()))
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<GoDuration, D::Error> {
        let text = String::deserialize(d)?;
        parse_go_duration(&text).map(GoDuration).ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not a Go duration (e.g. 5m, 500ms)"))
        })
    }
}

/// `evictQPS`: Koordinator's `Float64OrString` (`10`, `"0.5"`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Qps(pub f64);

impl Serialize for Qps {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for Qps {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Qps, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(Qps(n)),
            Raw::Text(t) => t
                .trim()
                .parse::<f64>()
                .map(Qps)
                .map_err(|_| serde::de::Error::custom(format!("{t:?} is not a number"))),
        }
    }
}

/// One object limiter: at most `maxMigrating` migrations of one object
/// (workload) in any `duration` window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectLimiterArgs {
    /// The window (`0` disables the limiter).
    #[serde(default)]
    pub duration: GoDuration,
    /// The cap (absolute or a percentage of the workload's replicas);
    /// absent or 0: from `maxMigratingPerWorkload`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_migrating: Option<IntOrString>,
}

/// `arbitrationArgs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArbitrationArgs {
    /// Whether pending jobs are arbitrated (sorted and limited) before
    /// they run; when off, every pending job runs at once (limits are then
    /// checked only when a job is created).
    #[serde(default)]
    pub enabled: bool,
    /// How often drivers should arbitrate (default 500 ms); the pure
    /// controller arbitrates on every `reconcile`.
    #[serde(default = "default_arbitration_interval")]
    pub interval: GoDuration,
}

fn default_arbitration_interval() -> GoDuration {
    GoDuration(Duration::from_millis(500))
}

impl Default for ArbitrationArgs {
    fn default() -> ArbitrationArgs {
        ArbitrationArgs { enabled: true, interval: default_arbitration_interval() }
    }
}

/// The migration controller's configuration (see the module
/// documentation). `Default` is Koordinator's defaulted object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MigrationControllerArgs {
    /// `apiVersion` of an embedded args object (ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `kind` of an embedded args object (ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Decide and record Events, create no job.
    #[serde(default)]
    pub dry_run: bool,
    /// Accepted, unused (kolo reconciles in one pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_reconciles: Option<i32>,
    /// Evict failed pods without owners.
    #[serde(default)]
    pub evict_failed_bare_pods: bool,
    /// Evict pods with emptyDir / hostPath volumes.
    #[serde(default)]
    pub evict_local_storage_pods: bool,
    /// Evict system-critical pods.
    #[serde(default)]
    pub evict_system_critical_pods: bool,
    /// Never evict pods with PVCs.
    #[serde(default)]
    pub ignore_pvc_pods: bool,
    /// kolo: evict QoS LSE and LSR pods too.
    #[serde(default, rename = "evictLSEAndLSRPods")]
    pub evict_lse_and_lsr_pods: bool,
    /// Only pods below this priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_threshold: Option<PriorityThreshold>,
    /// Only pods matching this selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Evictable namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Namespaces>,
    /// Accepted, unused.
    #[serde(default)]
    pub node_fit: bool,
    /// Accepted, unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<String>,
    /// kolo: at most this many jobs migrating at once (absent or 0: no cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_migrating_globally: Option<i32>,
    /// At most this many pods of one node migrating (default 2; 0: no cap).
    #[serde(default = "default_max_per_node")]
    pub max_migrating_per_node: Option<i32>,
    /// At most this many pods of one namespace migrating (absent or 0: no cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_migrating_per_namespace: Option<i32>,
    /// Per workload, absolute or percentage of replicas (absent or 0:
    /// Koordinator's default — 1, 2 from 4 replicas, 10 % above 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_migrating_per_workload: Option<IntOrString>,
    /// Per workload, unavailable (not ready, or migrating) pods; same
    /// default as `maxMigratingPerWorkload`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable_per_workload: Option<IntOrString>,
    /// Allow workloads whose replicas equal their limits (or are 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_check_expected_replicas: Option<bool>,
    /// Object limiters by kind (default `workload` over 5 min).
    #[serde(default = "default_object_limiters")]
    pub object_limiters: BTreeMap<String, ObjectLimiterArgs>,
    /// `ReservationFirst` (default) or `EvictDirectly`.
    #[serde(default = "default_job_mode")]
    pub default_job_mode: String,
    /// TTL of the jobs the controller creates (default 5 min).
    #[serde(default = "default_job_ttl", rename = "defaultJobTTL")]
    pub default_job_ttl: GoDuration,
    /// Schedulers that can place reservations (default `kolo-scheduler`
    /// and `koord-scheduler`: kolo's scheduler answers to its own name, and
    /// clusters switching from Koordinator keep theirs).
    #[serde(default = "default_scheduler_names")]
    pub scheduler_names: Vec<String>,
    /// Evictions per second (default 10).
    #[serde(default = "default_evict_qps", rename = "evictQPS")]
    pub evict_qps: Qps,
    /// Eviction burst (default 1).
    #[serde(default = "default_evict_burst")]
    pub evict_burst: i32,
    /// `Eviction` (default: the Eviction API, PDBs hold), `Delete` or
    /// `SoftEviction`; the driver carries it out.
    #[serde(default = "default_eviction_policy")]
    pub eviction_policy: String,
    /// Handed to the driver with each eviction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_delete_options: Option<DeleteOptions>,
    /// The arbitration mechanism.
    #[serde(default)]
    pub arbitration_args: ArbitrationArgs,
}

fn default_max_per_node() -> Option<i32> {
    Some(2)
}
fn default_object_limiters() -> BTreeMap<String, ObjectLimiterArgs> {
    let workload =
        ObjectLimiterArgs { duration: GoDuration(Duration::from_secs(300)), max_migrating: None };
    [(OBJECT_LIMITER_WORKLOAD.to_string(), workload)].into()
}
fn default_job_mode() -> String {
    PMJ_MODE_RESERVATION_FIRST.into()
}
fn default_job_ttl() -> GoDuration {
    GoDuration(Duration::from_secs(300))
}
fn default_scheduler_names() -> Vec<String> {
    vec![kolo_scheduler::config::DEFAULT_SCHEDULER_NAME.into(), "koord-scheduler".into()]
}
fn default_evict_qps() -> Qps {
    Qps(10.0)
}
fn default_evict_burst() -> i32 {
    1
}
fn default_eviction_policy() -> String {
    "Eviction".into()
}

impl Default for MigrationControllerArgs {
    fn default() -> MigrationControllerArgs {
        // Decoding `{}` applies every serde default.
        MigrationControllerArgs::decode(serde_json::json!({})).expect("the empty args decode")
    }
}

/// Why args do not load; names the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArgsError {
    /// The JSON does not decode (path and serde's message).
    #[error("MigrationControllerArgs.{path}: {message}")]
    Decode {
        /// Where, e.g. `objectLimiters.workload.duration`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A value is out of range.
    #[error("MigrationControllerArgs.{field}: {message}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
}

fn invalid(field: &'static str, message: impl fmt::Display) -> ArgsError {
    ArgsError::Invalid { field, message: message.to_string() }
}

impl MigrationControllerArgs {
    fn decode(value: serde_json::Value) -> Result<MigrationControllerArgs, ArgsError> {
        serde_path_to_error::deserialize(value).map_err(|e| ArgsError::Decode {
            path: e.path().to_string(),
            message: e.inner().to_string(),
        })
    }

    /// Decodes (applying defaults) and validates.
    pub fn from_value(value: serde_json::Value) -> Result<MigrationControllerArgs, ArgsError> {
        let args = MigrationControllerArgs::decode(value)?;
        args.validate()?;
        Ok(args)
    }

    /// Checks every range (Koordinator's `ValidateMigrationControllerArgs`
    /// plus kolo's bounds).
    pub fn validate(&self) -> Result<(), ArgsError> {
        let non_negative = |field, v: Option<i32>| match v {
            Some(n) if n < 0 => Err(invalid(field, format!("{n} is negative"))),
            _ => Ok(()),
        };
        non_negative("maxMigratingGlobally", self.max_migrating_globally)?;
        non_negative("maxMigratingPerNode", self.max_migrating_per_node)?;
        non_negative("maxMigratingPerNamespace", self.max_migrating_per_namespace)?;
        for (field, v) in [
            ("maxMigratingPerWorkload", &self.max_migrating_per_workload),
            ("maxUnavailablePerWorkload", &self.max_unavailable_per_workload),
        ] {
            if let Some(v) = v {
                scaled(100, v).map_err(|m| invalid(field, m))?;
            }
        }
        for (kind, limiter) in &self.object_limiters {
            if kind != OBJECT_LIMITER_WORKLOAD {
                return Err(invalid(
                    "objectLimiters",
                    format!("unknown kind {kind:?} (only workload)"),
                ));
            }
            if let Some(v) = &limiter.max_migrating {
                scaled(100, v).map_err(|m| invalid("objectLimiters.workload.maxMigrating", m))?;
            }
        }
        if ![PMJ_MODE_RESERVATION_FIRST, PMJ_MODE_EVICT_DIRECTLY]
            .contains(&self.default_job_mode.as_str())
        {
            return Err(invalid(
                "defaultJobMode",
                format!("{:?} is not ReservationFirst or EvictDirectly", self.default_job_mode),
            ));
        }
        let qps = self.evict_qps.0;
        if !(qps.is_finite() && qps > 0.0 && qps <= 1e6) {
            return Err(invalid("evictQPS", format!("{qps} is not in (0, 1000000]")));
        }
        if !(1..=1_000_000).contains(&self.evict_burst) {
            return Err(invalid(
                "evictBurst",
                format!("{} is not in [1, 1000000]", self.evict_burst),
            ));
        }
        if !["Eviction", "Delete", "SoftEviction"].contains(&self.eviction_policy.as_str()) {
            return Err(invalid(
                "evictionPolicy",
                format!("{:?} is not Eviction, Delete or SoftEviction", self.eviction_policy),
            ));
        }
        self.filter().map_err(|e| match e {
            FilterError::LabelSelector(e) => invalid("labelSelector", e),
            FilterError::PriorityThreshold(m) => invalid("priorityThreshold", m),
            FilterError::Namespaces => {
                invalid("namespaces", "only one of include and exclude may be set")
            }
        })?;
        Ok(())
    }

    /// The evictor filter these args describe.
    pub fn filter(&self) -> Result<EvictorFilter, FilterError> {
        EvictorFilter::new(FilterArgs {
            evict_local_storage_pods: self.evict_local_storage_pods,
            evict_system_critical_pods: self.evict_system_critical_pods,
            ignore_pvc_pods: self.ignore_pvc_pods,
            evict_failed_bare_pods: self.evict_failed_bare_pods,
            evict_lse_and_lsr_pods: self.evict_lse_and_lsr_pods,
            priority_threshold: self.priority_threshold.clone(),
            namespaces: self.namespaces.clone(),
            label_selector: self.label_selector.clone(),
        })
    }

    /// The workload object limiter, if enabled (a non-zero window).
    pub fn workload_limiter(&self) -> Option<&ObjectLimiterArgs> {
        self.object_limiters.get(OBJECT_LIMITER_WORKLOAD).filter(|l| !l.duration.0.is_zero())
    }

    /// The TTL of new jobs as the job's `spec.ttl` string, `None` when 0.
    pub fn job_ttl_text(&self) -> Option<String> {
        let ttl = self.default_job_ttl.0;
        (!ttl.is_zero()).then(|| go_duration_text(ttl))
    }
}

/// `d` as a Go duration string (`5m0s`, `1.5s`, `300ms`), as
/// `metav1.Duration` writes it for whole seconds and milliseconds.
pub fn go_duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = d.as_secs();
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// `value` (an absolute number or a percentage) of `replicas`, rounded
/// down, as Kubernetes' `GetScaledValueFromIntOrPercent(.., false)`.
pub fn scaled(replicas: i32, value: &IntOrString) -> Result<i32, String> {
    match value {
        IntOrString::Int(n) if *n < 0 => Err(format!("{n} is negative")),
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(s) => {
            let percent = s
                .strip_suffix('%')
                .and_then(|p| p.parse::<i64>().ok())
                .filter(|p| (0..=100).contains(p))
                .ok_or_else(|| format!("{s:?} is not an integer or a percentage in 0%..100%"))?;
            Ok((percent * i64::from(replicas.max(0)) / 100) as i32)
        }
    }
}

/// Koordinator's `GetMaxUnavailable` (and `GetMaxMigrating`): the
/// configured value scaled to `replicas`; when that is 0 (or unset), 1 for
/// up to 3 replicas, 2 for 4–10, 10 % above 10; never above `replicas`.
pub fn max_per_workload(replicas: i32, value: Option<&IntOrString>) -> i32 {
    let configured = value.and_then(|v| scaled(replicas, v).ok()).unwrap_or(0);
    let chosen = if configured != 0 {
        configured
    } else if replicas > 10 {
        replicas / 10
    } else if replicas >= 4 {
        2
    } else {
        1
    };
    chosen.min(replicas.max(0))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_are_koordinators() {
        let a = MigrationControllerArgs::default();
        assert_eq!(a.max_migrating_per_node, Some(2));
        assert_eq!(a.default_job_mode, "ReservationFirst");
        assert_eq!(a.default_job_ttl.0, Duration::from_secs(300));
        assert_eq!(a.evict_qps, Qps(10.0));
        assert_eq!(a.evict_burst, 1);
        assert_eq!(a.eviction_policy, "Eviction");
        assert_eq!(a.scheduler_names, ["kolo-scheduler", "koord-scheduler"]);
        let w = a.workload_limiter().expect("workload limiter on by default");
        assert_eq!((w.duration.0, &w.max_migrating), (Duration::from_secs(300), &None));
        assert_eq!(
            a.arbitration_args,
            ArbitrationArgs { enabled: true, interval: GoDuration(Duration::from_millis(500)) }
        );
        assert_eq!(a.job_ttl_text().as_deref(), Some("5m0s"));
        assert!(a.validate().is_ok());
    }

    #[test]
    fn values_read_with_koordinators_names() {
        let a = MigrationControllerArgs::from_value(json!({
            "apiVersion": "descheduler/v1alpha2", "kind": "MigrationControllerArgs",
            "maxMigratingPerNode": 1, "maxMigratingPerNamespace": 3,
            "maxMigratingPerWorkload": "20%", "maxUnavailablePerWorkload": 2,
            "objectLimiters": {"workload": {"duration": "1m", "maxMigrating": 4}},
            "defaultJobMode": "EvictDirectly", "defaultJobTTL": "90s",
            "evictQPS": "0.5", "evictBurst": 3, "evictionPolicy": "Delete",
            "namespaces": {"exclude": ["kube-system"]}, "skipCheckExpectedReplicas": true,
            "arbitrationArgs": {"enabled": false}
        }))
        .expect("valid args");
        assert_eq!(a.max_migrating_per_node, Some(1));
        assert_eq!(a.max_migrating_per_workload, Some(IntOrString::String("20%".into())));
        assert_eq!(a.workload_limiter().unwrap().duration.0, Duration::from_secs(60));
        assert_eq!(a.evict_qps, Qps(0.5));
        assert_eq!(a.job_ttl_text().as_deref(), Some("1m30s"));
        assert_eq!(a.arbitration_args.interval.0, Duration::from_millis(500));
        assert!(!a.arbitration_args.enabled);
    }

    #[test]
    fn bad_values_name_the_field() {
        let cases = [
            (json!({"maxMigratingPerNode": -1}), "maxMigratingPerNode: -1 is negative"),
            (json!({"maxMigratingPerWorkload": "200%"}), "maxMigratingPerWorkload"),
            (json!({"defaultJobMode": "Teleport"}), "defaultJobMode"),
            (json!({"evictQPS": 0}), "evictQPS"),
            (json!({"evictBurst": 0}), "evictBurst"),
            (json!({"evictionPolicy": "Kill"}), "evictionPolicy"),
            (json!({"objectLimiters": {"namespace": {"duration": "1m"}}}), "objectLimiters"),
            (
                json!({"objectLimiters": {"workload": {"duration": "soon"}}}),
                "objectLimiters.workload.duration",
            ),
            (json!({"defaultJobTTL": 5}), "defaultJobTTL"),
            (json!({"namespaces": {"include": ["a"], "exclude": ["b"]}}), "namespaces"),
            (json!({"priorityThreshold": {"name": "gold"}}), "priorityThreshold"),
            (json!({"maxMigratingPerNod": 1}), "maxMigratingPerNod"),
        ];
        for (value, expected) in cases {
            let err = MigrationControllerArgs::from_value(value.clone())
                .expect_err(&value.to_string())
                .to_string();
            assert!(err.contains(expected), "{value}: {err:?} lacks {expected:?}");
        }
    }

    #[test]
    fn workload_limits_scale_like_koordinator() {
        let pct = |s: &str| IntOrString::String(s.into());
        let cases: [(i32, Option<IntOrString>, i32); 9] = [
            (1, None, 1),
            (3, None, 1),
            (4, None, 2),
            (10, None, 2),
            (25, None, 2), // 10 % of 25, rounded down
            (0, None, 0),  // never above the replicas
            (10, Some(pct("25%")), 2),
            (3, Some(IntOrString::Int(5)), 3),
            (10, Some(pct("5%")), 2), // 0 after scaling: the default
        ];
        for (replicas, value, want) in cases {
            assert_eq!(max_per_workload(replicas, value.as_ref()), want, "{replicas} {value:?}");
        }
    }
}
