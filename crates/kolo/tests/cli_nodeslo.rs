//! `kolo nodeslo` as a user runs it, on `examples/noderesource/`.

use serde_json::Value;

mod common;
use common::{json, run_kolo as kolo};

const SNAPSHOT: &str = "examples/noderesource/cluster.yaml";
const CONFIG: &str = "examples/noderesource/slo-controller-config.yaml";

fn spec<'a>(list: &'a Value, node: &str) -> &'a Value {
    let items = list["items"].as_array().unwrap();
    let item = items.iter().find(|i| i["metadata"]["name"] == node).unwrap();
    assert_eq!(item["kind"], "NodeSLO");
    assert_eq!(item["apiVersion"], "slo.koordinator.sh/v1alpha1");
    &item["spec"]
}

#[test]
fn renders_cluster_and_node_strategies_over_defaults() {
    let list =
        json(&kolo(&["nodeslo", "--snapshot", SNAPSHOT, "--config", CONFIG, "-o", "json"], None));
    assert_eq!(list["items"].as_array().unwrap().len(), 5, "one NodeSLO per node");
    let a = spec(&list, "node-a");
    let t = &a["resourceUsedThresholdWithBE"];
    assert_eq!(
        (t["enable"].as_bool(), t["cpuSuppressThresholdPercent"].as_i64()),
        (Some(true), Some(60))
    );
    assert_eq!(t["memoryEvictThresholdPercent"], 70, "default under the cluster fields");
    assert_eq!(a["cpuBurstStrategy"]["policy"], "auto");
    assert_eq!(a["cpuBurstStrategy"]["cpuBurstPercent"], 1000);
    assert_eq!(a["resourceQOSStrategy"]["beClass"]["cpuQOS"]["groupIdentity"], -1);
    // node-e carries pool=no-colocation: its node strategy disables the thresholds.
    let e = spec(&list, "node-e");
    assert_eq!(e["resourceUsedThresholdWithBE"]["enable"], false);
    assert_eq!(e["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"], 60);
}

#[test]
fn yaml_output_is_a_list_and_node_filter_works() {
    let out =
        kolo(&["nodeslo", "--snapshot", SNAPSHOT, "--config", CONFIG, "--node", "node-b"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let list: Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(list["items"][0]["metadata"]["name"], "node-b");
}

#[test]
fn every_malformed_key_is_reported_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("cm.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slo-controller-config\n  namespace: koordinator-system\ndata:\n  resource-threshold-config: '{\"clusterStrategy\":{\"cpuSuppressThresholdPercent\":\"65\"}}'\n  cpu-burst-config: '{\"nodeStrategies\":[{\"policy\":\"always\"}]}'\n",
    )
    .unwrap();
    let out = kolo(&["nodeslo", "--snapshot", SNAPSHOT, "--config", bad.to_str().unwrap()], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "resource-threshold-config: $.clusterStrategy.cpuSuppressThresholdPercent: invalid type"
        ),
        "{err}"
    );
    assert!(
        err.contains("cpu-burst-config: $.nodeStrategies[0].policy: \"always\" is not one of"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing rendered from a bad config");
}

#[test]
fn defaults_without_a_configmap() {
    // The snapshot alone has no ConfigMap: every node gets the defaults.
    let list = json(&kolo(&["nodeslo", "--snapshot", SNAPSHOT, "-o", "json"], None));
    let a = spec(&list, "node-a");
    assert_eq!(a["resourceUsedThresholdWithBE"]["enable"], false);
    assert_eq!(a["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"], 65);
    assert_eq!(a["cpuBurstStrategy"]["policy"], "none");
    assert_eq!(a["systemStrategy"]["totalNetworkBandwidth"], "0");
}
