//! Feeds arbitrary text as the value of every pod and node label and
//! annotation kolo reads, through the functions that read them: the QoS
//! class and priority labels (PodView), Katalyst's QoS level and memory
//! enhancement, the resource-spec / resource-status / numa-topology-spec
//! annotations, the node's cpu-topology, pod-cpu-allocs, kubelet CPU
//! manager policy, node reservation and system-qos-resource annotations,
//! the reservation affinity, the gang (PodGroup) labels and annotations,
//! the usage-thresholds annotation and Go durations. Nothing may panic.
#![no_main]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kolo_api::crd::parse_go_duration;
use kolo_api::katalyst;
use kolo_api::names::{annotation, label};
use kolo_core::HasMeta;
use kolo_core::node::NodeView;
use kolo_scheduler::framework::PodInfo;
use kolo_scheduler::plugins::coscheduling::{CoschedulingArgs, gang};
use kolo_scheduler::plugins::load_aware::custom_thresholds::parse_custom_thresholds;
use kolo_scheduler::plugins::node_numa_resource::annotations::{
    CpuTopologyAnnotation, KubeletCpuManagerPolicy, NumaTopologySpec, ResourceSpec, ResourceStatus,
    SystemQosResource, parse_node_reservation_cpus, parse_pod_cpu_allocs,
};
use kolo_scheduler::plugins::node_numa_resource::args::NodeNUMAResourceArgs;
use kolo_scheduler::plugins::node_numa_resource::decide::PodNumaRequest;
use kolo_scheduler::plugins::node_numa_resource::topology::{CpuTopology, NodeTopology};
use kolo_scheduler::plugins::reservation::affinity::ReservationAffinity;
use libfuzzer_sys::fuzz_target;

/// Pod labels kolo reads.
const POD_LABELS: &[&str] = &[
    label::QOS_CLASS,
    label::PRIORITY_CLASS,
    label::SUB_PRIORITY,
    label::QUOTA_NAME,
    label::QUOTA_PREEMPTIBLE,
    label::POD_GROUP,
    label::POD_GROUP_NAME_DEPRECATED,
    label::POD_GROUP_MIN_AVAILABLE_DEPRECATED,
    label::RESERVATION_IGNORED,
    label::RESERVATION_ORDER,
];

/// Pod annotations kolo reads.
const POD_ANNOTATIONS: &[&str] = &[
    annotation::KATALYST_QOS_LEVEL,
    annotation::KATALYST_MEMORY_ENHANCEMENT,
    annotation::KATALYST_CPU_ENHANCEMENT,
    annotation::RESOURCE_SPEC,
    annotation::RESOURCE_STATUS,
    annotation::NUMA_TOPOLOGY_SPEC,
    annotation::RESERVATION_AFFINITY,
    annotation::RESERVATION_ALLOCATED,
    annotation::EXTENDED_RESOURCE_SPEC,
    annotation::GANG_NAME,
    annotation::GANG_MIN_AVAILABLE,
    annotation::GANG_WAITING_TIME,
    annotation::GANG_TOTAL_NUMBER,
    annotation::GANG_MODE,
    annotation::GANG_GROUPS,
    annotation::GANG_TIMEOUT,
    annotation::GANG_MATCH_POLICY,
];

fn map(keys: &[&str], value: &str) -> BTreeMap<String, String> {
    keys.iter().map(|k| (k.to_string(), value.to_string())).collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = std::str::from_utf8(data) else { return };
    annotation_parsers(value);
    let meta = ObjectMeta {
        name: Some("p".into()),
        namespace: Some("ns".into()),
        uid: Some("0f0e0d0c-0000-4000-8000-000000000001".into()),
        labels: Some(map(POD_LABELS, value)),
        annotations: Some(map(POD_ANNOTATIONS, value)),
        ..ObjectMeta::default()
    };
    let pod = Pod { metadata: meta, ..Pod::default() };
    let annotations = pod.metadata.annotations.as_ref();
    if let (Ok(level), Ok(memory)) =
        (katalyst::qos_level(annotations), katalyst::memory_enhancement(annotations))
    {
        let _ = level.map(|l| katalyst::to_kolo_qos(l, memory));
    }
    let Ok(info) = PodInfo::new(pod) else { return };
    let view = info.view();
    let _ = (view.qos(), view.priority_class(), view.priority());
    let _ = ReservationAffinity::of(&info);
    let _ = PodNumaRequest::from_pod(view, &NodeNUMAResourceArgs::default());
    let args = CoschedulingArgs::default();
    let labels = |k: &str| view.label(k);
    let annotations = |k: &str| view.annotation(k);
    let _ = gang::gang_of(view.namespace(), labels, annotations);
    let _ = gang::from_pod("ns/g", view.key(), None, labels, annotations, &args);
    node_annotations(value);
});

/// The annotation parsers on the value itself.
fn annotation_parsers(value: &str) {
    let _ = ResourceSpec::parse(value);
    let _ = NumaTopologySpec::parse(value);
    let _ = ResourceStatus::parse(value);
    let _ = CpuTopologyAnnotation::parse(value);
    let _ = CpuTopology::from_annotation(value);
    let _ = parse_pod_cpu_allocs(value);
    let _ = KubeletCpuManagerPolicy::parse(value);
    let _ = parse_node_reservation_cpus(value);
    let _ = SystemQosResource::parse(value);
    let _ = parse_custom_thresholds(value);
    let _ = parse_go_duration(value);
}

/// A node carrying the value as every node label and annotation.
fn node_annotations(value: &str) {
    let node = Node {
        metadata: ObjectMeta {
            name: Some("n".into()),
            labels: Some(map(
                &[
                    label::NODE_CPU_RECLAIM_RATIO,
                    label::NODE_CPU_BIND_POLICY,
                    label::NODE_NUMA_ALLOCATE_STRATEGY,
                    label::NODE_NUMA_TOPOLOGY_POLICY,
                ],
                value,
            )),
            annotations: Some(map(
                &[
                    annotation::NODE_CPU_TOPOLOGY,
                    annotation::NODE_POD_CPU_ALLOCS,
                    annotation::NODE_RESERVATION,
                    annotation::NODE_SYSTEM_QOS_RESOURCE,
                    annotation::NODE_RESOURCE_AMPLIFICATION_RATIO,
                    annotation::NODE_RAW_ALLOCATABLE,
                    annotation::NODE_COLOCATION_STRATEGY,
                ],
                value,
            )),
            ..ObjectMeta::default()
        },
        ..Node::default()
    };
    if let Ok(view) = NodeView::from_node(&node) {
        let _ = NodeTopology::from_node(&view);
    }
}
