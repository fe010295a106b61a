//! Every CRD kind: a fixture shaped like a real Koordinator / scheduler-plugins
//! object deserializes, its fields read back as expected, and serializing it
//! again gives the input JSON (lossless round trip).
//!
//! Setting `KOLO_CRD_EXTRA_OBJECTS` to a directory of `*.json` / `*.yaml`
//! objects (e.g. `kubectl get -o json` output of objects read back from a real
//! API server) runs the round trip on those too.

use std::path::Path;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kolo_api::crd::{
    ClusterColocationProfile, Device, ElasticQuota, NodeMetric, NodeSLO, PodGroup, PodMigrationJob,
    Reservation, ResourceList,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Removes `creationTimestamp: null` from every `metadata` object below the
/// top level. Go writes it for embedded templates; k8s-openapi's `ObjectMeta`
/// has no way to keep a null there, so that one artifact is not preserved.
fn drop_null_creation_timestamps(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("creationTimestamp") == Some(&Value::Null) {
                map.remove("creationTimestamp");
            }
            map.values_mut().for_each(drop_null_creation_timestamps);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_creation_timestamps),
        _ => {}
    }
}

/// Deserializes `input` as `T`, serializes it back, and checks nothing was
/// lost or changed. Returns the typed object.
fn round_trip<T: DeserializeOwned + Serialize>(what: &str, input: &Value) -> T {
    let typed: T = serde_json::from_value(input.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let output = serde_json::to_value(&typed).expect("serializes");
    let mut expected = input.clone();
    drop_null_creation_timestamps(&mut expected);
    if output != expected {
        panic!(
            "{what}: round trip changed the object\n--- input\n{}\n--- output\n{}",
            serde_json::to_string_pretty(&expected).unwrap(),
            serde_json::to_string_pretty(&output).unwrap()
        );
    }
    typed
}

/// Loads a YAML fixture both directly into `T` and through JSON, checks the
/// two agree, and runs the round trip.
fn load<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(name: &str) -> T {
    let yaml = fixture(name);
    let direct: T = serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("{name}: {e}"));
    let value: Value = serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("{name}: {e}"));
    let typed = round_trip::<T>(name, &value);
    assert_eq!(direct, typed, "{name}: YAML and JSON paths disagree");
    typed
}

fn q(list: Option<&ResourceList>, name: &str) -> String {
    let list = list.expect("resource list present");
    list.get(name).map(|Quantity(s)| s.clone()).unwrap_or_else(|| panic!("no {name} in {list:?}"))
}

#[test]
fn all_fixtures_round_trip() {
    // (file, kind): every fixture, by the kind it must decode as.
    let table: &[(&str, &str)] = &[
        ("nodemetric-master-01.yaml", "NodeMetric"),
        ("nodeslo-node-1.yaml", "NodeSLO"),
        ("clustercolocationprofile-colocation-profile-example.yaml", "ClusterColocationProfile"),
        ("reservation-reservation-demo.yaml", "Reservation"),
        ("podmigrationjob-migrate-demo.yaml", "PodMigrationJob"),
        ("device-node-1.yaml", "Device"),
        ("elasticquota-team-a.yaml", "ElasticQuota"),
        ("podgroup-gang-a.yaml", "PodGroup"),
    ];
    for &(file, kind) in table {
        let value: Value = serde_saphyr::from_str(&fixture(file)).unwrap();
        assert_eq!(value["kind"], kind, "{file}");
        round_trip_by_kind(file, &value);
    }
}

fn round_trip_by_kind(what: &str, value: &Value) {
    match value["kind"].as_str() {
        Some("NodeMetric") => drop(round_trip::<NodeMetric>(what, value)),
        Some("NodeSLO") => drop(round_trip::<NodeSLO>(what, value)),
        Some("ClusterColocationProfile") => {
            drop(round_trip::<ClusterColocationProfile>(what, value))
        }
        Some("Reservation") => drop(round_trip::<Reservation>(what, value)),
        Some("PodMigrationJob") => drop(round_trip::<PodMigrationJob>(what, value)),
        Some("Device") => drop(round_trip::<Device>(what, value)),
        Some("ElasticQuota") => drop(round_trip::<ElasticQuota>(what, value)),
        Some("PodGroup") => drop(round_trip::<PodGroup>(what, value)),
        Some("List") => {
            for (i, item) in value["items"].as_array().into_iter().flatten().enumerate() {
                round_trip_by_kind(&format!("{what}[{i}]"), item);
            }
        }
        other => panic!("{what}: unexpected kind {other:?}"),
    }
}

