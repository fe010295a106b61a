//! What `kolo doctor` finds on a node: the kernel, its fair scheduler, the
//! cgroup layout, which of the files kolo writes the kernel has, whether it
//! refuses a CPU weight on an idle group (the kubelet trap), PSI and
//! resctrl. All I/O lives here; [`super::report`] turns the facts into the
//! verdicts.

use std::fs;
use std::path::PathBuf;

use crate::cgroup::{
    CgroupDir, CgroupDriver, CgroupVersion, Layout, LayoutConfig, Resource, Subsystem,
};
use crate::kernel::{self, FairScheduler};

/// Where to look.
#[derive(Debug, Clone)]
pub struct Roots {
    /// The cgroup mount root (`/sys/fs/cgroup`).
    pub cgroup: PathBuf,
    /// The kubelet's `--cgroup-root` below it (usually empty).
    pub kubelet_root: String,
    /// `/proc`.
    pub proc: PathBuf,
    /// `/sys`.
    pub sys: PathBuf,
    /// Whether it may create (and remove) a cgroup of its own to look at
    /// the kernel's files where no kubepods cgroup shows them (not in a
    /// dry run).
    pub may_create: bool,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            cgroup: "/sys/fs/cgroup".into(),
            kubelet_root: String::new(),
            proc: "/proc".into(),
            sys: "/sys".into(),
            may_create: true,
        }
    }
}

/// The resources whose files decide a QoS feature.
pub const PROBED: [Resource; 8] = [
    Resource::CpuShares,
    Resource::CpuCfsQuota,
    Resource::CpuIdle,
    Resource::CpuCfsBurst,
    Resource::CpusetCpus,
    Resource::MemoryLimit,
    Resource::MemoryMin,
    Resource::CpuPressure,
];

/// Everything `kolo doctor` found.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFacts {
    /// `/proc/sys/kernel/osrelease`.
    pub kernel_release: Option<String>,
    /// The fair scheduler ([`kernel::detect`]).
    pub scheduler: Option<FairScheduler>,
    /// The cgroup layout, or why none was found.
    pub cgroup: Result<CgroupFacts, String>,
    /// `/proc/pressure/cpu` is readable (PSI on).
    pub system_psi: bool,
    /// `resctrl` in `/proc/filesystems`.
    pub resctrl_supported: bool,
    /// Something mounted at `/sys/fs/resctrl`.
    pub resctrl_mounted: bool,
}

/// The cgroup side of [`NodeFacts`].
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupFacts {
    /// v1 or v2.
    pub version: CgroupVersion,
    /// The kubelet's driver, if a kubepods directory shows it.
    pub driver: Option<CgroupDriver>,
    /// Each controller kolo uses, and whether this node has it (v1: a
    /// mounted hierarchy; v2: offered in the root's `cgroup.controllers`).
    pub controllers: Vec<(String, bool)>,
    /// Each file of [`PROBED`]: whether the kernel has it (`None`: could
    /// not be looked at, see `probed_in`).
    pub files: Vec<(Resource, Option<bool>)>,
    /// Whether the kernel refuses a CPU weight (`cpu.shares` / `cpu.weight`,
    /// what a starting kubelet writes on its QoS cgroups) on a group with
    /// `cpu.idle = 1`. `None`: not tried.
    pub idle_refuses_weight: Option<bool>,
    /// Where the files were looked for: the kubelet's kubepods directory,
    /// a temporary cgroup of the doctor's own, or why neither.
    pub probed_in: String,
}

/// Looks at the node under `roots`.
pub fn probe(roots: &Roots) -> NodeFacts {
    let release = fs::read_to_string(roots.proc.join("sys/kernel/osrelease"))
        .ok()
        .map(|s| s.trim().to_string());
    let filesystems = fs::read_to_string(roots.proc.join("filesystems")).unwrap_or_default();
    NodeFacts {
        kernel_release: release,
        scheduler: kernel::detect(&roots.proc, &roots.sys),
        cgroup: probe_cgroups(roots),
        system_psi: fs::read_to_string(roots.proc.join("pressure/cpu")).is_ok(),
        resctrl_supported: filesystems
            .lines()
            .any(|l| l.split_whitespace().last() == Some("resctrl")),
        resctrl_mounted: roots.sys.join("fs/resctrl/info").is_dir(),
    }
}

