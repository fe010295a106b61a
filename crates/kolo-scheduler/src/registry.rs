//! Plugins by name: how a profile's configuration becomes plugin instances.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::framework::Plugin;

/// Why a plugin's arguments were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct PluginArgsError {
    /// The JSON path of the offending field inside the args (`.` for the
    /// args object itself).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl PluginArgsError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> PluginArgsError {
        PluginArgsError { field: field.into(), message: message.into() }
    }

    /// An error from a validation error whose text reads `field: message`
    /// (the args' own error types spell it so); `.` when it names no field.
    pub fn from_validation(error: impl std::fmt::Display) -> PluginArgsError {
        let text = error.to_string();
        match text.split_once(": ") {
            Some((field, message)) => PluginArgsError::new(field, message),
            None => PluginArgsError::new(".", text),
        }
    }
}

/// Builds a plugin from its arguments (`None` when the configuration gives
/// none: use the defaults).
pub type PluginFactory = fn(args: Option<&Value>) -> Result<Arc<dyn Plugin>, PluginArgsError>;

/// The plugins a scheduler can enable, by name.
#[derive(Clone, Default)]
pub struct Registry {
    factories: BTreeMap<&'static str, PluginFactory>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Adds a plugin under `name` (replacing one of the same name).
    pub fn register(&mut self, name: &'static str, factory: PluginFactory) -> &mut Registry {
        self.factories.insert(name, factory);
        self
    }

    /// The factory for `name`.
    pub fn get(&self, name: &str) -> Option<PluginFactory> {
        self.factories.get(name).copied()
    }

    /// Every registered name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.factories.keys().copied()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.factories.keys()).finish()
    }
}

/// Decodes a plugin's arguments into `T`, naming the field on error.
///
/// `apiVersion` and `kind` (kube-scheduler args carry both) are accepted and
/// ignored, except that a `kind` other than `expected_kind` is an error: it
/// means the args were written for another plugin.
pub fn decode_args<T: DeserializeOwned + Default>(
    args: Option<&Value>,
    expected_kind: &str,
) -> Result<T, PluginArgsError> {
    let Some(args) = args else {
        return Ok(T::default());
    };
    let Value::Object(map) = args else {
        return Err(PluginArgsError::new(".", format!("expected an object, got {args}")));
    };
    let mut map = map.clone();
    map.remove("apiVersion");
    if let Some(kind) = map.remove("kind")
        && kind.as_str() != Some(expected_kind)
    {
        return Err(PluginArgsError::new("kind", format!("expected {expected_kind}, got {kind}")));
    }
    serde_path_to_error::deserialize(Value::Object(map))
        .map_err(|e| PluginArgsError::new(e.path().to_string(), e.into_inner().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, serde::Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct DemoArgs {
        #[serde(default)]
        usage_thresholds: BTreeMap<String, i64>,
    }

    #[test]
    fn args_decode_with_field_paths() {
        let ok = serde_json::json!({"kind": "DemoArgs", "apiVersion": "x/v1", "usageThresholds": {"cpu": 65}});
        let got: DemoArgs = decode_args(Some(&ok), "DemoArgs").unwrap();
        assert_eq!(got.usage_thresholds["cpu"], 65);
        assert_eq!(decode_args::<DemoArgs>(None, "DemoArgs").unwrap(), DemoArgs::default());

        let bad = serde_json::json!({"usageThresholds": {"cpu": "high"}});
        let err = decode_args::<DemoArgs>(Some(&bad), "DemoArgs").unwrap_err();
        assert_eq!(err.field, "usageThresholds.cpu");
        let wrong_kind = serde_json::json!({"kind": "OtherArgs"});
        assert_eq!(
            decode_args::<DemoArgs>(Some(&wrong_kind), "DemoArgs").unwrap_err().field,
            "kind"
        );
        let not_object = serde_json::json!([1]);
        assert_eq!(decode_args::<DemoArgs>(Some(&not_object), "DemoArgs").unwrap_err().field, ".");
    }
}