#[test]
fn extra_objects_round_trip() {
    let Some(dir) = std::env::var_os("KOLO_CRD_EXTRA_OBJECTS") else {
        return;
    };
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("KOLO_CRD_EXTRA_OBJECTS is a directory") {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let value: Value = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => serde_json::from_str(&text).unwrap(),
            Some("yaml" | "yml") => serde_saphyr::from_str(&text).unwrap(),
            _ => continue,
        };
        round_trip_by_kind(&path.display().to_string(), &value);
        seen += 1;
    }
    assert!(seen > 0, "no objects in {dir:?}");
}

#[test]
fn node_slo_fields() {
    let slo: NodeSLO = load("nodeslo-node-1.yaml");
    assert_eq!(slo.metadata.name.as_deref(), Some("node-1"));
    let spec = &slo.spec;

    let t = spec.resource_used_threshold_with_be.as_ref().expect("resourceUsedThresholdWithBE");
    assert_eq!(t.enable, Some(true));
    assert_eq!(t.cpu_suppress_threshold_percent, Some(65));
    assert_eq!(t.cpu_suppress_policy.as_deref(), Some("cpuset"));
    assert_eq!(t.memory_evict_threshold_percent, Some(70));
    assert_eq!(t.memory_evict_lower_percent, Some(68));
    assert_eq!(t.cpu_evict_be_satisfaction_upper_percent, Some(80));
    assert_eq!(t.cpu_evict_be_satisfaction_lower_percent, Some(60));
    assert_eq!(t.cpu_evict_be_usage_threshold_percent, Some(90));
    assert_eq!(t.cpu_evict_policy.as_deref(), Some("evictByRealLimit"));
    assert_eq!(t.evict_enabled_priority_threshold, Some(5999));
    assert_eq!(t.allocatable_evict_priority_threshold, Some(5999));
    assert_eq!(t.memory_allocatable_evict_threshold_percent, Some(110));

    let qos = spec.resource_qos_strategy.as_ref().expect("resourceQOSStrategy");
    let policies = qos.policies.as_ref().unwrap();
    assert_eq!(policies.cpu_policy.as_deref(), Some("groupIdentity"));
    assert_eq!(policies.net_qos_policy.as_deref(), Some("tc"));
    // (class, groupIdentity, wmarkMinAdj, catRangeEndPercent)
    let classes = [
        ("lsr", qos.lsr_class.as_ref(), Some(2), Some(-25), Some(100)),
        ("ls", qos.ls_class.as_ref(), Some(2), Some(-25), Some(100)),
        ("be", qos.be_class.as_ref(), Some(-1), Some(50), Some(30)),
        ("system", qos.system_class.as_ref(), Some(0), None, None),
    ];
    for (name, class, group_identity, wmark_min_adj, cat_end) in classes {
        let class = class.unwrap_or_else(|| panic!("{name} class"));
        assert_eq!(class.cpu_qos.as_ref().and_then(|c| c.group_identity), group_identity, "{name}");
        assert_eq!(
            class.memory_qos.as_ref().and_then(|m| m.wmark_min_adj),
            wmark_min_adj,
            "{name}"
        );
        assert_eq!(
            class.resctrl_qos.as_ref().and_then(|r| r.cat_range_end_percent),
            cat_end,
            "{name}"
        );
    }
    let be = qos.be_class.as_ref().unwrap();
    assert_eq!(be.cpu_qos.as_ref().unwrap().sched_idle, Some(1));
    let net = be.network_qos.as_ref().unwrap();
    assert_eq!(net.ingress_request, Some(IntOrString::Int(10)));
    assert_eq!(net.egress_limit, Some(IntOrString::String("50M".into())));
    let blocks = be.blkio_qos.as_ref().unwrap().blocks.as_ref().unwrap();
    assert_eq!(blocks[0].block_type.as_deref(), Some("device"));
    assert_eq!(blocks[0].io_cfg.as_ref().unwrap().read_iops, Some(2048));
    assert_eq!(blocks[1].io_cfg, Some(Default::default()), "an empty ioCfg is kept");
    let root_io =
        qos.cgroup_root.as_ref().unwrap().blkio_qos.as_ref().unwrap().blocks.as_ref().unwrap()[0]
            .io_cfg
            .as_ref()
            .unwrap();
    assert_eq!(root_io.model_read_rand_iops, Some(168274));
    assert_eq!(root_io.enable_user_model, Some(true));

    let burst = spec.cpu_burst_strategy.as_ref().expect("cpuBurstStrategy");
    assert_eq!(burst.policy.as_deref(), Some("auto"));
    assert_eq!(burst.cpu_burst_percent, Some(1000));
    assert_eq!(burst.cfs_quota_burst_period_seconds, Some(-1));
    assert_eq!(burst.share_pool_threshold_percent, Some(50));

    let system = spec.system_strategy.as_ref().expect("systemStrategy");
    assert_eq!(system.total_network_bandwidth, Some(Quantity("10G".into())));
    assert_eq!(system.memcg_reap_background, Some(0));
    assert_eq!(system.sched_idle_saver_wmark, Some(5_000_000));
    assert_eq!(system.sched_features.as_ref().unwrap().get("ID_ABSOLUTE_EXPEL"), Some(&true));

    let extensions = spec.extensions.as_ref().expect("extensions");
    assert_eq!(extensions["vendor.example.com/knob"], 7);

    let app = &spec.host_applications.as_ref().unwrap()[0];
    assert_eq!(app.name.as_deref(), Some("nginx"));
    assert_eq!(app.qos.as_deref(), Some("LS"));
    assert_eq!(app.cgroup_path.as_ref().unwrap().base.as_deref(), Some("CgroupRoot"));
    assert!(slo.status.is_some());
}

