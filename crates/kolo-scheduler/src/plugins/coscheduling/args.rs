//! `CoschedulingArgs`: the plugin's configuration as written in a scheduler
//! profile, with the reference's JSON names and defaults (spec §8.1).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::plugins::load_aware::args::go_duration;

/// Default `defaultTimeout`: how long a gang's members wait at Permit when
/// the gang names no wait of its own.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// When a gang counts as complete at Permit (`match-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum MatchPolicy {
    /// `only-waiting`: at least minMember members are waiting (assumed).
    #[serde(rename = "only-waiting")]
    OnlyWaiting,
    /// `waiting-and-running`: waiting plus bound members reach minMember.
    #[serde(rename = "waiting-and-running")]
    WaitingAndRunning,
    /// `once-satisfied` (the default): minMember waiting, or the gang's
    /// group had a member bound once.
    #[default]
    #[serde(rename = "once-satisfied")]
    OnceSatisfied,
}

impl MatchPolicy {
    /// The policy an annotation value names, if any.
    pub fn parse(value: &str) -> Option<MatchPolicy> {
        match value {
            "only-waiting" => Some(MatchPolicy::OnlyWaiting),
            "waiting-and-running" => Some(MatchPolicy::WaitingAndRunning),
            "once-satisfied" => Some(MatchPolicy::OnceSatisfied),
            _ => None,
        }
    }
}

/// The arguments of the `Coscheduling` plugin. Unknown fields are refused;
/// `apiVersion` and `kind` are accepted and ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CoschedulingArgs {
    /// The wait of a gang that names none (or 0, or an invalid one); a Go
    /// duration, default `600s`.
    #[serde(default = "default_timeout", with = "go_duration")]
    pub default_timeout: Duration,
    /// Workers of the PodGroup status controller (default 1, at least 1).
    #[serde(default = "default_workers")]
    pub controller_workers: i32,
    /// Gang-aware preemption (default false). kolo has none: accepted and
    /// ignored, DefaultPreemption preempts for a gang's members one by one.
    #[serde(default)]
    pub enable_preemption: bool,
    /// Network-topology-aware gang placement (default false): accepted and
    /// ignored.
    #[serde(default)]
    pub aware_network_topology: bool,
    /// The policy of gangs that name none or an invalid one.
    #[serde(default)]
    pub default_match_policy: MatchPolicy,
}

fn default_timeout() -> Duration {
    DEFAULT_TIMEOUT
}

fn default_workers() -> i32 {
    1
}

impl Default for CoschedulingArgs {
    fn default() -> Self {
        CoschedulingArgs {
            default_timeout: DEFAULT_TIMEOUT,
            controller_workers: 1,
            enable_preemption: false,
            aware_network_topology: false,
            default_match_policy: MatchPolicy::OnceSatisfied,
        }
    }
}

/// An invalid argument; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoschedulingArgsError {
    /// `controllerWorkers` below 1.
    #[error("controllerWorkers: must be at least 1, got {0}")]
    ControllerWorkers(i32),
}

impl CoschedulingArgs {
    /// Checks the arguments as the reference's validation does.
    pub fn validate(&self) -> Result<(), CoschedulingArgsError> {
        if self.controller_workers < 1 {
            return Err(CoschedulingArgsError::ControllerWorkers(self.controller_workers));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::decode_args;

    fn decode(json: serde_json::Value) -> Result<CoschedulingArgs, String> {
        let args: CoschedulingArgs =
            decode_args(Some(&json), "CoschedulingArgs").map_err(|e| e.to_string())?;
        args.validate().map_err(|e| e.to_string())?;
        Ok(args)
    }

    #[test]
    fn defaults_and_json_names() {
        let empty = decode(serde_json::json!({})).unwrap();
        assert_eq!(empty, CoschedulingArgs::default());
        assert_eq!(empty.default_timeout, Duration::from_secs(600));
        assert_eq!(empty.default_match_policy, MatchPolicy::OnceSatisfied);
        let set = decode(serde_json::json!({
            "kind": "CoschedulingArgs",
            "defaultTimeout": "1m30s",
            "controllerWorkers": 4,
            "enablePreemption": true,
            "awareNetworkTopology": true,
            "defaultMatchPolicy": "only-waiting",
        }))
        .unwrap();
        assert_eq!(set.default_timeout, Duration::from_secs(90));
        assert_eq!(set.controller_workers, 4);
        assert!(set.enable_preemption && set.aware_network_topology);
        assert_eq!(set.default_match_policy, MatchPolicy::OnlyWaiting);
    }

    #[test]
    fn bad_args_name_their_field() {
        let cases = [
            (serde_json::json!({"controllerWorkers": 0}), "controllerWorkers: must be at least 1"),
            (serde_json::json!({"defaultTimeout": "-5s"}), "defaultTimeout: invalid duration"),
            (
                serde_json::json!({"defaultMatchPolicy": "all"}),
                "defaultMatchPolicy: unknown variant",
            ),
            (serde_json::json!({"timeout": "5s"}), "unknown field `timeout`"),
        ];
        for (json, want) in cases {
            let got = decode(json.clone()).unwrap_err();
            assert!(got.contains(want), "{json}: {got}");
        }
    }
}
