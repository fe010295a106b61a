//! `kolo agent --standalone` on this machine's real cgroups: a sandbox
//! kubepods tree with a spinning pod and a pod holding 64 MiB, a pods file
//! naming them, and the agent binary run as a user would. Skips loudly
//! without root or cgroup v1.

use kolo_agent::cgroup::Subsystem;
use kolo_agent::sandbox::{TestCgroups, Workload, have_python, pods_file, skip};
use kolo_api::QoSClass;
use kolo_api::kube_qos::KubeQoSClass;
use serde_json::Value;

mod common;
use common::metrics_doc::http_get;
use common::run_kolo;

struct Setup {
    sandbox: TestCgroups,
    pods: std::path::PathBuf,
    /// The holder pod's cgroup (relative).
    holder: String,
    _dir: tempfile::TempDir,
}

fn setup(test: &str) -> Option<Setup> {
    let mut sandbox = match TestCgroups::new() {
        Ok(s) => s,
        Err(reason) => {
            skip(test, &reason);
            return None;
        }
    };
    if !have_python() {
        skip(test, "python3 is needed for the memory workload");
        return None;
    }
    let mut refs = Vec::new();
    let mut holder = String::new();
    for (n, name, workload) in
        [(1, "spinner", Workload::Spin), (2, "holder", Workload::Memory { mib: 64 })]
    {
        let (p, rel) =
            sandbox.add_single_container_pod(n, name, QoSClass::LS, KubeQoSClass::Burstable);
        sandbox.spawn(&rel, workload).expect("workload starts");
        if name == "holder" {
            holder = rel;
        }
        refs.push(p);
    }
    let dir = tempfile::tempdir().unwrap();
    let pods = dir.path().join("pods.json");
    std::fs::write(&pods, pods_file(&refs)).unwrap();
    Some(Setup { sandbox, pods, holder, _dir: dir })
}

fn common_args(s: &Setup) -> Vec<String> {
    vec![
        "--standalone".into(),
        "--pods".into(),
        s.pods.display().to_string(),
        "--cgroup-root".into(),
        "/sys/fs/cgroup".into(),
        "--kubelet-cgroup-root".into(),
        s.sandbox.name().to_string(),
        "--cgroup-driver".into(),
        "cgroupfs".into(),
        "--dry-run".into(),
    ]
}

/// The value of a Prometheus sample line `name{...pod="pod"...} value`.
fn sample(text: &str, name: &str, pod: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(&format!("pod=\"{pod}\"")))
        .unwrap_or_else(|| panic!("no {name} for {pod} in:\n{text}"))
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The holder's `memory.stat`, for a failure message.
fn holder_stat(s: &Setup) -> String {
    s.sandbox
        .read(Subsystem::Memory, &s.holder, "memory.stat")
        .unwrap_or_else(|e| format!("memory.stat unreadable: {e}"))
}

