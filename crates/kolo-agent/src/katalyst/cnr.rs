//! The `CustomNodeResource` status a node running the Katalyst policy
//! reports (spec `katalyst.md` §2.8, §5), built from the advisor's output
//! and the machine. Pure: the writer (kolo-kube) is not here.
//!
//! What [`cnr_status`] fills:
//!
//! * `resources.allocatable` = `resources.capacity` =
//!   `resource.katalyst.kubewharf.io/reclaimed_millicpu` (milli-cores,
//!   [`CpuHeadroom::millicpu`]) and `.../reclaimed_memory` (bytes,
//!   [`MemoryHeadroom::bytes`]);
//! * `topologyZone`: one `Socket` zone per socket (name = socket id, no
//!   resources) with a `Numa` child per NUMA node (name = node id):
//!   `cpu` (its CPUs), `memory` (its bytes, left out when unknown) and
//!   its share of `reclaimed_millicpu` ([`CpuHeadroom::per_numa`]), as
//!   allocatable and capacity alike, and the attribute `cpu_lists` (its
//!   CPUs as a Linux CPU list);
//! * `topologyPolicy` = `None`.
//!
//! What it leaves empty: NUMA-level `reclaimed_memory` (the memory
//! headroom has no per-NUMA split), allocations, siblings (NUMA
//! distances), the other attributes, conditions, `nodeMetricStatus`,
//! resource packages and pools; and the whole `spec` (properties, taints).
//!
//! Katalyst's reporter smooths the headroom over 2 minutes and clamps it
//! up to 4 CPUs / 5 GiB (§2.8, §10.7); kolo does neither. [`needs_update`]
//! is an exact rule instead: a write is needed when a field kolo writes
//! differs in value (quantities compared by amount, so `4k` = `4000`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use kolo_api::crd::custom_node_resource::{
    ATTRIBUTE_CPU_LISTS, TOPOLOGY_POLICY_NONE, ZONE_NUMA, ZONE_SOCKET,
};
use kolo_api::crd::{
    CnrAttribute, CnrResources, CustomNodeResourceStatus, ResourceList, TopologyZone,
};
use kolo_api::names::resource::{KATALYST_RECLAIMED_MEMORY, KATALYST_RECLAIMED_MILLICPU};
use kolo_api::quantity::{Format, Quantity};

use super::advisor::cpu_headroom::CpuHeadroom;
use super::advisor::memory_headroom::MemoryHeadroom;
use super::machine::{Machine, Numa};

/// Allocatable and capacity, both `list`.
fn both(list: ResourceList) -> CnrResources {
    CnrResources {
        allocatable: Some(list.clone()),
        capacity: Some(list),
        ..CnrResources::default()
    }
}

fn decimal(value: i64) -> K8sQuantity {
    Quantity::from_value(value, Format::DecimalSI).into()
}

fn bytes(value: u64) -> K8sQuantity {
    Quantity::from_value(i64::try_from(value).unwrap_or(i64::MAX), Format::BinarySI).into()
}

/// The node-level reclaimed resources.
fn node_resources(cpu: &CpuHeadroom, memory: &MemoryHeadroom) -> CnrResources {
    both(BTreeMap::from([
        (KATALYST_RECLAIMED_MILLICPU.to_string(), decimal(cpu.millicpu)),
        (KATALYST_RECLAIMED_MEMORY.to_string(), bytes(memory.bytes)),
    ]))
}

/// One NUMA node's zone.
fn numa_zone(numa: &Numa, cpu: &CpuHeadroom) -> TopologyZone {
    let mut list = BTreeMap::from([("cpu".to_string(), decimal(numa.cpus.len() as i64))]);
    if numa.memory_bytes > 0 {
        list.insert("memory".to_string(), bytes(numa.memory_bytes));
    }
    let reclaimed = cpu.per_numa.get(&numa.id).copied().unwrap_or(0);
    list.insert(KATALYST_RECLAIMED_MILLICPU.to_string(), decimal(reclaimed));
    TopologyZone {
        zone_type: ZONE_NUMA.to_string(),
        name: Some(numa.id.to_string()),
        resources: both(list),
        attributes: Some(vec![CnrAttribute {
            name: ATTRIBUTE_CPU_LISTS.to_string(),
            value: numa.cpus.to_string(),
        }]),
        ..TopologyZone::default()
    }
}

