//! CPU topology from sysfs: which logical CPUs are online, and each one's
//! physical core, socket, NUMA node and hyper-thread siblings.
//!
//! Read under a configurable sys root (`/sys` on a host, `/host-sys` in the
//! DaemonSet, a directory tree in tests):
//!
//! * `devices/system/cpu/online` — the online CPUs (a cpulist); if absent,
//!   every `cpuN` directory;
//! * `devices/system/cpu/cpuN/topology/{core_id,physical_package_id,thread_siblings_list}`;
//! * `devices/system/node/nodeN/{cpulist,meminfo}` — NUMA nodes, when the
//!   kernel has NUMA support; without that directory the machine is one
//!   NUMA node 0 holding every CPU. Nodes listed in
//!   `devices/system/node/has_generic_initiator` (accelerators without
//!   CPUs) are skipped, as Koordinator does.
//!
//! The cpulist format (`0-3,8,10-11`) is [`CpuSet`] (`kolo_core::cpuset`).

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub use kolo_core::cpuset::{CpuSet, CpuSetError};

/// One online logical CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuInfo {
    /// Logical CPU id (`cpuN`).
    pub id: u32,
    /// `core_id`: the physical core, unique only within its socket.
    pub core_id: u32,
    /// `physical_package_id`: the socket (`-1`, which some virtual machines
    /// report, reads as 0).
    pub socket_id: u32,
    /// The NUMA node holding it (0 without NUMA sysfs).
    pub numa_node: u32,
    /// `thread_siblings_list`: the logical CPUs sharing its core (itself
    /// included).
    pub siblings: CpuSet,
}

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNode {
    /// Node id (`nodeN`).
    pub id: u32,
    /// Its online CPUs (may be empty: memory-only nodes).
    pub cpus: CpuSet,
    /// `MemTotal` from its `meminfo`, bytes (`None` without NUMA sysfs).
    pub memory_total_bytes: Option<u64>,
}

/// The machine's CPU topology.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuTopology {
    /// Online CPUs, by ascending id.
    pub cpus: Vec<CpuInfo>,
    /// NUMA nodes, by ascending id.
    pub numa_nodes: Vec<NumaNode>,
}

/// Reading the topology failed.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// A file or directory could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A file's content is malformed.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, quoting the content.
        message: String,
    },
    /// No online CPU was found.
    #[error("{path}: no online CPU found")]
    NoCpus {
        /// The CPU directory looked at.
        path: PathBuf,
    },
}

impl CpuTopology {
    /// Reads the topology under `sys_root`.
    pub fn read(sys_root: &Path) -> Result<CpuTopology, TopologyError> {
        let cpu_dir = sys_root.join("devices/system/cpu");
        let online = match read_text(&cpu_dir.join("online"))? {
            Some(text) => parse_cpuset(&cpu_dir.join("online"), &text)?,
            None => numbered_entries(&cpu_dir, "cpu")?.into_iter().collect(),
        };
        if online.is_empty() {
            return Err(TopologyError::NoCpus { path: cpu_dir });
        }
        let numa_nodes = read_numa_nodes(sys_root, &online)?;
        let mut cpus = Vec::with_capacity(online.len());
        for id in &online {
            let dir = cpu_dir.join(format!("cpu{id}/topology"));
            let siblings_path = dir.join("thread_siblings_list");
            let siblings = match read_text(&siblings_path)? {
                Some(text) => parse_cpuset(&siblings_path, &text)?,
                None => CpuSet::from_range(id, id),
            };
            cpus.push(CpuInfo {
                id,
                core_id: read_id(&dir.join("core_id"))?.unwrap_or(id),
                socket_id: read_id(&dir.join("physical_package_id"))?.unwrap_or(0),
                numa_node: numa_nodes
                    .iter()
                    .find(|n| n.cpus.contains(id))
                    .map(|n| n.id)
                    .unwrap_or(0),
                siblings,
            });
        }
        Ok(CpuTopology { cpus, numa_nodes })
    }

    /// The online CPUs.
    pub fn online_cpus(&self) -> CpuSet {
        self.cpus.iter().map(|c| c.id).collect()
    }

    /// One CPU's entry.
    pub fn cpu(&self, id: u32) -> Option<&CpuInfo> {
        self.cpus.binary_search_by_key(&id, |c| c.id).ok().map(|i| &self.cpus[i])
    }

    /// The number of physical cores (distinct socket and core id pairs).
    pub fn num_cores(&self) -> usize {
        self.cpus.iter().map(|c| (c.socket_id, c.core_id)).collect::<BTreeSet<_>>().len()
    }

    /// The number of sockets.
    pub fn num_sockets(&self) -> usize {
        self.cpus.iter().map(|c| c.socket_id).collect::<BTreeSet<_>>().len()
    }
}

