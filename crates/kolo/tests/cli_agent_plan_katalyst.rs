//! `kolo agent plan` with the Katalyst node policy on
//! `examples/agent/katalyst-node-state.yaml`.
//!
//! By hand: 2 sockets × 8 CPUs = 2 NUMA nodes (0-7, 8-15), SMT pairs;
//! reserved 2 CPUs → reserve pool 0-1. `prod/db` (dedicated, numa_binding,
//! 4 CPUs) goes to node 0 (node 1's 8 CPUs still hold web's 3): whole cores
//! 2-5; node 0's leftovers 6-7 go to reclaim. `prod/web` (shared, request 3,
//! using 2 cores): canonical 2 × 1.25 = 2.5, + ReservedForAllocate 4/2 = 2
//! → 4.5 → 5 → 6 (even, SMT) within [max(4, 3) = 4, 8 − 2 = 6] → share = 6
//! CPUs of node 1, whole cores: 8-13; reclaim = 6-7, 14-15. db's region:
//! 1 × 1.25 + 2 = 3.25 → 4 in [4, 4]: no overlap. Headroom: every CPU busy
//! 6/16 = 0.375, batch uses 1.5 → 0.75 per node: node 0 (bound) 2 − 0.75 +
//! 0.75 = 2 → 2000m, node 1 the same → 4000m. Memory: 64 GiB − 5 GiB −
//! (6 GiB × 1.1 → 7086696039 + 3 GiB × 1.1 → 3543348020) = 52720723557.
//! CNR status: node allocatable = capacity = 4000m → `4k` reclaimed_millicpu,
//! `52720723557` reclaimed_memory; socket 0 → NUMA 0 (CPUs 0-7, 8 CPUs,
//! 64Gi / 2 = `32Gi`, 2000m → `2k`), socket 1 → NUMA 1 (8-15, the same).

mod common;
use common::{json, run_kolo};

const STATE: &str = "examples/agent/katalyst-node-state.yaml";

#[test]
fn prints_the_pools_their_sizes_and_the_reclaimed_resources() {
    // The NodeSLO's extensions.nodePolicy chooses katalyst.
    let report = json(&run_kolo(&["agent", "plan", "--state", STATE, "-o", "json"], None));
    assert_eq!(report["nodePolicy"], "katalyst");
    let pools: Vec<(String, String, u64)> = report["pools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap().to_string();
            (s("name"), s("cpus"), p["size"].as_u64().unwrap())
        })
        .collect();
    let want = [
        ("reserve", "0-1", 2),
        ("dedicated/prod/db", "2-5", 4),
        ("share/share", "8-13", 6),
        ("reclaim", "6-7,14-15", 4),
    ];
    assert_eq!(pools.len(), want.len(), "{pools:?}");
    for ((name, cpus, size), (wn, wc, ws)) in pools.iter().zip(want) {
        assert_eq!((name.as_str(), cpus.as_str(), *size), (wn, wc, ws));
    }
    let share = &report["regions"][0];
    assert_eq!(share["name"], "share-share");
    assert_eq!(share["requirement"], 2.5);
    assert_eq!(share["regulated"]["withReserve"], 4.5);
    assert_eq!(share["regulated"]["size"], 6);
    assert_eq!(report["podCpusets"]["jobs/batch"], "6-7,14-15");
    assert_eq!(report["podCpusets"]["prod/web"], "8-13");
    // Memory: db on its node 0; web and batch on the unbound node 1.
    assert_eq!(report["podMems"]["prod/db"], "0");
    assert_eq!(report["podMems"]["jobs/batch"], "1");
    assert_eq!(report["cpuHeadroom"]["millicpu"], 4000);
    assert_eq!(report["memoryHeadroom"]["bytes"], 52_720_723_557u64);

    // The CNR status the node would write.
    let cnr = &report["cnrStatus"];
    let reclaimed = serde_json::json!({
        "resource.katalyst.kubewharf.io/reclaimed_millicpu": "4k",
        "resource.katalyst.kubewharf.io/reclaimed_memory": "52720723557",
    });
    assert_eq!(cnr["resources"]["allocatable"], reclaimed);
    assert_eq!(cnr["resources"]["capacity"], reclaimed);
    assert_eq!(cnr["topologyPolicy"], "None");
    let sockets = cnr["topologyZone"].as_array().unwrap();
    assert_eq!(sockets.len(), 2, "{cnr}");
    for (i, (socket, cpus)) in sockets.iter().zip(["0-7", "8-15"]).enumerate() {
        assert_eq!(
            (socket["type"].as_str(), socket["name"].as_str()),
            (Some("Socket"), Some(&*i.to_string()))
        );
        let numa = &socket["children"].as_array().unwrap()[..];
        assert_eq!(numa.len(), 1, "{socket}");
        assert_eq!(
            (numa[0]["type"].as_str(), numa[0]["name"].as_str()),
            (Some("Numa"), Some(&*i.to_string()))
        );
        let want = serde_json::json!({
            "cpu": "8",
            "memory": "32Gi",
            "resource.katalyst.kubewharf.io/reclaimed_millicpu": "2k",
        });
        assert_eq!(numa[0]["resources"]["capacity"], want);
        assert_eq!(numa[0]["resources"]["allocatable"], want);
        assert_eq!(
            numa[0]["attributes"],
            serde_json::json!([{"name": "cpu_lists", "value": cpus}])
        );
    }
    // Left empty: no conditions, no spec-side data in a status.
    assert!(cnr.get("conditions").is_none(), "{cnr}");
}

#[test]
fn the_flag_overrides_the_node_slo_and_text_says_why() {
    let out = run_kolo(&["agent", "plan", "--state", STATE], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("node policy katalyst\n"), "{text}");
    assert!(
        text.contains("canonical requirement 2.50 + reservedForAllocate 2.00 = 4.50 → 6"),
        "{text}"
    );
    assert!(text.contains("reclaimed_millicpu = 4000"), "{text}");
    // --node-policy koordinator: the strategies' plan instead.
    let out = run_kolo(&["agent", "plan", "--state", STATE, "--node-policy", "koordinator"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8(out.stdout).unwrap().contains("node policy katalyst"));
    // A bad value is refused by name.
    let out = run_kolo(&["agent", "plan", "--state", STATE, "--node-policy", "gold"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown node policy \"gold\""));
}
