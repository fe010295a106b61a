//! The hook server over an agent on a cgroup v2 tree in a temp dir, with a
//! pod source the test controls: lookups (published view, one refresh),
//! the stages, the pod cgroup writes, and the HTTP edge (400, 413).

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::AtomicUsize;

use k8s_openapi::api::core::v1::Pod;
use kolo_agent::agent::AgentConfig;
use kolo_agent::cgroup::LayoutConfig;
use kolo_agent::pods::{Fetched, PodSourceError};
use kolo_api::crd::ResourceThresholdStrategy;
use kolo_api::runtime_hook::{ContainerMeta, PodMeta, ResourcesPatch};
use kolo_core::resources::ResourceVector;

use super::*;

const BE_UID: &str = "0a0a0a0a-0000-4000-8000-000000000001";
const LSR_UID: &str = "0a0a0a0a-0000-4000-8000-000000000002";
const NEW_UID: &str = "0a0a0a0a-0000-4000-8000-000000000003";
const GI: i64 = 1 << 30;

/// A source whose pods the test sets; counts its fetches.
#[derive(Clone, Default)]
struct Pods {
    pods: Arc<Mutex<Vec<Pod>>>,
    fetches: Arc<AtomicUsize>,
}

impl PodSource for Pods {
    fn name(&self) -> &str {
        "test pods"
    }

    fn fetch(&mut self) -> Result<Fetched, PodSourceError> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        Ok(Fetched::Pods(self.pods.lock().unwrap().clone()))
    }
}

fn pod(name: &str, uid: &str, qos: &str, kube_qos: &str, resources: serde_json::Value) -> Pod {
    let mut annotations = serde_json::Map::new();
    if qos == "LSR" {
        annotations.insert(
            "scheduling.koordinator.sh/resource-status".into(),
            r#"{"cpuset":"2-3"}"#.into(),
        );
    }
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default", "uid": uid,
                     "labels": {"koordinator.sh/qosClass": qos}, "annotations": annotations},
        "spec": {"containers": [{"name": "main", "resources": resources}]},
        "status": {"phase": "Running", "qosClass": kube_qos},
    }))
    .unwrap()
}

fn be_pod(name: &str, uid: &str) -> Pod {
    pod(
        name,
        uid,
        "BE",
        "BestEffort",
        serde_json::json!({
            "requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "1Gi"},
            "limits": {"kubernetes.io/batch-cpu": "1000", "kubernetes.io/batch-memory": "2Gi"},
        }),
    )
}

fn lsr_pod() -> Pod {
    let r = serde_json::json!({"cpu": "2", "memory": "1Gi"});
    pod("lsr", LSR_UID, "LSR", "Guaranteed", serde_json::json!({"requests": r, "limits": r}))
}

/// A cgroup v2 tree (cgroupfs driver) with the BE pod's cgroup.
struct Fixture {
    tmp: tempfile::TempDir,
    source: Pods,
    agent: Arc<Mutex<Agent<Pods>>>,
    views: Arc<HookViews>,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("cgroup");
        let files = [("cpu.weight", "100"), ("cpu.max", "max 100000"), ("memory.max", "max")];
        for dir in ["kubepods", &format!("kubepods/besteffort/pod{BE_UID}")] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
            for (f, v) in files {
                std::fs::write(root.join(dir).join(f), format!("{v}\n")).unwrap();
            }
        }
        std::fs::write(root.join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
        let mut config = AgentConfig::new("node-1");
        config.cgroups = LayoutConfig::new(&root);
        config.allocatable = Some(ResourceVector::cpu_memory(8000, 32 * GI));
        let source = Pods::default();
        *source.pods.lock().unwrap() = vec![be_pod("be", BE_UID), lsr_pod()];
        let agent = Arc::new(Mutex::new(Agent::new(config, source.clone()).unwrap()));
        let views = Arc::new(HookViews::new(NodeSLOSpec::default()));
        Fixture { tmp, source, agent, views }
    }

    fn server(&self, dry_run: bool) -> HookServer<Pods> {
        HookServer::new(Arc::clone(&self.agent), Arc::clone(&self.views), dry_run)
    }

    /// What a round publishes: the agent's node after a pod sync.
    fn publish(&self, slo: &NodeSLOSpec) {
        let mut agent = lock(&self.agent);
        agent.sync_pods_now(Timestamp::now());
        self.views.publish(&agent.node_state(Timestamp::now()), slo, agent.pod_generation());
    }

    fn pod_file(&self, file: &str) -> String {
        let dir = self.tmp.path().join(format!("cgroup/kubepods/besteffort/pod{BE_UID}"));
        std::fs::read_to_string(dir.join(file)).unwrap().trim().to_string()
    }

    fn fetches(&self) -> usize {
        self.source.fetches.load(Ordering::SeqCst)
    }
}

