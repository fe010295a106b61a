//! The `slo-controller-config` in force, updated key by key, keeping each
//! key's last good value when a new version of it is malformed.
//!
//! Rules (Koordinator spec §3.2, §3.4; kolo keeps them):
//! * ConfigMap absent: every key takes its default, and the status reports
//!   the missing ConfigMap. Deleting the ConfigMap is how an operator returns
//!   to the defaults (co-location off), so this is not "bad input".
//! * Key missing or blank: that key's default, no error.
//! * Key malformed or invalid: that key keeps its last good value and the
//!   status carries an error naming the key and the JSON path. Other keys
//!   are still updated. A malformed `colocation-config` before any good one
//!   leaves co-location *unavailable*: the noderesource controller then
//!   leaves nodes alone rather than resetting their batch resources.

use std::collections::BTreeMap;
use std::sync::Arc;

use kolo_api::crd::{
    CPUBurstStrategy, ResourceQOSStrategy, ResourceThresholdStrategy, SystemStrategy,
};
use serde::Serialize;

use super::colocation::{ColocationCfg, ResolvedColocation};
use super::slo::{HostApplicationCfg, NodeStrategies, ResolvedStrategies, SloKeys, SloStrategy};
use super::{ConfigKey, ConfigKeyError, parse_key};

/// The configuration in force.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SloConfig {
    /// `colocation-config`, resolved; `None` while unavailable (no good
    /// value was ever read).
    pub colocation: Option<ResolvedColocation>,
    /// The NodeSLO keys, resolved.
    pub slo: SloKeys,
}

/// The outcome of the last update, for logs, events and `/readyz`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConfigStatus {
    /// Whether the ConfigMap existed.
    pub config_map_present: bool,
    /// Keys that failed and kept their previous value.
    pub errors: Vec<String>,
}

impl ConfigStatus {
    /// Whether the last update applied every key.
    pub fn is_ok(&self) -> bool {
        self.config_map_present && self.errors.is_empty()
    }
}

/// Holds the configuration in force and updates it from ConfigMap data.
#[derive(Debug, Clone, Default)]
pub struct SloConfigStore {
    config: Arc<SloConfig>,
    status: ConfigStatus,
}

impl SloConfigStore {
    /// A store that has seen no ConfigMap yet (co-location unavailable, the
    /// NodeSLO keys at their defaults).
    pub fn new() -> SloConfigStore {
        SloConfigStore::default()
    }

    /// The configuration in force (cheap to clone and share).
    pub fn config(&self) -> Arc<SloConfig> {
        Arc::clone(&self.config)
    }

    /// The outcome of the last update.
    pub fn status(&self) -> &ConfigStatus {
        &self.status
    }

    /// Applies a new version of the ConfigMap's `data` (`None`: the
    /// ConfigMap does not exist). Returns whether the configuration in force
    /// changed.
    pub fn update(&mut self, data: Option<&BTreeMap<String, String>>) -> bool {
        let old = &*self.config;
        let mut errors: Vec<ConfigKeyError> = Vec::new();
        let colocation = match data {
            None => Some(ResolvedColocation::default()),
            Some(data) => match parse_key::<ColocationCfg>(Some(data)) {
                Ok(Some(cfg)) => Some(ResolvedColocation::resolve(&cfg)),
                Ok(None) => Some(ResolvedColocation::default()),
                Err(e) => {
                    errors.push(e);
                    old.colocation.clone()
                }
            },
        };
        let slo = SloKeys {
            resource_threshold: strategies::<ResourceThresholdStrategy>(
                data,
                &old.slo.resource_threshold,
                &mut errors,
            ),
            resource_qos: strategies::<ResourceQOSStrategy>(
                data,
                &old.slo.resource_qos,
                &mut errors,
            ),
            cpu_burst: strategies::<CPUBurstStrategy>(data, &old.slo.cpu_burst, &mut errors),
            system: strategies::<SystemStrategy>(data, &old.slo.system, &mut errors),
            host_applications: key_or_old::<HostApplicationCfg>(
                data,
                &old.slo.host_applications,
                &mut errors,
            ),
        };
        let mut status = ConfigStatus {
            config_map_present: data.is_some(),
            errors: errors.iter().map(ToString::to_string).collect(),
        };
        if data.is_none() {
            status.errors.insert(0, "ConfigMap not found: every key uses its default".into());
        }
        let config = SloConfig { colocation, slo };
        self.status = status;
        if config == *self.config {
            return false;
        }
        self.config = Arc::new(config);
        true
    }
}

