//! The runtime hook protocol between `kolo runtime-proxy` (the client) and
//! the node agent's hook server.
//!
//! In spirit it is Koordinator's `RuntimeHookService` (spec §8.2): the
//! proxy tells the hook server what the kubelet is about to ask the
//! container runtime, and the server answers with what to change. It
//! differs in three ways, listed in `docs/compatibility.md`:
//!
//! * one request and one response type for every stage (the stage is a
//!   field), carried as JSON over HTTP/1.1 on a unix socket
//!   (`POST /v1/hook`), so `curl --unix-socket` can talk to it;
//! * a change is data with explicit absence: a `None` field leaves the
//!   kubelet's value alone (the reference uses sentinels: `0` for "unset",
//!   `-1` for "unlimited"), so a hook can ask for any value;
//! * the proxy keeps no state: stages that carry only a container or
//!   sandbox id (start, stop, remove) send the ids and no pod metadata,
//!   and the server resolves them itself.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The HTTP path the hook server answers on.
pub const HOOK_PATH: &str = "/v1/hook";

/// The default socket of the agent's hook server.
pub const DEFAULT_HOOK_SOCKET: &str = "/var/run/kolo/agent-hooks.sock";

/// When a hook runs, relative to the CRI call it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Stage {
    /// Before `RunPodSandbox`: the pod cgroup exists (the kubelet made it),
    /// no container does.
    PreRunPodSandbox,
    /// After a successful `StopPodSandbox`.
    PostStopPodSandbox,
    /// Before `CreateContainer`: the container's resources, environment
    /// and annotations may be changed.
    PreCreateContainer,
    /// Before `StartContainer`.
    PreStartContainer,
    /// After a successful `StartContainer`.
    PostStartContainer,
    /// Before `UpdateContainerResources`: the new resources may be changed.
    PreUpdateContainerResources,
    /// After a successful `StopContainer`.
    PostStopContainer,
    /// Before `RemovePodSandbox`.
    PreRemovePodSandbox,
}

impl Stage {
    /// Every stage, in the order of a pod's life.
    pub const ALL: [Stage; 8] = [
        Stage::PreRunPodSandbox,
        Stage::PreCreateContainer,
        Stage::PreStartContainer,
        Stage::PostStartContainer,
        Stage::PreUpdateContainerResources,
        Stage::PostStopContainer,
        Stage::PostStopPodSandbox,
        Stage::PreRemovePodSandbox,
    ];

    /// The stage's name, as in Koordinator (`PreCreateContainer`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Stage::PreRunPodSandbox => "PreRunPodSandbox",
            Stage::PostStopPodSandbox => "PostStopPodSandbox",
            Stage::PreCreateContainer => "PreCreateContainer",
            Stage::PreStartContainer => "PreStartContainer",
            Stage::PostStartContainer => "PostStartContainer",
            Stage::PreUpdateContainerResources => "PreUpdateContainerResources",
            Stage::PostStopContainer => "PostStopContainer",
            Stage::PreRemovePodSandbox => "PreRemovePodSandbox",
        }
    }

    /// Whether the hook runs after the CRI call (its answer is ignored).
    pub fn is_post(self) -> bool {
        matches!(
            self,
            Stage::PostStopPodSandbox | Stage::PostStartContainer | Stage::PostStopContainer
        )
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A stage name that is not one of [`Stage::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown runtime hook stage {0:?} (expected one of PreRunPodSandbox, PreCreateContainer, PreStartContainer, PostStartContainer, PreUpdateContainerResources, PostStopContainer, PostStopPodSandbox, PreRemovePodSandbox)"
)]
pub struct UnknownStage(pub String);

impl FromStr for Stage {
    type Err = UnknownStage;

    fn from_str(s: &str) -> Result<Stage, UnknownStage> {
        Stage::ALL.into_iter().find(|st| st.name() == s).ok_or_else(|| UnknownStage(s.into()))
    }
}

/// What the proxy does when a hook fails (error, timeout, no server).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum FailurePolicy {
    /// The CRI call goes on as the kubelet asked; the agent's reconcile
    /// loop fixes the container later.
    #[default]
    Ignore,
    /// The CRI call fails, and the kubelet retries it.
    Fail,
}

/// A pod's identity, from the sandbox metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodMeta {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.uid`.
    pub uid: String,
    /// The sandbox attempt (0 for the first).
    pub attempt: u32,
}

/// A container's identity.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerMeta {
    /// The container's name in the pod spec (empty when only the id is
    /// known).
    pub name: String,
    /// The attempt (restart count).
    pub attempt: u32,
    /// The runtime's container id (empty before `CreateContainer` returns).
    pub id: String,
}

