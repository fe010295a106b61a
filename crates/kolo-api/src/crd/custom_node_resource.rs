//! `CustomNodeResource` (CNR, `node.katalyst.kubewharf.io/v1alpha1`,
//! cluster-scoped, short name `kcnr`): Katalyst's per-node report, named
//! after the node. The node agent writes `status`: the reclaimed resources
//! the node offers (`status.resources`) and its topology as a tree of zones
//! (`status.topologyZone`: sockets → NUMA nodes → devices).
//!
//! Reference: Katalyst's `node/v1alpha1` API types (spec `katalyst.md` §5).
//! Field names are the Go JSON names. What kolo's Katalyst node policy fills
//! and what it leaves empty is in `docs/katalyst.md` ("The CNR"); fields kolo
//! never writes are still declared, so a CNR written by Katalyst reads, and
//! survives a read-modify-write, unchanged:
//!
//! * `spec.nodeResourceProperties` and `spec.taints`: not filled by kolo;
//! * `status.resources.resourcePackages` / `resourcePools`,
//!   `status.nodeMetricStatus`: kept as free-form JSON;
//! * a zone's `allocations` and `siblings`, and `attributes` other than
//!   the CPU list: not filled by kolo;
//! * `status.conditions`: written by Katalyst's agent-health controller.
//!
//! A zone's `children` are stored schemaless (the reference does the same:
//! a structural schema cannot be recursive).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    JsonObject, ResourceList, preserved_object_schema, quantity_schema, resource_list_schema,
    time_schema,
};

/// Zone type of a socket.
pub const ZONE_SOCKET: &str = "Socket";
/// Zone type of a NUMA node (child of a socket; its name is the node id).
pub const ZONE_NUMA: &str = "Numa";
/// Topology policy `None` (no alignment), the reference's default.
pub const TOPOLOGY_POLICY_NONE: &str = "None";
/// The zone attribute holding a zone's CPUs, as a Linux CPU list (`0-3,8`).
pub const ATTRIBUTE_CPU_LISTS: &str = "cpu_lists";

/// Static attributes and taints of a node (kolo writes an empty spec).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "node.katalyst.kubewharf.io",
    version = "v1alpha1",
    kind = "CustomNodeResource",
    plural = "customnoderesources",
    shortname = "kcnr",
    status = "CustomNodeResourceStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "Katalyst's report of one node (named after the node): its reclaimed resources and topology."
)]
#[serde(rename_all = "camelCase")]
pub struct CustomNodeResourceSpec {
    /// Static node attributes (name with values or a quantity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_resource_properties: Option<Vec<CnrProperty>>,
    /// Taints that apply to some QoS levels only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<CnrTaint>>,
}

/// One static node attribute.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CnrProperty {
    /// Its name.
    pub property_name: String,
    /// Its values, for a list-valued attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property_values: Option<Vec<String>>,
    /// Its value, for a quantity-valued attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "quantity_schema")]
    pub property_quantity: Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
}

/// A taint of the node for pods of some QoS level (e.g. effect
/// `NoScheduleForReclaimedTasks`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CnrTaint {
    /// The taint key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The taint value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The effect on pods that do not tolerate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// The QoS level the taint applies to (newer references).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos_level: Option<String>,
}

/// What the node agent reports.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomNodeResourceStatus {
    /// Node-level resources: the reclaimed ones kolo computes.
    #[serde(default)]
    pub resources: CnrResources,
    /// The topology: socket zones with NUMA zones as children.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_zone: Option<Vec<TopologyZone>>,
    /// How the kubelet's topology manager aligns resources (`None`,
    /// `SingleNUMANodeContainerLevel`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_policy: Option<String>,
    /// Agent health conditions (`AgentReady`, `AgentNotFound`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<CnrCondition>>,
    /// Node and NUMA usage by QoS group (not written by kolo; kept as is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object_schema")]
    pub node_metric_status: Option<JsonObject>,
}

/// Allocatable and capacity of a node or zone.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CnrResources {
    /// What may be allocated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub allocatable: Option<ResourceList>,
    /// The total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub capacity: Option<ResourceList>,
    /// Resource packages (not written by kolo; kept as is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_list_schema")]
    pub resource_packages: Option<Vec<JsonObject>>,
    /// Resource pools (not written by kolo; kept as is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_list_schema")]
    pub resource_pools: Option<Vec<JsonObject>>,
}

/// Schema of a list of objects kept as they are.
fn preserved_list_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": preserved_object_schema(generator),
    })
}

