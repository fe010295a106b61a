//! The translation read from and written to `v1alpha2` messages (what the
//! kubelet 1.20 sends) and `v1` ones, through the generated code of each.

use std::collections::HashMap;

use kolo_api::runtime_hook::{HookResponse, ResourcesPatch, Stage};
use prost::Message;

use super::*;
use crate::cri::v1alpha2 as a2;

fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn a2_sandbox() -> a2::PodSandboxConfig {
    a2::PodSandboxConfig {
        metadata: Some(a2::PodSandboxMetadata {
            name: "web-0".into(),
            uid: "u-1".into(),
            namespace: "prod".into(),
            attempt: 2,
        }),
        hostname: "web-0".into(),
        labels: map(&[("app", "web")]),
        annotations: map(&[("scheduling.koordinator.sh/resource-status", r#"{"cpuset":"2-3"}"#)]),
        linux: Some(a2::LinuxPodSandboxConfig {
            cgroup_parent: "/kubepods/burstable/podu-1".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn a2_create() -> a2::CreateContainerRequest {
    a2::CreateContainerRequest {
        pod_sandbox_id: "sb-1".into(),
        config: Some(a2::ContainerConfig {
            metadata: Some(a2::ContainerMetadata { name: "app".into(), attempt: 1 }),
            image: Some(a2::ImageSpec { image: "busybox".into(), ..Default::default() }),
            command: vec!["sh".into(), "-c".into(), "cat /sys/fs/cgroup/cpuset/cpuset.cpus".into()],
            envs: vec![a2::KeyValue { key: "A".into(), value: "1".into() }],
            annotations: map(&[("keep", "me"), ("over", "old")]),
            linux: Some(a2::LinuxContainerConfig {
                resources: Some(a2::LinuxContainerResources {
                    cpu_period: 100_000,
                    cpu_quota: 50_000,
                    cpu_shares: 512,
                    memory_limit_in_bytes: 1 << 30,
                    oom_score_adj: 900,
                    cpuset_cpus: "0-7".into(),
                    cpuset_mems: "0".into(),
                    ..Default::default()
                }),
                security_context: Some(a2::LinuxContainerSecurityContext {
                    privileged: false,
                    readonly_rootfs: true,
                    ..Default::default()
                }),
            }),
            log_path: "app/1.log".into(),
            ..Default::default()
        }),
        sandbox_config: Some(a2_sandbox()),
    }
}

#[test]
fn a_v1alpha2_create_container_reads_whole_through_the_v1_messages() {
    let req = hook_request(
        HookedCall::CreateContainer,
        Stage::PreCreateContainer,
        &a2_create().encode_to_vec(),
    )
    .unwrap();
    assert_eq!(req.stage, Some(Stage::PreCreateContainer));
    assert_eq!(req.pod_sandbox_id, "sb-1");
    let pod = req.pod.unwrap();
    assert_eq!(
        (pod.name.as_str(), pod.namespace.as_str(), pod.uid.as_str()),
        ("web-0", "prod", "u-1")
    );
    assert_eq!(pod.attempt, 2);
    assert_eq!(req.pod_labels["app"], "web");
    assert_eq!(
        req.pod_annotations["scheduling.koordinator.sh/resource-status"],
        r#"{"cpuset":"2-3"}"#
    );
    assert_eq!(req.pod_cgroup_parent, "/kubepods/burstable/podu-1");
    let c = req.container.unwrap();
    assert_eq!((c.name.as_str(), c.attempt, c.id.as_str()), ("app", 1, ""));
    assert_eq!(req.container_annotations["keep"], "me");
    assert_eq!(req.container_envs["A"], "1");
    let r = req.container_resources.unwrap();
    assert_eq!(
        (r.cpu_period, r.cpu_quota, r.cpu_shares, r.memory_limit_in_bytes, r.oom_score_adj),
        (100_000, 50_000, 512, 1 << 30, 900)
    );
    assert_eq!((r.cpuset_cpus.as_str(), r.cpuset_mems.as_str()), ("0-7", "0"));
}

#[test]
fn a_patch_appended_to_a_v1alpha2_create_container_changes_only_what_it_sets() {
    let original = a2_create();
    let response = HookResponse {
        container_resources: ResourcesPatch {
            cpuset_cpus: Some("2-3".into()),
            cpu_quota: Some(-1),
            ..Default::default()
        },
        container_annotations: [("over".to_string(), "new".to_string())].into(),
        container_envs: [("B".to_string(), "2".to_string())].into(),
        ..Default::default()
    };
    let appended = patch(HookedCall::CreateContainer, &response).unwrap();
    let mut bytes = original.encode_to_vec();
    bytes.extend_from_slice(&appended);
    let merged = a2::CreateContainerRequest::decode(bytes.as_slice()).unwrap();

    let mut want = original.clone();
    let config = want.config.as_mut().unwrap();
    let res = config.linux.as_mut().unwrap().resources.as_mut().unwrap();
    res.cpuset_cpus = "2-3".into();
    res.cpu_quota = -1;
    config.annotations.insert("over".into(), "new".into());
    config.envs.push(a2::KeyValue { key: "B".into(), value: "2".into() });
    assert_eq!(merged, want);
}

#[test]
fn a_run_pod_sandbox_patch_sets_the_cgroup_parent_and_merges_labels() {
    let original =
        a2::RunPodSandboxRequest { config: Some(a2_sandbox()), runtime_handler: "runc".into() };
    let req =
        hook_request(HookedCall::RunPodSandbox, Stage::PreRunPodSandbox, &original.encode_to_vec())
            .unwrap();
    assert_eq!(req.runtime_handler, "runc");
    assert_eq!(req.pod.unwrap().uid, "u-1");
    let response = HookResponse {
        pod_cgroup_parent: Some("/kubepods/besteffort/podu-1".into()),
        pod_labels: [("kolo".to_string(), "yes".to_string())].into(),
        ..Default::default()
    };
    let mut bytes = original.encode_to_vec();
    bytes.extend_from_slice(&patch(HookedCall::RunPodSandbox, &response).unwrap());
    let merged = a2::RunPodSandboxRequest::decode(bytes.as_slice()).unwrap();
    let config = merged.config.unwrap();
    assert_eq!(config.linux.unwrap().cgroup_parent, "/kubepods/besteffort/podu-1");
    assert_eq!(config.labels, map(&[("app", "web"), ("kolo", "yes")]));
    assert_eq!(config.hostname, "web-0");
    assert_eq!(merged.runtime_handler, "runc");
}

#[test]
fn an_update_reads_the_container_id_and_takes_a_resource_patch() {
    let original = a2::UpdateContainerResourcesRequest {
        container_id: "c-9".into(),
        linux: Some(a2::LinuxContainerResources {
            cpu_shares: 2,
            cpuset_cpus: "0-7".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let req = hook_request(
        HookedCall::UpdateContainerResources,
        Stage::PreUpdateContainerResources,
        &original.encode_to_vec(),
    )
    .unwrap();
    assert_eq!(req.container.unwrap().id, "c-9");
    assert_eq!(req.container_resources.unwrap().cpuset_cpus, "0-7");
    let response = HookResponse {
        container_resources: ResourcesPatch { cpuset_cpus: Some("4".into()), ..Default::default() },
        ..Default::default()
    };
    let mut bytes = original.encode_to_vec();
    bytes.extend_from_slice(&patch(HookedCall::UpdateContainerResources, &response).unwrap());
    let merged = a2::UpdateContainerResourcesRequest::decode(bytes.as_slice()).unwrap();
    let linux = merged.linux.unwrap();
    assert_eq!((linux.cpuset_cpus.as_str(), linux.cpu_shares), ("4", 2));
    assert_eq!(merged.container_id, "c-9");
}

#[test]
fn id_only_calls_carry_their_ids_and_no_change_is_no_patch() {
    let start = v1::StartContainerRequest { container_id: "c-1".into() }.encode_to_vec();
    let req = hook_request(HookedCall::StartContainer, Stage::PreStartContainer, &start).unwrap();
    assert_eq!(req.container.unwrap().id, "c-1");
    let stop = v1::StopPodSandboxRequest { pod_sandbox_id: "sb-2".into() }.encode_to_vec();
    let req = hook_request(HookedCall::StopPodSandbox, Stage::PostStopPodSandbox, &stop).unwrap();
    assert_eq!(req.pod_sandbox_id, "sb-2");
    for call in [
        HookedCall::RunPodSandbox,
        HookedCall::CreateContainer,
        HookedCall::UpdateContainerResources,
        HookedCall::StartContainer,
    ] {
        assert_eq!(patch(call, &HookResponse::default()), None, "{call:?}");
    }
    let err = hook_request(HookedCall::CreateContainer, Stage::PreCreateContainer, &[0xff, 0xff])
        .unwrap_err();
    assert_eq!(err.call, HookedCall::CreateContainer);
}

proptest::proptest! {
    /// Whatever non-zero values a hook asks for reach the request the
    /// runtime decodes, and the kubelet's other fields stay as they were.
    #[test]
    fn any_resource_patch_lands_and_keeps_the_rest(
        quota in proptest::prop_oneof![proptest::strategy::Just(-1i64), 1000i64..10_000_000],
        shares in 2i64..262_144,
        memory in 1i64..(1 << 40),
        cpus in "[0-9]{1,2}(-[0-9]{1,2})?",
        set_shares: bool,
    ) {
        let original = a2_create();
        let patch_value = ResourcesPatch {
            cpu_quota: Some(quota),
            cpu_shares: set_shares.then_some(shares),
            memory_limit_in_bytes: Some(memory),
            cpuset_cpus: Some(cpus.clone()),
            ..Default::default()
        };
        let response = HookResponse { container_resources: patch_value, ..Default::default() };
        let mut bytes = original.encode_to_vec();
        bytes.extend_from_slice(&patch(HookedCall::CreateContainer, &response).unwrap());
        let merged = a2::CreateContainerRequest::decode(bytes.as_slice()).unwrap();
        let r = merged.config.as_ref().unwrap().linux.as_ref().unwrap().resources.clone().unwrap();
        proptest::prop_assert_eq!(r.cpu_quota, quota);
        proptest::prop_assert_eq!(r.cpu_shares, if set_shares { shares } else { 512 });
        proptest::prop_assert_eq!(r.memory_limit_in_bytes, memory);
        proptest::prop_assert_eq!(&r.cpuset_cpus, &cpus);
        proptest::prop_assert_eq!((r.cpu_period, r.oom_score_adj, r.cpuset_mems.as_str()), (100_000, 900, "0"));
        proptest::prop_assert_eq!(&merged.sandbox_config, &original.sandbox_config);
        let (m, o) = (merged.config.unwrap(), original.config.unwrap());
        proptest::prop_assert_eq!((&m.image, &m.command, &m.log_path), (&o.image, &o.command, &o.log_path));
    }
}