fn probe_cgroups(roots: &Roots) -> Result<CgroupFacts, String> {
    let config = LayoutConfig {
        root: roots.cgroup.clone(),
        kubelet_root: roots.kubelet_root.clone(),
        driver: None,
    };
    let layout = Layout::detect(&config).map_err(|e| e.to_string())?;
    let controllers = controllers(&layout);
    let driver = layout.driver_detected().then(|| layout.driver());
    let kubepods = layout.pod_paths().kubepods_dir().clone();
    let (files, idle_refuses_weight, probed_in) = if driver.is_some() {
        // The kubelet's own directory: what the agent will see. The trap is
        // not tried there (it would change the node's kubepods cgroup).
        (look(&layout, &kubepods), None, format!("the kubelet's {}", kubepods.as_path().display()))
    } else if !roots.may_create {
        (
            PROBED.iter().map(|r| (*r, None)).collect(),
            None,
            "nowhere: no kubepods cgroup, and creating one of its own was not allowed (dry run)"
                .into(),
        )
    } else {
        match TempCgroup::create(&layout) {
            Ok(temp) => {
                let files = look(&layout, &temp.dir);
                let trap = temp.idle_refuses_weight(&layout);
                (
                    files,
                    trap,
                    format!("a temporary cgroup {} (removed)", temp.dir.as_path().display()),
                )
            }
            Err(e) => (
                PROBED.iter().map(|r| (*r, None)).collect(),
                None,
                format!("nowhere: no kubepods cgroup, and a temporary one could not be made ({e})"),
            ),
        }
    };
    Ok(CgroupFacts {
        version: layout.version(),
        driver,
        controllers,
        files,
        idle_refuses_weight,
        probed_in,
    })
}

/// The controllers kolo uses and whether the node has each.
fn controllers(layout: &Layout) -> Vec<(String, bool)> {
    match layout.version() {
        CgroupVersion::V1 => [
            Subsystem::Cpu,
            Subsystem::Cpuacct,
            Subsystem::Cpuset,
            Subsystem::Memory,
            Subsystem::Blkio,
        ]
        .iter()
        .map(|s| (s.name().to_string(), layout.hierarchy(*s).is_some()))
        .collect(),
        CgroupVersion::V2 => {
            let offered =
                fs::read_to_string(layout.root().join("cgroup.controllers")).unwrap_or_default();
            ["cpu", "cpuset", "memory", "io"]
                .iter()
                .map(|c| (c.to_string(), offered.split_whitespace().any(|o| o == *c)))
                .collect()
        }
    }
}

/// Whether each [`PROBED`] file exists in `dir`.
fn look(layout: &Layout, dir: &CgroupDir) -> Vec<(Resource, Option<bool>)> {
    PROBED
        .iter()
        .map(|r| (*r, Some(layout.file_path(dir, *r).is_some_and(|p| p.exists()))))
        .collect()
}

/// A cgroup of the doctor's own (`kolo-doctor-<pid>`) in the hierarchies
/// kolo writes, removed on drop.
struct TempCgroup {
    dir: CgroupDir,
    created: Vec<PathBuf>,
}

impl TempCgroup {
    fn create(layout: &Layout) -> Result<TempCgroup, String> {
        let dir = CgroupDir::parse(&format!("kolo-doctor-{}", std::process::id()))
            .map_err(|e| e.to_string())?;
        let mut temp = TempCgroup { dir, created: Vec::new() };
        if layout.version() == CgroupVersion::V2 {
            // Its files only appear with the controllers on for the root's
            // children (a no-op where they are).
            let control = layout.root().join("cgroup.subtree_control");
            let _ = write_existing(&control, "+cpu +cpuset +memory");
        }
        for s in [Subsystem::Cpu, Subsystem::Cpuset, Subsystem::Memory] {
            let Some(path) = layout.abs_dir(s, &temp.dir) else { continue };
            if temp.created.contains(&path) {
                continue;
            }
            fs::create_dir(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
            temp.created.push(path);
        }
        Ok(temp)
    }

    /// Sets `cpu.idle = 1` and writes a CPU weight, as a starting kubelet
    /// does on its QoS cgroups; `None` without `cpu.idle`.
    fn idle_refuses_weight(&self, layout: &Layout) -> Option<bool> {
        let idle = layout.file_path(&self.dir, Resource::CpuIdle)?;
        let weight = layout.file_path(&self.dir, Resource::CpuShares)?;
        write_existing(&idle, "1").ok()?;
        let value = if layout.version() == CgroupVersion::V1 { "2" } else { "1" };
        let refused = write_existing(&weight, value).is_err();
        let _ = write_existing(&idle, "0");
        Some(refused)
    }
}

/// Writes a file that must exist (a cgroup file; never creates one, which
/// in a directory tree that is not a cgroup would only make a plain file).
fn write_existing(path: &std::path::Path, value: &str) -> std::io::Result<()> {
    use std::io::Write;
    fs::OpenOptions::new().write(true).open(path)?.write_all(value.as_bytes())
}

impl Drop for TempCgroup {
    fn drop(&mut self) {
        for path in self.created.iter().rev() {
            let _ = fs::remove_dir(path);
        }
    }
}
