//! The scheduler's configuration file: kube-scheduler's
//! `KubeSchedulerConfiguration` shape (profiles, plugins per extension
//! point with weights, `pluginConfig` args under the reference's JSON
//! names), so an existing Koordinator scheduler config reads as is.
//!
//! ```yaml
//! apiVersion: kubescheduler.config.k8s.io/v1
//! kind: KubeSchedulerConfiguration
//! percentageOfNodesToScore: 100
//! profiles:
//! - schedulerName: kolo-scheduler
//!   plugins:
//!     score:
//!       enabled:
//!       - name: LoadAwareScheduling
//!         weight: 2
//!   pluginConfig:
//!   - name: LoadAwareScheduling
//!     args:
//!       usageThresholds: {cpu: 65, memory: 95}
//! ```

use serde::Deserialize;
use serde_json::Value;

use crate::registry::PluginArgsError;

/// The scheduler name kolo answers to by default.
pub const DEFAULT_SCHEDULER_NAME: &str = "kolo-scheduler";

/// kube-scheduler's defaults for retrying unschedulable pods.
pub const DEFAULT_POD_INITIAL_BACKOFF_SECONDS: i64 = 1;
/// See [`DEFAULT_POD_INITIAL_BACKOFF_SECONDS`].
pub const DEFAULT_POD_MAX_BACKOFF_SECONDS: i64 = 10;

/// The whole configuration.
///
/// Unknown top-level fields land in [`SchedulerConfig::ignored`] (real
/// kube-scheduler files carry leader election, client settings and more);
/// everything below `profiles` is checked strictly.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerConfig {
    /// `kubescheduler.config.k8s.io/v1` (any version is accepted).
    #[serde(default)]
    pub api_version: Option<String>,
    /// `KubeSchedulerConfiguration`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Share of nodes to find feasible before scoring, 1..=100; unset or 0
    /// means kube-scheduler's adaptive default (50% minus 1% per 125 nodes,
    /// at least 5%, at least 100 nodes).
    #[serde(default)]
    pub percentage_of_nodes_to_score: Option<i32>,
    /// First retry delay of an unschedulable pod, doubled per attempt.
    #[serde(default)]
    pub pod_initial_backoff_seconds: Option<i64>,
    /// Longest retry delay.
    #[serde(default)]
    pub pod_max_backoff_seconds: Option<i64>,
    /// kolo's extension: reuse a node's Filter and Score results for alike
    /// pods while the node is unchanged ([`crate::equivalence`]); on by
    /// default. Decisions are the same either way.
    #[serde(default)]
    pub equivalence_cache: Option<bool>,
    /// The profiles; none means one default profile named
    /// [`DEFAULT_SCHEDULER_NAME`].
    #[serde(default)]
    pub profiles: Vec<ProfileConfig>,
    /// kube-scheduler fields kolo reads but does not use (leader election,
    /// client connection...), kept so real files load.
    #[serde(flatten)]
    pub ignored: std::collections::BTreeMap<String, Value>,
}

/// One profile: a scheduler name and its plugins.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProfileConfig {
    /// Pods with this `spec.schedulerName` use the profile.
    #[serde(default = "default_scheduler_name")]
    pub scheduler_name: String,
    /// Changes to the default plugin set.
    #[serde(default)]
    pub plugins: PluginsConfig,
    /// Arguments per plugin.
    #[serde(default)]
    pub plugin_config: Vec<PluginConfig>,
}

impl Default for ProfileConfig {
    fn default() -> ProfileConfig {
        ProfileConfig {
            scheduler_name: default_scheduler_name(),
            plugins: PluginsConfig::default(),
            plugin_config: Vec::new(),
        }
    }
}

fn default_scheduler_name() -> String {
    DEFAULT_SCHEDULER_NAME.to_string()
}

