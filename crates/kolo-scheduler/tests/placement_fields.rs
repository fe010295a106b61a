//! No PodSpec field that affects placement is ignored in silence: every
//! field of k8s-openapi's `PodSpec` (v1_33) is classified here as not
//! placement-related, honoured (by which plugin, checked by which test), or
//! refused by PlacementFieldGuard; a pod using each refused field is
//! scheduled and must fail with a reason naming the field.
//!
//! The list is checked against the type two ways: `every_field` is a
//! struct literal without `..Default::default()`, so a field added to
//! `PodSpec` stops this file from compiling; and its JSON keys must equal
//! the classified names.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{Outcome, Scheduler};

/// How kolo-scheduler treats a PodSpec field.
#[derive(Debug)]
enum Class {
    /// Does not affect where the pod may run (kube-scheduler does not read
    /// it either); why.
    NotPlacement(&'static str),
    /// Honoured: by whom, and the test that checks the behaviour.
    Honoured(&'static str, &'static str),
    /// Partly honoured, partly refused (the refused parts are in
    /// [`REFUSED`]).
    Partly(&'static str, &'static str),
    /// Refused: the pod is unschedulable with a reason naming the field
    /// (cases in [`REFUSED`]).
    Refused,
}

use Class::*;

/// Every `PodSpec` field, by JSON name.
const FIELDS: &[(&str, Class)] = &[
    ("activeDeadlineSeconds", NotPlacement("a runtime deadline, enforced by the kubelet")),
    (
        "affinity",
        Honoured(
            "nodeAffinity: NodeAffinity; podAffinity / podAntiAffinity: InterPodAffinity (tests/inter_pod_affinity.rs)",
            "plugins::node_affinity::tests::filter_table, preferred_terms_score_by_weight_then_normalize",
        ),
    ),
    ("automountServiceAccountToken", NotPlacement("a kubelet mount")),
    (
        "containers",
        Partly(
            "resources: NodeResourcesFit, NodeResourcesBalancedAllocation; ports: NodePorts; image: ImageLocality; resources.claims: refused",
            "plugins::node_resources_fit::tests::filter_table, plugins::balanced_allocation::tests::score_table, host_ports_conflict_through_the_scheduler, plugins::image_locality::tests::score_table",
        ),
    ),
    ("dnsConfig", NotPlacement("pod DNS, set up by the kubelet")),
    ("dnsPolicy", NotPlacement("pod DNS, set up by the kubelet")),
    ("enableServiceLinks", NotPlacement("environment variables")),
    (
        "ephemeralContainers",
        NotPlacement("added to running pods only; kube-scheduler counts no resources for them"),
    ),
    ("hostAliases", NotPlacement("/etc/hosts entries")),
    ("hostIPC", NotPlacement("a namespace choice on whatever node")),
    (
        "hostNetwork",
        Honoured(
            "NodePorts (container ports become host ports)",
            "plugins::node_ports::tests::host_ports_apply_the_api_defaults, ports_follow_pod_events_per_node",
        ),
    ),
    ("hostPID", NotPlacement("a namespace choice on whatever node")),
    ("hostUsers", NotPlacement("user namespaces; kube-scheduler does not filter on node support")),
    ("hostname", NotPlacement("the pod's hostname")),
    ("imagePullSecrets", NotPlacement("credentials for the kubelet")),
    (
        "initContainers",
        Honoured(
            "NodeResourcesFit (max of init containers, sidecars summed: PodView), ImageLocality",
            "kolo-core pod::tests::init_container_larger_than_sum, sidecars_add_to_sum_and_to_later_init_containers; plugins::image_locality::tests::score_table",
        ),
    ),
    (
        "nodeName",
        Honoured(
            "the scheduler counts the pod on that node and never schedules it; NodeName filter",
            "a_pod_with_node_name_is_counted_there_not_scheduled, plugins::node_name::tests::filter_table",
        ),
    ),
    ("nodeSelector", Honoured("NodeAffinity", "plugins::node_affinity::tests::filter_table")),
    (
        "os",
        NotPlacement(
            "kube-scheduler does not read it (the kubelet rejects a mismatch; select the OS with nodeSelector kubernetes.io/os)",
        ),
    ),
    (
        "overhead",
        Honoured(
            "NodeResourcesFit (added to requests: PodView)",
            "kolo-core pod::tests::overhead_added_to_requests_and_nonzero_limits",
        ),
    ),
    (
        "preemptionPolicy",
        Honoured(
            "DefaultPreemption (PostFilter)",
            "tests/preemption.rs preemption_policy_never_does_not_preempt",
        ),
    ),
    ("priority", Honoured("PrioritySort", "plugins::priority_sort::tests::priority_then_age")),
    (
        "priorityClassName",
        Honoured(
            "resolved into spec.priority by the API server's Priority admission; PrioritySort",
            "plugins::priority_sort::tests::priority_then_age",
        ),
    ),
    ("readinessGates", NotPlacement("readiness, after the pod runs")),
    ("resourceClaims", Refused),
    (
        "resources",
        Honoured(
            "NodeResourcesFit (pod-level requests replace the containers' sum: PodView)",
            "kolo-core pod::tests::pod_level_resources_replace_container_aggregate",
        ),
    ),
    ("restartPolicy", NotPlacement("what the kubelet does when containers exit")),
    (
        "runtimeClassName",
        Honoured(
            "the API server's RuntimeClass admission merges the class's scheduling.nodeSelector and tolerations and its overhead into the pod (NodeAffinity, TaintToleration, NodeResourcesFit), as kube-scheduler relies on",
            "plugins::placement_fields::tests",
        ),
    ),
    ("schedulerName", Honoured("profile selection", "a_pod_for_another_scheduler_is_left_alone")),
    ("schedulingGates", Refused),
    ("securityContext", NotPlacement("enforced by the kubelet and the runtime")),
    ("serviceAccount", NotPlacement("identity")),
    ("serviceAccountName", NotPlacement("identity")),
    ("setHostnameAsFQDN", NotPlacement("the pod's hostname")),
    ("shareProcessNamespace", NotPlacement("a namespace choice on whatever node")),
    ("subdomain", NotPlacement("DNS")),
    ("terminationGracePeriodSeconds", NotPlacement("shutdown timing")),
    ("tolerations", Honoured("TaintToleration", "plugins::taint_toleration::tests::filter_table")),
    ("topologySpreadConstraints", Honoured("PodTopologySpread", "tests/pod_topology_spread.rs")),
    (
        "volumes",
        Partly(
            "configMap, secret, emptyDir, hostPath, projected, downwardAPI, nfs, csi (inline) ... need nothing of the node; persistentVolumeClaim: VolumeBinding, VolumeZone, VolumeRestrictions (bound claims; others refused naming the claim); rbd, iscsi: VolumeRestrictions; the sources below are refused",
            "every_refused_field_fails_with_a_reason_naming_it, claims_and_disks_go_to_the_volume_plugins, tests/volumes.rs",
        ),
    ),
];

/// Per refused field: a spec fragment using it (YAML flow, besides one
/// container) and what the failure reason must name.
const REFUSED: &[(&str, &str, &str)] = &[
    ("schedulingGates", "schedulingGates: [{name: example.com/wait}]", "schedulingGates"),
    (
        "resourceClaims",
        "resourceClaims: [{name: gpu, resourceClaimName: my-gpu}]",
        "spec.resourceClaims",
    ),
    (
        "containers",
        "containers: [{name: c, resources: {claims: [{name: gpu}]}}]",
        "spec.containers[].resources.claims",
    ),
    (
        "volumes",
        "volumes: [{name: d, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce]}}}}]",
        "spec.volumes[].ephemeral",
    ),
    (
        "volumes",
        "volumes: [{name: d, gcePersistentDisk: {pdName: disk}}]",
        "spec.volumes[].gcePersistentDisk",
    ),
    (
        "volumes",
        "volumes: [{name: d, awsElasticBlockStore: {volumeID: vol}}]",
        "spec.volumes[].awsElasticBlockStore",
    ),
    (
        "volumes",
        "volumes: [{name: d, azureDisk: {diskName: d, diskURI: u}}]",
        "spec.volumes[].azureDisk",
    ),
    ("volumes", "volumes: [{name: d, cinder: {volumeID: vol}}]", "spec.volumes[].cinder"),
];

/// A `PodSpec` with every field set: no `..Default::default()`, so a field
/// k8s-openapi adds fails to compile here until it is classified.
fn every_field() -> PodSpec {
    PodSpec {
        active_deadline_seconds: Some(1),
        affinity: Some(Default::default()),
        automount_service_account_token: Some(true),
        containers: vec![],
        dns_config: Some(Default::default()),
        dns_policy: Some(String::new()),
        enable_service_links: Some(true),
        ephemeral_containers: Some(vec![]),
        host_aliases: Some(vec![]),
        host_ipc: Some(true),
        host_network: Some(true),
        host_pid: Some(true),
        host_users: Some(true),
        hostname: Some(String::new()),
        image_pull_secrets: Some(vec![]),
        init_containers: Some(vec![]),
        node_name: Some(String::new()),
        node_selector: Some(Default::default()),
        os: Some(Default::default()),
        overhead: Some(Default::default()),
        preemption_policy: Some(String::new()),
        priority: Some(1),
        priority_class_name: Some(String::new()),
        readiness_gates: Some(vec![]),
        resource_claims: Some(vec![]),
        resources: Some(Default::default()),
        restart_policy: Some(String::new()),
        runtime_class_name: Some(String::new()),
        scheduler_name: Some(String::new()),
        scheduling_gates: Some(vec![]),
        security_context: Some(Default::default()),
        service_account: Some(String::new()),
        service_account_name: Some(String::new()),
        set_hostname_as_fqdn: Some(true),
        share_process_namespace: Some(true),
        subdomain: Some(String::new()),
        termination_grace_period_seconds: Some(1),
        tolerations: Some(vec![]),
        topology_spread_constraints: Some(vec![]),
        volumes: Some(vec![]),
    }
}

#[test]
fn every_pod_spec_field_is_classified() {
    let json = serde_json::to_value(every_field()).unwrap();
    let keys: BTreeSet<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    let classified: BTreeSet<&str> = FIELDS.iter().map(|(name, _)| *name).collect();
    assert_eq!(classified.len(), FIELDS.len(), "a field is listed twice");
    assert_eq!(keys, classified, "PodSpec's fields and the classification differ");
    // Every refused or partly refused field has refusal cases, and only
    // those fields.
    for (name, class) in FIELDS {
        let cases = REFUSED.iter().filter(|(field, ..)| field == name).count();
        match class {
            Refused => assert!(cases > 0, "{name}: no refusal case"),
            Partly(by, test) => {
                assert!(cases > 0 && !by.is_empty() && !test.is_empty(), "{name}: no refusal case")
            }
            NotPlacement(why) => assert!(cases == 0 && !why.is_empty(), "{name}"),
            Honoured(by, test) => {
                assert!(cases == 0 && !by.is_empty() && !test.is_empty(), "{name}")
            }
        }
    }
}

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn scheduler() -> Scheduler {
    let config = SchedulerConfig::from_yaml("{}").unwrap();
    let mut s =
        Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, Arc::new(InMemoryBinder::new()))
            .unwrap();
    for name in ["a", "b"] {
        let node: Node = serde_saphyr::from_str(&format!(
            "metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\nstatus:\n  allocatable: {{cpu: '4', memory: 8Gi, pods: '110'}}\n"
        ))
        .unwrap();
        s.apply_node(node, t(0)).unwrap();
    }
    s
}

