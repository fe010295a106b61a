//! The `slo-controller-config` ConfigMap: one typed value per key, parsed
//! with errors that name the key and the JSON path, merged the way the
//! reference merges (a later layer overrides only the fields it sets), and
//! kept at its last good value when a new version is malformed.
//!
//! Keys (Koordinator spec §3.1): `colocation-config` ([`colocation`]),
//! `resource-threshold-config`, `resource-qos-config`, `cpu-burst-config`,
//! `system-config` and `host-application-config` ([`slo`]).

pub mod colocation;
pub mod merge;
pub mod slo;
pub mod store;

use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use self::colocation::{
    CalculatePolicy, ColocationCfg, ColocationStrategy, NodeColocationCfg, ResolvedColocation,
    node_colocation_strategy,
};
pub use self::merge::{merge_json, merge_typed};
pub use self::slo::{
    HostApplicationCfg, NodeStrategies, ResolvedStrategies, SloKeys, SloStrategy,
    default_resource_qos,
};
pub use self::store::{ConfigStatus, SloConfig, SloConfigStore};

/// Default namespace of the `slo-controller-config` ConfigMap (Koordinator's,
/// so an existing cluster's ConfigMap is picked up as is).
pub const DEFAULT_CONFIG_NAMESPACE: &str = "koordinator-system";
/// Default name of the ConfigMap.
pub const DEFAULT_CONFIG_NAME: &str = "slo-controller-config";

/// A malformed or invalid key of the ConfigMap.
///
/// Displays as `colocation-config: $.nodeConfigs[0].cpuReclaimThresholdPercent: ...`,
/// so the operator can go straight to the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {path}: {message}")]
pub struct ConfigKeyError {
    /// The ConfigMap key (`colocation-config`, ...).
    pub key: &'static str,
    /// JSON path of the offending field, `$` for the whole value.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl ConfigKeyError {
    /// An error at `path` inside `key`.
    pub fn new(key: &'static str, path: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigKeyError { key, path: path.into(), message: message.into() }
    }
}

/// A field that failed validation: its JSON path (relative to the value
/// validated, without the leading `$`) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Path such as `.cpuReclaimThresholdPercent` or `.nodeConfigs[1].name`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl FieldError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { path: path.into(), message: message.into() }
    }

    /// The same error, one level deeper (`prefix` is prepended to the path).
    pub fn under(mut self, prefix: &str) -> Self {
        self.path = format!("{prefix}{}", self.path);
        self
    }
}

/// A typed ConfigMap key.
pub trait ConfigKey: Sized + Clone + Default + Serialize + DeserializeOwned {
    /// The key in the ConfigMap's `data`.
    const KEY: &'static str;

    /// Checks ranges and allowed values after parsing.
    fn validate(&self) -> Result<(), FieldError>;

    /// Parses the key's JSON text. The default reads `Self` directly; types
    /// with `#[serde(flatten)]` fields override it, because serde loses the
    /// path of an error inside a flattened field.
    fn from_json(text: &str) -> Result<Self, ConfigKeyError> {
        parse_json(Self::KEY, text)
    }
}

/// Parses one key of a ConfigMap's `data`.
///
/// `Ok(None)` when the key is missing or blank (the reference then uses the
/// default and clears the error). A value that is not valid JSON, has a field
/// of the wrong type, or fails [`ConfigKey::validate`] is an error naming the
/// key and the field's JSON path.
pub fn parse_key<T: ConfigKey>(
    data: Option<&BTreeMap<String, String>>,
) -> Result<Option<T>, ConfigKeyError> {
    let Some(text) = data.and_then(|d| d.get(T::KEY)) else {
        return Ok(None);
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    let value = T::from_json(text)?;
    value.validate().map_err(|e| ConfigKeyError::new(T::KEY, format!("${}", e.path), e.message))?;
    Ok(Some(value))
}

/// Deserializes JSON text into `T`, reporting the path of a bad field.
pub fn parse_json<T: DeserializeOwned>(key: &'static str, text: &str) -> Result<T, ConfigKeyError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = json_path(e.path());
        let inner = e.into_inner();
        // serde_json's message ends with " at line L column C"; keep it, it
        // helps with multi-line values.
        ConfigKeyError::new(key, path, inner.to_string())
    })
}