#[test]
fn colocation_profile_fields() {
    let p: ClusterColocationProfile =
        load("clustercolocationprofile-colocation-profile-example.yaml");
    let spec = &p.spec;
    assert_eq!(spec.qos_class.as_deref(), Some("BE"));
    assert_eq!(spec.priority_class_name.as_deref(), Some("koord-batch"));
    assert_eq!(spec.koordinator_priority, Some(1000));
    assert_eq!(spec.probability, Some(IntOrString::String("50%".into())));
    assert_eq!(spec.scheduler_name.as_deref(), Some("koord-scheduler"));
    let ns = spec.namespace_selector.as_ref().unwrap().match_labels.as_ref().unwrap();
    assert_eq!(ns["koordinator.sh/enable-colocation"], "true");
    let exprs = spec.selector.as_ref().unwrap().match_expressions.as_ref().unwrap();
    assert_eq!(exprs[0].values.as_deref(), Some(&["spark".to_string(), "flink".to_string()][..]));
    assert_eq!(
        spec.label_keys_mapping.as_ref().unwrap()["app.example.com/tier"],
        "koordinator.sh/tier"
    );
    assert_eq!(spec.label_suffixes.as_ref().unwrap()["app.example.com/pool"], "-batch");
    let patch = spec.patch.as_ref().unwrap();
    assert_eq!(patch["spec"]["tolerations"][0]["key"], "koordinator.sh/batch");
}

