//! NodePorts: a pod that asks for host ports runs only on a node where no
//! pod already holds one of them (kube-scheduler's plugin).
//!
//! A port is held by (host IP, protocol, port). Two ports conflict when
//! protocol and port match and the host IPs overlap: equal, or either one
//! is the wildcard `0.0.0.0` (an empty `hostIP` is the wildcard, an empty
//! protocol TCP — the API server's defaults). With `hostNetwork: true`
//! every `containerPort` is also a host port (the API server defaults
//! `hostPort` to it). Like kube-scheduler's `getContainerPorts`, only
//! `spec.containers` count.
//!
//! The ports used on each node are kept from cluster events (upsert by pod
//! key; pods assumed at Reserve count), and only for pods that hold any, so
//! the common pod without host ports costs nothing: PreFilter skips it.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use k8s_openapi::api::core::v1::Pod;

use crate::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, EventKinds, ExtensionPoints,
    Filter, NodeInfo, NodeVerdict, PerNode, Plugin, PodInfo, PreFilter, PreFilterOutcome,
    Rejection, Verdict, filter_each,
};
use crate::registry::PluginArgsError;

/// The plugin's registered name.
pub const NAME: &str = "NodePorts";

/// kube-scheduler's reason.
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The wildcard host IP.
const ANY_IP: &str = "0.0.0.0";

/// One host port: (host IP, protocol, port), with the API's defaults
/// applied (`0.0.0.0`, `TCP`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// The host IP, `0.0.0.0` for any.
    pub ip: Box<str>,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: Box<str>,
    /// The port number.
    pub port: i32,
}

impl HostPort {
    /// Whether the two cannot both be bound on one node.
    pub fn conflicts(&self, other: &HostPort) -> bool {
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip || &*self.ip == ANY_IP || &*other.ip == ANY_IP)
    }
}

/// The host ports a pod's containers ask for (empty for most pods).
pub fn host_ports(pod: &Pod) -> Vec<HostPort> {
    let Some(spec) = pod.spec.as_ref() else { return Vec::new() };
    let host_network = spec.host_network == Some(true);
    let mut ports = Vec::new();
    for port in spec.containers.iter().flat_map(|c| c.ports.iter().flatten()) {
        let number = match port.host_port {
            Some(p) if p > 0 => p,
            // The API server's defaulting: with the host network, the
            // container port is the host port.
            _ if host_network && port.container_port > 0 => port.container_port,
            _ => continue,
        };
        let ip = match port.host_ip.as_deref() {
            None | Some("") => ANY_IP,
            Some(ip) => ip,
        };
        let protocol = match port.protocol.as_deref() {
            None | Some("") => "TCP",
            Some(p) => p,
        };
        ports.push(HostPort { ip: ip.into(), protocol: protocol.into(), port: number });
    }
    ports
}

/// The host ports held on one node, per pod holding any.
#[derive(Debug, Default)]
struct UsedPorts {
    pods: Vec<(Box<str>, Vec<HostPort>)>,
}

impl UsedPorts {
    fn conflicts(&self, wanted: &[HostPort]) -> bool {
        self.pods.iter().flat_map(|(_, held)| held).any(|h| wanted.iter().any(|w| w.conflicts(h)))
    }

    fn remove(&mut self, key: &str) {
        self.pods.retain(|(k, _)| &**k != key);
    }
}

/// The incoming pod's host ports, read once per cycle.
struct WantedPorts(Vec<HostPort>);

/// See the module documentation.
#[derive(Debug, Default)]
pub struct NodePorts {
    /// Per node: the ports its pods hold (no slot: none).
    nodes: RwLock<PerNode<UsedPorts>>,
}

impl NodePorts {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(NodePorts::default()))
    }

    fn read(&self) -> RwLockReadGuard<'_, PerNode<UsedPorts>> {
        self.nodes.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn check(nodes: &PerNode<UsedPorts>, wanted: &[HostPort], node: &NodeInfo) -> Verdict {
        match nodes.get(node.id()) {
            Some(used) if used.conflicts(wanted) => Err(Rejection::unschedulable(REASON)),
            _ => Ok(()),
        }
    }
}

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        let points = ExtensionPoints::of(self).pre_filter().filter();
        points.event_handler().node_scoped_hints().into()
    }
    fn events_to_register(&self) -> EventKinds {
        // A port frees up when its pod goes; a new node has all ports free.
        EventKinds::POD_DELETE | EventKinds::NODE_ADD
    }
    fn supports_equivalence(&self) -> bool {
        // Reads the pod's ports (in the signature) and the node's pods only.
        true
    }
    fn node_updates_are_local(&self) -> bool {
        true
    }
}