fn read_numa_nodes(sys_root: &Path, online: &CpuSet) -> Result<Vec<NumaNode>, TopologyError> {
    let node_dir = sys_root.join("devices/system/node");
    let ids = match numbered_entries(&node_dir, "node") {
        Ok(ids) if !ids.is_empty() => ids,
        Ok(_) => Vec::new(),
        Err(TopologyError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    if ids.is_empty() {
        return Ok(vec![NumaNode { id: 0, cpus: online.clone(), memory_total_bytes: None }]);
    }
    let generic_path = node_dir.join("has_generic_initiator");
    let generic = match read_text(&generic_path)? {
        Some(text) => parse_cpuset(&generic_path, &text)?,
        None => CpuSet::new(),
    };
    let mut nodes = Vec::with_capacity(ids.len());
    for id in ids {
        if generic.contains(id) {
            continue;
        }
        let dir = node_dir.join(format!("node{id}"));
        let cpulist = dir.join("cpulist");
        let cpus = match read_text(&cpulist)? {
            Some(text) => parse_cpuset(&cpulist, &text)?.intersection(online),
            None => CpuSet::new(),
        };
        let meminfo = dir.join("meminfo");
        let memory_total_bytes = match read_text(&meminfo)? {
            Some(text) => Some(
                super::node::parse_meminfo(text.as_bytes(), &meminfo)?
                    .total_kib
                    .saturating_mul(1024),
            ),
            None => None,
        };
        nodes.push(NumaNode { id, cpus, memory_total_bytes });
    }
    Ok(nodes)
}

impl From<super::node::NodeCollectError> for TopologyError {
    fn from(e: super::node::NodeCollectError) -> TopologyError {
        match e {
            super::node::NodeCollectError::Io { path, source } => {
                TopologyError::Io { path, source }
            }
            super::node::NodeCollectError::Parse { path, message, .. } => {
                TopologyError::Parse { path, message }
            }
        }
    }
}

/// The text of a file, `None` if it does not exist.
fn read_text(path: &Path) -> Result<Option<String>, TopologyError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TopologyError::Io { path: path.to_path_buf(), source: e }),
    }
}

fn parse_cpuset(path: &Path, text: &str) -> Result<CpuSet, TopologyError> {
    CpuSet::parse(text)
        .map_err(|e| TopologyError::Parse { path: path.to_path_buf(), message: e.to_string() })
}

/// A small id file (`core_id`, `physical_package_id`): `None` if missing;
/// negative values read as 0.
fn read_id(path: &Path) -> Result<Option<u32>, TopologyError> {
    let Some(text) = read_text(path)? else { return Ok(None) };
    parse_id(path, &text).map(Some)
}

/// Parses the text of a small id file (`core_id`, `physical_package_id`);
/// negative values read as 0. `path` only names the file in errors.
/// Public for the fuzz target.
pub fn parse_id(path: &Path, text: &str) -> Result<u32, TopologyError> {
    let text = text.trim();
    match text.parse::<i64>() {
        Ok(v) if v < 0 => Ok(0),
        Ok(v) => u32::try_from(v).map_err(|_| TopologyError::Parse {
            path: path.to_path_buf(),
            message: format!("{text:?} is out of range"),
        }),
        Err(_) => Err(TopologyError::Parse {
            path: path.to_path_buf(),
            message: format!("{:?} is not a number", text.chars().take(64).collect::<String>()),
        }),
    }
}

