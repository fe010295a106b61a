//! Which QoS model a node runs: Koordinator's classes (kolo's strategies in
//! [`crate::qos`]) or Katalyst's CPU pools (this module tree).
//!
//! Chosen per node by the NodeSLO spec's free-form `extensions` object:
//!
//! ```yaml
//! spec:
//!   extensions:
//!     nodePolicy: katalyst   # or koordinator (the default)
//! ```
//!
//! `kolo agent plan --node-policy` overrides it for one run.

use std::fmt;
use std::str::FromStr;

use kolo_api::crd::NodeSLOSpec;

/// The key of [`NodePolicy`] in the NodeSLO spec's `extensions`.
pub const EXTENSION_KEY: &str = "nodePolicy";

/// A node's QoS model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodePolicy {
    /// Koordinator's classes (LSE / LSR / LS / BE / SYSTEM): today's
    /// behaviour.
    #[default]
    Koordinator,
    /// Katalyst's pools: reserve, dedicated, shared, reclaimed.
    Katalyst,
}

/// A node policy value that is not one of the two.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: unknown node policy {value} (expected \"koordinator\" or \"katalyst\")")]
pub struct NodePolicyError {
    /// Where the value came from (`spec.extensions.nodePolicy`, a flag).
    pub field: String,
    /// The value, quoted as JSON.
    pub value: String,
}

impl NodePolicy {
    /// The value as written.
    pub fn as_str(self) -> &'static str {
        match self {
            NodePolicy::Koordinator => "koordinator",
            NodePolicy::Katalyst => "katalyst",
        }
    }

    /// The policy the NodeSLO spec chooses: `spec.extensions.nodePolicy`,
    /// [`NodePolicy::Koordinator`] when absent.
    pub fn from_node_slo(spec: &NodeSLOSpec) -> Result<NodePolicy, NodePolicyError> {
        let field = format!("spec.extensions.{EXTENSION_KEY}");
        let Some(value) = spec.extensions.as_ref().and_then(|e| e.get(EXTENSION_KEY)) else {
            return Ok(NodePolicy::Koordinator);
        };
        let bad = || NodePolicyError { field: field.clone(), value: value.to_string() };
        value.as_str().ok_or_else(bad)?.parse().map_err(|_| bad())
    }
}

impl FromStr for NodePolicy {
    type Err = NodePolicyError;

    fn from_str(s: &str) -> Result<NodePolicy, NodePolicyError> {
        match s {
            "koordinator" => Ok(NodePolicy::Koordinator),
            "katalyst" => Ok(NodePolicy::Katalyst),
            _ => Err(NodePolicyError { field: "node policy".into(), value: format!("{s:?}") }),
        }
    }
}

impl fmt::Display for NodePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(extensions: serde_json::Value) -> NodeSLOSpec {
        serde_json::from_value(serde_json::json!({ "extensions": extensions })).unwrap()
    }

    #[test]
    fn parsed_from_the_node_slo_extensions() {
        // (extensions, expected policy or error message)
        let table = [
            (serde_json::json!({}), Ok(NodePolicy::Koordinator)),
            (serde_json::json!({"other": 1}), Ok(NodePolicy::Koordinator)),
            (serde_json::json!({"nodePolicy": "koordinator"}), Ok(NodePolicy::Koordinator)),
            (serde_json::json!({"nodePolicy": "katalyst"}), Ok(NodePolicy::Katalyst)),
            (
                serde_json::json!({"nodePolicy": "Katalyst"}),
                Err(
                    "spec.extensions.nodePolicy: unknown node policy \"Katalyst\" (expected \"koordinator\" or \"katalyst\")",
                ),
            ),
            (
                serde_json::json!({"nodePolicy": 3}),
                Err(
                    "spec.extensions.nodePolicy: unknown node policy 3 (expected \"koordinator\" or \"katalyst\")",
                ),
            ),
        ];
        for (extensions, want) in table {
            let got =
                NodePolicy::from_node_slo(&spec(extensions.clone())).map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_string), "{extensions}");
        }
        assert_eq!(NodePolicy::from_node_slo(&NodeSLOSpec::default()), Ok(NodePolicy::Koordinator));
        for p in [NodePolicy::Koordinator, NodePolicy::Katalyst] {
            assert_eq!(p.as_str().parse::<NodePolicy>(), Ok(p));
        }
    }
}