/// The status to write: see the module docs.
pub fn cnr_status(
    machine: &Machine,
    cpu: &CpuHeadroom,
    memory: &MemoryHeadroom,
) -> CustomNodeResourceStatus {
    // A NUMA node's socket is its first CPU's (0 when unknown).
    let mut sockets: BTreeMap<u32, Vec<TopologyZone>> = BTreeMap::new();
    let mut numas: Vec<&Numa> = machine.numa.iter().collect();
    numas.sort_by_key(|n| n.id);
    for numa in numas {
        let first = numa.cpus.iter().next();
        let socket = first.and_then(|c| machine.cores.get(&c)).map_or(0, |(s, _)| *s);
        sockets.entry(socket).or_default().push(numa_zone(numa, cpu));
    }
    let zones = sockets
        .into_iter()
        .map(|(id, children)| TopologyZone {
            zone_type: ZONE_SOCKET.to_string(),
            name: Some(id.to_string()),
            children: Some(children),
            ..TopologyZone::default()
        })
        .collect();
    CustomNodeResourceStatus {
        resources: node_resources(cpu, memory),
        topology_zone: Some(zones),
        topology_policy: Some(TOPOLOGY_POLICY_NONE.to_string()),
        ..CustomNodeResourceStatus::default()
    }
}

/// Whether `new` must be written over `old` (`None`: no CNR, or no
/// status yet). Exact: any difference in a field [`cnr_status`] fills
/// (node resources, zones with their resources, attributes and children,
/// the topology policy) is a write; fields other writers own (conditions,
/// `nodeMetricStatus`, resource packages and pools, zone allocations and
/// siblings) are ignored, so the writer must patch only kolo's fields.
/// Quantities compare by amount.
pub fn needs_update(
    old: Option<&CustomNodeResourceStatus>,
    new: &CustomNodeResourceStatus,
) -> bool {
    old.is_none_or(|old| kolo_view(old) != kolo_view(new))
}

/// The fields kolo writes, quantities in canonical form.
fn kolo_view(s: &CustomNodeResourceStatus) -> CustomNodeResourceStatus {
    CustomNodeResourceStatus {
        resources: resources_view(&s.resources),
        topology_zone: s.topology_zone.as_ref().map(|z| z.iter().map(zone_view).collect()),
        topology_policy: s.topology_policy.clone(),
        ..CustomNodeResourceStatus::default()
    }
}

fn zone_view(z: &TopologyZone) -> TopologyZone {
    TopologyZone {
        zone_type: z.zone_type.clone(),
        name: z.name.clone(),
        resources: resources_view(&z.resources),
        attributes: z.attributes.clone(),
        children: z.children.as_ref().map(|c| c.iter().map(zone_view).collect()),
        ..TopologyZone::default()
    }
}

