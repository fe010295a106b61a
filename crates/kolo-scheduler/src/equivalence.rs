//! The equivalence cache: reusing a node's Filter and Score results from
//! one cycle to the next when nothing they depend on changed.
//!
//! Replicas of one workload are alike: same requests, tolerations,
//! affinity, QoS and priority. For such a pod, a node's verdict and scores
//! are the same as for the previous replica unless the node changed — a
//! pod was added or removed there (the previous replica, usually), its
//! NodeMetric was updated, the node object changed — or time made them
//! stale (a NodeMetric expiring). So after the first replica the scheduler
//! re-evaluates only the changed nodes and takes the best of all, instead
//! of running every plugin on every node again. Decisions are identical to
//! evaluating every node (a property test runs both side by side).
//!
//! What counts as "alike" is the [pod signature](pod_signature): a hash of
//! everything about a pod that the in-tree plugins read. A plugin opts in
//! with [`Plugin::supports_equivalence`](crate::framework::Plugin) only if
//! its Filter and Score read nothing else of the pod, and of the cluster
//! only the node's [`NodeInfo`](crate::framework::NodeInfo), its own state
//! for that node (changed only through events about that node), and the
//! time through [`Plugin::valid_until`](crate::framework::Plugin).
//! Changes to the set of nodes invalidate everything (node positions
//! change). A change to a node object makes only that node stale when every
//! plugin of the profile says its results for one node do not read other
//! nodes' objects
//! ([`Plugin::node_updates_are_local`](crate::framework::Plugin)); otherwise
//! it too invalidates everything.
//!
//! Infeasible pods are cached too: a pod no node can take is retried
//! whenever a cluster change might help it, and in a full cluster most of
//! those retries find the same verdicts on all but the few nodes that
//! changed. The entry then also keeps the failure summary, which stays
//! valid as long as no node had to be evaluated again.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use kolo_core::clock::Timestamp;

use crate::framework::{NodeVerdict, PodInfo};
use crate::search::Failure;
use kolo_core::HasMeta;

/// How many pod shapes the cache keeps results for at once: enough for a
/// few workloads whose replicas are interleaved in the queue, and for the
/// shapes of the pods waiting in a full cluster, which are retried in
/// turn (an entry costs a few tens of bytes per node).
pub(crate) const CAPACITY: usize = 8;

/// The per-node results of a Filter + Score pass, by node position.
#[derive(Debug, Default)]
pub(crate) struct NodeResults {
    /// The verdict.
    pub verdicts: Vec<NodeVerdict>,
    /// Per score plugin, the raw score (node-major).
    pub scores: Vec<i64>,
    /// The weighted total.
    pub totals: Vec<i64>,
}

impl NodeResults {
    /// Sizes the buffers for `nodes` nodes and `columns` score plugins,
    /// keeping their contents (a pass writes every slot it reads).
    pub fn resize(&mut self, nodes: usize, columns: usize) {
        self.verdicts.resize(nodes, None);
        self.scores.resize(nodes * columns, 0);
        self.totals.resize(nodes, 0);
    }
}

/// When an entry's results were computed, per node: what tells which of
/// them are still good.
#[derive(Debug, Default)]
pub(crate) struct Freshness {
    /// The cache's node epoch at the time.
    epoch: u64,
    /// Per node position: its generation (empty: nothing reusable).
    generations: Vec<u64>,
    /// Per node position: when its results go stale by time alone.
    valid_until: Vec<Option<Timestamp>>,
    /// The earliest of `valid_until`: before it, no node needs a time
    /// check at all.
    earliest_expiry: Option<Timestamp>,
}

impl Freshness {
    /// The positions of the nodes whose results must be computed again, or
    /// `None` when nothing is reusable (never computed, or the node set
    /// changed since).
    pub fn stale(&self, epoch: u64, generations: &[u64], now: Timestamp) -> Option<Vec<usize>> {
        if self.epoch != epoch || self.generations.len() != generations.len() {
            return None;
        }
        let check_time = self.earliest_expiry.is_some_and(|t| now >= t);
        let stale = (0..generations.len())
            .filter(|&i| {
                generations[i] != self.generations[i]
                    || check_time && self.valid_until[i].is_some_and(|t| now >= t)
            })
            .collect();
        Some(stale)
    }