/// The `N` of the entries named `<prefix>N` in `dir`, ascending.
fn numbered_entries(dir: &Path, prefix: &str) -> Result<Vec<u32>, TopologyError> {
    let io = |source| TopologyError::Io { path: dir.to_path_buf(), source };
    let mut ids = Vec::new();
    for entry in fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else { continue };
        if !rest.is_empty()
            && rest.bytes().all(|b| b.is_ascii_digit())
            && let Ok(id) = rest.parse::<u32>()
            && id <= kolo_core::cpuset::MAX_CPU_ID
        {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes `path` (relative to `root`), creating its directories.
    pub(crate) fn put(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// A two-socket machine: 8 CPUs, 2 threads per core, socket = NUMA
    /// node; CPU 7 offline; node 2 is a generic initiator.
    fn two_socket_tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        put(root, "devices/system/cpu/online", "0-6\n");
        // Linux numbering: siblings are N and N+4.
        for cpu in 0..8u32 {
            let socket = if cpu % 4 < 2 { 0 } else { 1 };
            let core = cpu % 2;
            let t = format!("devices/system/cpu/cpu{cpu}/topology");
            if cpu == 7 {
                std::fs::create_dir_all(root.join(format!("devices/system/cpu/cpu{cpu}"))).unwrap();
                continue;
            }
            put(root, &format!("{t}/core_id"), &format!("{core}\n"));
            put(root, &format!("{t}/physical_package_id"), &format!("{socket}\n"));
            let sib = cpu % 4;
            put(root, &format!("{t}/thread_siblings_list"), &format!("{},{}\n", sib, sib + 4));
        }
        put(root, "devices/system/node/node0/cpulist", "0-1,4-5\n");
        put(
            root,
            "devices/system/node/node0/meminfo",
            "Node 0 MemTotal:       1000 kB\nNode 0 MemFree:         500 kB\n",
        );
        put(root, "devices/system/node/node1/cpulist", "2-3,6-7\n");
        put(root, "devices/system/node/node1/meminfo", "Node 1 MemTotal:       2000 kB\n");
        put(root, "devices/system/node/node2/cpulist", "\n");
        put(root, "devices/system/node/has_generic_initiator", "2\n");
        put(root, "devices/system/node/online", "0-2\n");
        dir
    }

    #[test]
    fn reads_a_fake_two_socket_tree() {
        let dir = two_socket_tree();
        let t = CpuTopology::read(dir.path()).unwrap();
        assert_eq!(t.online_cpus().to_string(), "0-6");
        assert_eq!(t.num_sockets(), 2);
        assert_eq!(t.num_cores(), 4);
        let c5 = t.cpu(5).unwrap();
        assert_eq!(
            (c5.core_id, c5.socket_id, c5.numa_node, c5.siblings.to_string()),
            (1, 0, 0, "1,5".into())
        );
        let c6 = t.cpu(6).unwrap();
        assert_eq!((c6.core_id, c6.socket_id, c6.numa_node), (0, 1, 1));
        assert!(t.cpu(7).is_none());
        assert_eq!(
            t.numa_nodes,
            vec![
                NumaNode {
                    id: 0,
                    cpus: CpuSet::parse("0-1,4-5").unwrap(),
                    memory_total_bytes: Some(1_024_000)
                },
                NumaNode {
                    id: 1,
                    cpus: CpuSet::parse("2-3,6").unwrap(),
                    memory_total_bytes: Some(2_048_000)
                },
            ]
        );
    }

    #[test]
    fn without_numa_or_online_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for cpu in [0, 1, 3] {
            put(root, &format!("devices/system/cpu/cpu{cpu}/topology/core_id"), &cpu.to_string());
            put(root, &format!("devices/system/cpu/cpu{cpu}/topology/physical_package_id"), "-1\n");
        }
        // Not CPUs.
        std::fs::create_dir_all(root.join("devices/system/cpu/cpufreq")).unwrap();
        std::fs::create_dir_all(root.join("devices/system/cpu/cpu")).unwrap();
        let t = CpuTopology::read(root).unwrap();
        assert_eq!(t.online_cpus().to_string(), "0-1,3");
        assert_eq!(t.cpu(3).unwrap().siblings.to_string(), "3", "missing siblings = itself");
        assert_eq!(t.cpu(3).unwrap().socket_id, 0, "-1 reads as 0");
        assert_eq!(t.num_cores(), 3);
        assert_eq!(
            t.numa_nodes,
            vec![NumaNode {
                id: 0,
                cpus: CpuSet::parse("0-1,3").unwrap(),
                memory_total_bytes: None
            }]
        );
    }

    #[test]
    fn malformed_trees_are_errors_naming_the_file() {
        let dir = two_socket_tree();
        put(dir.path(), "devices/system/cpu/cpu3/topology/core_id", "three\n");
        let e = CpuTopology::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("cpu3/topology/core_id: \"three\" is not a number"), "{e}");

        let dir = two_socket_tree();
        put(dir.path(), "devices/system/node/node1/cpulist", "3-1\n");
        let e = CpuTopology::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("node1/cpulist: invalid cpuset"), "{e}");

        let dir = two_socket_tree();
        put(dir.path(), "devices/system/node/node1/meminfo", "Node 1 MemTotal: lots kB\n");
        let e = CpuTopology::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("node1/meminfo"), "{e}");

        let dir = tempfile::tempdir().unwrap();
        let e = CpuTopology::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("devices/system/cpu"), "{e}");
        put(dir.path(), "devices/system/cpu/online", "\n");
        let e = CpuTopology::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("no online CPU"), "{e}");
    }

    #[test]
    fn reads_the_real_sysfs() {
        let t = CpuTopology::read(Path::new("/sys")).unwrap();
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        // Affinity can hide CPUs from available_parallelism, never add some.
        assert!(t.cpus.len() >= n, "{} online CPUs, {n} available", t.cpus.len());
        assert!(t.num_cores() >= 1 && t.num_cores() <= t.cpus.len());
        assert!(t.num_sockets() >= 1);
        for c in &t.cpus {
            assert!(c.siblings.contains(c.id), "{c:?}");
            assert!(t.numa_nodes.iter().any(|n| n.id == c.numa_node && n.cpus.contains(c.id)));
        }
        let all: CpuSet = t.numa_nodes.iter().fold(CpuSet::new(), |acc, n| acc.union(&n.cpus));
        assert_eq!(all, t.online_cpus());
        if Path::new("/sys/devices/system/node/node0/meminfo").exists() {
            assert!(t.numa_nodes.iter().any(|n| n.memory_total_bytes.is_some_and(|b| b > 0)));
        }
    }
}