/// A pod of kolo-scheduler with `spec` (YAML flow items); one container
/// unless `spec` lists its own.
fn pod(name: &str, spec: &str) -> Pod {
    let containers = if spec.contains("containers:") { "" } else { "containers: [{name: c}], " };
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, namespace: ns, uid: u-{name}}}\nspec: {{schedulerName: kolo-scheduler, {containers}{spec}}}\n"
    ))
    .unwrap_or_else(|e| panic!("{e}: {spec}"))
}

#[test]
fn every_refused_field_fails_with_a_reason_naming_it() {
    for (field, spec, named) in REFUSED {
        let mut s = scheduler();
        s.apply_pod(pod("p", spec), t(0)).unwrap();
        let report = s.schedule_next(t(0)).expect("queued");
        let Outcome::Unschedulable { message, rejections, .. } = &report.outcome else {
            panic!("{field}: {spec} was not refused: {:?}", report.outcome);
        };
        assert!(message.contains(named), "{field}: {message:?} does not name {named}");
        assert_eq!(rejections[0].plugin, "PlacementFieldGuard", "{field}");
        assert_eq!(rejections[0].nodes, 2, "{field}: refused everywhere");
        // Nothing in the cluster helps: a new node does not wake it.
        s.apply_node(
            serde_saphyr::from_str("metadata: {name: c}\nstatus: {allocatable: {cpu: '4'}}\n")
                .unwrap(),
            t(5),
        )
        .unwrap();
        assert!(s.schedule_next(t(5)).is_none(), "{field}: woken by a node");
    }
}

