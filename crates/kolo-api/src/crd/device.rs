//! `Device` (`scheduling.koordinator.sh/v1alpha1`, cluster-scoped): the
//! devices (GPU, RDMA, FPGA, ...) of one node, named after the node, and what
//! the scheduler allocated from them.
//!
//! Reference: Koordinator `apis/scheduling/v1alpha1/device_types.go`.
//!
//! The reference CRD has **no status subresource**: `status` is written with
//! ordinary updates of the whole object. [`crate::crd::all_crds`] drops the
//! subresource that kube's derive would add.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{ResourceList, resource_list_schema};

/// Device type `gpu`.
pub const DEVICE_TYPE_GPU: &str = "gpu";
/// Device type `fpga`.
pub const DEVICE_TYPE_FPGA: &str = "fpga";
/// Device type `rdma`.
pub const DEVICE_TYPE_RDMA: &str = "rdma";
/// Device type `xpu`.
pub const DEVICE_TYPE_XPU: &str = "xpu";

/// The devices of a node.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "scheduling.koordinator.sh",
    version = "v1alpha1",
    kind = "Device",
    plural = "devices",
    status = "DeviceStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "The devices of one node (named after the node) and their allocations."
)]
#[serde(rename_all = "camelCase")]
pub struct DeviceSpec {
    /// The devices of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<DeviceInfo>>,
}

/// One device.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceInfo {
    /// Device type: `gpu`, `fpga`, `rdma` or `xpu`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub device_type: Option<String>,
    /// Free-form properties of the device, usable for selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// The device UUID (JSON name `id`).
    #[serde(default, rename = "id", skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Minor number of the device, from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minor: Option<i32>,
    /// Physical module id of the device.
    #[serde(default, rename = "moduleID", skip_serializing_if = "Option::is_none")]
    pub module_id: Option<i32>,
    /// Whether the device is healthy. Always present on the wire; the API
    /// server defaults it to `false`.
    #[schemars(extend("default" = false))]
    pub health: bool,
    /// The device's resources, e.g. `koordinator.sh/gpu-core: 100`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_list_schema")]
    pub resources: Option<ResourceList>,
    /// Where the device sits in the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<DeviceTopology>,
    /// Groups of virtual functions (SR-IOV) of the device.
    #[serde(default, rename = "vfGroups", skip_serializing_if = "Option::is_none")]
    pub vf_groups: Option<Vec<VirtualFunctionGroup>>,
    /// Health conditions of the device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// The position of a device in the machine topology.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct DeviceTopology {
    /// The CPU socket the device belongs to.
    #[serde(rename = "socketID")]
    pub socket_id: i32,
    /// The NUMA node the device belongs to (unique across sockets).
    #[serde(rename = "nodeID")]
    pub node_id: i32,
    /// The PCIe switch the device is connected to (unique across NUMA nodes).
    #[serde(rename = "pcieID")]
    pub pcie_id: String,
    /// PCI address `domain:bus:device.function`.
    #[serde(default, rename = "busID", skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<String>,
}

/// A group of virtual functions sharing the same labels.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct VirtualFunctionGroup {
    /// Free-form properties of the group's virtual functions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// The virtual functions of the group.
    #[serde(default, rename = "vfs", skip_serializing_if = "Option::is_none")]
    pub vfs: Option<Vec<VirtualFunction>>,
}

/// One virtual function.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct VirtualFunction {
    /// Minor number of the virtual function, from 0.
    pub minor: i32,
    /// PCI address `domain:bus:device.function`.
    #[serde(default, rename = "busID", skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<String>,
}

/// What has been allocated from the node's devices.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct DeviceStatus {
    /// Allocations, one entry per device type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocations: Option<Vec<DeviceAllocation>>,
}

/// The allocations of one device type.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct DeviceAllocation {
    /// Device type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub device_type: Option<String>,
    /// The pods holding devices of this type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<DeviceAllocationItem>>,
}

/// One pod's share of the devices of a type.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct DeviceAllocationItem {
    /// Pod name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Pod namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Pod UID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Minor numbers of the devices the pod holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minors: Option<Vec<i32>>,
}
