//! Helpers shared by the tests that drive a real kube-apiserver with
//! `kubectl` and the `kolo` binary.

#![allow(dead_code)] // each test binary uses its own subset

pub mod metrics_doc;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The test cluster's kubeconfig from `KOLO_TEST_KUBECONFIG`, or `None`
/// after saying loudly that the test named `test` is skipped.
pub fn kubeconfig(test: &str) -> Option<PathBuf> {
    match std::env::var_os("KOLO_TEST_KUBECONFIG") {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            // Written straight to the terminal so the skip is visible even
            // though the test harness captures test output.
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED {test} test: KOLO_TEST_KUBECONFIG is not set. \
                 Run scripts/test (which starts a test cluster) to run it. ***"
            );
            None
        }
    }
}

/// Runs a command (with `stdin` if given) and returns its description and
/// output, whatever its exit status.
pub fn try_run(cmd: &mut Command, stdin: Option<&[u8]>) -> (String, Output) {
    let description = format!("{cmd:?}");
    let mut child = cmd
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {description}: {e}"));
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    (description, child.wait_with_output().unwrap())
}

/// Runs a command that must succeed.
pub fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Output {
    let (description, output) = try_run(cmd, stdin);
    assert!(
        output.status.success(),
        "{description} failed ({}):\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `kubectl` against the test cluster.
pub fn kubectl(config: &Path) -> Command {
    let mut cmd = Command::new("kubectl");
    cmd.env("KUBECONFIG", config).arg("--request-timeout=30s");
    cmd
}

/// The `kolo` binary under test.
pub fn kolo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kolo"))
}

/// The repository root (the `kolo` commands below run there).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `kolo ARGS` from the repository root, with `stdin` if given, and
/// returns its output whatever its exit status.
pub fn run_kolo(args: &[&str], stdin: Option<&str>) -> Output {
    try_run(kolo().args(args).current_dir(workspace_root()), stdin.map(str::as_bytes)).1
}

/// The JSON a successful command printed.
pub fn json(output: &Output) -> serde_json::Value {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Runs `kubectl` cleanup steps (logging, not failing, on errors), then
/// does the namespace controller's last step, which the test cluster lacks:
/// the namespace is empty by now, so its `kubernetes` finalizer may go.
pub fn cleanup(config: &Path, steps: &[Vec<&str>], namespace: &str) {
    for args in steps {
        let (description, output) = try_run(kubectl(config).args(args), None);
        if !output.status.success() {
            eprintln!("cleanup: {description} failed: {}", String::from_utf8_lossy(&output.stderr));
        }
    }
    let (_, output) =
        try_run(kubectl(config).args(["get", "namespace", namespace, "-o", "json"]), None);
    if !output.status.success() {
        return;
    }
    let Ok(mut object) = serde_json::from_slice::<serde_json::Value>(&output.stdout) else {
        return;
    };
    object["spec"]["finalizers"] = serde_json::json!([]);
    let path = format!("/api/v1/namespaces/{namespace}/finalize");
    let (description, output) = try_run(
        kubectl(config).args(["replace", "--raw", &path, "-f", "-"]),
        Some(object.to_string().as_bytes()),
    );
    if !output.status.success() {
        eprintln!("cleanup: {description} failed: {}", String::from_utf8_lossy(&output.stderr));
    }
}

/// Starts `kolo agent --standalone` on the test kubepods tree `sandbox`,
/// with a pods file and a NodeSLO file, for at most `seconds`; its log
/// goes to `log`. The agent runs in the tree's `system` cgroup, beside
/// `kubepods`, as on a node (see `TestCgroups::system_cgroup`); kill it
/// before dropping `sandbox`.
pub fn standalone_agent(
    sandbox: &mut kolo_agent::sandbox::TestCgroups,
    pods: &Path,
    node_slo: &Path,
    seconds: u64,
    log: std::fs::File,
) -> std::process::Child {
    let system = sandbox.system_cgroup().expect("the test tree's system cgroup");
    sandbox
        .command_in(system, env!("CARGO_BIN_EXE_kolo"))
        .args(["agent", "--standalone", "--cgroup-root", "/sys/fs/cgroup"])
        .args(["--cgroup-driver", "cgroupfs", "--kubelet-cgroup-root", sandbox.name()])
        .args(["--duration", &seconds.to_string(), "--pods"])
        .arg(pods)
        .arg("--node-slo")
        .arg(node_slo)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("kolo agent starts")
}

/// Deletes, when dropped, a test's namespace with its pods and the nodes
/// and NodeMetrics labelled `kolo-test=<label>`, so a failed assertion
/// does not leave them in a shared cluster.
pub struct NamespaceCleanup<'a> {
    /// The kubeconfig.
    pub config: &'a Path,
    /// The `kolo-test` label of the test's nodes and NodeMetrics.
    pub label: String,
    /// The test's namespace.
    pub namespace: String,
}

impl Drop for NamespaceCleanup<'_> {
    fn drop(&mut self) {
        let selector = format!("kolo-test={}", self.label);
        // Bound pods wait for a kubelet to confirm graceful deletion; there
        // may be none, so they are deleted at once. Without a namespace
        // controller the namespace may stay Terminating; it is empty by now.
        let steps: [Vec<&str>; 4] = [
            vec!["delete", "pods", "-n", &self.namespace, "--all", "--grace-period=0", "--force"],
            vec!["delete", "nodemetrics", "-l", &selector, "--ignore-not-found"],
            vec!["delete", "nodes", "-l", &selector, "--ignore-not-found"],
            vec!["delete", "namespace", &self.namespace, "--wait=false", "--ignore-not-found"],
        ];
        cleanup(self.config, &steps, &self.namespace);
    }
}

/// `kubectl get nodes,pods,nodemetrics -A -l <selector> -o yaml`: a test's
/// objects dumped the way an operator dumps a cluster.
pub fn dump_labelled(config: &Path, selector: &str) -> Vec<u8> {
    let args = ["get", "nodes,pods,nodemetrics", "-A", "-l", selector, "-o", "yaml"];
    run(kubectl(config).args(args), None).stdout
}