    /// Records that the nodes at `positions` were computed again.
    pub fn renew(
        &mut self,
        positions: &[usize],
        generations: &[u64],
        valid_until: impl Fn(usize) -> Option<Timestamp>,
    ) {
        for &i in positions {
            self.generations[i] = generations[i];
            self.valid_until[i] = valid_until(i);
        }
        if !positions.is_empty() {
            self.earliest_expiry = self.valid_until.iter().flatten().min().copied();
        }
    }

    /// Records that every node was computed.
    pub fn renew_all(
        &mut self,
        epoch: u64,
        generations: &[u64],
        valid_until: impl Fn(usize) -> Option<Timestamp>,
    ) {
        self.epoch = epoch;
        self.generations.clear();
        self.generations.extend_from_slice(generations);
        self.valid_until.clear();
        self.valid_until.extend((0..generations.len()).map(valid_until));
        self.earliest_expiry = self.valid_until.iter().flatten().min().copied();
    }

    /// Marks nothing reusable.
    pub fn forget(&mut self) {
        self.generations.clear();
    }
}

/// The results for one pod signature.
#[derive(Debug, Default)]
pub(crate) struct CacheEntry {
    /// The pod signature the results are for.
    pub signature: u64,
    /// Which results are still good.
    pub freshness: Freshness,
    /// The results.
    pub results: NodeResults,
    /// When no node was feasible: the failure summary and what may wake
    /// the pod, as computed from `results` (`None` once any node's results
    /// are computed again).
    pub failure: Option<Arc<Failure>>,
    last_used: u64,
}

/// Results for the last few pod signatures, least recently used evicted.
#[derive(Debug, Default)]
pub(crate) struct EquivalenceCache {
    entries: Vec<CacheEntry>,
    clock: u64,
}

impl EquivalenceCache {
    /// Forgets everything.
    pub fn invalidate(&mut self) {
        self.entries.clear();
    }

    /// The entry for `signature`: its own if cached (its results may be
    /// reusable), else a fresh or evicted one set to `signature` with
    /// nothing reusable.
    pub fn entry(&mut self, signature: u64) -> &mut CacheEntry {
        self.clock += 1;
        let index = match self.entries.iter().position(|e| e.signature == signature) {
            Some(i) => i,
            None if self.entries.len() < CAPACITY => {
                self.entries.push(CacheEntry::default());
                self.entries.len() - 1
            }
            // Full: the least recently used entry (there is one, the
            // capacity is not 0).
            None => {
                let lru = self.entries.iter().enumerate().min_by_key(|(_, e)| e.last_used);
                lru.map_or(0, |(i, _)| i)
            }
        };
        let entry = &mut self.entries[index];
        if entry.signature != signature {
            entry.signature = signature;
            entry.freshness.forget();
            entry.failure = None;
        }
        entry.last_used = self.clock;
        entry
    }
}

