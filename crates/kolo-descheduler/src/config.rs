//! The descheduler's configuration file: Koordinator's
//! `DeschedulerConfiguration` (`descheduler/v1alpha2`) shape, so an
//! existing `koord-descheduler-config` reads as is.
//!
//! ```yaml
//! apiVersion: descheduler/v1alpha2
//! kind: DeschedulerConfiguration
//! deschedulingInterval: 60s
//! dryRun: false
//! profiles:
//! - name: kolo-descheduler
//!   plugins:
//!     balance:
//!       enabled:
//!       - name: LowNodeLoad
//!   pluginConfig:
//!   - name: LowNodeLoad
//!     args:
//!       lowThresholds: {cpu: 45, memory: 55}
//!       highThresholds: {cpu: 75, memory: 80}
//!   - name: MigrationController
//!     args:
//!       maxMigratingPerNode: 2
//! ```
//!
//! Plugin sets and args reuse the scheduler's types (`enabled` /
//! `disabled`, `pluginConfig` with args under the reference's JSON names).
//! As in Koordinator, no Balance plugin runs unless enabled; the one
//! evictor is `MigrationController`.

use std::collections::BTreeMap;
use std::time::Duration;

use kolo_api::crd::parse_go_duration;
use kolo_scheduler::config::{PluginConfig, PluginSet};
use serde::Deserialize;
use serde_json::Value;

/// `deschedulingInterval` when the file sets none (Koordinator's documented
/// LowNodeLoad setting).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

/// The profile name used when the file has no profiles.
pub const DEFAULT_PROFILE: &str = "kolo-descheduler";

/// The whole configuration.
///
/// Unknown top-level fields (leader election, client connection, ...)
/// land in [`DeschedulerConfig::ignored`] so real files load; everything
/// below `profiles` is checked strictly.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeschedulerConfig {
    /// `descheduler/v1alpha2` (any version is accepted).
    #[serde(default)]
    pub api_version: Option<String>,
    /// `DeschedulerConfiguration`.
    #[serde(default)]
    pub kind: Option<String>,
    /// How often Balance runs (a Go duration, e.g. `60s`).
    #[serde(default)]
    pub descheduling_interval: Option<String>,
    /// Decide and record Events, write nothing else.
    #[serde(default)]
    pub dry_run: Option<bool>,
    /// The profiles; none means one profile with nothing enabled.
    #[serde(default)]
    pub profiles: Vec<DeschedulerProfile>,
    /// Fields kolo reads but does not use.
    #[serde(flatten)]
    pub ignored: BTreeMap<String, Value>,
}

/// One profile: its plugins and their args.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeschedulerProfile {
    /// The profile's name.
    #[serde(default)]
    pub name: String,
    /// Plugins per extension point.
    #[serde(default)]
    pub plugins: DeschedulerPlugins,
    /// Arguments per plugin.
    #[serde(default)]
    pub plugin_config: Vec<PluginConfig>,
}

/// Plugins enabled and disabled per descheduler extension point.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeschedulerPlugins {
    /// Deschedule plugins (kolo has none yet; enabling one is an error).
    #[serde(default)]
    pub deschedule: PluginSet,
    /// Balance plugins (`LowNodeLoad`).
    #[serde(default)]
    pub balance: PluginSet,
    /// The evictor (`MigrationController`, the default and only one).
    #[serde(default)]
    pub evict: PluginSet,
    /// Evictor filters (`MigrationController`, the default and only one).
    #[serde(default)]
    pub filter: PluginSet,
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not valid YAML, or not the shape above.
    #[error("descheduler config: {0}")]
    Syntax(String),
    /// A value out of range or a plugin kolo does not have.
    #[error("descheduler config: {field}: {message}")]
    Invalid {
        /// The field path.
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl DeschedulerConfig {
    /// Reads a configuration from YAML (or JSON).
    pub fn from_yaml(text: &str) -> Result<DeschedulerConfig, ConfigError> {
        let value: Value = serde_saphyr::from_str(text)
            .map_err(|e| ConfigError::Syntax(kolo_core::yaml_error::describe(&e)))?;
        let config: DeschedulerConfig =
            serde_path_to_error::deserialize(value).map_err(|e| ConfigError::Invalid {
                field: e.path().to_string(),
                message: e.into_inner().to_string(),
            })?;
        config.interval()?;
        Ok(config)
    }

    /// `deschedulingInterval`, or [`DEFAULT_INTERVAL`].
    pub fn interval(&self) -> Result<Duration, ConfigError> {
        let Some(text) = self.descheduling_interval.as_deref() else {
            return Ok(DEFAULT_INTERVAL);
        };
        match parse_go_duration(text) {
            Some(d) if d >= Duration::from_secs(1) => Ok(d),
            _ => Err(ConfigError::Invalid {
                field: "deschedulingInterval".into(),
                message: format!("{text:?} is not a Go duration of at least 1s"),
            }),
        }
    }

    /// `dryRun`, default false.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run.unwrap_or(false)
    }

    /// The profiles to build: the configured ones, or one empty profile.
    pub fn profiles(&self) -> Vec<DeschedulerProfile> {
        if self.profiles.is_empty() {
            vec![DeschedulerProfile { name: DEFAULT_PROFILE.into(), ..Default::default() }]
        } else {
            self.profiles.clone()
        }
    }
}

