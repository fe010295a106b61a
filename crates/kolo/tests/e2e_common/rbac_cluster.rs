//! A private API-only test cluster with RBAC on, shared by the tests of one
//! file that run at the same time (the first starts it, the last one's
//! drop stops it), with kolo's CRDs and some of `deploy/`'s roles applied,
//! so a permission those lack fails the tests that run components as their
//! service accounts.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, Weak};

use crate::common::{kubectl, run, try_run, workspace_root};

/// The cluster, stopped when dropped.
pub struct RbacCluster {
    tool: PathBuf,
    dir: tempfile::TempDir,
}

impl RbacCluster {
    /// The admin's kubeconfig (the tests' kubectl).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("cluster/kubeconfig")
    }

    /// The kubeconfig of service account `kolo-system/<account>`: the
    /// admin's, impersonating it.
    pub fn kubeconfig_as(&self, account: &str) -> PathBuf {
        let path = self.dir.path().join(format!("cluster/kubeconfig-{account}"));
        let admin = std::fs::read_to_string(self.kubeconfig()).unwrap();
        let user = format!("user: {{as: \"system:serviceaccount:kolo-system:{account}\", ");
        let text = admin.replace("user: {", &user);
        assert_ne!(text, admin, "unexpected kubeconfig format:\n{admin}");
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for RbacCluster {
    fn drop(&mut self) {
        let dir = self.dir.path().join("cluster");
        let _ = try_run(Command::new(&self.tool).arg("stop").arg(dir), None);
    }
}

/// The cluster the tests of this binary running now share.
static SHARED: Mutex<Weak<RbacCluster>> = Mutex::new(Weak::new());

/// This binary's cluster (started if no running test holds it) with
/// `deploy/<file>` applied for each of `deploy_files` and the `crds`
/// Established; `None` after saying loudly that `file`'s `test` is skipped
/// when the Kubernetes binaries are missing.
pub fn shared(
    file: &str,
    test: &str,
    deploy_files: &[&str],
    crds: &[&str],
) -> Option<Arc<RbacCluster>> {
    let cache = std::env::var_os("KOLO_CLUSTER_CACHE")
        .map_or_else(|| PathBuf::from("/var/cache/kolo-cluster"), PathBuf::from);
    if !cache.join("bin/kube-apiserver").exists() {
        // Straight to stderr, past the harness's capture, so the skip shows.
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPED {file} {test} test: the Kubernetes binaries are not built in {} \
             (run scripts/cluster build, or scripts/test). ***",
            cache.display()
        );
        return None;
    }
    let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(cluster) = shared.upgrade() {
        return Some(cluster);
    }
    let tool = workspace_root().join("scripts/cluster");
    let dir = tempfile::tempdir().unwrap();
    let cluster_dir = dir.path().join("cluster");
    // Owned before it starts, so a failed start is stopped too.
    let cluster = Arc::new(RbacCluster { tool: tool.clone(), dir });
    run(
        Command::new(&tool)
            .args(["start", "--api-only"])
            .arg(&cluster_dir)
            .env("KOLO_CLUSTER_RBAC", "1"),
        None,
    );
    let config = cluster.kubeconfig();
    super::install_crds(&config);
    let deploy = workspace_root().join("deploy");
    for file in deploy_files {
        run(kubectl(&config).arg("apply").arg("-f").arg(deploy.join(file)), None);
    }
    let mut wait = kubectl(&config);
    wait.args(["wait", "--for=condition=Established", "--timeout=60s"]);
    wait.args(crds.iter().map(|c| format!("crd/{c}")));
    run(&mut wait, None);
    *shared = Arc::downgrade(&cluster);
    Some(cluster)
}