#[test]
fn a_gated_pod_is_scheduled_once_its_gates_are_removed() {
    let mut s = scheduler();
    s.apply_pod(pod("p", "schedulingGates: [{name: wait}]"), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert!(matches!(report.outcome, Outcome::Unschedulable { .. }));
    // The gate is removed: the update queues it again, and it is placed.
    s.apply_pod(pod("p", "schedulingGates: []"), t(1)).unwrap();
    let report = s.schedule_next(t(30)).expect("queued again");
    assert!(matches!(report.outcome, Outcome::Scheduled { .. }), "{:?}", report.outcome);
}

#[test]
fn volumes_the_node_need_not_provide_are_accepted() {
    let mut s = scheduler();
    let spec = "volumes: [{name: a, emptyDir: {}}, {name: b, configMap: {name: c}}, {name: c, secret: {secretName: s}}, {name: d, hostPath: {path: /x}}, {name: e, projected: {sources: []}}]";
    s.apply_pod(pod("p", spec), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert!(matches!(report.outcome, Outcome::Scheduled { .. }), "{:?}", report.outcome);
}

/// The volume sources PlacementFieldGuard used to refuse and the volume
/// plugins now honour: a claim reaches VolumeBinding (which refuses it
/// here, naming it, as it does not exist), RBD and iSCSI disks are placed.
#[test]
fn claims_and_disks_go_to_the_volume_plugins() {
    let mut s = scheduler();
    s.apply_pod(pod("p", "volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]"), t(0))
        .unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    let Outcome::Unschedulable { message, rejections, .. } = &report.outcome else {
        panic!("{:?}", report.outcome);
    };
    assert!(message.contains("persistentvolumeclaim \"data\" not found"), "{message}");
    assert_eq!(rejections[0].plugin, "VolumeBinding");
    for (name, spec) in [
        ("rbd", "volumes: [{name: d, rbd: {monitors: [m], image: i}}]"),
        ("iscsi", "volumes: [{name: d, iscsi: {targetPortal: p, iqn: q, lun: 0}}]"),
    ] {
        s.apply_pod(pod(name, spec), t(0)).unwrap();
        let report = s.schedule_next(t(0)).unwrap();
        assert!(
            matches!(report.outcome, Outcome::Scheduled { .. }),
            "{name}: {:?}",
            report.outcome
        );
    }
}

#[test]
fn host_ports_conflict_through_the_scheduler() {
    let mut s = scheduler();
    let ports = "containers: [{name: c, ports: [{containerPort: 80, hostPort: 8080}]}]";
    let mut placed = BTreeSet::new();
    for name in ["p1", "p2"] {
        s.apply_pod(pod(name, ports), t(0)).unwrap();
        match s.schedule_next(t(0)).unwrap().outcome {
            Outcome::Scheduled { node, .. } => assert!(placed.insert(node), "same node twice"),
            other => panic!("{other:?}"),
        }
    }
    // Both nodes hold the port now; a host-network pod serving on 8080
    // (containerPort 8080 is its host port) fits nowhere.
    s.apply_pod(
        pod("p3", "hostNetwork: true, containers: [{name: c, ports: [{containerPort: 8080}]}]"),
        t(0),
    )
    .unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    let Outcome::Unschedulable { message, .. } = &report.outcome else {
        panic!("{:?}", report.outcome);
    };
    assert_eq!(
        message,
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports."
    );
    // Another port, or the same port on UDP, fits.
    s.apply_pod(
        pod(
            "p4",
            "containers: [{name: c, ports: [{containerPort: 80, hostPort: 8080, protocol: UDP}]}]",
        ),
        t(0),
    )
    .unwrap();
    assert!(matches!(s.schedule_next(t(0)).unwrap().outcome, Outcome::Scheduled { .. }));
    // p1 goes: its port is free again, and p3 is woken and fits there.
    let p1_node = s.cache().pod("ns/p1").map(|p| p.node_name.to_string());
    s.remove_pod("ns/p1", t(1));
    let report = s.schedule_next(t(20)).expect("p3 woken");
    match &report.outcome {
        Outcome::Scheduled { node, .. } => assert_eq!(Some(node.clone()), p1_node),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_pod_with_node_name_is_counted_there_not_scheduled() {
    let mut s = scheduler();
    s.apply_pod(
        pod("p", "nodeName: b, containers: [{name: c, resources: {requests: {cpu: '3'}}}]"),
        t(0),
    )
    .unwrap();
    assert!(s.schedule_next(t(0)).is_none(), "never queued");
    let b = s.cache().nodes().iter().find(|n| n.name() == "b").unwrap();
    assert_eq!(b.requested(kolo_core::resources::ResourceName::Cpu), 3000);
}

#[test]
fn a_pod_for_another_scheduler_is_left_alone() {
    let mut s = scheduler();
    let other: Pod = serde_saphyr::from_str(
        "metadata: {name: p, namespace: ns, uid: u}\nspec: {schedulerName: other, containers: [{name: c}]}\n",
    )
    .unwrap();
    s.apply_pod(other, t(0)).unwrap();
    assert!(s.schedule_next(t(0)).is_none());
}

#[test]
fn image_locality_prefers_the_node_with_the_image() {
    let mut s = scheduler();
    // Node c has a 900 MB image; a, b do not. Same resources everywhere.
    let node: Node = serde_saphyr::from_str(
        "metadata: {name: c, labels: {kubernetes.io/hostname: c}}\nstatus:\n  allocatable: {cpu: '4', memory: 8Gi, pods: '110'}\n  images: [{names: ['registry.example/app:v1'], sizeBytes: 943718400}]\n",
    )
    .unwrap();
    s.apply_node(node, t(0)).unwrap();
    s.apply_pod(pod("p", "containers: [{name: c, image: 'registry.example/app:v1'}]"), t(0))
        .unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    match &report.outcome {
        Outcome::Scheduled { node, scores, .. } => {
            assert_eq!(node, "c");
            // 900 MB on one node of three: 300 MB → 100 × 277 / 977 = 28.
            assert_eq!(scores.get("ImageLocality"), Some(&28), "{scores:?}");
        }
        other => panic!("{other:?}"),
    }
}

/// A node with 4 CPUs reporting `registry.example/app:v1` of `image_mb` MB
/// (none when 0).
fn image_node(name: &str, image_mb: i64) -> Node {
    let images = if image_mb == 0 {
        String::new()
    } else {
        format!(
            "  images: [{{names: ['registry.example/app:v1'], sizeBytes: {}}}]\n",
            image_mb * 1024 * 1024
        )
    };
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\nstatus:\n  allocatable: {{cpu: '4', memory: 8Gi, pods: '110'}}\n{images}"
    ))
    .unwrap()
}

/// ImageLocality scores a node by how many *other* nodes have the image, so
/// when one node's image list changes, the equivalence cache must not reuse
/// another node's score (`Plugin::cross_node_epoch`), while an update that
/// leaves images alone keeps the cache's per-node reuse.
#[test]
fn an_image_appearing_on_one_node_rescores_the_others_with_the_cache_on() {
    let pod = |name: &str| {
        pod(
            name,
            "containers: [{name: c, image: 'registry.example/app:v1', resources: {requests: {cpu: '3'}}}]",
        )
    };
    for cache in [true, false] {
        let config = SchedulerConfig::from_yaml("{}").unwrap();
        let mut s =
            Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, Arc::new(InMemoryBinder::new()))
                .unwrap();
        s.set_equivalence_cache(cache);
        // Spread 2/4: e 1000 MB → 500 (48), b 600 MB → 300 (28).
        for (name, mb) in [("b", 600), ("c", 0), ("d", 0), ("e", 1000)] {
            s.apply_node(image_node(name, mb), t(0)).unwrap();
        }
        s.apply_pod(pod("p1"), t(0)).unwrap();
        let first = s.schedule_next(t(0)).unwrap();
        assert!(
            matches!(&first.outcome, Outcome::Scheduled { node, .. } if node == "e"),
            "{first:?}"
        );
        // e is full for a 3-CPU pod now. c gets the image (500 MB): spread
        // 3/4, so c → 375 (36) and b → 450 (43). A stale b (28) would lose
        // to c.
        s.apply_node(image_node("c", 500), t(1)).unwrap();
        s.apply_pod(pod("p2"), t(1)).unwrap();
        let second = s.schedule_next(t(1)).unwrap();
        match &second.outcome {
            Outcome::Scheduled { node, scores, .. } => {
                assert_eq!(node, "b", "cache {cache}: {scores:?}");
                assert_eq!(scores.get("ImageLocality"), Some(&43), "cache {cache}: {scores:?}");
            }
            other => panic!("cache {cache}: {other:?}"),
        }
    }
}