impl DeschedulerProfile {
    /// Whether `plugin` is enabled at `set` (a `disabled` `*` or entry
    /// naming it wins over a default).
    pub fn enabled(set: &PluginSet, plugin: &str, by_default: bool) -> bool {
        if set.enabled.iter().any(|p| p.name == plugin) {
            return true;
        }
        let disabled = set.disabled.iter().any(|p| p.name == plugin || p.name == "*");
        by_default && !disabled
    }

    /// The args given for `plugin`, if any.
    pub fn args(&self, plugin: &str) -> Option<&Value> {
        self.plugin_config.iter().find(|c| c.name == plugin).and_then(|c| c.args.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_koordinator_descheduler_configuration() {
        let config = DeschedulerConfig::from_yaml(
            "apiVersion: descheduler/v1alpha2\n\
             kind: DeschedulerConfiguration\n\
             leaderElection: {resourceName: koord-descheduler}\n\
             deschedulingInterval: 90s\n\
             dryRun: true\n\
             profiles:\n\
             - name: koord-descheduler\n  \
               plugins:\n    \
                 deschedule: {disabled: [{name: '*'}]}\n    \
                 balance: {enabled: [{name: LowNodeLoad}]}\n  \
               pluginConfig:\n  \
               - name: LowNodeLoad\n    \
                 args: {highThresholds: {cpu: 75}}\n",
        )
        .unwrap();
        assert_eq!(config.interval().unwrap(), Duration::from_secs(90));
        assert!(config.is_dry_run());
        assert!(config.ignored.contains_key("leaderElection"));
        let profile = &config.profiles()[0];
        assert!(DeschedulerProfile::enabled(&profile.plugins.balance, "LowNodeLoad", false));
        assert!(!DeschedulerProfile::enabled(&profile.plugins.deschedule, "X", true));
        assert!(DeschedulerProfile::enabled(&profile.plugins.evict, "MigrationController", true));
        assert_eq!(profile.args("LowNodeLoad").unwrap()["highThresholds"]["cpu"], 75);
        assert!(profile.args("MigrationController").is_none());
    }

    #[test]
    fn defaults_and_refusals_name_the_field() {
        let empty = DeschedulerConfig::from_yaml("{}").unwrap();
        assert_eq!(empty.interval().unwrap(), DEFAULT_INTERVAL);
        assert!(!empty.is_dry_run());
        assert_eq!(empty.profiles()[0].name, DEFAULT_PROFILE);
        for (text, field) in [
            ("deschedulingInterval: soon", "deschedulingInterval"),
            ("deschedulingInterval: 10ms", "deschedulingInterval"),
            ("profiles: [{name: a, plugins: {balanse: {}}}]", "profiles[0].plugins"),
            ("dryRun: maybe", "dryRun"),
        ] {
            let err = DeschedulerConfig::from_yaml(text).unwrap_err().to_string();
            assert!(err.contains(field), "{text}: {err}");
        }
    }
}