#[test]
fn reservation_fields() {
    let r: Reservation = load("reservation-reservation-demo.yaml");
    let spec = &r.spec;
    assert_eq!(spec.ttl.as_deref(), Some("1h"));
    assert_eq!(spec.allocate_once, Some(true));
    assert_eq!(spec.allocate_policy.as_deref(), Some("Restricted"));
    assert_eq!(
        spec.expires.as_ref().map(|t| t.0.to_string()).as_deref(),
        Some("2025-05-22T10:00:00Z")
    );
    let owners = spec.owners.as_ref().unwrap();
    assert_eq!(owners.len(), 3);
    assert_eq!(owners[0].object.as_ref().unwrap().name.as_deref(), Some("pod-demo-0"));
    let controller = owners[1].controller.as_ref().unwrap();
    assert_eq!(
        (controller.kind.as_str(), controller.namespace.as_deref()),
        ("ReplicaSet", Some("default"))
    );
    assert_eq!(controller.controller, Some(true));
    assert!(owners[2].label_selector.is_some());
    let template = spec.template.as_ref().unwrap();
    let container = &template.spec.as_ref().unwrap().containers[0];
    let requests = container.resources.as_ref().unwrap().requests.as_ref();
    assert_eq!(q(requests, "cpu"), "2");
    assert_eq!(spec.taints.as_ref().unwrap()[0].effect, "NoSchedule");
    assert_eq!(spec.pre_allocation_policy.as_ref().unwrap().mode.as_deref(), Some("Cluster"));

    let status = r.status.as_ref().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Available"));
    assert_eq!(status.node_name.as_deref(), Some("node-1"));
    assert_eq!(q(status.allocatable.as_ref(), "memory"), "4Gi");
    assert_eq!(q(status.allocated.as_ref(), "cpu"), "1");
    let conditions = status.conditions.as_ref().unwrap();
    assert_eq!(conditions[1].condition_type.as_deref(), Some("Ready"));
    assert_eq!(status.current_owners.as_ref().unwrap()[0].name.as_deref(), Some("pod-demo-0"));
}

#[test]
fn pod_migration_job_fields() {
    let j: PodMigrationJob = load("podmigrationjob-migrate-demo.yaml");
    let spec = &j.spec;
    assert_eq!(spec.mode.as_deref(), Some("ReservationFirst"));
    assert_eq!(spec.ttl.as_deref(), Some("5m0s"));
    assert_eq!(spec.paused, Some(false));
    assert_eq!(spec.pod_ref.as_ref().unwrap().name.as_deref(), Some("nginx-7d9f8c6b5-abcde"));
    assert_eq!(spec.delete_options.as_ref().unwrap().grace_period_seconds, Some(30));
    let options = spec.reservation_options.as_ref().unwrap();
    assert_eq!(options.reservation_ref.as_ref().unwrap().kind.as_deref(), Some("Reservation"));
    let template = options.template.as_ref().unwrap();
    let rspec = template.spec.as_ref().unwrap();
    assert_eq!(rspec.ttl.as_deref(), Some("5m0s"));
    assert_eq!(
        rspec.owners.as_ref().unwrap()[0].controller.as_ref().unwrap().name,
        "nginx-7d9f8c6b5"
    );
    assert!(options.preemption_options.is_some());

    let status = j.status.as_ref().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Succeeded"));
    assert_eq!(status.status.as_deref(), Some("Complete"));
    assert_eq!(status.node_name.as_deref(), Some("node-2"));
    let conditions = status.conditions.as_ref().unwrap();
    assert_eq!(conditions[0].condition_type, "ReservationCreated");
    assert_eq!(conditions[0].last_probe_time, None, "null timestamps read as None");
    assert!(conditions[0].last_transition_time.is_some());
    assert_eq!(conditions[1].reason.as_deref(), Some("EvictComplete"));
    let preempted = &status.preempted_pods_reservations.as_ref().unwrap()[0];
    assert_eq!(preempted.name.as_deref(), Some("r-batch-0"));
    assert_eq!(preempted.pods_ref.as_ref().unwrap()[0].name.as_deref(), Some("batch-0-new"));

    // Like the reference, unset condition timestamps are written as null.
    let written = serde_json::to_value(&j).unwrap();
    assert_eq!(written["status"]["conditions"][0]["lastProbeTime"], Value::Null);
    assert!(written["status"]["conditions"][0].as_object().unwrap().contains_key("lastProbeTime"));
}