/// A container's Linux resources as the CRI carries them
/// (`LinuxContainerResources`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LinuxResources {
    /// CFS period in µs (0: the runtime's default).
    pub cpu_period: i64,
    /// CFS quota in µs (0 or -1: unlimited).
    pub cpu_quota: i64,
    /// `cpu.shares` (cgroup v1 units).
    pub cpu_shares: i64,
    /// Memory limit in bytes (0: unlimited).
    pub memory_limit_in_bytes: i64,
    /// `oom_score_adj`.
    pub oom_score_adj: i64,
    /// `cpuset.cpus` (empty: inherited).
    pub cpuset_cpus: String,
    /// `cpuset.mems` (empty: inherited).
    pub cpuset_mems: String,
    /// cgroup v2 files to write (`unified`).
    pub unified: BTreeMap<String, String>,
}

/// What a hook changes in a container's resources; `None` leaves the
/// kubelet's value.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourcesPatch {
    /// New CFS period (µs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_period: Option<i64>,
    /// New CFS quota (µs; -1: unlimited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_quota: Option<i64>,
    /// New `cpu.shares`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_shares: Option<i64>,
    /// New memory limit (bytes; -1: unlimited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_limit_in_bytes: Option<i64>,
    /// New `cpuset.cpus`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpuset_cpus: Option<String>,
    /// New `cpuset.mems`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpuset_mems: Option<String>,
    /// cgroup v2 files to set (added to the kubelet's).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub unified: BTreeMap<String, String>,
}

impl ResourcesPatch {
    /// Whether the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == ResourcesPatch::default()
    }
}

/// What the proxy tells the hook server. Fields a stage does not know are
/// empty (see [`Stage`] for what each stage carries).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HookRequest {
    /// The stage (the only field every request has).
    pub stage: Option<Stage>,
    /// The pod, when the CRI call carries its sandbox config
    /// (RunPodSandbox, CreateContainer) or the runtime's container labels
    /// name it (UpdateContainerResources).
    pub pod: Option<PodMeta>,
    /// The sandbox id, when known.
    pub pod_sandbox_id: String,
    /// The pod's labels.
    pub pod_labels: BTreeMap<String, String>,
    /// The pod's annotations (the kubelet passes all of them to the
    /// sandbox config).
    pub pod_annotations: BTreeMap<String, String>,
    /// The pod's cgroup parent (the pod cgroup, as the kubelet names it).
    pub pod_cgroup_parent: String,
    /// The sandbox's runtime handler.
    pub runtime_handler: String,
    /// The container, for container stages.
    pub container: Option<ContainerMeta>,
    /// The container's annotations.
    pub container_annotations: BTreeMap<String, String>,
    /// The container's resources as the kubelet asked for them.
    pub container_resources: Option<LinuxResources>,
    /// The container's environment as the kubelet set it.
    pub container_envs: BTreeMap<String, String>,
}

/// What the hook server answers. Everything empty: no change.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HookResponse {
    /// Pod labels to add or override (RunPodSandbox).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_labels: BTreeMap<String, String>,
    /// Pod annotations to add or override (RunPodSandbox).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_annotations: BTreeMap<String, String>,
    /// A new cgroup parent for the sandbox (RunPodSandbox).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_cgroup_parent: Option<String>,
    /// Container annotations to add or override (CreateContainer).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub container_annotations: BTreeMap<String, String>,
    /// Resource changes (CreateContainer, UpdateContainerResources).
    #[serde(skip_serializing_if = "ResourcesPatch::is_empty")]
    pub container_resources: ResourcesPatch,
    /// Environment variables to add or override (CreateContainer).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub container_envs: BTreeMap<String, String>,
}

impl HookResponse {
    /// Whether the response changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == HookResponse::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_names_round_trip_and_unknown_names_are_refused() {
        for stage in Stage::ALL {
            assert_eq!(stage.name().parse::<Stage>(), Ok(stage));
            let json = serde_json::to_string(&stage).unwrap();
            assert_eq!(json, format!("\"{}\"", stage.name()));
        }
        let err = "PreCreate".parse::<Stage>().unwrap_err();
        assert!(err.to_string().contains("\"PreCreate\""), "{err}");
        let post: Vec<_> = Stage::ALL.into_iter().filter(|s| s.is_post()).collect();
        assert_eq!(
            post,
            [Stage::PostStartContainer, Stage::PostStopContainer, Stage::PostStopPodSandbox]
        );
    }

    #[test]
    fn an_empty_response_is_an_empty_object_and_absent_fields_read_as_no_change() {
        assert_eq!(serde_json::to_string(&HookResponse::default()).unwrap(), "{}");
        let r: HookResponse =
            serde_json::from_str(r#"{"containerResources":{"cpusetCpus":"2-3","cpuQuota":-1}}"#)
                .unwrap();
        assert_eq!(r.container_resources.cpuset_cpus.as_deref(), Some("2-3"));
        assert_eq!(r.container_resources.cpu_quota, Some(-1));
        assert_eq!(r.container_resources.cpu_shares, None);
        assert!(!r.is_empty());
    }

    #[test]
    fn a_request_reads_with_only_its_stage() {
        let r: HookRequest = serde_json::from_str(r#"{"stage":"PreStartContainer"}"#).unwrap();
        assert_eq!(r.stage, Some(Stage::PreStartContainer));
        assert!(r.pod.is_none() && r.container.is_none());
    }
}
