//! ImageLocality: prefers nodes that already have the pod's container
//! images, by their size and how widely they are spread (kube-scheduler's
//! plugin and formula).
//!
//! For each container and init container whose image a node reports in
//! `status.images[].names`, the node gets `sizeBytes × spread`, truncated,
//! where spread = nodes reporting that name / all nodes (an image on every
//! node says little about where to go). The sum, clamped to 23 MB ..
//! 1000 MB × the number of containers, maps linearly onto 0..=100.
//!
//! Image names are matched as kube-scheduler matches them: the pod's image
//! gets `:latest` when it names no tag or digest (`nginx` → `nginx:latest`,
//! `host:5000/app` → `host:5000/app:latest`); node names are taken as the
//! kubelet reports them. kube-scheduler does not expand `docker.io/library/`
//! either, so `nginx` does not match a node's `docker.io/library/nginx:latest`
//! (the kubelet usually reports both forms for images it pulled by the short
//! name). The size is the node's own `sizeBytes` for the name.
//!
//! The spread reads every node, so a node's score depends on other nodes'
//! objects, but only on their image lists: the plugin counts changes to
//! those (`Plugin::cross_node_epoch`), and the equivalence cache drops
//! every node's results only when that count moves — the common node
//! update (a heartbeat, a condition, allocatable) stays local to its node. A pod none of whose images any node reports is not scored (it
//! would score 0 everywhere).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, ExtensionPoints, MAX_NODE_SCORE,
    NodeId, NodeInfo, NodeVerdict, PerNode, Plugin, PodInfo, PreScore, PreScoreOutcome, Score,
    ScoreSink, score_each,
};
use crate::registry::PluginArgsError;

