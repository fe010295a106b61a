//! `ElasticQuotaArgs`: the plugin's configuration with the reference's
//! JSON names and defaults (spec §7.2).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kolo_core::resources::ResourceVector;
use serde::{Deserialize, Serialize};

use crate::plugins::load_aware::args::go_duration;
use crate::registry::PluginArgsError;

/// The default max of the system and default quotas for cpu and memory:
/// `MaxInt64 / 5`.
pub const DEFAULT_GROUP_MAX: i64 = i64::MAX / 5;

/// The arguments of the `ElasticQuota` plugin. Unknown fields are refused;
/// every field has the reference's default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ElasticQuotaArgs {
    /// How long a quota may stay over its runtime before its pods are
    /// revoked (120s).
    #[serde(with = "go_duration")]
    pub delay_evict_time: Duration,
    /// How often the revoke controller runs (1s).
    #[serde(with = "go_duration")]
    pub revoke_pod_interval: Duration,
    /// The default quota's max (cpu and memory `MaxInt64/5`).
    pub default_quota_group_max: BTreeMap<String, Quantity>,
    /// The system quota's max (cpu and memory `MaxInt64/5`).
    pub system_quota_group_max: BTreeMap<String, Quantity>,
    /// The namespace of the special quotas (`koordinator-system`).
    pub quota_group_namespace: String,
    /// Revoke over-used quotas (false).
    pub monitor_all_quotas: bool,
    /// Check every ancestor below the root too (false).
    pub enable_check_parent_quota: bool,
    /// Check against the runtime; false checks against max (true).
    pub enable_runtime_quota: bool,
    /// Scale the children's mins down when the parent cannot cover them
    /// (true).
    pub enable_min_quota_scale: bool,
    /// Pods of the default quota are never preempted (true).
    pub disable_default_quota_preemption: bool,
    /// Accepted for compatibility; kolo's queue decides wake-ups itself
    /// (false).
    pub enable_queue_hint: bool,
    /// Accepted for compatibility; kolo computes runtimes on demand (120s).
    #[serde(with = "go_duration")]
    pub quota_snapshot_update_interval: Duration,
    /// Ignored; accepted because typed plugin args carry it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Ignored; accepted because typed plugin args carry it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

fn group_max() -> BTreeMap<String, Quantity> {
    let max = Quantity(DEFAULT_GROUP_MAX.to_string());
    BTreeMap::from([("cpu".to_string(), max.clone()), ("memory".to_string(), max)])
}

impl Default for ElasticQuotaArgs {
    fn default() -> ElasticQuotaArgs {
        ElasticQuotaArgs {
            delay_evict_time: Duration::from_secs(120),
            revoke_pod_interval: Duration::from_secs(1),
            default_quota_group_max: group_max(),
            system_quota_group_max: group_max(),
            quota_group_namespace: "koordinator-system".to_string(),
            monitor_all_quotas: false,
            enable_check_parent_quota: false,
            enable_runtime_quota: true,
            enable_min_quota_scale: true,
            disable_default_quota_preemption: true,
            enable_queue_hint: false,
            quota_snapshot_update_interval: Duration::from_secs(120),
            api_version: None,
            kind: None,
        }
    }
}

impl ElasticQuotaArgs {
    /// Decodes the args of a profile (`None`: the defaults).
    pub fn decode(args: Option<&serde_json::Value>) -> Result<ElasticQuotaArgs, PluginArgsError> {
        let args: ElasticQuotaArgs = crate::registry::decode_args(args, "ElasticQuotaArgs")?;
        args.group_maxes()?;
        Ok(args)
    }

    /// The system and default quotas' max as vectors (cpu in milli-cores,
    /// saturating: `MaxInt64/5` cores do not fit in milli-cores).
    pub fn group_maxes(&self) -> Result<(ResourceVector, ResourceVector), PluginArgsError> {
        let read = |field: &str, list| {
            ResourceVector::from_resource_list(list)
                .map_err(|e| PluginArgsError::new(field, e.to_string()))
        };
        Ok((
            read("systemQuotaGroupMax", &self.system_quota_group_max)?,
            read("defaultQuotaGroupMax", &self.default_quota_group_max)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_references() {
        let args = ElasticQuotaArgs::decode(None).unwrap();
        assert_eq!(args.delay_evict_time, Duration::from_secs(120));
        assert_eq!(args.revoke_pod_interval, Duration::from_secs(1));
        assert_eq!(args.quota_group_namespace, "koordinator-system");
        assert!(!args.monitor_all_quotas && !args.enable_check_parent_quota);
        assert!(args.enable_runtime_quota && args.enable_min_quota_scale);
        assert!(args.disable_default_quota_preemption && !args.enable_queue_hint);
        assert_eq!(args.quota_snapshot_update_interval, Duration::from_secs(120));
        let (system, default) = args.group_maxes().unwrap();
        assert_eq!(default.memory(), 1_844_674_407_370_955_161);
        // 1844674407370955161 cores in milli-cores saturate.
        assert_eq!(system.cpu(), i64::MAX);
        // An empty object is the defaults too.
        let empty = ElasticQuotaArgs::decode(Some(&serde_json::json!({}))).unwrap();
        assert_eq!(empty, args);
    }

    #[test]
    fn fields_decode_by_their_json_names() {
        let json = serde_json::json!({
            "kind": "ElasticQuotaArgs",
            "delayEvictTime": "5m",
            "enableCheckParentQuota": true,
            "enableRuntimeQuota": false,
            "defaultQuotaGroupMax": {"cpu": "10", "memory": "1Gi"},
        });
        let args = ElasticQuotaArgs::decode(Some(&json)).unwrap();
        assert_eq!(args.delay_evict_time, Duration::from_secs(300));
        assert!(args.enable_check_parent_quota && !args.enable_runtime_quota);
        assert_eq!(args.group_maxes().unwrap().1, ResourceVector::cpu_memory(10_000, 1 << 30));
        // Unchanged fields keep their defaults.
        assert!(args.enable_min_quota_scale);
    }

    #[test]
    fn bad_args_name_the_field() {
        let cases = [
            (serde_json::json!({"delayEvictTime": "soon"}), "delayEvictTime"),
            (serde_json::json!({"enableRuntimeQuota": "yes"}), "enableRuntimeQuota"),
            (serde_json::json!({"defaultQuotaGroupMax": {"cpu": "lots"}}), "defaultQuotaGroupMax"),
            (serde_json::json!({"unknownField": 1}), "unknownField"),
        ];
        for (json, field) in cases {
            let err = ElasticQuotaArgs::decode(Some(&json)).unwrap_err();
            assert_eq!(err.field, field, "{json}: {err}");
        }
    }
}
