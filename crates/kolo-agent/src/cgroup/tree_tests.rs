//! Tests against cgroupfs-shaped directory trees: cgroup v2 file names and
//! contents, the systemd driver, the executor's ordering and skipping, and
//! bad files. (The real v1 kernel is exercised by
//! `tests/real_cgroups.rs`.)

use std::fs;
use std::path::{Path, PathBuf};

use kolo_api::kube_qos::KubeQoSClass;

use super::*;

pub(crate) const UID: &str = "6f1e2b9c-3d4a-4b5c-8d7e-0123456789ab";

/// A temporary cgroup tree.
pub(crate) struct Tree {
    pub tmp: tempfile::TempDir,
    pub version: CgroupVersion,
}

impl Tree {
    /// A v2 tree with a kubepods directory for `driver`.
    pub fn v2(driver: CgroupDriver) -> Tree {
        let tree = Tree { tmp: tempfile::tempdir().unwrap(), version: CgroupVersion::V2 };
        tree.file("", "cgroup.controllers", "cpuset cpu io memory pids\n");
        tree.dir(driver.kubepods_name());
        tree
    }

    /// A v1 tree (separate cpu and cpuacct hierarchies, like this machine)
    /// with a kubepods directory for `driver` in each.
    pub fn v1(driver: CgroupDriver) -> Tree {
        let tree = Tree { tmp: tempfile::tempdir().unwrap(), version: CgroupVersion::V1 };
        let files: [(&str, &[&str]); 4] = [
            ("cpu", &["cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.stat", "tasks"]),
            ("cpuacct", &["cpuacct.usage", "cpuacct.stat"]),
            ("cpuset", &["cpuset.cpus", "cpuset.mems"]),
            ("memory", &["memory.stat", "memory.limit_in_bytes", "memory.usage_in_bytes"]),
        ];
        for (s, files) in files {
            let kubepods = tree.root().join(s).join(driver.kubepods_name());
            fs::create_dir_all(&kubepods).unwrap();
            fs::write(tree.root().join(s).join("cgroup.procs"), "").unwrap();
            for f in files.iter().chain(&["cgroup.procs"]) {
                fs::write(kubepods.join(f), "").unwrap();
            }
        }
        tree
    }

    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    pub fn cgroups(&self) -> Cgroups {
        Cgroups::detect(&LayoutConfig::new(self.root())).unwrap()
    }

    fn abs(&self, rel: &str, subsystem: Option<&str>) -> PathBuf {
        match (self.version, subsystem) {
            (CgroupVersion::V1, Some(s)) => self.root().join(s).join(rel),
            _ => self.root().join(rel),
        }
    }

    pub fn dir(&self, rel: &str) {
        fs::create_dir_all(self.abs(rel, None)).unwrap();
    }

    /// Writes a file (v2 tree: below the root).
    pub fn file(&self, rel: &str, name: &str, content: &str) {
        let dir = self.abs(rel, None);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(name), content).unwrap();
    }

    /// Writes a file in a v1 subsystem hierarchy.
    pub fn file_v1(&self, subsystem: &str, rel: &str, name: &str, content: &str) {
        let dir = self.abs(rel, Some(subsystem));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(name), content).unwrap();
    }

    pub fn read(&self, rel: &str, name: &str) -> String {
        fs::read_to_string(self.abs(rel, None).join(name)).unwrap()
    }
}

fn d(s: &str) -> CgroupDir {
    CgroupDir::parse(s).unwrap()
}

const V2_MEMORY_STAT: &str = "anon 10485760\nfile 4194304\nkernel 8192\ninactive_anon 0\nactive_anon 10485760\ninactive_file 4194304\nactive_file 0\nunevictable 4096\n";