#[test]
fn once_prints_metrics_measured_from_real_cgroups() {
    let Some(s) = setup("once_prints_metrics_measured_from_real_cgroups") else { return };
    let mut args = vec!["agent".to_string()];
    args.extend(common_args(&s));
    args.push("--once".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_kolo(&args, None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let spin = sample(&text, "kolo_agent_pod_cpu_usage_cores", "spinner");
    assert!((0.6..=1.2).contains(&spin), "spinner uses one core, measured {spin}\n{text}");
    let idle = sample(&text, "kolo_agent_pod_cpu_usage_cores", "holder");
    assert!(idle < 0.2, "the holder sleeps, measured {idle}");
    let mem = sample(&text, "kolo_agent_pod_memory_usage_bytes", "holder");
    assert!(
        (64.0 * 1048576.0..=110.0 * 1048576.0).contains(&mem),
        "64 MiB held, measured {mem}; the kernel's view:\n{}",
        holder_stat(&s)
    );
    assert!(text.contains("kolo_agent_pods 2"), "{text}");
    assert!(text.contains("kolo_agent_node_cpu_usage_cores "), "{text}");
    drop(s);
}

#[test]
fn nodemetric_reports_the_pods_in_the_reference_shape() {
    let Some(s) = setup("nodemetric_reports_the_pods_in_the_reference_shape") else { return };
    let mut args = vec!["agent".to_string(), "nodemetric".into()];
    args.extend(common_args(&s));
    args.extend([
        "--duration".into(),
        "2".into(),
        "--node-name".into(),
        "sandbox-node".into(),
        "-o".into(),
        "json".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_kolo(&args, None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let metric: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(metric["kind"], "NodeMetric");
    assert_eq!(metric["metadata"]["name"], "sandbox-node");
    let status = &metric["status"];
    assert!(status["updateTime"].is_string());
    assert!(status["nodeMetric"]["nodeUsage"]["resources"]["cpu"].is_string(), "{status}");
    let pods = status["podsMetric"].as_array().unwrap();
    let names: Vec<&str> = pods.iter().map(|p| p["name"].as_str().unwrap()).collect();
    // Sorted by namespace, then name.
    assert_eq!(names, ["holder", "spinner"]);
    let spinner = &pods[1];
    let cpu = kolo_api::Quantity::parse(spinner["podUsage"]["resources"]["cpu"].as_str().unwrap())
        .unwrap();
    assert!((600..=1200).contains(&cpu.milli_value()), "spinner cpu {}", cpu.milli_value());
    assert_eq!(spinner["qos"], "LS");
    assert_eq!(spinner["priority"], "koord-prod");
    let mem =
        kolo_api::Quantity::parse(pods[0]["podUsage"]["resources"]["memory"].as_str().unwrap())
            .unwrap();
    assert!(
        mem.value() >= 64 << 20,
        "holder memory {}; the kernel's view now:\n{}",
        mem.value(),
        holder_stat(&s)
    );
    drop(s);
}

#[test]
fn without_standalone_or_pods_it_says_what_to_do() {
    let out = run_kolo(&["agent", "--pods", "x.yaml"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--standalone"));
    let out = run_kolo(&["agent", "--standalone"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pods FILE or --kubelet"));
}

#[test]
fn serves_metrics_while_running() {
    let Some(s) = setup("serves_metrics_while_running") else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut args = common_args(&s);
    args.extend(["--listen".into(), format!("127.0.0.1:{port}"), "--duration".into(), "6".into()]);
    let mut child = common::kolo()
        .arg("agent")
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Two rounds (the first is the CPU baseline) and a little slack.
    std::thread::sleep(std::time::Duration::from_millis(3000));
    let health = http_get(port, "/healthz").unwrap();
    let ready = http_get(port, "/readyz").unwrap();
    let metrics = http_get(port, "/metrics").unwrap();
    let actions = http_get(port, "/actions").unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    // The QoS actions: the bounded history, as data (the BE isolation the
    // first round set up, with its strategy and reason).
    assert!(actions.starts_with("HTTP/1.1 200"), "{actions}");
    let history: kolo_agent::history::HistoryView =
        serde_json::from_str(actions.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(history.capacity, kolo_agent::history::DEFAULT_CAPACITY, "{history:?}");
    assert!(history.actions.len() as u64 <= history.total, "{history:?}");
    assert!(history.actions.iter().all(|a| !a.strategy.is_empty() && !a.reason.is_empty()));
    let body = metrics.split("\r\n\r\n").nth(1).unwrap();
    // The process's one health server: the component's own counters, then
    // the agent's collection metrics, one OpenMetrics `# EOF` at the end.
    assert!(body.contains("kolo_agent_leader 1"), "{body}");
    assert_eq!(body.matches("# EOF").count(), 1, "{body}");
    assert!(body.trim_end().ends_with("# EOF"), "{body}");
    // kolo doctor at start-up: BE isolation is on everywhere; the checks
    // are counted by status.
    assert!(body.contains("kolo_agent_qos_feature_enabled{feature=\"beIsolation\"} 1"), "{body}");
    assert!(body.contains("kolo_agent_doctor_checks{status=\"ok\"}"), "{body}");
    let spin = sample(body, "kolo_agent_pod_cpu_usage_cores", "spinner");
    assert!((0.6..=1.2).contains(&spin), "spinner {spin}");
    assert!(
        body.contains("# TYPE kolo_agent_ticks counter")
            && body.contains("kolo_agent_ticks_total "),
        "{body}"
    );
    // Standalone with --dry-run: no API writes; no --hook-socket; the
    // sandbox's pods name no containers.
    common::metrics_doc::check(
        "agent",
        body,
        &[
            "kolo_agent_actions_total",
            "kolo_agent_hook_requests_total",
            "kolo_agent_hook_bad_requests_total",
            "kolo_agent_container_cpu_usage_cores",
            "kolo_agent_container_memory_usage_bytes",
        ],
    );
    drop(s);
}