/// Writes into a hasher, so small parts of a pod can be hashed through
/// their JSON form without allocating.
struct HashWriter<'a>(&'a mut DefaultHasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The pod signature: a hash of what any in-tree plugin reads of a pod —
/// requests and limits (and the spreading stand-ins), QoS and priority,
/// labels and annotations, owner kinds, and the spec's tolerations, node
/// selector, affinity, overhead, topology spread constraints, `nodeName`
/// (NodeName), container ports and `hostNetwork` (NodePorts) and the
/// images of init containers and containers (ImageLocality) — plus the
/// profile. Names and UIDs are left out, so replicas of a workload share a
/// signature.
pub(crate) fn pod_signature(profile: usize, pod: &PodInfo) -> u64 {
    // SipHash with fixed keys: the same pod hashes the same in every run.
    let mut h = DefaultHasher::new();
    profile.hash(&mut h);
    let view = pod.view();
    view.scheduler_name().hash(&mut h);
    view.requests().hash(&mut h);
    view.limits().hash(&mut h);
    pod.non_zero_requests().hash(&mut h);
    view.qos().hash(&mut h);
    view.kube_qos().hash(&mut h);
    view.priority_class().hash(&mut h);
    view.priority().hash(&mut h);
    view.labels().hash(&mut h);
    view.annotations().hash(&mut h);
    let meta = &pod.pod().metadata;
    for owner in meta.owner_references.iter().flatten() {
        owner.kind.hash(&mut h);
    }
    if let Some(spec) = pod.pod().spec.as_ref() {
        let mut w = HashWriter(&mut h);
        // Serializing these small parts cannot fail.
        let _ = serde_json::to_writer(&mut w, &spec.tolerations);
        let _ = serde_json::to_writer(&mut w, &spec.node_selector);
        let _ = serde_json::to_writer(&mut w, &spec.affinity);
        let _ = serde_json::to_writer(&mut w, &spec.overhead);
        let _ = serde_json::to_writer(&mut w, &spec.topology_spread_constraints);
        spec.node_name.hash(&mut h);
        spec.host_network.hash(&mut h);
        for c in spec.init_containers.iter().flatten().chain(&spec.containers) {
            c.image.hash(&mut h);
            for port in c.ports.iter().flatten() {
                (port.container_port, port.host_port, &port.host_ip, &port.protocol).hash(&mut h);
            }
        }
        // Where init containers end and containers begin.
        spec.containers.len().hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod_from_yaml;

    fn sig(yaml: &str) -> u64 {
        pod_signature(0, &PodInfo::new(pod_from_yaml(yaml)).unwrap())
    }

    #[test]
    fn replicas_share_a_signature_and_differences_show() {
        let base = "metadata: {name: a, uid: '1', labels: {app: web}}\nspec: {containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}";
        let replica = "metadata: {name: b, uid: '2', labels: {app: web}}\nspec: {containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}";
        assert_eq!(sig(base), sig(replica));
        let different = [
            "metadata: {name: a, labels: {app: web}}\nspec: {containers: [{name: c, resources: {requests: {cpu: '2'}}}]}",
            "metadata: {name: a, labels: {app: db}}\nspec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}",
            "metadata: {name: a, labels: {app: web}, annotations: {x: y}}\nspec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}",
            "metadata: {name: a, labels: {app: web}}\nspec: {tolerations: [{operator: Exists}], containers: [{name: c, resources: {requests: {cpu: '1'}}}]}",
            "metadata: {name: a, labels: {app: web}}\nspec: {nodeSelector: {z: a}, containers: [{name: c, resources: {requests: {cpu: '1'}}}]}",
            "metadata: {name: a, labels: {app: web}, ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: d, uid: u}]}\nspec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}",
            // Same total, split differently: the spreading stand-ins differ.
            "metadata: {name: a, labels: {app: web}}\nspec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}, {name: d}]}",
            // What ImageLocality, NodePorts and NodeName read.
            "metadata: {name: a, uid: '1', labels: {app: web}}\nspec: {containers: [{name: c, image: y, resources: {requests: {cpu: '1'}}}]}",
            "metadata: {name: a, uid: '1', labels: {app: web}}\nspec: {containers: [{name: c, image: x, ports: [{containerPort: 80, hostPort: 80}], resources: {requests: {cpu: '1'}}}]}",
            "metadata: {name: a, uid: '1', labels: {app: web}}\nspec: {hostNetwork: true, containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}",
            "metadata: {name: a, uid: '1', labels: {app: web}}\nspec: {nodeName: n, containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}",
        ];
        for other in different {
            assert_ne!(sig(base), sig(other), "{other}");
        }
        let p = PodInfo::new(pod_from_yaml(base)).unwrap();
        assert_ne!(pod_signature(0, &p), pod_signature(1, &p), "profiles differ");
    }
}
