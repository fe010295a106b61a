//! The `kolo` binary used as a hostile (or careless) user would: closed
//! pipes, negative and absurd quantities, duplicate objects, empty files,
//! out-of-range flags. Each test is the regression test of a bug found that
//! way (docs/reliability.md, "Hostile input, found and fixed").

mod common;
use std::process::{Command, Stdio};

use common::{kolo as kolo_cmd, run_kolo as kolo, workspace_root};

/// `kolo ARGS` with its stdout a pipe whose reader is already closed, as in
/// `kolo ... | head -1` once `head` has exited: every write fails with
/// `EPIPE`. Returns the exit status and stderr.
fn run_into_closed_pipe(args: &[&str]) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let output = kolo_cmd()
        .args(args)
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("kolo runs");
    (output.status, String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn every_printing_command_exits_quietly_on_a_broken_pipe() {
    let sim_out = tempfile::tempdir().unwrap();
    let sim_out = sim_out.path().to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["crds"],
        &["version"],
        &["snapshot", "inspect", "examples/small-cluster.yaml"],
        &["snapshot", "inspect", "-o", "json", "examples/small-cluster.yaml"],
        &["schedule", "--snapshot", "examples/pending-pods.yaml"],
        &["schedule", "-o", "json", "--snapshot", "examples/pending-pods.yaml"],
        &["deschedule", "--snapshot", "examples/hot-nodes.yaml"],
        &["noderesource", "--snapshot", "examples/small-cluster.yaml"],
        &["agent", "plan", "--state", "examples/agent/node-state.yaml"],
        &["agent", "plan", "-o", "json", "--state", "examples/agent/node-state.yaml"],
        &[
            "webhook",
            "mutate",
            "--profile",
            "examples/webhook/profiles.yaml",
            "--pod",
            "examples/webhook/pods.yaml",
        ],
        &[
            "webhook",
            "mutate",
            "-o",
            "json",
            "--profile",
            "examples/webhook/profiles.yaml",
            "--pod",
            "examples/webhook/pods.yaml",
        ],
        &["webhook", "validate", "--pod", "examples/webhook/pods.yaml"],
        &[
            "sim",
            "--scenario",
            "examples/scenarios/small.yaml",
            "--hours",
            "0.05",
            "--no-progress",
            "--out",
            sim_out,
        ],
        &["--help"],
    ];
    for args in commands {
        let (status, stderr) = run_into_closed_pipe(args);
        assert!(status.success(), "kolo {args:?} into a closed pipe: {status}, stderr: {stderr}");
        assert!(
            !stderr.to_lowercase().contains("broken pipe"),
            "kolo {args:?} into a closed pipe complained: {stderr}"
        );
    }
}

/// A snapshot with one node of allocatable `node_cpu` and one pending pod
/// requesting `pod_cpu`.
fn node_and_pod(node_cpu: &str, pod_cpu: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {{name: n1}}
  status:
    allocatable: {{cpu: "{node_cpu}", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata: {{name: p1, namespace: default}}
  spec:
    schedulerName: kolo-scheduler
    containers:
    - name: c
      image: x
      resources: {{requests: {{cpu: "{pod_cpu}"}}}}
"#
    )
}

#[test]
fn negative_and_saturated_quantities_are_refused_naming_the_object() {
    // (node cpu, pod cpu, what stderr must name)
    let cases = [
        ("-4", "1", ["Node n1", "status.allocatable", "negative"]),
        ("4", "-4", ["default/p1", "requests", "negative"]),
        ("99999999999999999999Ei", "1", ["Node n1", "status.allocatable", "too large"]),
    ];
    for (node_cpu, pod_cpu, says) in cases {
        let snapshot = node_and_pod(node_cpu, pod_cpu);
        for args in [&["schedule", "--snapshot", "-"][..], &["snapshot", "inspect", "-"][..]] {
            let out = kolo(args, Some(&snapshot));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "kolo {args:?} accepted cpu {node_cpu}/{pod_cpu}");
            for word in says {
                assert!(stderr.contains(word), "kolo {args:?}: {word:?} missing from {stderr}");
            }
        }
    }
}

#[test]
fn agent_plan_refuses_negative_and_huge_capacities() {
    let example =
        std::fs::read_to_string(workspace_root().join("examples/agent/node-state.yaml")).unwrap();
    for (capacity, says) in [("-16", "negative"), ("9223372036854775807", "too large")] {
        let state =
            example.replace("capacity: {cpu: \"16\"", &format!("capacity: {{cpu: \"{capacity}\""));
        assert_ne!(state, example, "the example's capacity line moved");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.yaml");
        std::fs::write(&path, state).unwrap();
        let out = kolo(&["agent", "plan", "--state", path.to_str().unwrap()], None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "capacity {capacity} accepted: {stderr}");
        assert!(stderr.contains("$.node.capacity") && stderr.contains(says), "{stderr}");
    }
}

