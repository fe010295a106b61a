//! The node state refreshed in place between rounds is the node state built
//! from scratch, whatever happened to the pods in between.

use std::collections::VecDeque;

use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::cgroup::CgroupDriver;
use crate::cgroup::tree_tests::Tree;
use crate::pods::{Fetched, PodSourceError};

fn uid(n: u32) -> String {
    format!("6f1e2b9c-3d4a-4b5c-8d7e-0000000000{n:02}")
}

fn pod(n: u32, be: bool) -> Pod {
    let labels = if be {
        serde_json::json!({"koordinator.sh/qosClass": "BE"})
    } else {
        serde_json::json!({"koordinator.sh/qosClass": "LS"})
    };
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("p{n}"), "namespace": "default", "uid": uid(n), "labels": labels},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {
            "phase": "Running",
            "qosClass": "Burstable",
            "containerStatuses": [{"name": "c", "containerID": format!("containerd://c{n}")}]
        }
    }))
    .unwrap()
}

/// Pod `n`'s and its container's cgroup files: CPU seconds and anon MiB.
fn set(tree: &Tree, n: u32, cpu_s: f64, mib: u64) {
    let pod = format!("kubepods/burstable/pod{}", uid(n));
    for dir in [pod.clone(), format!("{pod}/c{n}")] {
        let stat = format!(
            "total_inactive_anon 0\ntotal_active_anon {}\ntotal_inactive_file 0\ntotal_active_file 0\ntotal_unevictable 0\n",
            mib << 20
        );
        tree.file_v1("cpuacct", &dir, "cpuacct.usage", &format!("{}\n", (cpu_s * 1e9) as u64));
        tree.file_v1("memory", &dir, "memory.stat", &stat);
    }
}

#[test]
fn refreshed_node_state_is_the_state_built_from_scratch() {
    let tree = Tree::v1(CgroupDriver::Cgroupfs);
    let mut config = AgentConfig::new("n1");
    config.cgroups = LayoutConfig::new(tree.root());
    config.proc_root = tree.root().join("no-proc");
    config.sys_root = tree.root().join("no-sys");
    config.allocatable = Some(ResourceVector::cpu_memory(4_000, 8 << 30));
    config.sync_pods_every_tick = true;
    // One sync per tick: the pod list of round 1, unchanged until round 4
    // (pod 2 leaves, pod 3 arrives), then unchanged.
    let script = VecDeque::from([
        Some(vec![pod(1, false), pod(2, true)]),
        None,
        None,
        Some(vec![pod(1, false), pod(3, true)]),
    ]);
    let mut agent = Agent::new(config, ScriptedOpt(script)).unwrap();
    let mut cache = NodeStateCache::default();
    let at = |s: i64| Timestamp::from_second(1_700_000_000 + s).unwrap();
    for n in 1..=3 {
        set(&tree, n, 1.0, 10);
    }
    // (round, what changes before it)
    for round in 1..=5i64 {
        match round {
            1 => {}
            2 => (1..=3).for_each(|n| set(&tree, n, 1.5, 20 + u64::from(n))),
            // Pod 2's CPU counter is unreadable: it has no sample this
            // round, so its usage must not be the last round's.
            3 => {
                set(&tree, 1, 2.0, 30);
                let dir = format!("kubepods/burstable/pod{}", uid(2));
                tree.file_v1("cpuacct", &dir, "cpuacct.usage", "garbage\n");
            }
            _ => (1..=3).for_each(|n| set(&tree, n, 1.0 + round as f64, 40 + round as u64)),
        }
        let now = at(round);
        agent.tick(now);
        let refreshed = agent.refresh_node_state(&mut cache, now).clone();
        let fresh = agent.node_state(now);
        assert_eq!(refreshed, fresh, "round {round}");
        let usage: Vec<(String, bool)> =
            fresh.pods.iter().map(|p| (p.pod.id.name.clone(), p.usage.is_some())).collect();
        let want: Vec<(String, bool)> = match round {
            1 => vec![("p1".into(), false), ("p2".into(), false)],
            2 => vec![("p1".into(), true), ("p2".into(), true)],
            3 => vec![("p1".into(), true), ("p2".into(), false)],
            // Pod 3 is new: a baseline first.
            4 => vec![("p1".into(), true), ("p3".into(), false)],
            _ => vec![("p1".into(), true), ("p3".into(), true)],
        };
        assert_eq!(usage, want, "round {round}: which pods have usage");
    }
}

/// A source answering each sync with the next scripted list (`None`:
/// unchanged), then unchanged.
struct ScriptedOpt(VecDeque<Option<Vec<Pod>>>);

impl PodSource for ScriptedOpt {
    fn name(&self) -> &str {
        "scripted"
    }
    fn fetch(&mut self) -> Result<Fetched, PodSourceError> {
        Ok(match self.0.pop_front().flatten() {
            Some(pods) => Fetched::Pods(pods),
            None => Fetched::Unchanged,
        })
    }
}
