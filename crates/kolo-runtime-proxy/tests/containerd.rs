//! The proxy between a CRI client and a real containerd (scripts/cluster
//! start --runtime-only; `KOLO_TEST_CRI_SOCKET`), with a hook server of the
//! test's: a container starts with the hook's values already in its
//! cgroups, failures follow their policy, and calls the proxy does not
//! hook come back exactly as the runtime answered them.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use kolo_api::runtime_hook::{FailurePolicy, HookResponse, ResourcesPatch, Stage};
use kolo_runtime_proxy::cri::{self, v1, v1alpha2};
use kolo_runtime_proxy::hook_client::HookConfig;
use kolo_runtime_proxy::stats::HookOutcome;
use kolo_runtime_proxy::testing::{self, Behaviour, EXIT_WAIT, hook_server, start_proxy};

fn hooks(socket: &Path, stages: &[(Stage, FailurePolicy)], timeout: Duration) -> HookConfig {
    HookConfig { socket: socket.to_path_buf(), timeout, stages: stages.iter().copied().collect() }
}

const SCRIPT: &str = "grep Cpus_allowed_list /proc/self/status; cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/memory/memory.limit_in_bytes";

fn online_cpus() -> String {
    std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap().trim().to_string()
}

/// Runs SCRIPT in a new pod through `endpoint` (v1alpha2, as kubelet
/// 1.20); the container's lines, or the first failing call's status.
async fn run_pod(
    endpoint: &Path,
    root: &str,
    dir: &Path,
    name: &str,
) -> Result<Vec<String>, tonic::Status> {
    use testing::v1alpha2 as flow;
    let mut client = v1alpha2::runtime_service_client::RuntimeServiceClient::new(
        cri::connect(endpoint).await.unwrap(),
    );
    let uid = format!("uid-{name}-{}", std::process::id());
    let parent = format!("{root}/pod{uid}");
    let logs = dir.join(name);
    std::fs::create_dir_all(&logs).unwrap();
    let annotations = HashMap::from([("kolo.test/pod".to_string(), name.to_string())]);
    let mut sandbox = flow::sandbox_config(name, &uid, &parent, &logs, annotations);
    // A pod named skip-* asks the proxy not to call the hook server, as
    // Koordinator's label says.
    if name.starts_with("skip-") {
        let label = kolo_api::names::label::RUNTIME_PROXY_SKIP_HOOKSERVER;
        sandbox.labels.insert(label.to_string(), "true".to_string());
    }
    let id = flow::run_sandbox(&mut client, &sandbox).await?;
    let result = async {
        let c =
            flow::create(&mut client, &id, &sandbox, flow::container_config("app", SCRIPT)).await?;
        flow::start_to_exit(&mut client, &c, &logs.join("app.log"), EXIT_WAIT).await
    }
    .await;
    flow::remove_sandbox(&mut client, &id).await.unwrap();
    testing::remove_cgroup(&parent);
    let finished = result?;
    assert_eq!(finished.exit_code, 0, "{:?}", finished.lines);
    Ok(finished.lines)
}

