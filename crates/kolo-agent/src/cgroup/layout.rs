//! Where the cgroup files are: the cgroup version and, on v1, the mount
//! directory of every subsystem (found by looking at the root's entries,
//! so `cpu` and `cpuacct` may be separate hierarchies or one `cpu,cpuacct`),
//! and the kubelet's cgroup driver (from which kubepods directory exists).
//! Detected once at start.

use std::fmt;
use std::path::{Path, PathBuf};

use super::error::CgroupError;
use super::path::{CgroupDir, CgroupDriver, PodPaths};
use super::resource::{Resource, Subsystem};

/// cgroup v1 (one hierarchy per subsystem) or v2 (one unified tree).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CgroupVersion {
    /// Legacy hierarchies, `/sys/fs/cgroup/<subsystem>/...`.
    V1,
    /// Unified hierarchy, `/sys/fs/cgroup/...`.
    V2,
}

impl fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        })
    }
}

/// What to detect the layout from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutConfig {
    /// The cgroup mount root: `/sys/fs/cgroup` on a host, `/host-cgroup` in
    /// a DaemonSet, a temporary directory in tests.
    pub root: PathBuf,
    /// The kubelet's `--cgroup-root` below which `kubepods` lives, relative
    /// to every hierarchy root (usually empty; tests use a unique
    /// directory so they never touch a real kubepods tree).
    pub kubelet_root: String,
    /// The cgroup driver if known (e.g. from the kubelet configuration);
    /// `None` detects it from the kubepods directory name and falls back to
    /// systemd, as Koordinator does.
    pub driver: Option<CgroupDriver>,
}

impl LayoutConfig {
    /// Detect everything below `root`.
    pub fn new(root: impl Into<PathBuf>) -> LayoutConfig {
        LayoutConfig { root: root.into(), kubelet_root: String::new(), driver: None }
    }
}

impl Default for LayoutConfig {
    fn default() -> Self {
        LayoutConfig::new("/sys/fs/cgroup")
    }
}

/// The detected layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
    version: CgroupVersion,
    /// v1: the hierarchy directory of each subsystem (index:
    /// [`Subsystem`] order); v2: unused.
    v1_dirs: [Option<PathBuf>; Subsystem::ALL.len()],
    kubelet_root: CgroupDir,
    paths: PodPaths,
    driver_detected: bool,
}

