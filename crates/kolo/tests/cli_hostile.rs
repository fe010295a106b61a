//! The `kolo` binary used as a hostile (or careless) user would: closed
//! pipes, negative and absurd quantities, duplicate objects, empty files,
//! out-of-range flags. Each test is the regression test of a bug found that
//! way (docs/reliability.md, "Hostile input, found and fixed").

mod common;
use std::process::Stdio;

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
