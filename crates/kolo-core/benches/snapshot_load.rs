//! How long loading a cluster dump takes: 5,000 nodes and 50,000 pods, as
//! `kubectl get nodes,pods -A -o yaml` (one `kind: List` document) and as
//! `-o json`.
//!
//! Run: `cargo bench -p kolo-core --bench snapshot_load`

use std::fmt::Write;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_main};
use kolo_core::snapshot::Snapshot;

const NODES: usize = 5_000;
const PODS: usize = 50_000;

/// A node as kubectl prints it (labels, taints, capacity, allocatable incl.
/// batch resources, conditions), minus managedFields and images.
fn node_item(out: &mut String, i: usize) {
    write!(
        out,
        r#"- apiVersion: v1
  kind: Node
  metadata:
    creationTimestamp: "2026-01-01T00:00:00Z"
    labels:
      kubernetes.io/hostname: node-{i}
      kubernetes.io/os: linux
      node.kubernetes.io/instance-type: c6.8xlarge
      topology.kubernetes.io/zone: zone-{zone}
    name: node-{i}
    resourceVersion: "{rv}"
    uid: 0d1c2b3a-{i:04x}-4e5f-8a9b-0c1d2e3f4a5b
  spec:
    podCIDR: 10.{a}.{b}.0/24
    taints:
    - effect: NoSchedule
      key: dedicated
      value: colocation
  status:
    allocatable:
      cpu: 31800m
      ephemeral-storage: "95551679124"
      kubernetes.io/batch-cpu: "12000"
      kubernetes.io/batch-memory: "40000000000"
      memory: 127Gi
      pods: "110"
    capacity:
      cpu: "32"
      ephemeral-storage: 100Gi
      memory: 128Gi
      pods: "110"
    conditions:
    - lastHeartbeatTime: "2026-01-01T00:00:00Z"
      lastTransitionTime: "2026-01-01T00:00:00Z"
      message: kubelet is posting ready status
      reason: KubeletReady
      status: "True"
      type: Ready
"#,
        zone = i % 3,
        rv = 1000 + i,
        a = i / 256,
        b = i % 256,
    )
    .unwrap();
}

/// A Deployment's pod as kubectl prints it, with a third of the pods BE
/// batch pods.
fn pod_item(out: &mut String, i: usize) {
    let batch = i.is_multiple_of(3);
    let (qos, priority_class, resources) = if batch {
        (
            "BE",
            "koord-batch",
            "        limits:\n          kubernetes.io/batch-cpu: \"2000\"\n          kubernetes.io/batch-memory: 4Gi\n        requests:\n          kubernetes.io/batch-cpu: \"1000\"\n          kubernetes.io/batch-memory: 2Gi\n",
        )
    } else {
        (
            "LS",
            "koord-prod",
            "        limits:\n          cpu: \"2\"\n          memory: 4Gi\n        requests:\n          cpu: 500m\n          memory: 1Gi\n",
        )
    };
    write!(
        out,
        r#"- apiVersion: v1
  kind: Pod
  metadata:
    creationTimestamp: "2026-01-01T00:00:00Z"
    labels:
      app: app-{app}
      koordinator.sh/priority-class: {priority_class}
      koordinator.sh/qosClass: {qos}
      pod-template-hash: 5d8f7c
    name: app-{app}-5d8f7c-{i}
    namespace: team-{ns}
    ownerReferences:
    - apiVersion: apps/v1
      blockOwnerDeletion: true
      controller: true
      kind: ReplicaSet
      name: app-{app}-5d8f7c
      uid: 6a1b2c3d-{app:04x}-4e5f-8a9b-0c1d2e3f4a5b
    resourceVersion: "{rv}"
    uid: 7b2c3d4e-{i:05x}-4f60-9a0b-1c2d3e4f5a6b
  spec:
    containers:
    - image: registry.example.com/app-{app}:v1.2.3
      imagePullPolicy: IfNotPresent
      name: main
      ports:
      - containerPort: 8080
        protocol: TCP
      resources:
{resources}      terminationMessagePath: /dev/termination-log
      terminationMessagePolicy: File
    dnsPolicy: ClusterFirst
    nodeName: node-{node}
    priority: {priority}
    restartPolicy: Always
    schedulerName: kolo-scheduler
    terminationGracePeriodSeconds: 30
    tolerations:
    - effect: NoExecute
      key: node.kubernetes.io/not-ready
      operator: Exists
      tolerationSeconds: 300
  status:
    hostIP: 10.0.{a}.{b}
    phase: Running
    podIP: 10.{a}.{b}.{c}
    qosClass: Burstable
    startTime: "2026-01-01T00:00:00Z"
"#,
        app = i % 500,
        ns = i % 20,
        rv = 100_000 + i,
        node = i % NODES,
        priority = if batch { 5500 } else { 9500 },
        a = (i / 256) % 256,
        b = i % 256,
        c = i % 200 + 2,
    )
    .unwrap();
}

fn kubectl_yaml() -> String {
    let mut out = String::with_capacity(80 << 20);
    out.push_str("apiVersion: v1\nitems:\n");
    (0..NODES).for_each(|i| node_item(&mut out, i));
    (0..PODS).for_each(|i| pod_item(&mut out, i));
    out.push_str("kind: List\nmetadata:\n  resourceVersion: \"\"\n");
    out
}

fn load(c: &mut Criterion) {
    let yaml = kubectl_yaml();
    let list: serde_json::Value =
        serde_saphyr::from_str_with_options(&yaml, serde_saphyr::options! { budget: None })
            .unwrap();
    let json = serde_json::to_string(&list).unwrap();
    drop(list);
    let check = Snapshot::parse(&yaml, "bench").unwrap();
    assert_eq!((check.nodes.len(), check.pods.len()), (NODES, PODS));
    eprintln!(
        "input: {NODES} nodes + {PODS} pods; YAML {:.1} MiB, JSON {:.1} MiB",
        yaml.len() as f64 / 1048576.0,
        json.len() as f64 / 1048576.0
    );

    let mut group = c.benchmark_group("snapshot_load_5k_nodes_50k_pods");
    group.sample_size(10).measurement_time(Duration::from_secs(30));
    group.bench_function("kubectl_yaml_list", |b| {
        b.iter_with_large_drop(|| Snapshot::parse(black_box(&yaml), "bench").unwrap())
    });
    group.bench_function("kubectl_json_list", |b| {
        b.iter_with_large_drop(|| Snapshot::parse(black_box(&json), "bench").unwrap())
    });
    group.finish();

    // One pod item as the loader sees it after cutting the list (dedented):
    // the block-YAML fast path against serde-saphyr.
    let mut item = String::new();
    pod_item(&mut item, 7);
    let item: String = item.lines().map(|l| format!("{}\n", l.get(2..).unwrap_or(""))).collect();
    assert!(
        kolo_core::snapshot::parse_block_yaml(&item).is_some(),
        "fast path refused the bench pod"
    );
    let mut group = c.benchmark_group("yaml_one_pod");
    group.bench_function("block_yaml", |b| {
        b.iter(|| kolo_core::snapshot::parse_block_yaml(black_box(&item)))
    });
    group.bench_function("serde_saphyr", |b| {
        b.iter(|| serde_saphyr::from_str::<serde_json::Value>(black_box(&item)).unwrap())
    });
    group.finish();
}

/// `criterion_group!` generates an undocumented `pub fn`.
mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::load);
}
criterion_main!(group::benches);
