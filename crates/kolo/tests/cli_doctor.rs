//! `kolo doctor` on this machine's real cgroups and on a directory tree
//! missing what kolo needs.

mod common;

use std::path::Path;

use common::kolo;

fn doctor(args: &[&str]) -> (i32, serde_json::Value) {
    let out = kolo().args(["doctor", "-o", "json"]).args(args).output().unwrap();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), json)
}

fn row<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name:?} in {report:#}"))
}

#[test]
fn on_this_machine_it_reads_the_real_cgroups_and_leaves_nothing() {
    let root = Path::new("/sys/fs/cgroup");
    let version = if root.join("cgroup.controllers").exists() { "v2" } else { "v1" };
    let (code, report) = doctor(&[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(row(&report, "cgroup version")["detail"], version);
    let features = report["features"].as_array().unwrap();
    assert!(features.iter().any(|f| f["name"] == "beIsolation" && f["on"] == true), "{report:#}");
    // The temporary cgroup it may have made is gone.
    for hierarchy in ["", "cpu", "cpuset", "memory"] {
        let dir = root.join(hierarchy);
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            assert!(
                !name.to_string_lossy().starts_with("kolo-doctor-"),
                "left {name:?} in {dir:?}"
            );
        }
    }
}

#[test]
fn a_tree_without_the_memory_controller_fails_with_exit_1() {
    // A cgroup v2 root offering cpu and cpuset only: no memory controller,
    // and a temporary cgroup there has none of the kernel's files.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cgroup.controllers"), "cpu cpuset\n").unwrap();
    std::fs::write(dir.path().join("cgroup.subtree_control"), "").unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, report) = doctor(&["--cgroup-root", root]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(row(&report, "controller memory")["status"], "fail");
    assert_eq!(row(&report, "controller cpu")["status"], "ok");
    assert_eq!(row(&report, "file memory.max")["status"], "fail");
    // Its own cgroup was removed from the tree too.
    let left: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 2, "{left:?}");
}
