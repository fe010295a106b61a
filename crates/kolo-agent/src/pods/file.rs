//! Pods from a file, for running the agent without a kubelet.
//!
//! The file holds Pod objects in any form `kolo_core::snapshot::Snapshot`
//! reads: multi-document YAML, a `kind: List` / `PodList`, a JSON object or
//! array, e.g. the output of `kubectl get pods -o yaml`. Other kinds in it
//! are ignored. Each pod is checked as it loads (quantities, QoS fields), so
//! a malformed pod is reported with the file, the document and the field.
//!
//! The file is read again only when it changes (its inode, size, mtime or
//! ctime differ from the last good read), so editing it — in place or by
//! renaming a new file over it — takes effect at the next sync, and an
//! unchanged file costs one `stat`.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use kolo_core::snapshot::{Snapshot, SnapshotError};

use super::{Fetched, PodSource, PodSourceError};

/// The pods file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FileSourceError {
    /// The file could not be looked at.
    #[error("reading {path}: {source}")]
    Stat {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The file could not be read or parsed; the message names the file,
    /// the document and the field.
    #[error("pods file: {0}")]
    Load(#[from] SnapshotError),
}

/// What identifies one version of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// A [`PodSource`] reading a file of Pod objects.
#[derive(Debug)]
pub struct FileSource {
    path: PathBuf,
    name: String,
    node_name: Option<String>,
    loaded: Option<Stamp>,
}

impl FileSource {
    /// A source reading `path`.
    pub fn new(path: impl Into<PathBuf>) -> FileSource {
        let path = path.into();
        FileSource { name: format!("file {}", path.display()), path, node_name: None, loaded: None }
    }

    /// Drops pods bound to another node (`spec.nodeName` set and not
    /// `node`), for a file dumped from a whole cluster; pods without
    /// `spec.nodeName` are kept. By default every pod in the file is taken.
    #[must_use]
    pub fn with_node_name(mut self, node: impl Into<String>) -> FileSource {
        self.node_name = Some(node.into());
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn stamp(&self) -> Result<Stamp, FileSourceError> {
        let m = std::fs::metadata(&self.path)
            .map_err(|source| FileSourceError::Stat { path: self.path.clone(), source })?;
        Ok(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

impl PodSource for FileSource {
    fn name(&self) -> &str {
        &self.name
    }

    /// Reads the file if it changed since the last good read; a malformed
    /// file is an error every time it is asked (until fixed).
    fn fetch(&mut self) -> Result<Fetched, PodSourceError> {
        // Stamp first: a write racing with the read changes the stamp again,
        // so the next fetch reads the file once more.
        let stamp = self.stamp()?;
        if self.loaded == Some(stamp) {
            return Ok(Fetched::Unchanged);
        }
        let snapshot = Snapshot::load(&self.path).map_err(FileSourceError::from)?;
        let pods = snapshot
            .pods
            .into_iter()
            .map(|v| v.object)
            .filter(|p| {
                // A pod bound elsewhere is not ours; an unbound one (a
                // hand-written standalone file) is.
                let bound = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
                match (&self.node_name, bound) {
                    (Some(node), Some(bound)) => bound == node,
                    _ => true,
                }
            })
            .collect();
        self.loaded = Some(stamp);
        Ok(Fetched::Pods(pods))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::pods::LastGood;
    use crate::pods::tests::names;

    fn pod_yaml(name: &str, node: &str, cpu: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  uid: uid-{name}\n\
             spec:\n  nodeName: {node}\n  containers:\n  - name: c\n    image: busybox\n\
             \x20   resources:\n      requests:\n        cpu: {cpu}\n"
        )
    }

    /// Writes the file and moves its mtime, so a rewrite within one clock
    /// tick is still seen as a change.
    fn write(path: &Path, text: &str, tick: u64) {
        std::fs::write(path, text).unwrap();
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + tick)).unwrap();
    }

    #[test]
    fn rereads_on_change_and_keeps_last_good_on_a_malformed_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pods.yaml");
        write(
            &path,
            &format!("{}---\n{}", pod_yaml("a", "n1", "1"), pod_yaml("b", "n1", "500m")),
            1,
        );
        let mut s = LastGood::new(FileSource::new(&path));
        assert_eq!(s.source().name(), format!("file {}", path.display()));
        assert!(s.sync().unwrap());
        assert_eq!(names(s.pods()), vec!["a", "b"]);
        assert!(!s.sync().unwrap(), "unchanged file is not re-read");
        assert_eq!(s.generation(), 1);

        // Edited in place.
        write(&path, &pod_yaml("c", "n1", "2"), 2);
        assert!(s.sync().unwrap());
        assert_eq!(names(s.pods()), vec!["c"]);

        // A malformed quantity: error naming the file, the pod and the
        // field; last good list kept; reported again while it stays broken.
        write(&path, &pod_yaml("d", "n1", "lots"), 3);
        let e = s.sync().unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains("default/d"), "{e}");
        assert!(e.contains("spec.containers[\"c\"].resources.requests"), "{e}");
        assert!(e.contains("invalid quantity \"lots\""), "{e}");
        assert_eq!(names(s.pods()), vec!["c"]);
        assert!(s.sync().is_err(), "still broken");
        // Not YAML at all.
        write(&path, "kind: Pod\nmetadata: [unclosed\n", 4);
        let e = s.sync().unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()) && e.contains("not valid YAML"), "{e}");
        // Emptied: zero pods is not believed either.
        write(&path, "", 5);
        assert!(matches!(s.sync(), Err(PodSourceError::Empty { .. })));
        assert_eq!(names(s.pods()), vec!["c"]);

        // Replaced by rename, JSON this time.
        let tmp = dir.path().join("pods.json.tmp");
        let json = serde_json::json!({"kind": "PodList", "apiVersion": "v1", "items": [
            {"metadata": {"name": "e", "namespace": "default", "uid": "uid-e"},
             "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        ]});
        write(&tmp, &json.to_string(), 6);
        std::fs::rename(&tmp, &path).unwrap();
        assert!(s.sync().unwrap());
        assert_eq!(names(s.pods()), vec!["e"]);

        // Deleted: an error naming the file; list kept.
        std::fs::remove_file(&path).unwrap();
        let e = s.sync().unwrap_err().to_string();
        assert!(e.starts_with(&format!("reading {}", path.display())), "{e}");
        assert_eq!(names(s.pods()), vec!["e"]);
    }

    #[test]
    fn node_name_filter() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pods.yaml");
        let text = format!(
            "{}---\n{}---\n{}---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n",
            pod_yaml("a", "n1", "1"),
            pod_yaml("b", "n2", "1"),
            pod_yaml("c", "n2", "1").replace("  nodeName: n2\n", "")
        );
        write(&path, &text, 1);
        let mut s = FileSource::new(&path).with_node_name("n2");
        let Fetched::Pods(pods) = s.fetch().unwrap() else { panic!("first fetch reads") };
        assert_eq!(names(&pods), vec!["b", "c"], "bound here, and unbound");
        assert!(matches!(s.fetch().unwrap(), Fetched::Unchanged));
        assert_eq!(s.path(), path);
    }
}
