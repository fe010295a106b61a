//! kolo's container image, as `scripts/image` builds it without a Docker
//! daemon, imported into a real containerd and run: the static binary
//! answers `kolo version` from inside it, as the image's unprivileged user;
//! and the image is what the Dockerfile describes (empty base, `/kolo` as
//! the entrypoint, user 65532).
//!
//! Needs `KOLO_TEST_IMAGE` (the OCI archive) and `KOLO_TEST_CRI_SOCKET` (a
//! containerd: `scripts/cluster start --runtime-only`), which `scripts/test`
//! sets; skips loudly without them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository the test imports the image under.
const REPOSITORY: &str = "docker.io/library/kolo";

/// `ctr` in the test's own containerd namespace; removes the namespace's
/// images and the namespace when dropped.
struct Ctr {
    socket: String,
    namespace: String,
}

impl Ctr {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("ctr")
            .args(["-a", &self.socket, "-n", &self.namespace])
            .args(args)
            .output()
            .expect("ctr runs")
    }

    /// `ctr ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "ctr {args:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Ctr {
    fn drop(&mut self) {
        let images = self.run(&["images", "ls", "-q"]);
        for image in String::from_utf8_lossy(&images.stdout).lines() {
            self.run(&["images", "rm", "--sync", image]);
        }
        let _ = Command::new("ctr")
            .args(["-a", &self.socket, "namespaces", "rm", &self.namespace])
            .output();
    }
}

fn inputs() -> Option<(PathBuf, String)> {
    match (std::env::var_os("KOLO_TEST_IMAGE"), std::env::var("KOLO_TEST_CRI_SOCKET")) {
        (Some(image), Ok(socket)) => Some((image.into(), socket)),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED image test: KOLO_TEST_IMAGE and KOLO_TEST_CRI_SOCKET are not set. \
                 Run scripts/test (which builds the image with scripts/image and starts a \
                 containerd) to run it. ***"
            );
            None
        }
    }
}

/// The image's config (`config` of the OCI image config JSON), read from
/// the archive with `tar`.
fn image_config(archive: &Path) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("tar")
        .args(["-xf"])
        .arg(archive)
        .arg("-C")
        .arg(dir.path())
        .status()
        .expect("tar runs");
    assert!(status.success(), "tar -xf {}", archive.display());
    let read = |digest: &str| -> serde_json::Value {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        let path = dir.path().join("blobs/sha256").join(hex);
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    };
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("index.json")).unwrap()).unwrap();
    let manifests = index["manifests"].as_array().expect("an OCI index");
    assert_eq!(manifests.len(), 1, "one image in the archive: {index}");
    let manifest = read(manifests[0]["digest"].as_str().unwrap());
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "FROM scratch plus one COPY: one layer ({manifest})");
    read(manifest["config"]["digest"].as_str().unwrap())["config"].clone()
}

#[test]
fn the_image_runs_kolo_version_in_containerd() {
    let Some((archive, socket)) = inputs() else { return };
    let version = env!("CARGO_PKG_VERSION");

    // What the Dockerfile says, the image has.
    let config = image_config(&archive);
    assert_eq!(config["Entrypoint"], serde_json::json!(["/kolo"]), "{config}");
    assert_eq!(config["User"], "65532:65532", "{config}");
    let dockerfile =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Dockerfile"))
            .unwrap();
    for line in ["FROM scratch", "USER 65532:65532", "ENTRYPOINT [\"/kolo\"]"] {
        assert!(dockerfile.lines().any(|l| l.trim() == line), "Dockerfile lacks {line:?}");
    }

    let ctr = Ctr { socket, namespace: format!("kolo-image-test-{}", std::process::id()) };
    let archive_arg = archive.to_str().unwrap();
    ctr.ok(&["images", "import", "--base-name", REPOSITORY, archive_arg]);
    let image = format!("{REPOSITORY}:{version}");
    let listed = ctr.ok(&["images", "ls", "-q"]);
    assert!(listed.lines().any(|l| l == image), "imported as {listed:?}, want {image}");

    let id = format!("kolo-version-{}", std::process::id());
    // Under the test containerd's own cgroup root, which scripts/cluster
    // removes when it stops it (by default ctr would leave
    // /<namespace>/<id> cgroups behind on the host).
    let root =
        std::env::var("KOLO_TEST_CRI_CGROUP_ROOT").unwrap_or_else(|_| "/kolo-image-test".into());
    let cgroup = format!("{}/{id}", root.trim_end_matches('/'));
    let out = ctr.ok(&["run", "--cgroup", &cgroup, &image, &id, "/kolo", "version"]);
    assert_eq!(out.trim(), format!("kolo {version}"), "kolo version in the image");
    // It ran as the image's user, not root.
    let info: serde_json::Value =
        serde_json::from_str(&ctr.ok(&["containers", "info", &id])).expect("container info JSON");
    ctr.ok(&["containers", "rm", &id]);
    let user = &info["Spec"]["process"]["user"];
    assert_eq!((user["uid"].as_u64(), user["gid"].as_u64()), (Some(65532), Some(65532)), "{user}");
}