#[test]
fn device_fields() {
    let d: Device = load("device-node-1.yaml");
    let devices = d.spec.devices.as_ref().unwrap();
    assert_eq!(devices.len(), 3);
    // (index, type, minor, health, busID)
    let cases = [
        (0, "gpu", 0, true, "0000:08:00.0"),
        (1, "gpu", 1, false, "0000:0b:00.0"),
        (2, "rdma", 0, true, "0000:09:00.0"),
    ];
    for (i, ty, minor, health, bus) in cases {
        let dev = &devices[i];
        assert_eq!(dev.device_type.as_deref(), Some(ty), "device {i}");
        assert_eq!(dev.minor, Some(minor), "device {i}");
        assert_eq!(dev.health, health, "device {i}");
        assert_eq!(dev.topology.as_ref().unwrap().bus_id.as_deref(), Some(bus), "device {i}");
    }
    let gpu = &devices[0];
    assert_eq!(gpu.uuid.as_deref(), Some("GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"));
    assert_eq!(gpu.module_id, Some(1));
    assert_eq!(q(gpu.resources.as_ref(), "koordinator.sh/gpu-memory"), "80Gi");
    assert_eq!(gpu.topology.as_ref().unwrap().pcie_id, "pci0000:00");
    assert_eq!(gpu.conditions.as_ref().unwrap()[0].type_, "Healthy");
    let vfs = devices[2].vf_groups.as_ref().unwrap()[0].vfs.as_ref().unwrap();
    assert_eq!((vfs[1].minor, vfs[1].bus_id.as_deref()), (1, Some("0000:09:00.3")));
    let alloc = &d.status.as_ref().unwrap().allocations.as_ref().unwrap()[0];
    assert_eq!(alloc.device_type.as_deref(), Some("gpu"));
    assert_eq!(alloc.entries.as_ref().unwrap()[0].minors.as_deref(), Some(&[0][..]));
}

#[test]
fn elastic_quota_fields() {
    let eq: ElasticQuota = load("elasticquota-team-a.yaml");
    assert_eq!(eq.metadata.namespace.as_deref(), Some("koordinator-system"));
    assert_eq!(q(eq.spec.min.as_ref(), "cpu"), "10");
    assert_eq!(q(eq.spec.max.as_ref(), "memory"), "40Gi");
    assert_eq!(q(eq.status.as_ref().unwrap().used.as_ref(), "cpu"), "4500m");
    let labels = eq.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["quota.scheduling.koordinator.sh/parent"], "team-root");
}

#[test]
fn pod_group_fields() {
    let pg: PodGroup = load("podgroup-gang-a.yaml");
    assert_eq!(pg.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(pg.spec.min_member, Some(3));
    assert_eq!(pg.spec.schedule_timeout_seconds, Some(600));
    assert_eq!(q(pg.spec.min_resources.as_ref(), "memory"), "6Gi");
    let status = pg.status.as_ref().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!((status.scheduled, status.running, status.failed), (Some(3), Some(3), None));
    assert_eq!(
        status.schedule_start_time.as_ref().map(|t| t.0.to_string()).as_deref(),
        Some("2025-05-24T12:00:05Z")
    );
}

#[test]
fn minimal_objects() {
    // The smallest objects a client may send: only the required fields.
    let cases: &[(&str, Value)] = &[
        (
            "NodeMetric",
            serde_json::json!({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "n"}, "spec": {}}),
        ),
        (
            "NodeSLO",
            serde_json::json!({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": "n"}, "spec": {}}),
        ),
        (
            "Device",
            serde_json::json!({"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device", "metadata": {"name": "n"}, "spec": {"devices": [{"health": false}]}}),
        ),
        (
            "PodMigrationJob",
            serde_json::json!({"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob", "metadata": {"name": "j"}, "spec": {"podRef": {"name": "p", "namespace": "d"}}}),
        ),
        (
            "Reservation",
            serde_json::json!({"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation", "metadata": {"name": "r"}, "spec": {"template": {}, "owners": [{"object": {"name": "p"}}]}}),
        ),
        (
            "PodGroup",
            serde_json::json!({"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "d"}, "spec": {"minMember": 1}}),
        ),
        (
            "ElasticQuota",
            serde_json::json!({"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota", "metadata": {"name": "q", "namespace": "d"}, "spec": {}}),
        ),
        (
            "ClusterColocationProfile",
            serde_json::json!({"apiVersion": "config.koordinator.sh/v1alpha1", "kind": "ClusterColocationProfile", "metadata": {"name": "p"}, "spec": {}}),
        ),
    ];
    for (kind, value) in cases {
        assert_eq!(value["kind"], *kind);
        round_trip_by_kind(kind, value);
    }
}
