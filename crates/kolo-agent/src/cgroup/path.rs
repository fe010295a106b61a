//! Relative cgroup directories and the kubelet's naming of QoS, pod and
//! container cgroups for both cgroup drivers (spec §0.2).
//!
//! Pod UIDs and container IDs come from the API server and the runtime;
//! they are validated here before they become path components, so nothing
//! a pod object says can name a directory outside the cgroup root.

use std::fmt;
use std::path::{Path, PathBuf};

use kolo_api::kube_qos::KubeQoSClass;

use super::error::{PathError, cut};

/// How the kubelet names cgroups (`--cgroup-driver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CgroupDriver {
    /// `kubepods/burstable/pod<uid>/<id>`.
    Cgroupfs,
    /// `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope`.
    Systemd,
}

impl CgroupDriver {
    /// The kubelet's spelling (`cgroupfs`, `systemd`).
    pub fn as_str(self) -> &'static str {
        match self {
            CgroupDriver::Cgroupfs => "cgroupfs",
            CgroupDriver::Systemd => "systemd",
        }
    }

    /// Parses the kubelet's spelling.
    pub fn parse(s: &str) -> Option<CgroupDriver> {
        match s {
            "cgroupfs" => Some(CgroupDriver::Cgroupfs),
            "systemd" => Some(CgroupDriver::Systemd),
            _ => None,
        }
    }

    /// Name of the kubepods root directory.
    pub fn kubepods_name(self) -> &'static str {
        match self {
            CgroupDriver::Cgroupfs => "kubepods",
            CgroupDriver::Systemd => "kubepods.slice",
        }
    }
}

impl fmt::Display for CgroupDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A cgroup directory relative to a hierarchy root (`kubepods/burstable`),
/// the same in every v1 hierarchy and in the v2 tree. The empty directory is
/// the root itself. Every component is checked: no `.`, `..`, empty
/// component or NUL byte.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CgroupDir(PathBuf);

impl CgroupDir {
    /// The hierarchy root.
    pub fn root() -> CgroupDir {
        CgroupDir::default()
    }

    /// Parses `a/b/c`; a leading `/` (the kubelet's `cgroupParent`
    /// spelling) is relative to the hierarchy root too.
    pub fn parse(dir: &str) -> Result<CgroupDir, PathError> {
        let trimmed = dir.trim_start_matches('/').trim_end_matches('/');
        let mut out = CgroupDir::root();
        if trimmed.is_empty() {
            return Ok(out);
        }
        for component in trimmed.split('/') {
            out = out.join(component).map_err(|reason| PathError::InvalidDir {
                dir: cut(dir),
                reason: match reason {
                    PathError::InvalidDir { reason, .. } => reason,
                    _ => "invalid component",
                },
            })?;
        }
        Ok(out)
    }

    /// Appends one component.
    pub fn join(&self, component: &str) -> Result<CgroupDir, PathError> {
        let reason = if component.is_empty() {
            Some("empty component")
        } else if component == "." || component == ".." {
            Some("`.` or `..` component")
        } else if component.contains('/') {
            Some("component contains `/`")
        } else if component.contains('\0') {
            Some("component contains NUL")
        } else if component.len() > 255 {
            Some("component longer than 255 bytes")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(PathError::InvalidDir { dir: cut(component), reason }),
            None => Ok(CgroupDir(self.0.join(component))),
        }
    }

    /// Number of components (0 for the root): the executor orders writes by
    /// it.
    pub fn depth(&self) -> usize {
        self.0.components().count()
    }

    /// The relative path.
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// Whether `self` is `other` or below it.
    pub fn starts_with(&self, other: &CgroupDir) -> bool {
        self.0.starts_with(&other.0)
    }
}

impl fmt::Display for CgroupDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}", self.0.display())
    }
}

/// Checks a pod UID before it becomes part of a directory name. Accepted:
/// an RFC 4122 UUID (`8-4-4-4-12` hex digits, what the API server assigns)
/// or 16 to 64 hex digits (the hash the kubelet gives static pods).
pub fn validate_pod_uid(uid: &str) -> Result<(), PathError> {
    let err = |reason| Err(PathError::InvalidPodUid { uid: cut(uid), reason });
    let b = uid.as_bytes();
    if b.is_empty() {
        return err("empty");
    }
    if b.len() == 36 {
        for (i, &c) in b.iter().enumerate() {
            let ok = if matches!(i, 8 | 13 | 18 | 23) { c == b'-' } else { c.is_ascii_hexdigit() };
            if !ok {
                return err("not a UUID (8-4-4-4-12 hex digits)");
            }
        }
        return Ok(());
    }
    if (16..=64).contains(&b.len()) && b.iter().all(u8::is_ascii_hexdigit) {
        return Ok(());
    }
    err("neither a UUID nor a static pod's hex hash")
}

