//! `NodeState::kubelet_down`: set while the kubelet fails the pod sync and
//! for `KUBELET_SETTLE` after it answers again; a failing kubelet is asked
//! every tick rather than every `POD_SYNC_INTERVAL`.

use std::collections::VecDeque;

use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::cgroup::CgroupDriver;
use crate::cgroup::tree_tests::Tree;
use crate::pods::{Fetched, PodSourceError};

/// A kubelet-like source: each fetch takes the next scripted answer
/// (`true`: one pod, `false`: zero pods, which the agent treats as a
/// failure) and counts the fetches.
struct ScriptedKubelet {
    answers: VecDeque<bool>,
    fetches: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

impl PodSource for ScriptedKubelet {
    fn name(&self) -> &str {
        "scripted kubelet"
    }
    fn is_kubelet(&self) -> bool {
        true
    }
    fn fetch(&mut self) -> Result<Fetched, PodSourceError> {
        self.fetches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "6f1e2b9c-3d4a-4b5c-8d7e-000000000001"},
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Running", "qosClass": "BestEffort"}
        }))
        .unwrap();
        let up = self.answers.pop_front().unwrap_or(true);
        Ok(Fetched::Pods(if up { vec![pod] } else { Vec::new() }))
    }
}

#[test]
fn kubelet_down_while_failing_and_for_the_settle_time_after() {
    let tree = Tree::v1(CgroupDriver::Cgroupfs);
    let mut config = AgentConfig::new("n1");
    config.cgroups = LayoutConfig::new(tree.root());
    config.proc_root = tree.root().join("no-proc");
    config.sys_root = tree.root().join("no-sys");
    config.allocatable = Some(ResourceVector::cpu_memory(2_000, 8 << 30));
    let fetches = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    // Up at 0 s; down at the 10 s and 11 s syncs; up from 12 s on.
    let source = ScriptedKubelet {
        answers: VecDeque::from([true, false, false, true]),
        fetches: fetches.clone(),
    };
    let mut agent = Agent::new(config, source).unwrap();
    let at = |s: i64| Timestamp::from_second(1_700_000_000 + s).unwrap();
    // (second, fetches after the tick, kubelet_down)
    let table = [
        (0, 1, false),
        (5, 1, false),  // between syncs: not asked
        (10, 2, true),  // the 10 s sync fails
        (11, 3, true),  // failing: asked again the next tick, fails
        (12, 4, true),  // asked again, answers: back, but settling
        (13, 4, true),  // healthy again: back to every 10 s
        (41, 5, true),  // 29 s after it came back
        (42, 5, false), // 30 s: settled
    ];
    for (second, want_fetches, want_down) in table {
        agent.tick(at(second));
        assert_eq!(
            fetches.load(std::sync::atomic::Ordering::Relaxed),
            want_fetches,
            "fetches after the tick at {second} s"
        );
        assert_eq!(agent.node_state(at(second)).kubelet_down, want_down, "at {second} s");
    }
}