fn patch_answer(cpus: &str) -> HookResponse {
    HookResponse {
        container_resources: ResourcesPatch {
            cpuset_cpus: Some(cpus.into()),
            cpu_quota: Some(50_000),
            memory_limit_in_bytes: Some(64 << 20),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_starts_with_the_hooks_cpuset_and_limits_already_applied() {
    let Some((runtime, root)) = testing::test_runtime(
        "a_container_starts_with_the_hooks_cpuset_and_limits_already_applied",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let online = online_cpus();
    // A CPU the container would not be limited to without the hook.
    let cpu = online.split(['-', ',']).next_back().unwrap().to_string();
    assert_ne!(online, cpu, "precondition: more than one CPU online ({online})");
    let server = hook_server(
        &dir.path().join("hooks.sock"),
        Behaviour::Answer(Box::new(patch_answer(&cpu))),
    );
    let stages = [
        (Stage::PreRunPodSandbox, FailurePolicy::Ignore),
        (Stage::PreCreateContainer, FailurePolicy::Fail),
    ];
    let proxy = start_proxy(
        dir.path(),
        &runtime,
        Some(hooks(&server.socket, &stages, Duration::from_secs(5))),
    );

    // The same pod straight to containerd: the kubelet's values.
    let direct = run_pod(&runtime, &root, dir.path(), "direct").await.unwrap();
    assert_eq!(
        direct,
        [format!("Cpus_allowed_list:\t{online}"), "-1".into(), "9223372036854771712".into()]
    );

    let lines = run_pod(&proxy.socket, &root, dir.path(), "hooked").await.unwrap();
    // The container's first command saw the hook's cpuset, CFS quota and
    // memory limit: they were in place before its process ran.
    assert_eq!(
        lines,
        [format!("Cpus_allowed_list:\t{cpu}"), "50000".into(), (64u64 << 20).to_string()]
    );

    let seen = server.seen.lock().unwrap().clone();
    let stages: Vec<_> = seen.iter().map(|r| r.stage.unwrap()).collect();
    assert_eq!(stages, [Stage::PreRunPodSandbox, Stage::PreCreateContainer], "{seen:?}");
    let create = &seen[1];
    assert_eq!(create.pod.as_ref().unwrap().name, "hooked");
    assert_eq!(create.pod_annotations["kolo.test/pod"], "hooked");
    assert_eq!(create.container.as_ref().unwrap().name, "app");
    assert_eq!(create.container_resources.as_ref().unwrap().cpu_shares, 2);
    assert!(create.pod_cgroup_parent.ends_with(&format!("poduid-hooked-{}", std::process::id())));
    assert_eq!(proxy.proxy.stats().hooks(HookOutcome::Changed), 1);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_hook_is_ignored_or_fails_the_call_as_its_policy_says() {
    let Some((runtime, root)) =
        testing::test_runtime("a_failing_hook_is_ignored_or_fails_the_call_as_its_policy_says")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let online = online_cpus();
    let missing = dir.path().join("no-such-hook-server.sock");

    // Ignore: no hook server at all, the pod runs as the kubelet asked.
    let ignore = [(Stage::PreCreateContainer, FailurePolicy::Ignore)];
    let proxy =
        start_proxy(dir.path(), &runtime, Some(hooks(&missing, &ignore, Duration::from_secs(1))));
    let lines = run_pod(&proxy.socket, &root, dir.path(), "ignored").await.unwrap();
    assert_eq!(lines[0], format!("Cpus_allowed_list:\t{online}"));
    assert_eq!(proxy.proxy.stats().hooks(HookOutcome::Ignored), 1);
    proxy.stop().await;

    // Ignore, with a server slower than the timeout: the same.
    let slow =
        hook_server(&dir.path().join("hooks.sock"), Behaviour::Sleep(Duration::from_secs(30)));
    let proxy = start_proxy(
        dir.path(),
        &runtime,
        Some(hooks(&slow.socket, &ignore, Duration::from_millis(300))),
    );
    let lines = run_pod(&proxy.socket, &root, dir.path(), "slow").await.unwrap();
    assert_eq!(lines[0], format!("Cpus_allowed_list:\t{online}"));
    proxy.stop().await;
    drop(slow);

    // Fail: the CreateContainer call fails and nothing is created.
    let fail = [(Stage::PreCreateContainer, FailurePolicy::Fail)];
    let proxy =
        start_proxy(dir.path(), &runtime, Some(hooks(&missing, &fail, Duration::from_secs(1))));
    let err = run_pod(&proxy.socket, &root, dir.path(), "failed").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable, "{err:?}");
    assert!(err.message().contains("PreCreateContainer hook (failure policy Fail)"), "{err:?}");
    assert_eq!(proxy.proxy.stats().hooks(HookOutcome::Failed), 1);
    // ... unless the pod is labelled to skip the hook server.
    let lines = run_pod(&proxy.socket, &root, dir.path(), "skip-failed").await.unwrap();
    assert_eq!(lines[0], format!("Cpus_allowed_list:\t{online}"));
    assert_eq!(proxy.proxy.stats().hooks(HookOutcome::Skipped), 1);
    assert_eq!(proxy.proxy.stats().hooks(HookOutcome::Failed), 1);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_it_does_not_hook_come_back_exactly_as_the_runtime_answered() {
    let Some((runtime, _root)) =
        testing::test_runtime("calls_it_does_not_hook_come_back_exactly_as_the_runtime_answered")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = hook_server(&dir.path().join("hooks.sock"), Behaviour::Answer(Box::default()));
    let all: Vec<_> = Stage::ALL.iter().map(|s| (*s, FailurePolicy::Ignore)).collect();
    let proxy = start_proxy(
        dir.path(),
        &runtime,
        Some(hooks(&server.socket, &all, Duration::from_secs(5))),
    );
    for endpoint in [&runtime, &proxy.socket] {
        assert!(endpoint.exists());
    }
    let direct = cri::connect(&runtime).await.unwrap();
    let proxied = cri::connect(&proxy.socket).await.unwrap();

    // v1alpha2 and v1: the same versions and images either way.
    let mut d = v1alpha2::runtime_service_client::RuntimeServiceClient::new(direct.clone());
    let mut p = v1alpha2::runtime_service_client::RuntimeServiceClient::new(proxied.clone());
    let req = v1alpha2::VersionRequest { version: "v1alpha2".into() };
    assert_eq!(
        d.version(req.clone()).await.unwrap().into_inner(),
        p.version(req).await.unwrap().into_inner()
    );
    let mut d1 = v1::runtime_service_client::RuntimeServiceClient::new(direct.clone());
    let mut p1 = v1::runtime_service_client::RuntimeServiceClient::new(proxied.clone());
    let req = v1::VersionRequest { version: "v1".into() };
    let (dv, pv) = (
        d1.version(req.clone()).await.unwrap().into_inner(),
        p1.version(req).await.unwrap().into_inner(),
    );
    assert_eq!((dv.runtime_api_version.as_str(), &dv), ("v1", &pv));
    let mut di = v1::image_service_client::ImageServiceClient::new(direct.clone());
    let mut pi = v1::image_service_client::ImageServiceClient::new(proxied.clone());
    // containerd lists in no fixed order.
    let sorted = |mut r: v1::ListImagesResponse| {
        r.images.sort_by(|a, b| a.id.cmp(&b.id));
        r
    };
    let images =
        sorted(di.list_images(v1::ListImagesRequest::default()).await.unwrap().into_inner());
    assert!(
        images.images.iter().any(|i| i.repo_tags.iter().any(|t| t == testing::BUSYBOX_IMAGE)),
        "{images:?}"
    );
    assert_eq!(
        images,
        sorted(pi.list_images(v1::ListImagesRequest::default()).await.unwrap().into_inner())
    );

    // Errors: the same code and message, from an unhooked and a hooked call.
    let req = v1alpha2::ContainerStatusRequest {
        container_id: "no-such-container".into(),
        verbose: false,
    };
    let (de, pe) = (
        d.container_status(req.clone()).await.unwrap_err(),
        p.container_status(req).await.unwrap_err(),
    );
    assert_eq!((de.code(), de.message()), (pe.code(), pe.message()));
    assert_eq!(de.code(), tonic::Code::NotFound, "{de:?}");
    let req = v1alpha2::StartContainerRequest { container_id: "no-such-container".into() };
    let (de, pe) = (
        d.start_container(req.clone()).await.unwrap_err(),
        p.start_container(req).await.unwrap_err(),
    );
    assert_eq!((de.code(), de.message()), (pe.code(), pe.message()));
    // The failed start ran its pre hook only: post hooks follow success.
    let seen: Vec<_> = server.seen.lock().unwrap().iter().map(|r| r.stage.unwrap()).collect();
    assert_eq!(seen, [Stage::PreStartContainer]);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_proxy_loses_nothing_and_v1_pods_are_hooked_too() {
    use testing::v1 as flow;
    let Some((runtime, root)) =
        testing::test_runtime("a_restarted_proxy_loses_nothing_and_v1_pods_are_hooked_too")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cpu = online_cpus().split(['-', ',']).next().unwrap().to_string();
    let server = hook_server(
        &dir.path().join("hooks.sock"),
        Behaviour::Answer(Box::new(patch_answer(&cpu))),
    );
    let stages = [(Stage::PreCreateContainer, FailurePolicy::Fail)];
    let config = hooks(&server.socket, &stages, Duration::from_secs(5));
    let proxy = start_proxy(dir.path(), &runtime, Some(config.clone()));
    let mut client = v1::runtime_service_client::RuntimeServiceClient::new(
        cri::connect(&proxy.socket).await.unwrap(),
    );
    let uid = format!("uid-v1-{}", std::process::id());
    let parent = format!("{root}/pod{uid}");
    let sandbox = flow::sandbox_config("v1", &uid, &parent, dir.path(), HashMap::new());
    let id = flow::run_sandbox(&mut client, &sandbox).await.unwrap();
    let container = flow::create(&mut client, &id, &sandbox, flow::container_config("app", SCRIPT))
        .await
        .unwrap();

    // A new proxy process between create and start (the kubelet reconnects).
    proxy.stop().await;
    let proxy = start_proxy(dir.path(), &runtime, Some(config));
    let mut client = v1::runtime_service_client::RuntimeServiceClient::new(
        cri::connect(&proxy.socket).await.unwrap(),
    );
    let finished =
        flow::start_to_exit(&mut client, &container, &dir.path().join("app.log"), EXIT_WAIT).await;
    let listed =
        client.list_pod_sandbox(v1::ListPodSandboxRequest::default()).await.unwrap().into_inner();
    flow::remove_sandbox(&mut client, &id).await.unwrap();
    testing::remove_cgroup(&parent);
    assert!(listed.items.iter().any(|s| s.id == id), "the sandbox survives the proxy's restart");
    let lines = finished.unwrap().lines;
    assert_eq!(lines[0], format!("Cpus_allowed_list:\t{cpu}"));
    proxy.stop().await;
}