/// The container runtime named by a container ID's prefix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Runtime {
    /// `containerd://`.
    Containerd,
    /// `docker://`.
    Docker,
    /// `cri-o://`.
    CriO,
    /// `pouch://`.
    Pouch,
    /// Any other prefix (usable with the cgroupfs driver only).
    Other(String),
}

impl Runtime {
    fn from_prefix(prefix: &str) -> Runtime {
        match prefix {
            "containerd" => Runtime::Containerd,
            "docker" => Runtime::Docker,
            "cri-o" | "crio" => Runtime::CriO,
            "pouch" => Runtime::Pouch,
            other => Runtime::Other(other.to_string()),
        }
    }

    /// The systemd scope name prefix (`cri-containerd-`, `docker-`, ...).
    pub fn scope_prefix(&self) -> Option<&'static str> {
        match self {
            Runtime::Containerd => Some("cri-containerd-"),
            Runtime::Docker => Some("docker-"),
            Runtime::CriO => Some("crio-"),
            Runtime::Pouch => Some("pouch-"),
            Runtime::Other(_) => None,
        }
    }
}

/// A validated container ID: the runtime and the bare ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContainerId {
    runtime: Option<Runtime>,
    id: String,
}

impl ContainerId {
    /// Parses and validates `<runtime>://<id>` (a bare `<id>` is accepted
    /// too, without a runtime). The runtime is `[a-z0-9-]+`; the ID is 1 to
    /// 128 characters of `[a-zA-Z0-9_.-]`, not starting with `.` (so never
    /// `.` or `..`).
    pub fn parse(s: &str) -> Result<ContainerId, PathError> {
        let err = |reason| Err(PathError::InvalidContainerId { id: cut(s), reason });
        let (runtime, id) = match s.split_once("://") {
            Some((runtime, id)) => {
                if runtime.is_empty()
                    || !runtime
                        .bytes()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                {
                    return err("runtime prefix is not [a-z0-9-]+");
                }
                (Some(Runtime::from_prefix(runtime)), id)
            }
            None => (None, s),
        };
        if id.is_empty() {
            return err("empty");
        }
        if id.len() > 128 {
            return err("longer than 128 characters");
        }
        if id.starts_with('.') {
            return err("starts with `.`");
        }
        if !id.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')) {
            return err("not [a-zA-Z0-9_.-]");
        }
        Ok(ContainerId { runtime, id: id.to_string() })
    }

    /// The bare ID (without the `runtime://` prefix).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The runtime, if the ID had a prefix.
    pub fn runtime(&self) -> Option<&Runtime> {
        self.runtime.as_ref()
    }
}

/// Builds the kubelet's cgroup directories for one driver below a
/// (validated) kubelet cgroup root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPaths {
    driver: CgroupDriver,
    kubepods: CgroupDir,
    burstable: CgroupDir,
    besteffort: CgroupDir,
}

impl PodPaths {
    /// Paths for `driver` with the kubepods directory below `parent` (the
    /// kubelet's `--cgroup-root`; usually the hierarchy root).
    pub fn new(driver: CgroupDriver, parent: &CgroupDir) -> PodPaths {
        let join = |dir: &CgroupDir, c: &str| dir.join(c).expect("constant component");
        let kubepods = join(parent, driver.kubepods_name());
        let (burstable, besteffort) = match driver {
            CgroupDriver::Cgroupfs => (join(&kubepods, "burstable"), join(&kubepods, "besteffort")),
            CgroupDriver::Systemd => (
                join(&kubepods, "kubepods-burstable.slice"),
                join(&kubepods, "kubepods-besteffort.slice"),
            ),
        };
        PodPaths { driver, kubepods, burstable, besteffort }
    }

    /// The driver.
    pub fn driver(&self) -> CgroupDriver {
        self.driver
    }

    /// `kubepods` / `kubepods.slice`.
    pub fn kubepods_dir(&self) -> &CgroupDir {
        &self.kubepods
    }

    /// The QoS directory (Guaranteed pods live in the kubepods directory
    /// itself).
    pub fn qos_dir(&self, qos: KubeQoSClass) -> &CgroupDir {
        match qos {
            KubeQoSClass::Guaranteed => &self.kubepods,
            KubeQoSClass::Burstable => &self.burstable,
            KubeQoSClass::BestEffort => &self.besteffort,
        }
    }

    /// The pod directory; the UID is validated first.
    pub fn pod_dir(&self, qos: KubeQoSClass, uid: &str) -> Result<CgroupDir, PathError> {
        validate_pod_uid(uid)?;
        let name = match self.driver {
            CgroupDriver::Cgroupfs => format!("pod{uid}"),
            CgroupDriver::Systemd => {
                let escaped = uid.replace('-', "_");
                match qos {
                    KubeQoSClass::Guaranteed => format!("kubepods-pod{escaped}.slice"),
                    KubeQoSClass::Burstable => format!("kubepods-burstable-pod{escaped}.slice"),
                    KubeQoSClass::BestEffort => format!("kubepods-besteffort-pod{escaped}.slice"),
                }
            }
        };
        self.qos_dir(qos).join(&name)
    }

