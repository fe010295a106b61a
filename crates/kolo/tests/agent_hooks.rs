//! `kolo agent --hook-socket`: the agent binary, run standalone on a
//! cgroup v2 tree in a temp dir with a pods file, answers the runtime
//! hooks `kolo runtime-proxy` sends (HTTP/1.1 on the unix socket) with the
//! values of its strategies, and removes the socket on SIGTERM. Needs
//! neither root nor real cgroups.

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

mod common;

const BE_UID: &str = "0b0b0b0b-0000-4000-8000-000000000001";
const LSR_UID: &str = "0b0b0b0b-0000-4000-8000-000000000002";

fn pod(
    name: &str,
    uid: &str,
    qos: &str,
    kube_qos: &str,
    resources: serde_json::Value,
) -> serde_json::Value {
    let annotations = if qos == "LSR" {
        serde_json::json!({"scheduling.koordinator.sh/resource-status": r#"{"cpuset":"2-3"}"#})
    } else {
        serde_json::json!({})
    };
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid,
                     "labels": {"koordinator.sh/qosClass": qos}, "annotations": annotations},
        "spec": {"containers": [
            {"name": "main", "image": "none", "resources": resources},
            {"name": "side", "image": "none"},
        ]},
        "status": {"phase": "Running", "qosClass": kube_qos},
    })
}

fn pods_file() -> String {
    let be = pod(
        "spark",
        BE_UID,
        "BE",
        "BestEffort",
        serde_json::json!({
            "requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "1Gi"},
            "limits": {"kubernetes.io/batch-cpu": "1000", "kubernetes.io/batch-memory": "2Gi"},
        }),
    );
    let r = serde_json::json!({"cpu": "2", "memory": "1Gi"});
    let lsr =
        pod("db", LSR_UID, "LSR", "Guaranteed", serde_json::json!({"requests": r, "limits": r}));
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [be, lsr]}).to_string()
}

/// The agent, killed if the test fails before it stops it.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_agent(dir: &Path, socket: &Path) -> Running {
    let cgroup = dir.join("cgroup");
    std::fs::create_dir_all(cgroup.join("kubepods")).unwrap();
    std::fs::write(cgroup.join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
    let pods = dir.join("pods.json");
    std::fs::write(&pods, pods_file()).unwrap();
    let child = common::kolo()
        .args(["agent", "--standalone", "--dry-run", "--interval-ms", "200"])
        .arg("--pods")
        .arg(&pods)
        .arg("--cgroup-root")
        .arg(&cgroup)
        .args(["--cgroup-driver", "cgroupfs", "--hook-socket"])
        .arg(socket)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Running(child)
}

/// Waits for the socket (the agent binds it before its first tick); the
/// limit only bounds a broken agent, it does not pace the test.
fn wait_for_socket(socket: &Path, agent: &mut Running) {
    let start = Instant::now();
    while !socket.exists() {
        if let Some(status) = agent.0.try_wait().unwrap() {
            let mut err = String::new();
            agent.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            panic!("the agent exited ({status}) before binding its socket:\n{err}");
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no socket after 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One `POST /v1/hook` over the socket: the status and the body.
fn post(socket: &Path, body: &serde_json::Value) -> (u16, serde_json::Value) {
    let body = body.to_string();
    let mut stream = UnixStream::connect(socket).unwrap();
    write!(
        stream,
        "POST /v1/hook HTTP/1.1\r\nhost: agent\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or_else(|_| body.into()))
}

fn create(uid: &str, container: &str) -> serde_json::Value {
    serde_json::json!({
        "stage": "PreCreateContainer",
        "pod": {"name": "x", "namespace": "default", "uid": uid},
        "container": {"name": container},
    })
}

#[test]
fn the_agent_answers_runtime_hooks_on_its_socket() {
    let dir = tempfile::tempdir().unwrap();
    let socket: PathBuf = dir.path().join("run/kolo/agent-hooks.sock");
    let mut agent = start_agent(dir.path(), &socket);
    wait_for_socket(&socket, &mut agent);
    let meta = std::fs::metadata(&socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);

    // BE: batch-cpu request 500m → 512 shares, limit 1000m → 100000 µs,
    // batch-memory limit 2 GiB.
    let (status, answer) = post(&socket, &create(BE_UID, "main"));
    assert_eq!(status, 200, "{answer}");
    let want = serde_json::json!({"containerResources": {
        "cpuShares": 512, "cpuQuota": 100000, "memoryLimitInBytes": 2_i64 << 30
    }});
    assert_eq!(answer, want);
    // A BE container without batch resources: minimum shares, unlimited.
    let (_, answer) = post(&socket, &create(BE_UID, "side"));
    let want = serde_json::json!({"containerResources": {
        "cpuShares": 2, "cpuQuota": -1, "memoryLimitInBytes": -1
    }});
    assert_eq!(answer, want);
    // LSR: the cpuset the scheduler bound, for every container.
    for container in ["main", "side"] {
        let (_, answer) = post(&socket, &create(LSR_UID, container));
        assert_eq!(answer, serde_json::json!({"containerResources": {"cpusetCpus": "2-3"}}));
    }
    // A pod the agent does not know: no change.
    let (status, answer) = post(&socket, &create("ffffffff-0000-4000-8000-00000000000f", "main"));
    assert_eq!((status, answer), (200, serde_json::json!({})));
    // Malformed: 400 naming the field.
    let (status, answer) =
        post(&socket, &serde_json::json!({"stage": "PreCreateContainer", "pod": 7}));
    assert_eq!(status, 400);
    assert!(answer.as_str().unwrap().contains("pod"), "{answer}");

    // SIGTERM: the socket goes, the agent exits cleanly.
    let pid = rustix::process::Pid::from_raw(agent.0.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = agent.0.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(!socket.exists(), "the socket was not removed");
}