impl Layout {
    /// Detects the version, the v1 subsystem directories and the driver.
    /// Fails if `root` holds no cgroup hierarchy at all.
    pub fn detect(config: &LayoutConfig) -> Result<Layout, CgroupError> {
        let root = config.root.clone();
        let layout_err = |reason: String| CgroupError::Layout { root: root.clone(), reason };
        let kubelet_root = CgroupDir::parse(&config.kubelet_root)?;
        let entries =
            std::fs::read_dir(&root).map_err(|e| layout_err(format!("cannot list: {e}")))?;
        let mut v1_dirs: [Option<PathBuf>; Subsystem::ALL.len()] = Default::default();
        let version = if root.join("cgroup.controllers").is_file() {
            CgroupVersion::V2
        } else {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                let path = entry.path();
                // `metadata` follows symlinks (`cpu` → `cpu,cpuacct`).
                if !path.is_dir() || !path.join("cgroup.procs").is_file() {
                    continue;
                }
                for subsystem in name.split(',').filter_map(Subsystem::parse) {
                    let slot = &mut v1_dirs[subsystem.index()];
                    // Prefer the directory named exactly after the subsystem.
                    if slot.is_none() || name == subsystem.name() {
                        *slot = Some(path.clone());
                    }
                }
            }
            if v1_dirs.iter().all(Option::is_none) {
                return Err(layout_err(
                    "neither a cgroup v2 mount (no cgroup.controllers) nor cgroup v1 hierarchies (no cpu, cpuacct, cpuset, memory, blkio or net_cls directory)".into(),
                ));
            }
            CgroupVersion::V1
        };
        let mut layout = Layout {
            root,
            version,
            v1_dirs,
            kubelet_root: kubelet_root.clone(),
            paths: PodPaths::new(CgroupDriver::Systemd, &kubelet_root),
            driver_detected: false,
        };
        let detected = layout.detect_driver();
        let driver = match (config.driver, detected) {
            (Some(driver), found) => {
                if found.is_some_and(|found| found != driver) {
                    tracing::warn!(
                        configured = %driver,
                        found = ?found,
                        "cgroup driver configured differently from the kubepods directory found; using the configured one"
                    );
                }
                driver
            }
            (None, Some(found)) => found,
            (None, None) => {
                tracing::info!(
                    root = %layout.root.display(),
                    "no kubepods cgroup found; assuming the systemd cgroup driver"
                );
                CgroupDriver::Systemd
            }
        };
        layout.driver_detected = detected.is_some();
        layout.paths = PodPaths::new(driver, &kubelet_root);
        Ok(layout)
    }

    fn detect_driver(&self) -> Option<CgroupDriver> {
        let bases: Vec<&Path> = match self.version {
            CgroupVersion::V2 => vec![&self.root],
            CgroupVersion::V1 => [Subsystem::Cpu, Subsystem::Memory, Subsystem::Cpuacct]
                .into_iter()
                .filter_map(|s| self.v1_dirs[s.index()].as_deref())
                .collect(),
        };
        [CgroupDriver::Systemd, CgroupDriver::Cgroupfs].into_iter().find(|d| {
            bases
                .iter()
                .any(|b| b.join(self.kubelet_root.as_path()).join(d.kubepods_name()).is_dir())
        })
    }

    /// The cgroup mount root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The cgroup version.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// The kubelet's cgroup driver.
    pub fn driver(&self) -> CgroupDriver {
        self.paths.driver()
    }

    /// Whether the driver was found from an existing kubepods directory
    /// (rather than configured or assumed).
    pub fn driver_detected(&self) -> bool {
        self.driver_detected
    }

    /// The kubelet cgroup root below every hierarchy root.
    pub fn kubelet_root(&self) -> &CgroupDir {
        &self.kubelet_root
    }

    /// The kubelet's directory names for this driver.
    pub fn pod_paths(&self) -> &PodPaths {
        &self.paths
    }

    /// The hierarchy holding `subsystem`'s files: on v1 its mount directory
    /// (`None` if not mounted), on v2 the root.
    pub fn hierarchy(&self, subsystem: Subsystem) -> Option<&Path> {
        match self.version {
            CgroupVersion::V1 => self.v1_dirs[subsystem.index()].as_deref(),
            CgroupVersion::V2 => Some(&self.root),
        }
    }

    /// The absolute directory of `dir` in `subsystem`'s hierarchy.
    pub fn abs_dir(&self, subsystem: Subsystem, dir: &CgroupDir) -> Option<PathBuf> {
        self.hierarchy(subsystem).map(|h| h.join(dir.as_path()))
    }

    /// The absolute path of the file written for `resource` in `dir`
    /// (`None` if this version has no such file or its subsystem is not
    /// mounted).
    pub fn file_path(&self, dir: &CgroupDir, resource: Resource) -> Option<PathBuf> {
        let file = resource.file(self.version)?;
        Some(self.abs_dir(resource.subsystem(), dir)?.join(file))
    }

    /// The absolute path of the file typed reads of `resource` use (v2
    /// cpusets: the `.effective` file).
    pub fn read_path(&self, dir: &CgroupDir, resource: Resource) -> Option<PathBuf> {
        let file = resource.read_file(self.version)?;
        Some(self.abs_dir(resource.subsystem(), dir)?.join(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn touch(path: &Path) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "").unwrap();
    }

    #[test]
    fn v1_with_separate_and_combined_hierarchies() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for dir in ["cpu,cpuacct", "memory", "cpuset", "unified", "systemd"] {
            touch(&root.join(dir).join("cgroup.procs"));
        }
        std::os::unix::fs::symlink(root.join("cpu,cpuacct"), root.join("cpu")).unwrap();
        fs::create_dir_all(root.join("memory/kubepods/burstable")).unwrap();
        let layout = Layout::detect(&LayoutConfig::new(root)).unwrap();
        assert_eq!(layout.version(), CgroupVersion::V1);
        assert_eq!(layout.driver(), CgroupDriver::Cgroupfs);
        assert!(layout.driver_detected());
        assert_eq!(layout.hierarchy(Subsystem::Cpu), Some(root.join("cpu").as_path()));
        assert_eq!(layout.hierarchy(Subsystem::Cpuacct), Some(root.join("cpu,cpuacct").as_path()));
        assert_eq!(layout.hierarchy(Subsystem::Blkio), None);
        let dir = CgroupDir::parse("kubepods/burstable").unwrap();
        assert_eq!(
            layout.file_path(&dir, Resource::CpuacctUsage).unwrap(),
            root.join("cpu,cpuacct/kubepods/burstable/cpuacct.usage")
        );
        assert_eq!(layout.file_path(&dir, Resource::BlkioCostWeight), None);
        assert_eq!(layout.file_path(&dir, Resource::MemoryPagecacheLimitSize), None);
    }

    #[test]
    fn v2_systemd() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        touch(&root.join("cgroup.controllers"));
        fs::create_dir_all(root.join("kubepods.slice")).unwrap();
        let layout = Layout::detect(&LayoutConfig::new(root)).unwrap();
        assert_eq!(layout.version(), CgroupVersion::V2);
        assert_eq!(layout.driver(), CgroupDriver::Systemd);
        let dir = CgroupDir::parse("kubepods.slice").unwrap();
        assert_eq!(
            layout.file_path(&dir, Resource::CpuacctUsage).unwrap(),
            root.join("kubepods.slice/cpu.stat")
        );
        assert_eq!(
            layout.read_path(&dir, Resource::CpusetCpus).unwrap(),
            root.join("kubepods.slice/cpuset.cpus.effective")
        );
    }

    #[test]
    fn driver_fallback_override_and_kubelet_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        touch(&root.join("cgroup.controllers"));
        // Nothing there: systemd, as Koordinator assumes.
        let layout = Layout::detect(&LayoutConfig::new(root)).unwrap();
        assert_eq!(layout.driver(), CgroupDriver::Systemd);
        assert!(!layout.driver_detected());
        // kubepods below a kubelet root.
        fs::create_dir_all(root.join("test-1/kubepods")).unwrap();
        let mut config = LayoutConfig::new(root);
        config.kubelet_root = "/test-1".into();
        let layout = Layout::detect(&config).unwrap();
        assert_eq!(layout.driver(), CgroupDriver::Cgroupfs);
        assert_eq!(layout.pod_paths().kubepods_dir().as_path(), Path::new("test-1/kubepods"));
        // Configured wins.
        config.driver = Some(CgroupDriver::Systemd);
        assert_eq!(Layout::detect(&config).unwrap().driver(), CgroupDriver::Systemd);
        // A kubelet root that escapes is refused.
        config.kubelet_root = "../etc".into();
        assert!(matches!(Layout::detect(&config), Err(CgroupError::Path(_))));
    }

    #[test]
    fn not_a_cgroup_root() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("cpu")).unwrap(); // no cgroup.procs
        let err = Layout::detect(&LayoutConfig::new(tmp.path())).unwrap_err();
        assert!(err.to_string().contains(&tmp.path().display().to_string()), "{err}");
        let err = Layout::detect(&LayoutConfig::new(tmp.path().join("missing"))).unwrap_err();
        assert!(matches!(err, CgroupError::Layout { .. }));
    }
}
