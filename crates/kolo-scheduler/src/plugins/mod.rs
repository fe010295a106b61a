//! The in-tree plugins, one module each, and the registry and default
//! profile that enable them.

pub mod balanced_allocation;
pub mod coscheduling;
pub mod default_binder;
pub mod default_preemption;
pub mod elastic_quota;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod load_aware;
pub mod node_affinity;
pub mod node_name;
pub mod node_numa_resource;
pub mod node_ports;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod placement_fields;
pub mod pod_topology_spread;
pub mod priority_sort;
pub mod reservation;
pub mod taint_toleration;
pub mod tolerations;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

use crate::profile::DefaultPlugin;
use crate::registry::Registry;

/// Every in-tree plugin, by name.
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    registry
        .register(priority_sort::NAME, priority_sort::PrioritySort::build)
        .register(coscheduling::NAME, coscheduling::Coscheduling::build)
        .register(node_unschedulable::NAME, node_unschedulable::NodeUnschedulable::build)
        .register(node_affinity::NAME, node_affinity::NodeAffinity::build)
        .register(taint_toleration::NAME, taint_toleration::TaintToleration::build)
        .register(inter_pod_affinity::NAME, inter_pod_affinity::InterPodAffinity::build)
        .register(node_resources_fit::NAME, node_resources_fit::NodeResourcesFit::build)
        .register(load_aware::plugin::NAME, load_aware::plugin::LoadAwareScheduling::build)
        .register(
            node_numa_resource::plugin::NAME,
            node_numa_resource::plugin::NodeNUMAResource::build,
        )
        .register(pod_topology_spread::NAME, pod_topology_spread::PodTopologySpread::build)
        .register(default_binder::NAME, default_binder::DefaultBinder::build)
        .register(placement_fields::NAME, placement_fields::PlacementFieldGuard::build)
        .register(node_name::NAME, node_name::NodeName::build)
        .register(node_ports::NAME, node_ports::NodePorts::build)
        .register(balanced_allocation::NAME, balanced_allocation::BalancedAllocation::build)
        .register(image_locality::NAME, image_locality::ImageLocality::build)
        .register(volume_restrictions::NAME, volume_restrictions::VolumeRestrictions::build)
        .register(volume_binding::NAME, volume_binding::VolumeBinding::build)
        .register(volume_zone::NAME, volume_zone::VolumeZone::build)
        .register(reservation::NAME, reservation::ReservationPlugin::build)
        .register(elastic_quota::NAME, elastic_quota::ElasticQuota::build)
        .register(
            default_preemption::plugin::NAME,
            default_preemption::plugin::DefaultPreemption::build,
        );
    registry
}

/// The plugins a kolo profile enables unless configured otherwise, in
/// order, with kube-scheduler's default score weights for its own plugins.
/// Coscheduling is the QueueSort (PrioritySort's order for pods in no
/// gang); its PostFilter runs before DefaultPreemption's.
pub const DEFAULT_PLUGINS: &[DefaultPlugin] = &[
    DefaultPlugin { name: coscheduling::NAME, weight: 1 },
    DefaultPlugin { name: placement_fields::NAME, weight: 1 },
    DefaultPlugin { name: node_unschedulable::NAME, weight: 1 },
    DefaultPlugin { name: node_name::NAME, weight: 1 },
    DefaultPlugin { name: node_affinity::NAME, weight: 2 },
    DefaultPlugin { name: taint_toleration::NAME, weight: 3 },
    DefaultPlugin { name: node_ports::NAME, weight: 1 },
    DefaultPlugin { name: inter_pod_affinity::NAME, weight: 2 },
    DefaultPlugin { name: node_resources_fit::NAME, weight: 1 },
    // kube-scheduler's order: after NodeResourcesFit (VolumeBinding's
    // score is behind an alpha gate there and not implemented here).
    DefaultPlugin { name: volume_restrictions::NAME, weight: 1 },
    DefaultPlugin { name: volume_binding::NAME, weight: 1 },
    DefaultPlugin { name: volume_zone::NAME, weight: 1 },
    DefaultPlugin { name: load_aware::plugin::NAME, weight: 1 },
    DefaultPlugin { name: node_numa_resource::plugin::NAME, weight: 1 },
    DefaultPlugin { name: pod_topology_spread::NAME, weight: 2 },
    DefaultPlugin { name: balanced_allocation::NAME, weight: 1 },
    DefaultPlugin { name: image_locality::NAME, weight: 1 },
    // Koordinator's default weight: a node with a usable reservation wins.
    DefaultPlugin { name: reservation::NAME, weight: 5000 },
    DefaultPlugin { name: elastic_quota::NAME, weight: 1 },
    DefaultPlugin { name: default_preemption::plugin::NAME, weight: 1 },
    DefaultPlugin { name: default_binder::NAME, weight: 1 },
];