#[test]
fn v2_typed_reads() {
    let tree = Tree::v2(CgroupDriver::Cgroupfs);
    let pod = "kubepods/burstable/pod6f1e2b9c-3d4a-4b5c-8d7e-0123456789ab";
    tree.file(pod, "cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 7\nnr_throttled 1\nthrottled_usec 30\n");
    tree.file(pod, "memory.stat", V2_MEMORY_STAT);
    tree.file(pod, "cpu.max", "max 100000\n");
    tree.file(pod, "cpu.weight", "39\n");
    tree.file(pod, "memory.max", "max\n");
    tree.file(pod, "cpuset.cpus", "\n");
    tree.file(pod, "cpuset.cpus.effective", "0-3\n");
    tree.file(
        pod,
        "cpu.pressure",
        "some avg10=2.00 avg60=0 avg300=0 total=1\nfull avg10=1.00 avg60=0 avg300=0 total=1\n",
    );
    tree.file(
        pod,
        "memory.pressure",
        "some avg10=0.50 avg60=0 avg300=0 total=1\nfull avg10=0.25 avg60=0 avg300=0 total=1\n",
    );
    tree.file(
        pod,
        "io.pressure",
        "some avg10=0.00 avg60=0 avg300=0 total=1\nfull avg10=0.00 avg60=0 avg300=0 total=1\n",
    );
    tree.file(pod, "memory.numa_stat", "anon N0=8192\nfile N0=4096\n");
    // The feature probe looks in the kubepods dir.
    for f in [
        "cpu.stat",
        "memory.stat",
        "cpu.max",
        "cpu.weight",
        "memory.max",
        "cpuset.cpus",
        "cpu.pressure",
        "memory.pressure",
        "io.pressure",
        "memory.numa_stat",
    ] {
        tree.file("kubepods", f, "");
    }
    let cg = tree.cgroups();
    assert_eq!(cg.version(), CgroupVersion::V2);
    let dir = cg.pod_dir(KubeQoSClass::Burstable, UID).unwrap();
    assert_eq!(dir, d(pod));
    assert_eq!(cg.cpu_usage_ns(&dir).unwrap(), 2_500_000_000);
    let mem = cg.memory_stat(&dir).unwrap();
    assert_eq!(mem.usage(), 10485760 + 4096);
    assert_eq!(mem.usage_with_page_cache(), 10485760 + 4096 + 4194304);
    assert_eq!(cg.cpu_throttle(&dir).unwrap().throttled_ns, 30_000);
    assert_eq!(cg.cfs_quota_us(&dir).unwrap(), None);
    assert_eq!(cg.cfs_period_us(&dir).unwrap(), 100_000);
    assert_eq!(cg.cpu_shares(&dir).unwrap(), 998);
    assert_eq!(cg.memory_limit(&dir).unwrap(), None);
    assert_eq!(cg.cpuset_cpus(&dir).unwrap().to_string(), "0-3");
    let psi = cg.psi(&dir).unwrap();
    assert_eq!(
        (psi.cpu.some_avg10, psi.cpu.full_avg10, psi.memory.some_avg10),
        (2.0, Some(1.0), 0.5)
    );
    assert_eq!(cg.numa_stat(&dir).unwrap(), vec![NumaPages { node: 0, pages: 3 }]);
}

#[test]
fn v1_reads_come_from_each_subsystem_hierarchy() {
    let tree = Tree::v1(CgroupDriver::Systemd);
    let cg = tree.cgroups();
    assert_eq!(cg.layout().driver(), CgroupDriver::Systemd);
    let dir = cg.container_dir(KubeQoSClass::BestEffort, UID, "containerd://abc123").unwrap();
    let rel = dir.as_path().to_str().unwrap().to_string();
    assert_eq!(
        rel,
        "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod6f1e2b9c_3d4a_4b5c_8d7e_0123456789ab.slice/cri-containerd-abc123.scope"
    );
    tree.file_v1("cpuacct", &rel, "cpuacct.usage", "42\n");
    tree.file_v1("cpu", &rel, "cpu.cfs_quota_us", "-1\n");
    tree.file_v1("memory", &rel, "memory.limit_in_bytes", "9223372036854771712\n");
    assert_eq!(cg.cpu_usage_ns(&dir).unwrap(), 42);
    assert_eq!(cg.cfs_quota_us(&dir).unwrap(), None);
    assert_eq!(cg.memory_limit(&dir).unwrap(), None);
    // No PSI files on this v1 kernel (and the kubepods dir exists): unsupported.
    assert!(matches!(
        cg.psi(&dir),
        Err(CgroupError::Unsupported { resource: Resource::CpuPressure, .. })
    ));
}