impl PreFilter for NodePorts {
    fn pre_filter(
        &self,
        _: &CycleContext,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> PreFilterOutcome {
        let wanted = host_ports(pod.pod());
        if wanted.is_empty() {
            return PreFilterOutcome::Skip;
        }
        state.write(WantedPorts(wanted));
        PreFilterOutcome::Proceed
    }
}

impl Filter for NodePorts {
    fn filter(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Verdict {
        let mut owned = None;
        let wanted = state.read_or(&mut owned, || WantedPorts(host_ports(pod.pod())));
        Self::check(&self.read(), &wanted.0, node)
    }

    fn filter_nodes(
        &self,
        _: &CycleContext,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        plugin: u16,
        out: &mut [NodeVerdict],
    ) {
        let mut owned = None;
        let wanted = &state.read_or(&mut owned, || WantedPorts(host_ports(pod.pod()))).0;
        if wanted.is_empty() {
            return;
        }
        let used = self.read();
        filter_each(nodes, plugin, out, |node| Self::check(&used, wanted, node));
    }
}

impl ClusterEventHandler for NodePorts {
    fn on_event(&self, event: &ClusterEvent<'_>) {
        match *event {
            ClusterEvent::PodAdded { pod, node, .. } => {
                let held = host_ports(pod.pod());
                let mut nodes = self.nodes.write().unwrap_or_else(PoisonError::into_inner);
                if held.is_empty() {
                    // An update may have dropped its ports.
                    if let Some(used) = nodes.get_mut(node.id()) {
                        used.remove(pod.key());
                    }
                    return;
                }
                let used = nodes.get_or_insert_with(node.id(), UsedPorts::default);
                used.remove(pod.key());
                used.pods.push((pod.key().into(), held));
            }
            ClusterEvent::PodRemoved { pod, node } => {
                let mut nodes = self.nodes.write().unwrap_or_else(PoisonError::into_inner);
                if let Some(used) = nodes.get_mut(node) {
                    used.remove(pod.key());
                }
            }
            ClusterEvent::NodeRemoved { id, .. } => {
                self.nodes.write().unwrap_or_else(PoisonError::into_inner).remove(id);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::NodeId;
    use crate::testing::{ctx, node, pod_from_yaml};
    use kolo_core::clock::Timestamp;

    /// A pod whose one container has these `ports` (YAML flow items).
    fn pod(name: &str, ports: &str, host_network: bool) -> PodInfo {
        PodInfo::new(pod_from_yaml(&format!(
            "metadata: {{name: {name}, namespace: d}}\nspec: {{hostNetwork: {host_network}, containers: [{{name: c, ports: [{ports}]}}]}}\n"
        )))
        .unwrap()
    }

    fn node_info(id: u32) -> NodeInfo {
        let n = node("n", &[("cpu", "4")]);
        let view = kolo_core::node::NodeView::from_node(&n).unwrap();
        NodeInfo::new(NodeId(id), Arc::new(n), view)
    }

    fn add(plugin: &NodePorts, pod: &PodInfo, node: &NodeInfo) {
        let at = Timestamp::UNIX_EPOCH;
        plugin.on_event(&ClusterEvent::PodAdded { pod, node, assumed: true, at });
    }

    /// Runs PreFilter and Filter; `None` when PreFilter skips the pod.
    fn run(plugin: &NodePorts, pod: &PodInfo, node: &NodeInfo) -> Option<Verdict> {
        let mut state = CycleState::new();
        match plugin.pre_filter(&ctx(), &mut state, pod) {
            PreFilterOutcome::Skip => return None,
            PreFilterOutcome::Proceed => {}
            other => panic!("{other:?}"),
        }
        let verdict = plugin.filter(&ctx(), &state, pod, node);
        let mut out = [None];
        plugin.filter_nodes(&ctx(), &state, pod, std::slice::from_ref(node), 3, &mut out);
        assert_eq!(out[0].clone().map(|r| r.rejection), verdict.clone().err(), "batch agrees");
        Some(verdict)
    }

    #[test]
    fn host_ports_apply_the_api_defaults() {
        let p = pod(
            "p",
            "{containerPort: 80}, {containerPort: 81, hostPort: 8081, hostIP: 10.0.0.1, protocol: UDP}, {containerPort: 82, hostPort: 8082}",
            false,
        );
        let want = [
            HostPort { ip: "10.0.0.1".into(), protocol: "UDP".into(), port: 8081 },
            HostPort { ip: ANY_IP.into(), protocol: "TCP".into(), port: 8082 },
        ];
        assert_eq!(host_ports(p.pod()), want);
        // Host network: every container port is a host port.
        let p = pod("p", "{containerPort: 80}", true);
        assert_eq!(host_ports(p.pod())[0].port, 80);
    }

    /// After kube-scheduler's `TestNodePorts` cases (node_ports_test.go), as
    /// (incoming pod's ports, ports held on the node, fits).
    #[test]
    fn filter_table() {
        let cases = [
            ("nothing running", "{containerPort: 1, hostPort: 8080}", "", true),
            (
                "other port",
                "{containerPort: 1, hostPort: 8080, hostIP: 127.0.0.1, protocol: UDP}",
                "{containerPort: 1, hostPort: 9090, hostIP: 127.0.0.1, protocol: UDP}",
                true,
            ),
            (
                "same udp port",
                "{containerPort: 1, hostPort: 8080, hostIP: 127.0.0.1, protocol: UDP}",
                "{containerPort: 1, hostPort: 8080, hostIP: 127.0.0.1, protocol: UDP}",
                false,
            ),
            (
                "same tcp port",
                "{containerPort: 1, hostPort: 8080, hostIP: 127.0.0.1, protocol: TCP}",
                "{containerPort: 1, hostPort: 8080, hostIP: 127.0.0.1, protocol: TCP}",
                false,
            ),
            (
                "different host ip",
                "{containerPort: 1, hostPort: 8080, hostIP: 127.0.0.1, protocol: TCP}",
                "{containerPort: 1, hostPort: 8080, hostIP: 127.0.0.2, protocol: TCP}",
                true,
            ),
            (
                "different protocol",
                "{containerPort: 1, hostPort: 8080, hostIP: 127.0.0.1, protocol: UDP}",
                "{containerPort: 1, hostPort: 8080, hostIP: 127.0.0.1, protocol: TCP}",
                true,
            ),
            (
                "second udp port conflict",
                "{containerPort: 1, hostPort: 8000, hostIP: 127.0.0.1, protocol: TCP}, {containerPort: 2, hostPort: 8080, hostIP: 127.0.0.1, protocol: UDP}",
                "{containerPort: 1, hostPort: 8080, hostIP: 127.0.0.1, protocol: UDP}",
                false,
            ),
            (
                "first tcp port conflict",
                "{containerPort: 1, hostPort: 8001, hostIP: 127.0.0.1, protocol: TCP}, {containerPort: 2, hostPort: 8080, hostIP: 127.0.0.1, protocol: UDP}",
                "{containerPort: 1, hostPort: 8001, hostIP: 127.0.0.1, protocol: TCP}, {containerPort: 2, hostPort: 8081, hostIP: 127.0.0.1, protocol: UDP}",
                false,
            ),
            (
                "wildcard wanted, specific held",
                "{containerPort: 1, hostPort: 8001, hostIP: 0.0.0.0, protocol: TCP}",
                "{containerPort: 1, hostPort: 8001, hostIP: 127.0.0.1, protocol: TCP}",
                false,
            ),
            (
                "specific wanted, wildcard held",
                "{containerPort: 1, hostPort: 8001, hostIP: 10.0.10.10, protocol: TCP}, {containerPort: 2, hostPort: 8001, hostIP: 127.0.0.1, protocol: TCP}",
                "{containerPort: 1, hostPort: 8001, hostIP: 0.0.0.0, protocol: TCP}",
                false,
            ),
            (
                "specific wanted, wildcard held on another protocol",
                "{containerPort: 1, hostPort: 8001, hostIP: 10.0.10.10, protocol: TCP}",
                "{containerPort: 1, hostPort: 8001, hostIP: 0.0.0.0, protocol: UDP}",
                true,
            ),
            (
                "empty host ip is the wildcard",
                "{containerPort: 1, hostPort: 8001, hostIP: 10.0.10.10}",
                "{containerPort: 1, hostPort: 8001}",
                false,
            ),
        ];
        for (name, wanted, held, fits) in cases {
            let plugin = NodePorts::default();
            let node = node_info(0);
            if !held.is_empty() {
                add(&plugin, &pod("held", held, false), &node);
            }
            let got = run(&plugin, &pod("p", wanted, false), &node).expect("has ports");
            let want = if fits { Ok(()) } else { Err(Rejection::unschedulable(REASON)) };
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn a_pod_without_host_ports_is_skipped() {
        let plugin = NodePorts::default();
        assert_eq!(run(&plugin, &pod("p", "{containerPort: 80}", false), &node_info(0)), None);
    }

    #[test]
    fn ports_follow_pod_events_per_node() {
        let plugin = NodePorts::default();
        let (a, b) = (node_info(0), node_info(1));
        let holder = pod("holder", "{containerPort: 80, hostPort: 80}", false);
        let wants = pod("p", "{containerPort: 8, hostPort: 80}", false);
        add(&plugin, &holder, &a);
        // Reported twice (assumed, then bound): still one holder.
        add(&plugin, &holder, &a);
        assert!(run(&plugin, &wants, &a).unwrap().is_err());
        assert_eq!(run(&plugin, &wants, &b), Some(Ok(())), "only node a is taken");
        plugin.on_event(&ClusterEvent::PodRemoved { pod: &holder, node: a.id() });
        assert_eq!(run(&plugin, &wants, &a), Some(Ok(())), "freed");
        // A host-network pod holds its container ports.
        add(&plugin, &pod("hn", "{containerPort: 80}", true), &b);
        assert!(run(&plugin, &wants, &b).unwrap().is_err());
        plugin.on_event(&ClusterEvent::NodeRemoved { id: b.id(), name: "n" });
        assert_eq!(run(&plugin, &wants, &b), Some(Ok(())));
    }
}