/// The plugin's registered name.
pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
/// Below this the images are as good as absent (kube-scheduler's 23 MB).
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container, above this more bytes do not score higher.
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// The pod's image as kube-scheduler matches it: `:latest` added when it
/// names no tag (no `:` after the last `/`) and no digest.
pub fn normalized_image_name(name: &str) -> String {
    let last_colon = name.rfind(':');
    let last_slash = name.rfind('/');
    if last_colon <= last_slash && !name.contains('@') {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

/// kube-scheduler's `scaledImageScore`: the size weighted by the share of
/// nodes that have the image.
pub fn scaled_image_score(size: i64, nodes_with_image: usize, total_nodes: usize) -> i64 {
    let spread = nodes_with_image as f64 / total_nodes as f64;
    (size as f64 * spread) as i64
}

/// kube-scheduler's `calculatePriority`: the summed scaled sizes, clamped
/// to 23 MB .. 1000 MB × containers, onto 0..=100.
pub fn image_score(sum: i64, containers: usize) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD * containers.max(1) as i64;
    let clamped = sum.clamp(MIN_THRESHOLD, max);
    MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

/// The images a node reports: (name, size) per name.
fn node_images(node: &Node) -> Vec<(Box<str>, i64)> {
    let images = node.status.as_ref().and_then(|s| s.images.as_ref());
    let mut out: Vec<(Box<str>, i64)> = images
        .into_iter()
        .flatten()
        .flat_map(|image| {
            let size = image.size_bytes.unwrap_or(0);
            image.names.iter().flatten().map(move |name| (name.as_str().into(), size))
        })
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// The images of the pod's init containers and containers, normalized.
fn pod_images(pod: &Pod) -> Vec<String> {
    let Some(spec) = pod.spec.as_ref() else { return Vec::new() };
    spec.init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .map(|c| normalized_image_name(c.image.as_deref().unwrap_or("")))
        .collect()
}

/// Which nodes report which image names.
#[derive(Debug, Default)]
struct Images {
    /// Per node: the names it reports and their sizes.
    per_node: PerNode<Vec<(Box<str>, i64)>>,
    /// Per name: the nodes reporting it, with their sizes.
    by_name: HashMap<Box<str>, Vec<(NodeId, i64)>>,
    /// How many nodes there are.
    nodes: usize,
    /// Bumped whenever any node's image list changes (or a node with
    /// images comes or goes): what cached scores of other nodes depend on.
    changes: u64,
}

impl Images {
    fn set_node(&mut self, id: NodeId, images: Vec<(Box<str>, i64)>) {
        if self.per_node.get(id).is_some_and(|old| *old == images) {
            return; // The common node update: images unchanged.
        }
        self.remove_node(id);
        self.changes += 1;
        for (name, size) in &images {
            self.by_name.entry(name.clone()).or_default().push((id, *size));
        }
        *self.per_node.get_or_insert_with(id, Vec::new) = images;
        self.nodes += 1;
    }

    fn remove_node(&mut self, id: NodeId) {
        let Some(old) = self.per_node.get_mut(id).map(std::mem::take) else { return };
        self.per_node.remove(id);
        self.nodes -= 1;
        self.changes += 1;
        for (name, _) in old {
            if let Some(nodes) = self.by_name.get_mut(&name) {
                nodes.retain(|&(n, _)| n != id);
                if nodes.is_empty() {
                    self.by_name.remove(&name);
                }
            }
        }
    }

    /// Per node id, the summed scaled sizes of the pod's images there;
    /// `None` when no node has any of them.
    fn sums(&self, images: &[String]) -> Option<Vec<i64>> {
        let mut sums: Vec<i64> = Vec::new();
        for image in images {
            let Some(nodes) = self.by_name.get(image.as_str()) else { continue };
            for &(id, size) in nodes {
                if sums.len() <= id.index() {
                    sums.resize(id.index() + 1, 0);
                }
                let scaled = scaled_image_score(size, nodes.len(), self.nodes);
                sums[id.index()] = sums[id.index()].saturating_add(scaled);
            }
        }
        (!sums.is_empty()).then_some(sums)
    }
}

/// The pod's score per node id, computed at PreScore.
struct NodeScores(Vec<i64>);

/// See the module documentation.
#[derive(Debug, Default)]
pub struct ImageLocality {
    images: RwLock<Images>,
}

impl ImageLocality {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(ImageLocality::default()))
    }

    fn read(&self) -> RwLockReadGuard<'_, Images> {
        self.images.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The pod's score on every node (by id), or `None` when it scores 0
    /// everywhere.
    fn scores(&self, pod: &PodInfo) -> Option<NodeScores> {
        let images = pod_images(pod.pod());
        let sums = self.read().sums(&images)?;
        Some(NodeScores(sums.into_iter().map(|sum| image_score(sum, images.len())).collect()))
    }
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).pre_score().score().event_handler().into()
    }
    fn supports_equivalence(&self) -> bool {
        // Reads the pod's images (in the signature) and the node objects.
        true
    }
    fn node_updates_are_local(&self) -> bool {
        // Of other nodes, only their image lists: `cross_node_epoch`.
        true
    }
    fn cross_node_epoch(&self) -> u64 {
        self.read().changes
    }
}

impl PreScore for ImageLocality {
    fn pre_score(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreScoreOutcome {
        match self.scores(pod) {
            Some(scores) => {
                state.write(scores);
                PreScoreOutcome::Proceed
            }
            None => PreScoreOutcome::Skip,
        }
    }
}

impl Score for ImageLocality {
    fn score(&self, _: &CycleContext, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let mut owned = None;
        let scores = state.read_or(&mut owned, || self.scores(pod).unwrap_or(NodeScores(vec![])));
        scores.0.get(node.id().index()).copied().unwrap_or(0)
    }