/// One zone of the topology tree.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologyZone {
    /// `Socket`, `Numa`, `GPU`, `NIC`, ...
    #[serde(rename = "type")]
    pub zone_type: String,
    /// Its name (a NUMA zone's is the node id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its resources.
    #[serde(default)]
    pub resources: CnrResources,
    /// Name-value attributes (kolo writes `cpu_lists` on NUMA zones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Vec<CnrAttribute>>,
    /// What pods hold in this zone (not written by kolo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocations: Option<Vec<CnrAllocation>>,
    /// Zones inside this one (stored schemaless).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_list_schema")]
    pub children: Option<Vec<TopologyZone>>,
    /// Relations to zones of the same level, e.g. NUMA distances (not
    /// written by kolo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub siblings: Option<Vec<CnrSibling>>,
}

/// A name-value pair.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct CnrAttribute {
    /// The name.
    pub name: String,
    /// The value.
    pub value: String,
}

/// What one consumer (`namespace/name/uid`) holds in a zone.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct CnrAllocation {
    /// `namespace/name/uid`.
    pub consumer: String,
    /// Its requests in the zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub requests: Option<ResourceList>,
}

/// The relation between a zone and another of its level.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct CnrSibling {
    /// The other zone's type.
    #[serde(rename = "type")]
    pub zone_type: String,
    /// The other zone's name.
    pub name: String,
    /// Attributes of the relation (e.g. the distance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Vec<CnrAttribute>>,
}

/// An agent health condition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CnrCondition {
    /// `AgentReady` or `AgentNotFound`.
    #[serde(rename = "type")]
    pub condition_type: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The last heartbeat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "time_schema")]
    pub last_heartbeat_time: Option<Time>,
    /// Why, briefly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why, for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CNR in the shape Katalyst writes (spec §5): two sockets, one NUMA
    /// node each, reclaimed resources at node and NUMA level, plus fields
    /// kolo never writes (the fixture's comment has the details).
    const CNR: &str = include_str!("../../tests/fixtures/cnr-node-a.yaml");

    #[test]
    fn a_katalyst_cnr_reads_and_writes_back_unchanged() {
        let cnr: CustomNodeResource = serde_saphyr::from_str(CNR).unwrap();
        assert_eq!(cnr.metadata.name.as_deref(), Some("node-a"));
        let status = cnr.status.as_ref().unwrap();
        let alloc = status.resources.allocatable.as_ref().unwrap();
        assert_eq!(alloc["resource.katalyst.kubewharf.io/reclaimed_millicpu"].0, "4k");
        let zones = status.topology_zone.as_ref().unwrap();
        assert_eq!(zones.len(), 2);
        assert_eq!(zones[0].zone_type, ZONE_SOCKET);
        let numa = &zones[0].children.as_ref().unwrap()[0];
        assert_eq!((numa.zone_type.as_str(), numa.name.as_deref()), (ZONE_NUMA, Some("0")));
        assert_eq!(numa.attributes.as_ref().unwrap()[0].value, "0-7");
        assert_eq!(numa.allocations.as_ref().unwrap()[0].consumer, "prod/db/uid-1");
        assert_eq!(numa.siblings.as_ref().unwrap()[0].name, "1");
        assert_eq!(status.topology_policy.as_deref(), Some(TOPOLOGY_POLICY_NONE));
        assert_eq!(status.conditions.as_ref().unwrap()[0].condition_type, "AgentReady");
        let spec = &cnr.spec;
        assert_eq!(spec.taints.as_ref().unwrap()[0].qos_level.as_deref(), Some("reclaimed_cores"));
        assert_eq!(spec.node_resource_properties.as_ref().unwrap().len(), 2);

        // Written back (as JSON, the API server's form) and read again: the same.
        let json = serde_json::to_value(&cnr).unwrap();
        let again: CustomNodeResource = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(again, cnr);
        // Nothing dropped: the written JSON equals the YAML read as plain JSON.
        let plain: serde_json::Value = serde_saphyr::from_str(CNR).unwrap();
        assert_eq!(json, plain);
    }

    #[test]
    fn an_empty_status_and_spec_read() {
        let text = "apiVersion: node.katalyst.kubewharf.io/v1alpha1\nkind: CustomNodeResource\nmetadata: {name: n}\nspec: {}\nstatus: {}\n";
        let cnr: CustomNodeResource = serde_saphyr::from_str(text).unwrap();
        assert_eq!(cnr.status, Some(CustomNodeResourceStatus::default()));
        assert_eq!(cnr.spec, CustomNodeResourceSpec::default());
    }
}