#[test]
fn garbage_files_are_errors_naming_the_file() {
    let tree = Tree::v2(CgroupDriver::Cgroupfs);
    tree.file("kubepods", "cpu.stat", "usage_usec banana\n");
    tree.file("kubepods", "memory.stat", "\u{1}\u{2}\u{3}");
    tree.file("kubepods", "cpu.max", "1 2 3\n");
    let cg = tree.cgroups();
    let dir = d("kubepods");
    for err in [
        cg.cpu_usage_ns(&dir).unwrap_err(),
        cg.memory_stat(&dir).unwrap_err(),
        cg.cfs_quota_us(&dir).unwrap_err(),
    ] {
        assert!(matches!(err, CgroupError::Parse { .. }), "{err}");
        assert!(
            err.to_string().contains(&tree.root().join("kubepods").display().to_string()),
            "{err}"
        );
    }
    // And the executor reports, not panics.
    let report = cg.executor().apply(&[CgroupWrite::int(&dir, Resource::CpuCfsQuota, 50_000)]);
    assert!(matches!(report.errors.as_slice(), [CgroupError::Parse { .. }]), "{report:?}");
}

fn quota_tree() -> (Tree, CgroupDir, CgroupDir) {
    let tree = Tree::v2(CgroupDriver::Cgroupfs);
    let pod = "kubepods/besteffort/pod6f1e2b9c-3d4a-4b5c-8d7e-0123456789ab";
    let ctr = format!("{pod}/abc");
    tree.file("kubepods", "cpu.max", "max 100000\n");
    for dir in ["kubepods/besteffort", pod, ctr.as_str()] {
        tree.file(dir, "cpu.max", "50000 100000\n");
    }
    (tree, d(pod), d(&ctr))
}

#[test]
fn leveled_batch_grows_parents_first() {
    let (tree, pod, ctr) = quota_tree();
    let cg = tree.cgroups();
    let qos = d("kubepods/besteffort");
    // Given children-first on purpose: the executor orders them.
    let writes = [
        CgroupWrite::int(&ctr, Resource::CpuCfsQuota, 200_000),
        CgroupWrite::int(&pod, Resource::CpuCfsQuota, 200_000),
        CgroupWrite::int(&qos, Resource::CpuCfsQuota, 400_000),
    ];
    let report = cg.executor().apply(&writes);
    assert!(report.errors.is_empty(), "{report:?}");
    let order: Vec<_> = report
        .applied
        .iter()
        .map(|a| (a.path.parent().unwrap().to_path_buf(), a.new.clone(), a.phase))
        .collect();
    let abs = |d: &CgroupDir| tree.root().join(d.as_path());
    assert_eq!(
        order,
        vec![
            (abs(&qos), "400000 100000".into(), Phase::Merge),
            (abs(&pod), "200000 100000".into(), Phase::Merge),
            (abs(&ctr), "200000 100000".into(), Phase::Merge),
        ]
    );
    // The merge already wrote the targets: no final writes, nothing skipped.
    assert_eq!(report.changed().count(), 0);
    assert!(report.skipped.is_empty());
    assert_eq!(report.applied[0].old, "50000 100000");
    assert_eq!(tree.read(ctr.as_path().to_str().unwrap(), "cpu.max"), "200000 100000");
}

#[test]
fn leveled_batch_shrinks_children_first_and_skips_equal() {
    let (tree, pod, ctr) = quota_tree();
    let cg = tree.cgroups();
    let writes = [
        CgroupWrite::int(&pod, Resource::CpuCfsQuota, 20_000),
        CgroupWrite::int(&ctr, Resource::CpuCfsQuota, 10_000),
        CgroupWrite::int(&pod, Resource::CpuShares, 1024),
    ];
    let report = cg.executor().apply(&writes);
    // cpu.weight missing in the kubepods dir → unsupported (and cached).
    assert!(report.errors.is_empty(), "{report:?}");
    let changed: Vec<_> =
        report.changed().map(|a| (a.path.parent().unwrap().to_path_buf(), a.new.clone())).collect();
    assert_eq!(
        changed,
        vec![
            (tree.root().join(ctr.as_path()), "10000 100000".to_string()),
            (tree.root().join(pod.as_path()), "20000 100000".to_string()),
        ]
    );
    assert!(report.applied.iter().all(|a| a.phase == Phase::Final));
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].reason, SkipReason::Unsupported);

    // Once more: everything already set.
    let report = cg.executor().apply(&writes[..2]);
    assert!(report.applied.is_empty(), "{report:?}");
    assert!(report.skipped.iter().all(|s| s.reason == SkipReason::AlreadySet));
    assert_eq!(report.skipped.len(), 2);
}