    fn score_nodes(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        verdicts: &[NodeVerdict],
        out: &mut ScoreSink<'_>,
    ) {
        let mut owned = None;
        let scores = state.read_or(&mut owned, || self.scores(pod).unwrap_or(NodeScores(vec![])));
        score_each(nodes, verdicts, out, |node| {
            scores.0.get(node.id().index()).copied().unwrap_or(0)
        });
    }
}

impl ClusterEventHandler for ImageLocality {
    fn on_event(&self, event: &ClusterEvent<'_>) {
        match *event {
            ClusterEvent::NodeAdded(node) | ClusterEvent::NodeUpdated(node) => {
                let images = node_images(node.node());
                let mut state = self.images.write().unwrap_or_else(PoisonError::into_inner);
                state.set_node(node.id(), images);
            }
            ClusterEvent::NodeRemoved { id, .. } => {
                self.images.write().unwrap_or_else(PoisonError::into_inner).remove_node(id);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ctx, node_from_yaml, pod_from_yaml};

    fn node(id: u32, images: &str) -> NodeInfo {
        let n = node_from_yaml(&format!(
            "metadata: {{name: n{id}}}\nstatus: {{allocatable: {{cpu: '4'}}, images: [{images}]}}\n"
        ));
        let view = kolo_core::node::NodeView::from_node(&n).unwrap();
        NodeInfo::new(NodeId(id), Arc::new(n), view)
    }

    fn pod(images: &[&str], init: &[&str]) -> PodInfo {
        let list = |images: &[&str]| {
            images
                .iter()
                .map(|i| format!("{{name: c, image: '{i}'}}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        PodInfo::new(pod_from_yaml(&format!(
            "metadata: {{name: p}}\nspec: {{containers: [{}], initContainers: [{}]}}\n",
            list(images),
            list(init)
        )))
        .unwrap()
    }

    /// Scores of `pod` on `nodes` (all added), `None` when PreScore skips.
    fn scores(nodes: &[NodeInfo], pod: &PodInfo) -> Option<Vec<i64>> {
        let plugin = ImageLocality::default();
        for n in nodes {
            plugin.on_event(&ClusterEvent::NodeAdded(n));
        }
        let mut state = CycleState::new();
        if plugin.pre_score(&ctx(), &mut state, pod) == PreScoreOutcome::Skip {
            return None;
        }
        Some(nodes.iter().map(|n| plugin.score(&ctx(), &state, pod, n)).collect())
    }

    #[test]
    fn image_names_are_normalized_as_kube_does() {
        let cases = [
            ("nginx", "nginx:latest"),
            ("nginx:1.25", "nginx:1.25"),
            ("gcr.io/40", "gcr.io/40:latest"),
            ("host:5000/app", "host:5000/app:latest"),
            ("host:5000/app:v1", "host:5000/app:v1"),
            ("nginx@sha256:abc", "nginx@sha256:abc"),
            ("docker.io/library/nginx", "docker.io/library/nginx:latest"),
        ];
        for (name, want) in cases {
            assert_eq!(normalized_image_name(name), want, "{name}");
        }
    }

    /// kube-scheduler's `TestImageLocalityPriority` (image_locality_test.go)
    /// nodes: node1 has gcr.io/40 (40 MB) and gcr.io/300 (300 MB), node2
    /// gcr.io/250 (250 MB) and gcr.io/10 (10 MB), node3 gcr.io/2000 (2000 MB).
    fn kube_nodes() -> Vec<NodeInfo> {
        let mb = |n: i64| n * MB;
        vec![
            node(
                1,
                &format!(
                    "{{names: ['gcr.io/40:latest', 'gcr.io/40:v1'], sizeBytes: {}}}, {{names: ['gcr.io/300:latest', 'gcr.io/300:v1'], sizeBytes: {}}}",
                    mb(40),
                    mb(300)
                ),
            ),
            node(
                2,
                &format!(
                    "{{names: ['gcr.io/250:latest'], sizeBytes: {}}}, {{names: ['gcr.io/10:latest', 'gcr.io/10:v1'], sizeBytes: {}}}",
                    mb(250),
                    mb(10)
                ),
            ),
            node(3, &format!("{{names: ['gcr.io/2000:latest'], sizeBytes: {}}}", mb(2000))),
        ]
    }

    #[test]
    fn score_table() {
        let nodes = kube_nodes();
        // Each image is on one node of three: spread 1/3.
        // "two images spread on two nodes, prefer the larger image one":
        // node1: 40 MB / 3 = 13.3 MB < 23 MB → 0; node2: 250 MB / 3 =
        // 83.3 MB (10 MB is not the pod's) → 100 × (83.3 − 23) / (2000 −
        // 23) = 3; node3: 0.
        let got = scores(&nodes, &pod(&["gcr.io/40", "gcr.io/250"], &[]));
        assert_eq!(got, Some(vec![0, 3, 0]));
        // "two images on one node, prefer this node": node1 has 40 + 300
        // MB / 3 = 113.3 MB → 100 × 90.3 / 1977 = 4.
        let got = scores(&nodes, &pod(&["gcr.io/40", "gcr.io/300"], &[]));
        assert_eq!(got, Some(vec![4, 0, 0]));
        // "if exceed limit, use limit": node3's 2000 MB / 3 = 666.7 MB,
        // three containers → max 3000 MB: 100 × 643.7 / 2977 = 21; node1's
        // gcr.io/40:v1 and node2's gcr.io/10 stay under 23 MB → 0.
        let got = scores(&nodes, &pod(&["gcr.io/2000", "gcr.io/10", "gcr.io/40:v1"], &[]));
        assert_eq!(got, Some(vec![0, 0, 21]));
        // Init containers count, and as containers: node1 has
        // gcr.io/300:v1 → 100 MB scaled; two containers, max 2000 MB:
        // 100 × 77 / 1977 = 3.
        let got = scores(&nodes, &pod(&["gcr.io/none"], &["gcr.io/300:v1"]));
        assert_eq!(got, Some(vec![3, 0, 0]));
        // No node has the images: not scored.
        assert_eq!(scores(&nodes, &pod(&["gcr.io/none"], &[])), None);
    }

    #[test]
    fn spread_counts_nodes_with_the_image() {
        let mb = |n: i64| n * MB;
        let with = |id| node(id, &format!("{{names: ['app:v1'], sizeBytes: {}}}", mb(600)));
        // On both of two nodes: 600 MB × 1 → 100 × 577 / 977 = 59.
        assert_eq!(scores(&[with(0), with(1)], &pod(&["app:v1"], &[])), Some(vec![59, 59]));
        // On one of two: 300 MB → 100 × 277 / 977 = 28; the other 0.
        assert_eq!(scores(&[with(0), node(1, "")], &pod(&["app:v1"], &[])), Some(vec![28, 0]));
    }

    #[test]
    fn node_events_keep_the_counts() {
        let plugin = ImageLocality::default();
        let a = node(0, "{names: ['x:latest'], sizeBytes: 1000}");
        let b = node(1, "{names: ['x:latest'], sizeBytes: 1000}");
        plugin.on_event(&ClusterEvent::NodeAdded(&a));
        plugin.on_event(&ClusterEvent::NodeAdded(&b));
        plugin.on_event(&ClusterEvent::NodeUpdated(&b));
        {
            let images = plugin.read();
            assert_eq!(images.nodes, 2);
            assert_eq!(images.by_name["x:latest"].len(), 2);
        }
        plugin.on_event(&ClusterEvent::NodeUpdated(&node(1, "")));
        plugin.on_event(&ClusterEvent::NodeRemoved { id: NodeId(0), name: "n0" });
        let images = plugin.read();
        assert_eq!(images.nodes, 1);
        assert!(images.by_name.is_empty());
    }

    proptest::proptest! {
        /// The score stays in 0..=100 and grows with the summed size.
        #[test]
        fn image_score_is_monotone(a in 0i64..5_000 * MB, b in 0i64..5_000 * MB, n in 1usize..5) {
            let (lo, hi) = (a.min(b), a.max(b));
            proptest::prop_assert!((0..=100).contains(&image_score(lo, n)));
            proptest::prop_assert!(image_score(lo, n) <= image_score(hi, n));
        }
    }
}
