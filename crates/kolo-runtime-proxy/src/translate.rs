//! Between CRI messages and the hook protocol: what a hook is told about a
//! call ([`hook_request`]), and the bytes that apply its answer
//! ([`patch`]).
//!
//! Both directions use the `runtime.v1` messages for both CRI versions:
//! `v1` was made as a copy of `v1alpha2` and every field read or patched
//! here has the same number and type in both (a test checks it on the
//! generated code). Nothing is re-encoded: [`patch`] returns a message to
//! append to the kubelet's, so fields the proxy does not know survive.

use std::collections::{BTreeMap, HashMap};

use kolo_api::runtime_hook::{
    ContainerMeta, HookRequest, HookResponse, LinuxResources, PodMeta, ResourcesPatch, Stage,
};
use prost::Message;

use crate::cri::v1;
use crate::method::HookedCall;

/// A hooked call's message the proxy could not decode (it then passes the
/// call through without its hook).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call:?} request: {message}")]
pub struct DecodeError {
    /// The call.
    pub call: HookedCall,
    /// prost's message.
    pub message: String,
}

/// The hook request for `stage` of `call`, from the call's message.
pub fn hook_request(
    call: HookedCall,
    stage: Stage,
    message: &[u8],
) -> Result<HookRequest, DecodeError> {
    let bad = |e: prost::DecodeError| DecodeError { call, message: e.to_string() };
    let mut req = HookRequest { stage: Some(stage), ..HookRequest::default() };
    match call {
        HookedCall::RunPodSandbox => {
            let m = v1::RunPodSandboxRequest::decode(message).map_err(bad)?;
            req.runtime_handler = m.runtime_handler;
            if let Some(config) = m.config {
                fill_pod(&mut req, config);
            }
        }
        HookedCall::CreateContainer => {
            let m = v1::CreateContainerRequest::decode(message).map_err(bad)?;
            req.pod_sandbox_id = m.pod_sandbox_id;
            if let Some(sandbox) = m.sandbox_config {
                fill_pod(&mut req, sandbox);
            }
            if let Some(c) = m.config {
                let meta = c.metadata.unwrap_or_default();
                req.container = Some(ContainerMeta {
                    name: meta.name,
                    attempt: meta.attempt,
                    id: String::new(),
                });
                req.container_annotations = sorted(c.annotations);
                req.container_resources = c.linux.and_then(|l| l.resources).map(resources);
                req.container_envs = c.envs.into_iter().map(|kv| (kv.key, kv.value)).collect();
            }
        }
        HookedCall::UpdateContainerResources => {
            let m = v1::UpdateContainerResourcesRequest::decode(message).map_err(bad)?;
            req.container = Some(container_id(m.container_id));
            req.container_annotations = sorted(m.annotations);
            req.container_resources = m.linux.map(resources);
        }
        HookedCall::StartContainer => {
            let m = v1::StartContainerRequest::decode(message).map_err(bad)?;
            req.container = Some(container_id(m.container_id));
        }
        HookedCall::StopContainer => {
            let m = v1::StopContainerRequest::decode(message).map_err(bad)?;
            req.container = Some(container_id(m.container_id));
        }
        HookedCall::StopPodSandbox => {
            let m = v1::StopPodSandboxRequest::decode(message).map_err(bad)?;
            req.pod_sandbox_id = m.pod_sandbox_id;
        }
        HookedCall::RemovePodSandbox => {
            let m = v1::RemovePodSandboxRequest::decode(message).map_err(bad)?;
            req.pod_sandbox_id = m.pod_sandbox_id;
        }
    }
    Ok(req)
}

fn fill_pod(req: &mut HookRequest, config: v1::PodSandboxConfig) {
    let meta = config.metadata.unwrap_or_default();
    req.pod = Some(PodMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        attempt: meta.attempt,
    });
    req.pod_labels = sorted(config.labels);
    req.pod_annotations = sorted(config.annotations);
    req.pod_cgroup_parent = config.linux.map(|l| l.cgroup_parent).unwrap_or_default();
}

