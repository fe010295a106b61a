//! `kolo runtime-proxy` as a process: bad flags are refused naming the
//! flag; against the test containerd (`KOLO_TEST_CRI_SOCKET`) it answers
//! CRI calls, counts them and its hooks on `/metrics` (a hook server that
//! is not there is ignored), and SIGTERM removes its socket.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use kolo_runtime_proxy::cri::{self, Code, v1};

fn refused(args: &[&str], message: &str) {
    let out = common::kolo().arg("runtime-proxy").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} was accepted");
    assert!(stderr.contains(message), "{args:?}: {stderr}");
}

#[test]
fn bad_flags_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let listen = dir.path().join("p.sock");
    let listen = listen.to_str().unwrap();
    refused(
        &["--listen", listen, "--hook-fail-stages", "PreStartContainer"],
        "--hook-fail-stages: PreStartContainer is not in --hook-stages",
    );
    refused(&["--listen", "relative.sock"], "--listen: \"relative.sock\" is not an absolute");
    refused(&["--listen", listen, "--runtime-endpoint", listen], "the runtime's own socket");
    refused(&["--listen", listen, "--hook-timeout-ms", "0"], "--hook-timeout-ms: 0 is not in");
    refused(&["--listen", listen, "--hook-stages", "PreCreate"], "unknown runtime hook stage");
    assert!(!Path::new(listen).exists(), "a refused start left its socket");
}

fn scrape(port: u16) -> String {
    common::metrics_doc::http_get(port, "/metrics").expect("the proxy's /metrics")
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

#[test]
fn it_forwards_counts_and_cleans_up() {
    let test = "it_forwards_counts_and_cleans_up";
    let Some((runtime, _root)) = kolo_runtime_proxy::testing::test_runtime(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("proxy.sock");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut proxy = common::kolo()
        .arg("runtime-proxy")
        .arg("--listen")
        .arg(format!("unix://{}", socket.display()))
        .arg("--runtime-endpoint")
        .arg(&runtime)
        .arg("--hook-socket")
        .arg(dir.path().join("nobody-here.sock"))
        .args(["--hook-stages", "PreRunPodSandbox,PreCreateContainer,PreStartContainer"])
        .args(["--health-listen", &format!("127.0.0.1:{port}")])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "no proxy socket after 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut client = v1::runtime_service_client::RuntimeServiceClient::new(
            cri::connect(&socket).await.unwrap(),
        );
        let version = client.version(v1::VersionRequest::default()).await.unwrap().into_inner();
        assert_eq!(version.runtime_name, "containerd");
        // A hooked call whose hook server is missing: ignored, and the
        // runtime's own error comes back.
        let req = v1::StartContainerRequest { container_id: "no-such-container".into() };
        let err = client.start_container(req).await.unwrap_err();
        assert_eq!(err.code(), Code::NotFound, "{err:?}");
    });
    // The client's connection goes (else the proxy's drain waits for it).
    drop(rt);
    let text = scrape(port);
    assert_eq!(metric(&text, "kolo_runtime_proxy_calls_total"), 2.0, "{text}");
    assert_eq!(metric(&text, "kolo_runtime_proxy_hooks_total{outcome=\"Ignored\"}"), 1.0);
    assert_eq!(metric(&text, "kolo_runtime_proxy_hook_seconds_count"), 1.0);
    // It writes nothing to an API server and elects no leader.
    common::metrics_doc::check("runtime_proxy", &text, &["kolo_runtime_proxy_actions_total"]);

    let pid = rustix::process::Pid::from_raw(proxy.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = proxy.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(!socket.exists(), "the socket was not removed");
}