#[test]
fn webhook_on_a_busy_port_keeps_the_existing_ca_file() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = busy.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, "the CA a running server's clients trust").unwrap();
    let out = kolo(
        &["manager", "webhook", "--self-signed", "--listen", &listen, "--ca-out"]
            .into_iter()
            .chain([ca.to_str().unwrap()])
            .collect::<Vec<_>>(),
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started on a busy port: {stderr}");
    assert!(stderr.contains(&listen), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&ca).unwrap(),
        "the CA a running server's clients trust",
        "--ca-out was overwritten by a server that never started"
    );
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "no temporary file left behind");
}

#[test]
fn webhook_numeric_flags_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    // (flag, value, what the error names)
    let cases = [
        ("--validity-days", "99999999", "validity_days: 99999999"),
        ("--validity-days", "0", "validity_days: 0"),
        ("--max-body-bytes", "0", "max_body_bytes: 0"),
        ("--max-body-bytes", "18446744073709551615", "max_body_bytes"),
        ("--timeout-ms", "0", "decision_timeout: 0 ms"),
        ("--timeout-ms", "18446744073709551615", "decision_timeout"),
    ];
    for (flag, value, says) in cases {
        let args = [
            "manager",
            "webhook",
            "--self-signed",
            "--listen",
            "127.0.0.1:0",
            "--ca-out",
            ca.to_str().unwrap(),
            flag,
            value,
        ];
        let out = kolo(&args, None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value} accepted");
        assert!(stderr.contains(says) && stderr.contains("out of range"), "{flag}: {stderr}");
        assert!(!stderr.contains("panicked"), "{flag} {value}: {stderr}");
        assert!(!ca.exists(), "{flag} {value}: a CA was written by a server that never started");
    }
}

/// The pids in every cgroup below `dir` (one hierarchy).
fn pids_below(dir: &std::path::Path) -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            pids.extend(pids_below(&entry.path()));
        }
    }
    pids
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(") ").next().is_some_and(|rest| !rest.starts_with('Z')))
}

/// Every `<controller>/<name>` directory under /sys/fs/cgroup.
fn cgroup_dirs_named(name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/sys/fs/cgroup").into_iter().flatten().flatten() {
        for candidate in [entry.path().join(name), entry.path()] {
            if candidate.file_name().is_some_and(|n| n == name) && candidate.is_dir() {
                found.push(candidate);
            }
        }
    }
    found
}

