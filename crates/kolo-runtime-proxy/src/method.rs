//! Which CRI calls the proxy hooks, read from the gRPC path
//! (`/runtime.v1alpha2.RuntimeService/CreateContainer`).

use kolo_api::runtime_hook::Stage;

/// The CRI API version of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CriVersion {
    /// `runtime.v1alpha2` (kubelet ≤ 1.25).
    V1alpha2,
    /// `runtime.v1`.
    V1,
}

impl CriVersion {
    /// The protobuf package (`runtime.v1`).
    pub fn package(self) -> &'static str {
        match self {
            CriVersion::V1alpha2 => "runtime.v1alpha2",
            CriVersion::V1 => "runtime.v1",
        }
    }
}

/// A RuntimeService call the proxy hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookedCall {
    /// `RunPodSandbox`.
    RunPodSandbox,
    /// `StopPodSandbox`.
    StopPodSandbox,
    /// `RemovePodSandbox`.
    RemovePodSandbox,
    /// `CreateContainer`.
    CreateContainer,
    /// `StartContainer`.
    StartContainer,
    /// `StopContainer`.
    StopContainer,
    /// `UpdateContainerResources`.
    UpdateContainerResources,
}

impl HookedCall {
    /// The stage run before the call, if any.
    pub fn pre(self) -> Option<Stage> {
        match self {
            HookedCall::RunPodSandbox => Some(Stage::PreRunPodSandbox),
            HookedCall::RemovePodSandbox => Some(Stage::PreRemovePodSandbox),
            HookedCall::CreateContainer => Some(Stage::PreCreateContainer),
            HookedCall::StartContainer => Some(Stage::PreStartContainer),
            HookedCall::UpdateContainerResources => Some(Stage::PreUpdateContainerResources),
            HookedCall::StopPodSandbox | HookedCall::StopContainer => None,
        }
    }

    /// The stage run after the call succeeded, if any.
    pub fn post(self) -> Option<Stage> {
        match self {
            HookedCall::StopPodSandbox => Some(Stage::PostStopPodSandbox),
            HookedCall::StartContainer => Some(Stage::PostStartContainer),
            HookedCall::StopContainer => Some(Stage::PostStopContainer),
            _ => None,
        }
    }

    fn from_method(method: &str) -> Option<HookedCall> {
        Some(match method {
            "RunPodSandbox" => HookedCall::RunPodSandbox,
            "StopPodSandbox" => HookedCall::StopPodSandbox,
            "RemovePodSandbox" => HookedCall::RemovePodSandbox,
            "CreateContainer" => HookedCall::CreateContainer,
            "StartContainer" => HookedCall::StartContainer,
            "StopContainer" => HookedCall::StopContainer,
            "UpdateContainerResources" => HookedCall::UpdateContainerResources,
            _ => return None,
        })
    }
}

/// The hooked call a gRPC path names, with its CRI version; `None` for
/// every other call (passed through untouched: ImageService, Exec, the
/// list and status calls, and any method a newer CRI adds).
pub fn hooked(path: &str) -> Option<(CriVersion, HookedCall)> {
    let (service, method) = path.strip_prefix('/')?.split_once('/')?;
    let version = match service {
        "runtime.v1.RuntimeService" => CriVersion::V1,
        "runtime.v1alpha2.RuntimeService" => CriVersion::V1alpha2,
        _ => return None,
    };
    Some((version, HookedCall::from_method(method)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_hooked_calls_of_both_versions_and_nothing_else() {
        let cases = [
            (
                "/runtime.v1.RuntimeService/CreateContainer",
                Some((CriVersion::V1, HookedCall::CreateContainer)),
            ),
            (
                "/runtime.v1alpha2.RuntimeService/RunPodSandbox",
                Some((CriVersion::V1alpha2, HookedCall::RunPodSandbox)),
            ),
            (
                "/runtime.v1alpha2.RuntimeService/UpdateContainerResources",
                Some((CriVersion::V1alpha2, HookedCall::UpdateContainerResources)),
            ),
            ("/runtime.v1.RuntimeService/ListContainers", None),
            ("/runtime.v1.RuntimeService/Exec", None),
            ("/runtime.v1.ImageService/PullImage", None),
            ("/runtime.v2.RuntimeService/CreateContainer", None),
            ("runtime.v1.RuntimeService/CreateContainer", None),
            ("/", None),
            ("", None),
        ];
        for (path, want) in cases {
            assert_eq!(hooked(path), want, "{path}");
        }
    }

    #[test]
    fn every_stage_belongs_to_exactly_one_call() {
        let calls = [
            HookedCall::RunPodSandbox,
            HookedCall::StopPodSandbox,
            HookedCall::RemovePodSandbox,
            HookedCall::CreateContainer,
            HookedCall::StartContainer,
            HookedCall::StopContainer,
            HookedCall::UpdateContainerResources,
        ];
        for stage in Stage::ALL {
            let owners = calls.iter().filter(|c| c.pre() == Some(stage) || c.post() == Some(stage));
            assert_eq!(owners.count(), 1, "{stage}");
            let pre = calls.iter().any(|c| c.pre() == Some(stage));
            assert_eq!(pre, !stage.is_post(), "{stage}");
        }
    }
}
