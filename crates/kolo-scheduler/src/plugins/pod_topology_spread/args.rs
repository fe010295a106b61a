//! `PodTopologySpreadArgs`: cluster-level default constraints, with
//! kube-scheduler's JSON names, defaults and validation.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use serde::Deserialize;

/// The hostname label (kube's `v1.LabelHostname`).
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// The zone label (kube's `v1.LabelTopologyZone`).
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";

/// Where the default constraints come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum DefaultingType {
    /// kube-scheduler's built-in defaults ([`system_default_constraints`]);
    /// `defaultConstraints` must then be empty.
    #[default]
    System,
    /// `defaultConstraints` as given (possibly none).
    List,
}

/// The arguments of the `PodTopologySpread` plugin (kube-scheduler's
/// `PodTopologySpreadArgs`). Unknown fields are rejected; `apiVersion` and
/// `kind` are accepted and ignored by the registry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodTopologySpreadArgs {
    /// Constraints for pods that set none of their own.
    #[serde(default)]
    pub default_constraints: Vec<TopologySpreadConstraint>,
    /// `System` (the default) or `List`.
    #[serde(default)]
    pub defaulting_type: DefaultingType,
}

/// An invalid argument; the message starts with the field's path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ArgsError {
    /// The field's JSON path, e.g. `defaultConstraints[0].maxSkew`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn err(field: String, message: impl Into<String>) -> ArgsError {
    ArgsError { field, message: message.into() }
}

/// kube-scheduler's system defaults: hostname maxSkew 3 and zone maxSkew 5,
/// both ScheduleAnyway.
pub fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    let soft = |key: &str, max_skew| TopologySpreadConstraint {
        max_skew,
        topology_key: key.to_string(),
        when_unsatisfiable: "ScheduleAnyway".to_string(),
        ..Default::default()
    };
    vec![soft(LABEL_HOSTNAME, 3), soft(LABEL_ZONE, 5)]
}

impl PodTopologySpreadArgs {
    /// Validates the arguments (kube's `ValidatePodTopologySpreadArgs`) and
    /// returns the default constraints in effect.
    pub fn default_constraints(&self) -> Result<Vec<TopologySpreadConstraint>, ArgsError> {
        if self.defaulting_type == DefaultingType::System {
            if !self.default_constraints.is_empty() {
                return Err(err(
                    "defaultConstraints".into(),
                    "must be empty for System defaultingType",
                ));
            }
            return Ok(system_default_constraints());
        }
        let mut seen = BTreeSet::new();
        for (i, c) in self.default_constraints.iter().enumerate() {
            let field = |name: &str| format!("defaultConstraints[{i}].{name}");
            if c.max_skew <= 0 {
                return Err(err(
                    field("maxSkew"),
                    format!("{} must be greater than 0", c.max_skew),
                ));
            }
            if c.topology_key.is_empty() {
                return Err(err(field("topologyKey"), "can not be empty"));
            }
            if !matches!(c.when_unsatisfiable.as_str(), "DoNotSchedule" | "ScheduleAnyway") {
                return Err(err(
                    field("whenUnsatisfiable"),
                    format!(
                        "{:?} is not one of DoNotSchedule, ScheduleAnyway",
                        c.when_unsatisfiable
                    ),
                ));
            }
            if !seen.insert((c.topology_key.as_str(), c.when_unsatisfiable.as_str())) {
                return Err(err(
                    field("topologyKey"),
                    format!("duplicate {{{}, {}}}", c.topology_key, c.when_unsatisfiable),
                ));
            }
            // The selector is deduced per pod.
            if c.label_selector.is_some() {
                return Err(err(
                    field("labelSelector"),
                    "constraint must not define a selector, as they deduced for each pod",
                ));
            }
            if c.match_label_keys.as_ref().is_some_and(|k| !k.is_empty()) {
                return Err(err(
                    field("matchLabelKeys"),
                    "default constraints cannot set matchLabelKeys",
                ));
            }
        }
        Ok(self.default_constraints.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::decode_args;

    fn decode(json: serde_json::Value) -> Result<Vec<TopologySpreadConstraint>, String> {
        let args: PodTopologySpreadArgs =
            decode_args(Some(&json), "PodTopologySpreadArgs").map_err(|e| e.field)?;
        args.default_constraints().map_err(|e| e.field)
    }

    #[test]
    fn defaulting_and_validation_name_the_field() {
        let system = decode(serde_json::json!({})).unwrap();
        assert_eq!(system.len(), 2);
        assert_eq!((system[0].topology_key.as_str(), system[0].max_skew), (LABEL_HOSTNAME, 3));
        assert_eq!((system[1].topology_key.as_str(), system[1].max_skew), (LABEL_ZONE, 5));
        assert_eq!(decode(serde_json::json!({"defaultingType": "List"})).unwrap(), []);
        let one = serde_json::json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"});
        let list =
            decode(serde_json::json!({"defaultingType": "List", "defaultConstraints": [one]}));
        assert_eq!(list.unwrap()[0].topology_key, "zone");
        let bad = |c: serde_json::Value, ty: &str| {
            decode(serde_json::json!({"defaultingType": ty, "defaultConstraints": c})).unwrap_err()
        };
        assert_eq!(bad(serde_json::json!([one]), "System"), "defaultConstraints");
        let with = |k: &str, v: serde_json::Value| {
            let mut c = one.clone();
            c[k] = v;
            serde_json::json!([c])
        };
        assert_eq!(bad(with("maxSkew", 0.into()), "List"), "defaultConstraints[0].maxSkew");
        assert_eq!(
            bad(with("topologyKey", "".into()), "List"),
            "defaultConstraints[0].topologyKey"
        );
        assert_eq!(
            bad(with("whenUnsatisfiable", "Maybe".into()), "List"),
            "defaultConstraints[0].whenUnsatisfiable"
        );
        assert_eq!(
            bad(with("labelSelector", serde_json::json!({})), "List"),
            "defaultConstraints[0].labelSelector"
        );
        assert_eq!(bad(serde_json::json!([one, one]), "List"), "defaultConstraints[1].topologyKey");
        assert!(decode(serde_json::json!({"defaultingType": "Sometimes"})).is_err());
        assert!(decode(serde_json::json!({"defaultConstraint": []})).is_err());
    }
}
