//! Collectors: what the agent measures on its node.
//!
//! * [`node`]: node CPU and memory from `/proc/stat` and `/proc/meminfo`
//!   (and per-NUMA figures from sysfs), as Koordinator computes them;
//! * [`pod`]: pod and container CPU, memory and PSI from their cgroups;
//! * [`psi`]: the PSI file parser (node and cgroups share it) and the node
//!   PSI reader for `/proc/pressure`;
//! * [`topology`]: CPU topology (cores, sockets, NUMA nodes, siblings) from
//!   sysfs, and the cpulist format.
//!
//! Every reader takes its root (`/proc`, `/sys`, or the DaemonSet's
//! `/host-sys`; a directory tree in tests) instead of assuming one. The
//! default collection interval is 1 s.

pub mod node;
pub mod pod;
pub mod psi;
pub mod topology;

use std::io;
use std::path::PathBuf;

/// Reading or parsing a `/proc`, sysfs or PSI file failed.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The content is not what the kernel writes.
    #[error("{path}: line {line}: {message}")]
    Parse {
        /// The file (or the name the caller gave the text).
        path: PathBuf,
        /// 1-based line number (0 for the file as a whole).
        line: usize,
        /// What is wrong, quoting the offending text.
        message: String,
    },
}
