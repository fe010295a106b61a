//! Errors of the cgroup layer. Every variant names the file, directory or
//! resource it is about.

use std::io;
use std::path::PathBuf;

use super::layout::CgroupVersion;
use super::resource::Resource;

/// A pod UID, container ID or cgroup directory that must not become a path
/// component.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The pod UID is not a kubelet UID (UUID, or the hex hash of a static
    /// pod).
    #[error("invalid pod UID {uid:?}: {reason}")]
    InvalidPodUid {
        /// The offending UID (cut to 80 characters).
        uid: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// The container ID is not `<runtime>://<id>` with a safe `<id>`.
    #[error("invalid container ID {id:?}: {reason}")]
    InvalidContainerId {
        /// The offending ID (cut to 80 characters).
        id: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// The systemd driver names container scopes after the runtime, and this
    /// runtime is not one it knows.
    #[error("container runtime {runtime:?} has no known systemd scope name")]
    UnknownRuntime {
        /// The runtime prefix of the container ID.
        runtime: String,
    },
    /// A relative cgroup directory with an unsafe component.
    #[error("invalid cgroup directory {dir:?}: {reason}")]
    InvalidDir {
        /// The offending directory (cut to 80 characters).
        dir: String,
        /// Why it was rejected.
        reason: &'static str,
    },
}

/// Cuts untrusted input for an error message.
pub(crate) fn cut(s: &str) -> String {
    s.chars().take(80).collect()
}

/// Everything that can go wrong reading, detecting or writing cgroups.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// A cgroup file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A cgroup file could not be written.
    #[error("writing {value:?} to {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What was written.
        value: String,
        /// The I/O error (the kernel's verdict, e.g. EINVAL).
        #[source]
        source: io::Error,
    },
    /// A cgroup file holds something that is not what the kernel writes there.
    #[error("{path}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The kernel does not have this file (e.g. `cpu.idle` before 5.15, or a
    /// v1-only file on cgroup v2). Normal: callers skip it.
    #[error("{resource} is not supported here (cgroup {version})")]
    Unsupported {
        /// The resource.
        resource: Resource,
        /// The cgroup version in use.
        version: CgroupVersion,
    },
    /// The cgroup directory does not exist (yet, or any more).
    #[error("cgroup directory {path} does not exist")]
    MissingDir {
        /// The directory.
        path: PathBuf,
    },
    /// A value outside the resource's range, or of the wrong kind.
    #[error("invalid value {value:?} for {resource}: {reason}")]
    InvalidValue {
        /// The resource.
        resource: Resource,
        /// The value, as given.
        value: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A UID, container ID or directory that must not become a path.
    #[error(transparent)]
    Path(#[from] PathError),
    /// The cgroup root does not look like a cgroup mount.
    #[error("cgroup root {root}: {reason}")]
    Layout {
        /// The configured root.
        root: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl CgroupError {
    /// Whether this is the "normal, skip it" kind: unsupported file or a
    /// missing cgroup directory (the executor counts these as no-ops).
    pub fn is_ignorable(&self) -> bool {
        matches!(self, CgroupError::Unsupported { .. } | CgroupError::MissingDir { .. })
    }

    /// Whether the underlying I/O error is "not found" (a pod or container
    /// cgroup that does not exist yet or any more).
    pub fn is_not_found(&self) -> bool {
        match self {
            CgroupError::Read { source, .. } | CgroupError::Write { source, .. } => {
                source.kind() == io::ErrorKind::NotFound
            }
            CgroupError::MissingDir { .. } => true,
            _ => false,
        }
    }
}