fn request(stage: Stage, uid: &str, container: &str) -> HookRequest {
    HookRequest {
        stage: Some(stage),
        pod: Some(PodMeta { uid: uid.into(), ..Default::default() }),
        container: Some(ContainerMeta { name: container.into(), ..Default::default() }),
        ..Default::default()
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

fn be_patch(quota: i64) -> ResourcesPatch {
    ResourcesPatch {
        cpu_shares: Some(512),
        cpu_quota: Some(quota),
        memory_limit_in_bytes: Some(2 * GI),
        ..Default::default()
    }
}

#[test]
fn container_stages_answer_the_patch_of_the_hook_strategies() {
    let f = Fixture::new();
    f.publish(&NodeSLOSpec::default());
    let server = f.server(false);
    let fetched = f.fetches();
    // (stage, uid, container, expected patch, outcome)
    let cpus = ResourcesPatch { cpuset_cpus: Some("2-3".into()), ..Default::default() };
    let table = [
        (Stage::PreCreateContainer, BE_UID, "main", be_patch(100_000), Outcome::Patched),
        (Stage::PreUpdateContainerResources, BE_UID, "main", be_patch(100_000), Outcome::Patched),
        (Stage::PreCreateContainer, LSR_UID, "main", cpus, Outcome::Patched),
        (Stage::PreCreateContainer, BE_UID, "nope", ResourcesPatch::default(), Outcome::Failed),
        (Stage::PreStartContainer, BE_UID, "main", ResourcesPatch::default(), Outcome::Ignored),
        (Stage::PostStartContainer, BE_UID, "main", ResourcesPatch::default(), Outcome::Ignored),
        (Stage::PreCreateContainer, "", "main", ResourcesPatch::default(), Outcome::UnknownPod),
    ];
    for (stage, uid, container, patch, outcome) in table {
        let (response, got) = block_on(server.answer(stage, &request(stage, uid, container)));
        assert_eq!(response.container_resources, patch, "{stage} {uid} {container}");
        assert_eq!(got, outcome, "{stage} {uid} {container}");
    }
    assert_eq!(f.fetches(), fetched, "known pods are answered from the view");
}

#[test]
fn the_published_node_slo_is_followed() {
    let f = Fixture::new();
    let slo = NodeSLOSpec {
        resource_used_threshold_with_be: Some(ResourceThresholdStrategy {
            enable: Some(true),
            cpu_suppress_policy: Some("cfsQuota".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    f.publish(&slo);
    let r = request(Stage::PreCreateContainer, BE_UID, "main");
    let (response, _) = block_on(f.server(false).answer(Stage::PreCreateContainer, &r));
    assert_eq!(response.container_resources, be_patch(-1));
}

#[test]
fn a_pod_the_view_lacks_is_fetched_once_and_an_unknown_one_gets_nothing() {
    let f = Fixture::new();
    f.publish(&NodeSLOSpec::default());
    let server = f.server(false);
    f.source.pods.lock().unwrap().push(be_pod("new", NEW_UID));
    let before = f.fetches();
    let r = request(Stage::PreCreateContainer, NEW_UID, "main");
    let (response, outcome) = block_on(server.answer(Stage::PreCreateContainer, &r));
    assert_eq!((response.container_resources, outcome), (be_patch(100_000), Outcome::Patched));
    assert_eq!(f.fetches(), before + 1);
    let r = request(Stage::PreCreateContainer, "ffffffff-0000-4000-8000-00000000000f", "main");
    let (response, outcome) = block_on(server.answer(Stage::PreCreateContainer, &r));
    assert_eq!((response, outcome), (HookResponse::default(), Outcome::UnknownPod));
    assert_eq!(f.fetches(), before + 2, "asked exactly once more");
}

#[test]
fn before_the_first_round_the_agent_is_asked() {
    let f = Fixture::new();
    let r = request(Stage::PreCreateContainer, LSR_UID, "main");
    let (response, _) = block_on(f.server(false).answer(Stage::PreCreateContainer, &r));
    assert_eq!(response.container_resources.cpuset_cpus.as_deref(), Some("2-3"));
}

#[test]
fn a_container_named_only_by_its_id_is_found_in_the_pod_status() {
    let f = Fixture::new();
    let mut object = be_pod("be", BE_UID);
    object.status.as_mut().unwrap().container_statuses = Some(vec![
        serde_json::from_value(serde_json::json!({
            "name": "main", "containerID": "containerd://abc123", "image": "", "imageID": "",
            "ready": true, "restartCount": 0
        }))
        .unwrap(),
    ]);
    *f.source.pods.lock().unwrap() = vec![object];
    f.publish(&NodeSLOSpec::default());
    let mut r = request(Stage::PreUpdateContainerResources, BE_UID, "");
    r.container.as_mut().unwrap().id = "abc123".into();
    let (response, _) = block_on(f.server(false).answer(Stage::PreUpdateContainerResources, &r));
    assert_eq!(response.container_resources, be_patch(100_000));
    // As the runtime proxy sends it (it keeps no state): the container's
    // id and nothing of its pod.
    r.pod = None;
    let (response, outcome) =
        block_on(f.server(false).answer(Stage::PreUpdateContainerResources, &r));
    assert_eq!((response.container_resources, outcome), (be_patch(100_000), Outcome::Patched));
    // A container id no pod has: nothing.
    r.container.as_mut().unwrap().id = "containerd://fff999".into();
    let (response, outcome) =
        block_on(f.server(false).answer(Stage::PreUpdateContainerResources, &r));
    assert_eq!((response, outcome), (HookResponse::default(), Outcome::UnknownPod));
}

#[test]
fn pre_run_pod_sandbox_writes_the_pod_cgroup_and_answers_nothing() {
    let f = Fixture::new();
    f.publish(&NodeSLOSpec::default());
    let r = request(Stage::PreRunPodSandbox, BE_UID, "");
    // Dry run: nothing written.
    let (response, outcome) = block_on(f.server(true).answer(Stage::PreRunPodSandbox, &r));
    assert_eq!((response.is_empty(), outcome), (true, Outcome::PodWritten));
    assert_eq!(f.pod_file("memory.max"), "max");
    let (response, outcome) = block_on(f.server(false).answer(Stage::PreRunPodSandbox, &r));
    assert_eq!((response.is_empty(), outcome), (true, Outcome::PodWritten));
    // Pod: request 500m → 512 shares (weight 20 on v2), limit 1000m, 2 GiB.
    assert_eq!(f.pod_file("cpu.weight"), "20");
    assert_eq!(f.pod_file("cpu.max"), "100000 100000");
    assert_eq!(f.pod_file("memory.max"), (2 * GI).to_string());
    // An LSR pod has nothing at pod level.
    let r = request(Stage::PreRunPodSandbox, LSR_UID, "");
    let (_, outcome) = block_on(f.server(false).answer(Stage::PreRunPodSandbox, &r));
    assert_eq!(outcome, Outcome::NoChange);
}

#[test]
fn bad_requests_name_the_field() {
    let table = [
        (r#"{"stage":"PreCreate"}"#, "stage"),
        (r#"{"stage":"PreCreateContainer","pod":{"uid":5}}"#, "pod.uid"),
        (r#"{"pod":{"uid":"x"}}"#, "stage"),
        ("not json", "."),
    ];
    for (body, field) in table {
        let err = parse_request(body.as_bytes()).unwrap_err();
        assert_eq!(err.field, field, "{body}: {err}");
    }
    let (stage, r) = parse_request(br#"{"stage":"PreStartContainer"}"#).unwrap();
    assert_eq!((stage, r.pod), (Stage::PreStartContainer, None));
}

/// One request over the socket: the status and the body. The body is
/// written from another thread, so a server that answers before reading
/// all of it (413) cannot block the test.
fn post(socket: &Path, body: Vec<u8>) -> (u16, String) {
    let mut stream = UnixStream::connect(socket).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let head = format!(
        "POST {HOOK_PATH} HTTP/1.1\r\nhost: agent\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let sending = std::thread::spawn(move || {
        let _ = writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(&body));
    });
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let _ = sending.join();
    let answer = String::from_utf8_lossy(&answer).to_string();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, body.to_string())
}

#[test]
fn over_the_socket() {
    let f = Fixture::new();
    f.publish(&NodeSLOSpec::default());
    let socket = f.tmp.path().join("run/kolo/hooks.sock");
    // A stale socket is replaced; the parent is created.
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let listener = bind_socket(&socket).unwrap();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let server = Arc::new(f.server(false));
    let routes = router(Arc::clone(&server));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let listener = tokio::net::UnixListener::from_std(listener).unwrap();
            axum::serve(listener, routes).await.unwrap();
        })
    });
    let body = |r: &HookRequest| serde_json::to_vec(r).unwrap();
    let (status, text) = post(&socket, body(&request(Stage::PreCreateContainer, LSR_UID, "main")));
    assert_eq!((status, text.as_str()), (200, r#"{"containerResources":{"cpusetCpus":"2-3"}}"#));
    let (status, text) = post(&socket, body(&request(Stage::PostStopContainer, LSR_UID, "main")));
    assert_eq!((status, text.as_str()), (200, "{}"));
    let (status, text) = post(&socket, br#"{"stage":"PreCreateContainer","pod":"x"}"#.to_vec());
    assert_eq!(status, 400);
    assert!(text.contains("pod:"), "{text}");
    let (status, _) = post(&socket, vec![b' '; MAX_BODY + 1]);
    assert_eq!(status, 413);
    let mut text = String::new();
    server.metrics.encode(&mut text);
    let patched =
        r#"kolo_agent_hook_requests_total{stage="PreCreateContainer",outcome="patched"} 1"#;
    assert!(text.contains(patched), "{text}");
    assert!(text.contains(r#"{stage="PostStopContainer",outcome="ignored"} 1"#), "{text}");
    assert!(text.contains("kolo_agent_hook_bad_requests_total 1"), "{text}");
}

#[test]
fn something_else_at_the_socket_path_is_not_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("hooks.sock");
    std::fs::write(&path, "data").unwrap();
    let err = bind_socket(&path).unwrap_err();
    assert!(err.to_string().contains("is not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "data");
}