fn container_id(id: String) -> ContainerMeta {
    ContainerMeta { id, ..ContainerMeta::default() }
}

fn sorted(map: HashMap<String, String>) -> BTreeMap<String, String> {
    map.into_iter().collect()
}

fn resources(r: v1::LinuxContainerResources) -> LinuxResources {
    LinuxResources {
        cpu_period: r.cpu_period,
        cpu_quota: r.cpu_quota,
        cpu_shares: r.cpu_shares,
        memory_limit_in_bytes: r.memory_limit_in_bytes,
        oom_score_adj: r.oom_score_adj,
        cpuset_cpus: r.cpuset_cpus,
        cpuset_mems: r.cpuset_mems,
        unified: sorted(r.unified),
    }
}

/// The encoded message to append to `call`'s request so that it carries
/// `response`'s changes; `None` when nothing changes.
///
/// Appending can set a field but not clear it: a change to a zero value
/// (`0`, `""`) is dropped, as protobuf does not encode it. kolo's hooks
/// never ask for one (unlimited is `-1`).
pub fn patch(call: HookedCall, response: &HookResponse) -> Option<Vec<u8>> {
    let bytes = match call {
        HookedCall::RunPodSandbox => {
            let linux = response.pod_cgroup_parent.as_ref().map(|parent| {
                v1::LinuxPodSandboxConfig { cgroup_parent: parent.clone(), ..Default::default() }
            });
            if linux.is_none()
                && response.pod_labels.is_empty()
                && response.pod_annotations.is_empty()
            {
                return None;
            }
            let config = v1::PodSandboxConfig {
                labels: unsorted(&response.pod_labels),
                annotations: unsorted(&response.pod_annotations),
                linux,
                ..Default::default()
            };
            v1::RunPodSandboxRequest { config: Some(config), ..Default::default() }.encode_to_vec()
        }
        HookedCall::CreateContainer => {
            let r = &response.container_resources;
            if r.is_empty()
                && response.container_envs.is_empty()
                && response.container_annotations.is_empty()
            {
                return None;
            }
            let linux = (!r.is_empty()).then(|| v1::LinuxContainerConfig {
                resources: Some(patched_resources(r)),
                ..Default::default()
            });
            let envs = response
                .container_envs
                .iter()
                .map(|(key, value)| v1::KeyValue { key: key.clone(), value: value.clone() })
                .collect();
            let config = v1::ContainerConfig {
                envs,
                annotations: unsorted(&response.container_annotations),
                linux,
                ..Default::default()
            };
            v1::CreateContainerRequest { config: Some(config), ..Default::default() }
                .encode_to_vec()
        }
        HookedCall::UpdateContainerResources => {
            let r = &response.container_resources;
            if r.is_empty() {
                return None;
            }
            v1::UpdateContainerResourcesRequest {
                linux: Some(patched_resources(r)),
                ..Default::default()
            }
            .encode_to_vec()
        }
        _ => return None,
    };
    Some(bytes)
}

fn unsorted(map: &BTreeMap<String, String>) -> HashMap<String, String> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn patched_resources(p: &ResourcesPatch) -> v1::LinuxContainerResources {
    v1::LinuxContainerResources {
        cpu_period: p.cpu_period.unwrap_or_default(),
        cpu_quota: p.cpu_quota.unwrap_or_default(),
        cpu_shares: p.cpu_shares.unwrap_or_default(),
        memory_limit_in_bytes: p.memory_limit_in_bytes.unwrap_or_default(),
        cpuset_cpus: p.cpuset_cpus.clone().unwrap_or_default(),
        cpuset_mems: p.cpuset_mems.clone().unwrap_or_default(),
        unified: unsorted(&p.unified),
        ..Default::default()
    }
}

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;