fn resources_view(r: &CnrResources) -> CnrResources {
    let canonical = |list: &ResourceList| -> ResourceList {
        list.iter()
            .map(|(k, q)| {
                // An unparsable quantity stays as written (and so differs
                // from anything kolo writes).
                let amount = Quantity::try_from(q)
                    .map_or_else(|_| q.0.clone(), |v| v.as_nanos().to_string());
                (k.clone(), K8sQuantity(amount))
            })
            .collect()
    };
    CnrResources {
        allocatable: r.allocatable.as_ref().map(canonical),
        capacity: r.capacity.as_ref().map(canonical),
        ..CnrResources::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::katalyst::config::GIB;
    use kolo_api::crd::CnrCondition;

    fn headroom(per_numa: &[(u32, i64)]) -> CpuHeadroom {
        let per_numa: BTreeMap<u32, i64> = per_numa.iter().copied().collect();
        CpuHeadroom { millicpu: per_numa.values().sum(), per_numa }
    }

    fn memory(bytes: u64) -> MemoryHeadroom {
        MemoryHeadroom { bytes, ..MemoryHeadroom::default() }
    }

    fn q(list: &Option<ResourceList>, key: &str) -> String {
        list.as_ref().and_then(|l| l.get(key)).map_or_else(String::new, |q| q.0.clone())
    }

    /// (machine, per-NUMA millicpu, memory bytes, node millicpu, node
    /// memory, zones as "socket:numa cpu memory reclaimed cpu_lists").
    type Row<'a> = (&'a Machine, &'a [(u32, i64)], u64, &'a str, &'a str, &'a [&'a str]);

    #[test]
    fn node_resources_and_zones_by_hand() {
        // (machine, per-NUMA millicpu, memory bytes, node millicpu, node memory,
        //  zones as "socket:numa cpu memory reclaimed cpu_lists")
        let two_sockets = Machine::uniform(2, 8, true, 32 * GIB);
        // Two NUMA nodes on socket 0; node 1 with unknown memory.
        let mut one_socket = Machine::uniform(2, 4, false, 0);
        one_socket.numa[0].memory_bytes = 3 * GIB / 2;
        one_socket.cores.values_mut().for_each(|c| c.0 = 0);
        let table: [Row<'_>; 3] = [
            (
                &two_sockets,
                &[(0, 2000), (1, 2000)],
                52_720_723_557,
                "4k",
                "52720723557",
                &["0:0 8 32Gi 2k 0-7", "1:1 8 32Gi 2k 8-15"],
            ),
            (
                &one_socket,
                &[(0, 1000)],
                5 * GIB,
                "1k",
                "5Gi",
                &["0:0 4 1536Mi 1k 0-3", "0:1 4  0 4-7"],
            ),
            // Reclaim disabled: zeros, still written.
            (&two_sockets, &[], 0, "0", "0", &["0:0 8 32Gi 0 0-7", "1:1 8 32Gi 0 8-15"]),
        ];
        for (machine, per_numa, mem, want_cpu, want_mem, want_zones) in table {
            let s = cnr_status(machine, &headroom(per_numa), &memory(mem));
            for list in [&s.resources.allocatable, &s.resources.capacity] {
                assert_eq!(q(list, KATALYST_RECLAIMED_MILLICPU), want_cpu);
                assert_eq!(q(list, KATALYST_RECLAIMED_MEMORY), want_mem);
                assert_eq!(list.as_ref().unwrap().len(), 2);
            }
            assert_eq!(s.topology_policy.as_deref(), Some("None"));
            let mut zones = Vec::new();
            for socket in s.topology_zone.as_ref().unwrap() {
                assert_eq!(socket.zone_type, "Socket");
                assert_eq!(socket.resources, CnrResources::default());
                for n in socket.children.as_ref().unwrap() {
                    assert_eq!(n.zone_type, "Numa");
                    assert_eq!(n.resources.allocatable, n.resources.capacity);
                    let r = &n.resources.capacity;
                    let attrs = n.attributes.as_ref().unwrap();
                    assert_eq!(attrs.len(), 1);
                    assert_eq!(attrs[0].name, "cpu_lists");
                    zones.push(format!(
                        "{}:{} {} {} {} {}",
                        socket.name.as_deref().unwrap(),
                        n.name.as_deref().unwrap(),
                        q(r, "cpu"),
                        q(r, "memory"),
                        q(r, KATALYST_RECLAIMED_MILLICPU),
                        attrs[0].value
                    ));
                }
            }
            assert_eq!(zones, want_zones);
            // What is left empty.
            assert_eq!((s.conditions.as_ref(), s.node_metric_status.as_ref()), (None, None));
        }
    }

    #[test]
    fn needs_update_is_exact_on_kolo_fields_only() {
        let machine = Machine::uniform(2, 8, true, 32 * GIB);
        let base = cnr_status(&machine, &headroom(&[(0, 2000), (1, 2000)]), &memory(5 * GIB));
        fn set_node_cpu(s: &mut CustomNodeResourceStatus, v: &str) {
            for list in [&mut s.resources.allocatable, &mut s.resources.capacity] {
                let q = K8sQuantity(v.into());
                list.as_mut().unwrap().insert(KATALYST_RECLAIMED_MILLICPU.into(), q);
            }
        }
        fn numa0(s: &mut CustomNodeResourceStatus) -> &mut TopologyZone {
            &mut s.topology_zone.as_mut().unwrap()[0].children.as_mut().unwrap()[0]
        }
        type Edit = fn(&mut CustomNodeResourceStatus);
        // (what the stored status differs in, whether kolo writes)
        let table: [(&str, Edit, bool); 9] = [
            ("nothing", |_| {}, false),
            ("4000 for 4k (same amount)", |s| set_node_cpu(s, "4000"), false),
            ("4001", |s| set_node_cpu(s, "4001"), true),
            ("an unparsable quantity", |s| set_node_cpu(s, "lots"), true),
            (
                "a condition (not kolo's)",
                |s| {
                    s.conditions = Some(vec![CnrCondition {
                        condition_type: "AgentReady".into(),
                        status: "True".into(),
                        ..CnrCondition::default()
                    }]);
                },
                false,
            ),
            (
                "a zone allocation (not kolo's)",
                |s| {
                    numa0(s).allocations = Some(vec![]);
                },
                false,
            ),
            (
                "a NUMA node's CPU list",
                |s| {
                    numa0(s).attributes.as_mut().unwrap()[0].value = "0-6".into();
                },
                true,
            ),
            ("the topology policy", |s| s.topology_policy = None, true),
            (
                "a missing NUMA zone",
                |s| {
                    s.topology_zone.as_mut().unwrap()[1].children = Some(vec![]);
                },
                true,
            ),
        ];
        for (what, edit, want) in table {
            let mut old = base.clone();
            edit(&mut old);
            assert_eq!(needs_update(Some(&old), &base), want, "{what}");
        }
        assert!(needs_update(None, &base), "no status yet");
        // A changed headroom is a write.
        let fewer = cnr_status(&machine, &headroom(&[(0, 2000), (1, 1000)]), &memory(5 * GIB));
        assert!(needs_update(Some(&base), &fewer));
    }
}