    /// The container directory below a pod directory.
    pub fn container_dir(
        &self,
        pod_dir: &CgroupDir,
        id: &ContainerId,
    ) -> Result<CgroupDir, PathError> {
        match self.driver {
            CgroupDriver::Cgroupfs => pod_dir.join(id.id()),
            CgroupDriver::Systemd => {
                let runtime = id
                    .runtime()
                    .ok_or_else(|| PathError::UnknownRuntime { runtime: String::new() })?;
                let prefix = runtime.scope_prefix().ok_or_else(|| PathError::UnknownRuntime {
                    runtime: match runtime {
                        Runtime::Other(name) => cut(name),
                        _ => String::new(),
                    },
                })?;
                pod_dir.join(&format!("{prefix}{}.scope", id.id()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const UID: &str = "6f1e2b9c-3d4a-4b5c-8d7e-0123456789ab";
    const CID: &str = "containerd://4f1c0d9e8b7a";

    #[test]
    fn pod_and_container_dirs_for_both_drivers_and_all_classes() {
        let root = CgroupDir::root();
        let uid_ = "6f1e2b9c_3d4a_4b5c_8d7e_0123456789ab";
        let cases = [
            (
                CgroupDriver::Cgroupfs,
                KubeQoSClass::Guaranteed,
                format!("kubepods/pod{UID}"),
                "4f1c0d9e8b7a".to_string(),
            ),
            (
                CgroupDriver::Cgroupfs,
                KubeQoSClass::Burstable,
                format!("kubepods/burstable/pod{UID}"),
                "4f1c0d9e8b7a".into(),
            ),
            (
                CgroupDriver::Cgroupfs,
                KubeQoSClass::BestEffort,
                format!("kubepods/besteffort/pod{UID}"),
                "4f1c0d9e8b7a".into(),
            ),
            (
                CgroupDriver::Systemd,
                KubeQoSClass::Guaranteed,
                format!("kubepods.slice/kubepods-pod{uid_}.slice"),
                "cri-containerd-4f1c0d9e8b7a.scope".into(),
            ),
            (
                CgroupDriver::Systemd,
                KubeQoSClass::Burstable,
                format!(
                    "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice"
                ),
                "cri-containerd-4f1c0d9e8b7a.scope".into(),
            ),
            (
                CgroupDriver::Systemd,
                KubeQoSClass::BestEffort,
                format!(
                    "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid_}.slice"
                ),
                "cri-containerd-4f1c0d9e8b7a.scope".into(),
            ),
        ];
        for (driver, qos, pod, container) in cases {
            let paths = PodPaths::new(driver, &root);
            let pod_dir = paths.pod_dir(qos, UID).unwrap();
            assert_eq!(pod_dir.as_path(), Path::new(&pod), "{driver} {qos:?}");
            assert_eq!(pod_dir.depth(), pod.split('/').count());
            let cid = ContainerId::parse(CID).unwrap();
            let dir = paths.container_dir(&pod_dir, &cid).unwrap();
            assert_eq!(dir.as_path(), Path::new(&pod).join(&container), "{driver} {qos:?}");
        }
    }

    #[test]
    fn qos_dirs_and_parent() {
        let parent = CgroupDir::parse("/kolo-test-1-0").unwrap();
        let fs = PodPaths::new(CgroupDriver::Cgroupfs, &parent);
        assert_eq!(fs.kubepods_dir().as_path(), Path::new("kolo-test-1-0/kubepods"));
        assert_eq!(fs.qos_dir(KubeQoSClass::Guaranteed), fs.kubepods_dir());
        assert_eq!(
            fs.qos_dir(KubeQoSClass::Burstable).as_path(),
            Path::new("kolo-test-1-0/kubepods/burstable")
        );
        assert_eq!(
            fs.qos_dir(KubeQoSClass::BestEffort).as_path(),
            Path::new("kolo-test-1-0/kubepods/besteffort")
        );
        let sd = PodPaths::new(CgroupDriver::Systemd, &CgroupDir::root());
        assert_eq!(
            sd.qos_dir(KubeQoSClass::BestEffort).to_string(),
            "/kubepods.slice/kubepods-besteffort.slice"
        );
    }

    #[test]
    fn systemd_scope_names_per_runtime() {
        let sd = PodPaths::new(CgroupDriver::Systemd, &CgroupDir::root());
        let pod = sd.pod_dir(KubeQoSClass::Guaranteed, UID).unwrap();
        for (id, scope) in [
            ("containerd://abc", "cri-containerd-abc.scope"),
            ("docker://abc", "docker-abc.scope"),
            ("cri-o://abc", "crio-abc.scope"),
            ("pouch://abc", "pouch-abc.scope"),
        ] {
            let dir = sd.container_dir(&pod, &ContainerId::parse(id).unwrap()).unwrap();
            assert_eq!(dir.as_path().file_name().unwrap(), scope);
        }
        for id in ["kata://abc", "abc"] {
            let err = sd.container_dir(&pod, &ContainerId::parse(id).unwrap()).unwrap_err();
            assert!(matches!(err, PathError::UnknownRuntime { .. }), "{id}");
        }
        // cgroupfs does not care about the runtime.
        let fs = PodPaths::new(CgroupDriver::Cgroupfs, &CgroupDir::root());
        let pod = fs.pod_dir(KubeQoSClass::Guaranteed, UID).unwrap();
        assert!(fs.container_dir(&pod, &ContainerId::parse("kata://abc").unwrap()).is_ok());
    }

    #[test]
    fn pod_uid_validation() {
        for ok in [UID, "6F1E2B9C-3D4A-4B5C-8D7E-0123456789AB", "0123456789abcdef0123456789abcdef"]
        {
            assert!(validate_pod_uid(ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(5000);
        for bad in [
            "",
            "../../etc",
            "..",
            ".",
            "a/b",
            "6f1e2b9c-3d4a-4b5c-8d7e-0123456789a/",
            "6f1e2b9c-3d4a-4b5c-8d7e/0123456789ab",
            "6f1e2b9c-3d4a-4b5c-8d7e-0123456789aé",
            "6f1e2b9c-3d4a-4b5c-8d7e-0123456789a\0",
            "6f1e2b9c_3d4a_4b5c_8d7e_0123456789ab",
            "pod-1",
            "ünïcødé",
            "0123456789abcdef0123456789abcdeg",
            long.as_str(),
        ] {
            let err = validate_pod_uid(bad).unwrap_err();
            assert!(matches!(err, PathError::InvalidPodUid { .. }), "{bad}");
            assert!(err.to_string().len() < 200, "error message is bounded");
        }
    }

    #[test]
    fn container_id_validation() {
        let id = ContainerId::parse("containerd://4f1c_0d.9e-8B").unwrap();
        assert_eq!(id.id(), "4f1c_0d.9e-8B");
        assert_eq!(id.runtime(), Some(&Runtime::Containerd));
        assert_eq!(ContainerId::parse("abc").unwrap().runtime(), None);
        let long = format!("containerd://{}", "a".repeat(129));
        for bad in [
            "",
            "containerd://",
            "containerd://..",
            "containerd://.",
            "containerd://.hidden",
            "containerd://../../etc",
            "containerd://a/b",
            "docker://a b",
            "docker://é",
            "://abc",
            "Docker://abc",
            "con/tainerd://abc",
            "..",
            long.as_str(),
        ] {
            assert!(ContainerId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dir_parse_rejects_escapes() {
        assert_eq!(CgroupDir::parse("/").unwrap(), CgroupDir::root());
        assert_eq!(CgroupDir::parse("/a/b/").unwrap().depth(), 2);
        for bad in ["a/../b", "..", "a//b", "./a", "a/\0"] {
            assert!(CgroupDir::parse(bad).is_err(), "{bad:?}");
        }
        assert!(CgroupDir::root().join("a/b").is_err());
    }

    proptest! {
        /// Whatever a pod object says, an accepted UID and container ID give
        /// a directory strictly below the QoS directory, one and two levels
        /// down, made of normal components.
        #[test]
        fn hostile_ids_never_escape(uid in "\\PC{0,40}|[0-9a-f./-]{0,40}", cid in "\\PC{0,40}|[a-z]{1,5}://[a-zA-Z0-9_./-]{0,20}") {
            for driver in [CgroupDriver::Cgroupfs, CgroupDriver::Systemd] {
                let paths = PodPaths::new(driver, &CgroupDir::root());
                let qos = paths.qos_dir(KubeQoSClass::Burstable).clone();
                if let Ok(pod) = paths.pod_dir(KubeQoSClass::Burstable, &uid) {
                    prop_assert!(pod.starts_with(&qos));
                    prop_assert_eq!(pod.depth(), qos.depth() + 1);
                    if let Ok(dir) = ContainerId::parse(&cid).and_then(|id| paths.container_dir(&pod, &id)) {
                        prop_assert!(dir.starts_with(&pod));
                        prop_assert_eq!(dir.depth(), pod.depth() + 1);
                        for c in dir.as_path().components() {
                            prop_assert!(matches!(c, std::path::Component::Normal(_)));
                        }
                    }
                }
            }
        }
    }
}