#[test]
fn agent_demo_cleans_up_on_sigint_and_sigterm() {
    use std::io::{BufRead, BufReader};
    let test = "agent_demo_cleans_up_on_sigint_and_sigterm";
    // The demo needs what the sandbox needs: root and real cgroups.
    if let Err(reason) = kolo_agent::sandbox::TestCgroups::new() {
        return kolo_agent::sandbox::skip(test, &reason);
    }
    for (signal, status) in [("INT", 130), ("TERM", 143)] {
        let mut child = kolo_cmd()
            .args(["agent", "demo", "--seconds", "120"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // "cgroups: cgroup v1 (...) under /sys/fs/cgroup, pods in kolo-test-<pid>-0/..."
        let mut name = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(rest) = line.split(" pods in ").nth(1) {
                name = rest.split('/').next().map(str::to_string);
            }
            // A tick row: the workloads run and the agent reads them.
            if line.trim_start().starts_with("1s") {
                break;
            }
        }
        let name = name.expect("the demo names its sandbox");
        let dirs = cgroup_dirs_named(&name);
        assert!(!dirs.is_empty(), "the demo's cgroups {name} exist while it runs");
        let pids: Vec<u32> = dirs.iter().flat_map(|d| pids_below(d)).collect();
        assert!(pids.len() >= 2, "the demo's workloads run in {name}: {pids:?}");
        let sent = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let exit = child.wait().unwrap();
        assert_eq!(exit.code(), Some(status), "SIG{signal}: exit status");
        // The workloads were SIGKILLed; give init a moment to reap them.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while pids.iter().any(|p| alive(*p)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let left: Vec<_> = pids.iter().filter(|p| alive(**p)).collect();
        assert!(left.is_empty(), "SIG{signal}: processes left running: {left:?}");
        let dirs_left = cgroup_dirs_named(&name);
        assert!(dirs_left.is_empty(), "SIG{signal}: cgroups left: {dirs_left:?}");
    }
}

#[test]
fn sim_refuses_what_cannot_run_before_allocating() {
    let small =
        std::fs::read_to_string(workspace_root().join("examples/scenarios/small.yaml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out_dir = out_dir.to_str().unwrap();
    // (scenario text edit, extra flags, the field named)
    let cases: [(&str, &str, &[&str], &str); 6] = [
        ("durationHours: 3", "durationHours: 1e9", &[], "durationHours"),
        ("offeredLoad: 0.7", "offeredLoad: 1e300", &[], "batch.offeredLoad"),
        ("count: 8", "count: 100000000", &[], "cluster.nodeGroups.count"),
        ("", "", &["--hours", "1e12"], "durationHours"),
        ("", "", &["--nodes", "100000000"], "cluster.nodeGroups.count"),
        ("", "", &["--step", "18446744073709551615"], "stepSeconds"),
    ];
    for (from, to, flags, field) in cases {
        let scenario = dir.path().join("scenario.yaml");
        let text = if from.is_empty() { small.clone() } else { small.replace(from, to) };
        assert!(from.is_empty() || text != small, "{from:?} is no longer in small.yaml");
        std::fs::write(&scenario, text).unwrap();
        let mut args = vec!["sim", "--no-progress", "--out", out_dir, "--scenario"];
        args.push(scenario.to_str().unwrap());
        args.extend_from_slice(flags);
        let started = std::time::Instant::now();
        let out = kolo(&args, None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{to} {flags:?} ran");
        assert!(stderr.contains(field) && stderr.contains("bound"), "{to} {flags:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("memory allocation"), "{stderr}");
        assert!(started.elapsed().as_secs() < 20, "{to} {flags:?}: refused only after a while");
    }
}

#[test]
fn yaml_errors_speak_kolo_not_library_internals() {
    let alias = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\ndata:\n  x: &a \"{}\"\n{}",
        "y".repeat(1000),
        (0..8).map(|i| format!("  k{i}: *a\n")).collect::<String>()
    );
    // (input, stderr contains)
    let cases = [
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nmetadata: {name: b}\n".to_string(),
            "duplicate key \"metadata\"",
        ),
        (alias, "too large or too complex"),
    ];
    for (text, says) in cases {
        let out = kolo(&["snapshot", "inspect", "-"], Some(&text));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{stderr}");
        for internal in ["DuplicateKeyPolicy", "Options", "ScalarBytes", "total_scalar_bytes"] {
            assert!(!stderr.contains(internal), "{internal} leaked: {stderr}");
        }
    }
    // Flow-style YAML starting with `{` is YAML, not broken JSON.
    let out = kolo(
        &["snapshot", "inspect", "-o", "json", "-"],
        Some("{apiVersion: v1, kind: Node, metadata: {name: n1}}\n"),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["nodes"]["total"], 1);
}

#[test]
fn duplicates_and_empty_inputs_are_not_silent() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.yaml");
    std::fs::write(&empty, "").unwrap();
    let empty = empty.to_str().unwrap();
    let twice =
        ["snapshot", "inspect", "examples/small-cluster.yaml", "examples/small-cluster.yaml"];
    let out = kolo(&twice, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("warning: Node node-1 appears 2 times"), "{stderr}");
    let out = kolo(&["snapshot", "inspect", empty], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("warning: {empty}: no Kubernetes object in it")), "{stderr}");
    let out = kolo(&["schedule", "--snapshot", empty], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no Kubernetes object"), "{stderr}");
}

#[test]
fn agent_once_refuses_a_malformed_node_slo() {
    let dir = tempfile::tempdir().unwrap();
    let pods = dir.path().join("pods.yaml");
    std::fs::write(&pods, "apiVersion: v1\nkind: PodList\nitems: []\n").unwrap();
    // (file content, stderr contains)
    let cases = [
        (
            "spec: {resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: lots}}\n",
            "spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: invalid type",
        ),
        ("- 1\n- 2\n", "not a NodeSLO"),
        ("kind: Pod\nspec: {}\n", "is not NodeSLO"),
    ];
    for (text, says) in cases {
        let slo = dir.path().join("slo.yaml");
        std::fs::write(&slo, text).unwrap();
        let args = ["agent", "--standalone", "--once", "--dry-run", "--pods"];
        let out = kolo(
            &args
                .into_iter()
                .chain([pods.to_str().unwrap(), "--node-slo", slo.to_str().unwrap()])
                .collect::<Vec<_>>(),
            None,
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text:?} accepted: {stderr}");
        assert!(stderr.contains(says), "{text:?}: {stderr}");
    }
}