/// Plugins enabled and disabled per extension point, as kube-scheduler:
/// `multiPoint` applies to every point a plugin implements; a `disabled`
/// entry named `*` disables every default plugin there.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(missing_docs)]
pub struct PluginsConfig {
    #[serde(default)]
    pub multi_point: PluginSet,
    #[serde(default)]
    pub queue_sort: PluginSet,
    #[serde(default)]
    pub pre_filter: PluginSet,
    #[serde(default)]
    pub filter: PluginSet,
    #[serde(default)]
    pub post_filter: PluginSet,
    #[serde(default)]
    pub pre_score: PluginSet,
    #[serde(default)]
    pub score: PluginSet,
    #[serde(default)]
    pub reserve: PluginSet,
    #[serde(default)]
    pub permit: PluginSet,
    #[serde(default)]
    pub pre_bind: PluginSet,
    #[serde(default)]
    pub bind: PluginSet,
    #[serde(default)]
    pub post_bind: PluginSet,
}

/// Plugins enabled and disabled at one extension point.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSet {
    /// Added after the defaults, in order.
    #[serde(default)]
    pub enabled: Vec<PluginRef>,
    /// Removed from the defaults (`*`: all of them).
    #[serde(default)]
    pub disabled: Vec<PluginRef>,
}

/// A plugin by name, with a score weight.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginRef {
    /// Its registered name.
    pub name: String,
    /// Score weight (Score and multiPoint only); unset means the plugin's
    /// default weight, or 1.
    #[serde(default)]
    pub weight: Option<i64>,
}

/// A plugin's arguments.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// The plugin.
    pub name: String,
    /// Its args object (`LoadAwareSchedulingArgs`, ...).
    #[serde(default)]
    pub args: Option<Value>,
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not valid YAML, or not the shape above.
    #[error("scheduler config: {0}")]
    Syntax(String),
    /// A value out of range.
    #[error("scheduler config: {field}: {message}")]
    Invalid {
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A plugin name nobody registered.
    #[error("profile {profile}: unknown plugin {name:?} (known: {known})")]
    UnknownPlugin {
        /// The profile.
        profile: String,
        /// The name.
        name: String,
        /// The registered names.
        known: String,
    },
    /// A plugin enabled at an extension point it does not implement.
    #[error("profile {profile}: plugin {plugin} does not implement {point}")]
    NotImplemented {
        /// The profile.
        profile: String,
        /// The plugin.
        plugin: String,
        /// The extension point.
        point: &'static str,
    },
    /// A plugin refused its arguments.
    #[error("profile {profile}: pluginConfig {plugin}: args.{error}")]
    Args {
        /// The profile.
        profile: String,
        /// The plugin.
        plugin: String,
        /// What is wrong, with the field path.
        error: PluginArgsError,
    },
}