#[test]
fn v2_conversions_when_writing() {
    let tree = Tree::v2(CgroupDriver::Cgroupfs);
    let dir = d("kubepods/burstable");
    for (f, c) in [
        ("cpu.weight", "100\n"),
        ("cpu.max", "max 100000\n"),
        ("memory.max", "max\n"),
        ("memory.high", "max\n"),
        ("cpuset.cpus", "0-3\n"),
    ] {
        tree.file("kubepods", f, c);
        tree.file("kubepods/burstable", f, c);
    }
    let cg = tree.cgroups();
    let writes = [
        CgroupWrite::int(&dir, Resource::CpuShares, 1024),
        CgroupWrite::int(&dir, Resource::CpuCfsPeriod, 50_000),
        CgroupWrite::int(&dir, Resource::MemoryLimit, 1 << 30),
        CgroupWrite::int(&dir, Resource::MemoryHigh, i64::MAX),
        CgroupWrite {
            dir: dir.clone(),
            resource: Resource::CpusetCpus,
            value: Value::Text("3,0-2".into()),
        },
    ];
    let report = cg.executor().apply(&writes);
    assert!(report.errors.is_empty(), "{report:?}");
    let rel = "kubepods/burstable";
    assert_eq!(tree.read(rel, "cpu.weight"), "39");
    assert_eq!(tree.read(rel, "cpu.max"), "max 50000");
    assert_eq!(tree.read(rel, "memory.max"), (1u64 << 30).to_string());
    // i64::MAX against `max` and 3,0-2 against 0-3 are equal.
    let mut skipped: Vec<_> = report.skipped.iter().map(|s| (s.resource, s.reason)).collect();
    skipped.sort_by_key(|s| s.0);
    assert_eq!(
        skipped,
        vec![
            (Resource::CpusetCpus, SkipReason::AlreadySet),
            (Resource::MemoryHigh, SkipReason::AlreadySet)
        ]
    );

    // Unlimited again: -1 → max.
    let report = cg.executor().apply(&[CgroupWrite::int(&dir, Resource::MemoryLimit, -1)]);
    assert_eq!(report.applied.len(), 1);
    assert_eq!(tree.read(rel, "memory.max"), "max");
    // Shares whose weight is already there are skipped (1000 shares → 39).
    let report = cg.executor().apply(&[CgroupWrite::int(&dir, Resource::CpuShares, 1000)]);
    assert_eq!(report.skipped[0].reason, SkipReason::AlreadySet);
}

#[test]
fn cpuset_merge_uses_union_then_real_values() {
    let tree = Tree::v2(CgroupDriver::Cgroupfs);
    tree.file("kubepods", "cpuset.cpus", "0-7\n");
    tree.file("kubepods/besteffort", "cpuset.cpus", "0-1\n");
    tree.file("kubepods/besteffort/pod6f1e2b9c-3d4a-4b5c-8d7e-0123456789ab", "cpuset.cpus", "\n");
    tree.file(
        "kubepods/besteffort/pod6f1e2b9c-3d4a-4b5c-8d7e-0123456789ab",
        "cpuset.cpus.effective",
        "0-1\n",
    );
    let cg = tree.cgroups();
    let qos = d("kubepods/besteffort");
    let pod = cg.pod_dir(KubeQoSClass::BestEffort, UID).unwrap();
    let cs = |s: &str| Value::Cpuset(CpuSet::parse(s).unwrap());
    let writes = [
        CgroupWrite { dir: pod.clone(), resource: Resource::CpusetCpus, value: cs("2-3") },
        CgroupWrite { dir: qos.clone(), resource: Resource::CpusetCpus, value: cs("2-3") },
    ];
    let report = cg.executor().apply(&writes);
    assert!(report.errors.is_empty(), "{report:?}");
    let steps: Vec<_> = report
        .applied
        .iter()
        .map(|a| (a.path.parent().unwrap().ends_with("besteffort"), a.new.as_str(), a.phase))
        .collect();
    assert_eq!(
        steps,
        vec![
            (true, "0-3", Phase::Merge),  // qos: union first
            (false, "0-3", Phase::Merge), // pod: inherits 0-1 → union
            (false, "2-3", Phase::Final), // pod real value first
            (true, "2-3", Phase::Final),  // then the qos dir
        ]
    );
}