/// Deserializes an already-parsed JSON value into `T`; errors carry
/// `prefix` (a JSON path such as `$.nodeConfigs[2]`) before the field's path.
pub fn parse_value<T: DeserializeOwned>(
    key: &'static str,
    prefix: &str,
    value: serde_json::Value,
) -> Result<T, ConfigKeyError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = json_path(e.path());
        ConfigKeyError::new(key, format!("{prefix}{}", &path[1..]), e.into_inner().to_string())
    })
}

/// Renders a serde path as `$.a.b[0].c`.
fn json_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::from("$");
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                out.push('.');
                out.push_str(key);
            }
            // serde reports this where it has no field name (e.g. a syntax
            // error before the first field): the position is in the message.
            Segment::Unknown => {}
        }
    }
    out
}

/// Checks `value` is within `min..=max` (either bound optional).
pub fn check_range(
    path: &str,
    value: Option<i64>,
    min: Option<i64>,
    max: Option<i64>,
) -> Result<(), FieldError> {
    let Some(v) = value else { return Ok(()) };
    if min.is_some_and(|m| v < m) || max.is_some_and(|m| v > m) {
        let range = match (min, max) {
            (Some(a), Some(b)) => format!("between {a} and {b}"),
            (Some(a), None) => format!("at least {a}"),
            (None, Some(b)) => format!("at most {b}"),
            (None, None) => unreachable!("a bound was exceeded"),
        };
        return Err(FieldError::new(path, format!("{v} is out of range: must be {range}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Probe {
        #[serde(default)]
        items: Vec<Item>,
    }

    #[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
    struct Item {
        #[serde(default)]
        percent: Option<i64>,
    }

    impl ConfigKey for Probe {
        const KEY: &'static str = "probe-config";
        fn validate(&self) -> Result<(), FieldError> {
            for (i, item) in self.items.iter().enumerate() {
                check_range(".percent", item.percent, Some(0), Some(100))
                    .map_err(|e| e.under(&format!(".items[{i}]")))?;
            }
            Ok(())
        }
    }

    fn data(text: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(Probe::KEY.to_string(), text.to_string())])
    }

    #[test]
    fn missing_or_blank_key_is_none() {
        assert_eq!(parse_key::<Probe>(None), Ok(None));
        assert_eq!(parse_key::<Probe>(Some(&BTreeMap::new())), Ok(None));
        assert_eq!(parse_key::<Probe>(Some(&data("  \n"))), Ok(None));
    }

    #[test]
    fn type_errors_name_key_and_path() {
        let err = parse_key::<Probe>(Some(&data(r#"{"items":[{},{"percent":"x"}]}"#))).unwrap_err();
        assert_eq!(err.key, "probe-config");
        assert_eq!(err.path, "$.items[1].percent");
        assert!(
            err.to_string().starts_with("probe-config: $.items[1].percent: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn syntax_errors_are_reported_at_the_root() {
        let err = parse_key::<Probe>(Some(&data("{not json"))).unwrap_err();
        assert_eq!(err.path, "$");
        assert!(err.message.contains("line 1"), "{err}");
    }

    #[test]
    fn validation_errors_name_the_field() {
        let err = parse_key::<Probe>(Some(&data(r#"{"items":[{"percent":101}]}"#))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "probe-config: $.items[0].percent: 101 is out of range: must be between 0 and 100"
        );
        let ok = parse_key::<Probe>(Some(&data(r#"{"items":[{"percent":100}]}"#))).unwrap();
        assert_eq!(ok.unwrap().items[0].percent, Some(100));
    }
}