impl SchedulerConfig {
    /// Reads a configuration from YAML (or JSON).
    pub fn from_yaml(text: &str) -> Result<SchedulerConfig, ConfigError> {
        let value: Value = serde_saphyr::from_str(text)
            .map_err(|e| ConfigError::Syntax(kolo_core::yaml_error::describe(&e)))?;
        let config: SchedulerConfig =
            serde_path_to_error::deserialize(value).map_err(|e| ConfigError::Invalid {
                field: e.path().to_string(),
                message: e.into_inner().to_string(),
            })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges and uniqueness.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |field: &str, message: String| {
            Err(ConfigError::Invalid { field: field.to_string(), message })
        };
        if let Some(p) = self.percentage_of_nodes_to_score
            && !(0..=100).contains(&p)
        {
            return invalid("percentageOfNodesToScore", format!("{p} is outside 0..=100"));
        }
        let initial = self.initial_backoff_seconds();
        let max = self.max_backoff_seconds();
        if initial <= 0 {
            return invalid("podInitialBackoffSeconds", format!("{initial} must be > 0"));
        }
        if max < initial {
            return invalid(
                "podMaxBackoffSeconds",
                format!("{max} is less than podInitialBackoffSeconds {initial}"),
            );
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, profile) in self.profiles.iter().enumerate() {
            if profile.scheduler_name.is_empty() {
                return invalid(
                    &format!("profiles[{i}].schedulerName"),
                    "must not be empty".into(),
                );
            }
            if !names.insert(&profile.scheduler_name) {
                return invalid(
                    &format!("profiles[{i}].schedulerName"),
                    format!("{:?} is used by two profiles", profile.scheduler_name),
                );
            }
            let sets = profile.plugins.all_sets();
            for (point, set) in sets {
                for (j, r) in set.enabled.iter().enumerate() {
                    if let Some(w) = r.weight
                        && !(1..=100).contains(&w)
                    {
                        return invalid(
                            &format!("profiles[{i}].plugins.{point}.enabled[{j}].weight"),
                            format!("{w} is outside 1..=100"),
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// The profiles to build: the configured ones, or one default profile.
    pub fn profiles(&self) -> Vec<ProfileConfig> {
        if self.profiles.is_empty() {
            vec![ProfileConfig::default()]
        } else {
            self.profiles.clone()
        }
    }

    /// [`Self::pod_initial_backoff_seconds`] or its default.
    pub fn initial_backoff_seconds(&self) -> i64 {
        self.pod_initial_backoff_seconds.unwrap_or(DEFAULT_POD_INITIAL_BACKOFF_SECONDS)
    }

    /// [`Self::pod_max_backoff_seconds`] or its default.
    pub fn max_backoff_seconds(&self) -> i64 {
        self.pod_max_backoff_seconds.unwrap_or(DEFAULT_POD_MAX_BACKOFF_SECONDS)
    }
}

impl PluginsConfig {
    /// Every set with its JSON name.
    pub fn all_sets(&self) -> [(&'static str, &PluginSet); 12] {
        [
            ("multiPoint", &self.multi_point),
            ("queueSort", &self.queue_sort),
            ("preFilter", &self.pre_filter),
            ("filter", &self.filter),
            ("postFilter", &self.post_filter),
            ("preScore", &self.pre_score),
            ("score", &self.score),
            ("reserve", &self.reserve),
            ("permit", &self.permit),
            ("preBind", &self.pre_bind),
            ("bind", &self.bind),
            ("postBind", &self.post_bind),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_kube_scheduler_configuration() {
        let config = SchedulerConfig::from_yaml(
            r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: true}
percentageOfNodesToScore: 100
profiles:
- schedulerName: koord-scheduler
  plugins:
    score:
      enabled:
      - name: LoadAwareScheduling
        weight: 2
      disabled:
      - name: "*"
  pluginConfig:
  - name: LoadAwareScheduling
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: LoadAwareSchedulingArgs
      usageThresholds: {cpu: 65}
"#,
        )
        .unwrap();
        assert_eq!(config.percentage_of_nodes_to_score, Some(100));
        let profile = &config.profiles()[0];
        assert_eq!(profile.scheduler_name, "koord-scheduler");
        assert_eq!(profile.plugins.score.enabled[0].weight, Some(2));
        assert_eq!(profile.plugins.score.disabled[0].name, "*");
        assert_eq!(profile.plugin_config[0].args.as_ref().unwrap()["usageThresholds"]["cpu"], 65);
        assert!(config.ignored.contains_key("leaderElection"));
    }

    #[test]
    fn refuses_bad_values_naming_the_field() {
        let cases = [
            ("percentageOfNodesToScore: 101\n", "percentageOfNodesToScore"),
            ("podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds"),
            ("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n", "podMaxBackoffSeconds"),
            ("profiles:\n- schedulerName: a\n- schedulerName: a\n", "profiles[1].schedulerName"),
            (
                "profiles:\n- plugins:\n    score:\n      enabled:\n      - {name: X, weight: 0}\n",
                "profiles[0].plugins.score.enabled[0].weight",
            ),
            ("profiles:\n- plugins:\n    filtre: {}\n", "profiles[0].plugins.filtre"),
            ("percentageOfNodesToScore: lots\n", "percentageOfNodesToScore"),
        ];
        for (yaml, field) in cases {
            match SchedulerConfig::from_yaml(yaml) {
                Err(ConfigError::Invalid { field: got, .. }) => assert_eq!(got, field, "{yaml}"),
                other => panic!("{yaml}: {other:?}"),
            }
        }
        assert!(matches!(SchedulerConfig::from_yaml("a: [\n"), Err(ConfigError::Syntax(_))));
    }
}