#[test]
fn dry_run_reports_without_writing() {
    let (tree, pod, ctr) = quota_tree();
    let cg = tree.cgroups();
    let writes = [
        CgroupWrite::int(&pod, Resource::CpuCfsQuota, 200_000),
        CgroupWrite::int(&ctr, Resource::CpuCfsQuota, 100_000),
    ];
    let report = cg.executor().dry_run(true).apply(&writes);
    assert!(report.dry_run);
    let steps: Vec<_> = report.applied.iter().map(|a| (a.new.as_str(), a.phase)).collect();
    assert_eq!(steps, vec![("200000 100000", Phase::Merge), ("100000 100000", Phase::Merge)]);
    assert_eq!(tree.read(pod.as_path().to_str().unwrap(), "cpu.max"), "50000 100000\n");
    // The same batch really applied gives the same record.
    let real = cg.executor().apply(&writes);
    assert_eq!(real.applied, report.applied);
}

#[test]
fn unsupported_missing_and_invalid() {
    let tree = Tree::v2(CgroupDriver::Cgroupfs);
    tree.file("kubepods", "cpu.max", "max 100000\n");
    let cg = tree.cgroups();
    let writes = [
        CgroupWrite::int(&d("kubepods"), Resource::CpuIdle, 1),
        CgroupWrite::int(&d("kubepods/besteffort"), Resource::CpuCfsQuota, 50_000),
        CgroupWrite::int(&d("kubepods"), Resource::CpuShares, 1),
        CgroupWrite::int(&d("kubepods"), Resource::BlkioCostWeight, 50),
        CgroupWrite::int(&d("kubepods"), Resource::MemoryStat, 1),
    ];
    let report = cg.executor().apply(&writes);
    let skipped: Vec<_> = report.skipped.iter().map(|s| (s.resource, s.reason)).collect();
    assert_eq!(
        skipped,
        vec![
            (Resource::CpuIdle, SkipReason::Unsupported),
            (Resource::CpuCfsQuota, SkipReason::MissingDir),
            (Resource::BlkioCostWeight, SkipReason::Unsupported),
        ]
    );
    assert_eq!(report.errors.len(), 2, "{report:?}");
    assert!(report.errors.iter().all(|e| matches!(e, CgroupError::InvalidValue { .. })));
    // Features are cached: creating the file later does not change the answer.
    tree.file("kubepods", "cpu.idle", "0\n");
    assert!(!cg.is_supported(Resource::CpuIdle));
    assert!(tree.cgroups().is_supported(Resource::CpuIdle));
    assert!(!tree.root().join("kubepods/cpu.weight").exists(), "the executor never creates files");
}

#[test]
fn hostile_uid_cannot_escape_the_root() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("cgroup");
    fs::create_dir_all(root.join("kubepods/burstable")).unwrap();
    fs::write(root.join("cgroup.controllers"), "cpu memory\n").unwrap();
    // A cgroup-looking directory outside the root that a hostile UID would
    // reach through `..`.
    let victim = outer.path().join("etc");
    fs::create_dir_all(&victim).unwrap();
    fs::write(victim.join("cpu.max"), "max 100000\n").unwrap();
    let cg = Cgroups::detect(&LayoutConfig::new(&root)).unwrap();
    for uid in [
        "../../../etc",
        "../../..",
        "a/b",
        "",
        "..",
        "6f1e2b9c-3d4a-4b5c-8d7e-0123456789ab/../../..",
    ] {
        for qos in [KubeQoSClass::Guaranteed, KubeQoSClass::Burstable, KubeQoSClass::BestEffort] {
            assert!(cg.pod_dir(qos, uid).is_err(), "{uid:?}");
            assert!(cg.container_dir(qos, UID, &format!("containerd://{uid}")).is_err(), "{uid:?}");
        }
    }
    // The only way to name a directory for the executor is a CgroupDir,
    // which refuses `..` too.
    assert!(CgroupDir::parse("kubepods/../../etc").is_err());
    assert_eq!(fs::read_to_string(victim.join("cpu.max")).unwrap(), "max 100000\n");
}