fn strategies<S: SloStrategy>(
    data: Option<&BTreeMap<String, String>>,
    old: &ResolvedStrategies<S>,
    errors: &mut Vec<ConfigKeyError>,
) -> ResolvedStrategies<S> {
    match parse_key::<NodeStrategies<S>>(data) {
        Ok(Some(cfg)) => ResolvedStrategies::resolve(&cfg),
        Ok(None) => ResolvedStrategies::default(),
        Err(e) => {
            errors.push(e);
            old.clone()
        }
    }
}

fn key_or_old<K: ConfigKey + PartialEq>(
    data: Option<&BTreeMap<String, String>>,
    old: &K,
    errors: &mut Vec<ConfigKeyError>,
) -> K {
    match parse_key::<K>(data) {
        Ok(Some(v)) => v,
        Ok(None) => K::default(),
        Err(e) => {
            errors.push(e);
            old.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn unavailable_until_first_good_colocation_config() {
        let mut store = SloConfigStore::new();
        assert!(store.config().colocation.is_none());
        store.update(Some(&data(&[("colocation-config", "{bad")])));
        assert!(store.config().colocation.is_none(), "a bad first value keeps it unavailable");
        assert_eq!(store.status().errors.len(), 1);
        assert!(store.status().errors[0].starts_with("colocation-config: $:"));
    }

    #[test]
    fn malformed_key_keeps_last_good_value_and_others_update() {
        let mut store = SloConfigStore::new();
        assert!(store.update(Some(&data(&[
            ("colocation-config", r#"{"enable":true,"cpuReclaimThresholdPercent":70}"#),
            (
                "resource-threshold-config",
                r#"{"clusterStrategy":{"cpuSuppressThresholdPercent":50}}"#
            ),
        ]))));
        assert!(store.status().is_ok());
        // Next version: colocation-config broken, threshold changed.
        assert!(store.update(Some(&data(&[
            ("colocation-config", r#"{"enable":true,"cpuReclaimThresholdPercent":"70"}"#),
            (
                "resource-threshold-config",
                r#"{"clusterStrategy":{"cpuSuppressThresholdPercent":40}}"#
            ),
        ]))));
        let config = store.config();
        let colocation = config.colocation.as_ref().unwrap();
        assert!(colocation.cluster.is_enabled(), "last good colocation kept");
        assert_eq!(colocation.cluster.cpu_reclaim_threshold(), 70);
        assert_eq!(config.slo.resource_threshold.cluster.cpu_suppress_threshold_percent, Some(40));
        assert_eq!(store.status().errors.len(), 1);
        assert!(
            store.status().errors[0]
                .starts_with("colocation-config: $.cpuReclaimThresholdPercent:"),
            "{:?}",
            store.status().errors
        );
    }

    #[test]
    fn missing_key_and_missing_configmap_mean_defaults() {
        let mut store = SloConfigStore::new();
        store.update(Some(&data(&[("colocation-config", r#"{"enable":true}"#)])));
        store.update(Some(&data(&[])));
        assert!(!store.config().colocation.as_ref().unwrap().cluster.is_enabled());
        assert!(store.status().is_ok());
        store.update(Some(&data(&[("colocation-config", r#"{"enable":true}"#)])));
        store.update(None);
        assert!(!store.config().colocation.as_ref().unwrap().cluster.is_enabled());
        assert!(!store.status().is_ok());
        assert!(!store.status().config_map_present);
    }

    #[test]
    fn update_reports_whether_anything_changed() {
        let mut store = SloConfigStore::new();
        let d = data(&[("colocation-config", r#"{"enable":true}"#)]);
        assert!(store.update(Some(&d)));
        assert!(!store.update(Some(&d)));
        let same_meaning = data(&[("colocation-config", r#"{ "enable": true }"#)]);
        assert!(!store.update(Some(&same_meaning)));
    }
}
