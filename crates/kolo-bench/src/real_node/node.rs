//! Which real node to run on: named on the command line, or read from a
//! `scripts/cluster` directory (`DIR/kubeconfig`, `DIR/node.env`).

use std::path::{Path, PathBuf};

use crate::BoxError;

/// Real-node options of `kolo bench interference`; without any, it runs
/// on hand-built cgroups.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct NodeArgs {
    /// Run on the node of a cluster started by `scripts/cluster start
    /// DIR`: reads `DIR/kubeconfig` and `DIR/node.env`.
    #[arg(long, value_name = "DIR", conflicts_with = "kubeconfig")]
    pub cluster: Option<PathBuf>,
    /// Run on a real node of this cluster (with `--node-name`,
    /// `--kubelet` and `--kubelet-cgroup-root`).
    #[arg(long, value_name = "FILE", requires_all = ["node_name", "kubelet", "kubelet_cgroup_root"])]
    pub kubeconfig: Option<PathBuf>,
    /// The node's name (its pods are bound to it directly).
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    pub node_name: Option<String>,
    /// The node's kubelet (`HOST:PORT`), for `kolo agent cluster`.
    #[arg(long, value_name = "HOST:PORT", requires = "kubeconfig")]
    pub kubelet: Option<String>,
    /// The kubelet's `--cgroup-root` (`kubepods` lives under it in every
    /// v1 hierarchy; cgroupfs driver).
    #[arg(long, value_name = "DIR", requires = "kubeconfig")]
    pub kubelet_cgroup_root: Option<String>,
}

/// The node the benchmark runs on.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub kubeconfig: PathBuf,
    pub name: String,
    pub kubelet: String,
    pub cgroup_root: String,
}

impl NodeArgs {
    /// The node asked for, `None` for the hand-built mode.
    pub(crate) fn node(&self) -> Result<Option<Node>, BoxError> {
        if let Some(dir) = &self.cluster {
            return read_cluster_dir(dir).map(Some);
        }
        match (&self.kubeconfig, &self.node_name, &self.kubelet, &self.kubelet_cgroup_root) {
            (Some(k), Some(n), Some(l), Some(r)) => Ok(Some(Node {
                kubeconfig: k.clone(),
                name: n.clone(),
                kubelet: l.clone(),
                cgroup_root: r.clone(),
            })),
            _ => Ok(None),
        }
    }
}

/// The node `scripts/cluster start DIR` describes.
fn read_cluster_dir(dir: &Path) -> Result<Node, BoxError> {
    let env_path = dir.join("node.env");
    let text = std::fs::read_to_string(&env_path)
        .map_err(|e| format!("{}: {e} (is it a scripts/cluster directory?)", env_path.display()))?;
    let var = |name: &str| {
        text.lines()
            .filter_map(|l| l.trim().split_once('='))
            .find(|(k, _)| k.trim() == name)
            .map(|(_, v)| v.trim().trim_matches('"').to_string())
            .ok_or_else(|| -> BoxError { format!("{}: no {name}", env_path.display()).into() })
    };
    Ok(Node {
        kubeconfig: dir.join("kubeconfig"),
        name: var("KOLO_TEST_NODE_NAME")?,
        kubelet: var("KOLO_TEST_NODE_KUBELET")?,
        cgroup_root: var("KOLO_TEST_NODE_CGROUP_ROOT")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_node_of_a_cluster_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("node.env"),
            "KOLO_TEST_NODE_NAME=vm\nKOLO_TEST_NODE_KUBELET=127.0.0.1:30281\nKOLO_TEST_NODE_CGROUP_ROOT=/kolo-ab12\n",
        )
        .unwrap();
        let args = NodeArgs { cluster: Some(dir.path().into()), ..NodeArgs::default() };
        let node = args.node().unwrap().unwrap();
        assert_eq!(node.kubeconfig, dir.path().join("kubeconfig"));
        assert_eq!((node.name.as_str(), node.kubelet.as_str()), ("vm", "127.0.0.1:30281"));
        assert_eq!(node.cgroup_root, "/kolo-ab12");
        std::fs::write(dir.path().join("node.env"), "KOLO_TEST_NODE_NAME=vm\n").unwrap();
        assert!(args.node().unwrap_err().to_string().contains("KOLO_TEST_NODE_KUBELET"));
        assert!(NodeArgs::default().node().unwrap().is_none());
    }
}
