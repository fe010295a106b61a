//! Custom resource types, wire-compatible with Koordinator's (and one of Katalyst's).
//!
//! | kind | group/version | scope | status subresource |
//! |---|---|---|---|
//! | [`NodeMetric`] | `slo.koordinator.sh/v1alpha1` | Cluster | yes |
//! | [`NodeSLO`] | `slo.koordinator.sh/v1alpha1` | Cluster | yes |
//! | [`ClusterColocationProfile`] | `config.koordinator.sh/v1alpha1` | Cluster | yes |
//! | [`Reservation`] | `scheduling.koordinator.sh/v1alpha1` | Cluster | yes |
//! | [`PodMigrationJob`] | `scheduling.koordinator.sh/v1alpha1` | Cluster | yes |
//! | [`Device`] | `scheduling.koordinator.sh/v1alpha1` | Cluster | no |
//! | [`ElasticQuota`] | `scheduling.sigs.k8s.io/v1alpha1` | Namespaced | no |
//! | [`PodGroup`] | `scheduling.sigs.k8s.io/v1alpha1` | Namespaced | no |
//! | [`CustomNodeResource`] | `node.katalyst.kubewharf.io/v1alpha1` | Cluster | yes |
//!
//! The last is Katalyst's, not Koordinator's (its node report, written by
//! a node running the Katalyst node policy). JSON field names are the Go
//! JSON names of the reference. Go's `omitempty`
//! fields are `Option`s, so the presence of a field survives a round trip
//! (an object read and written back is unchanged). Enumerations of the
//! reference are plain strings (with `pub const` values where useful), so
//! values a newer reference adds are kept rather than rejected.
//!
//! Use [`all_crds`] to install the definitions. It post-processes what
//! `kube`'s derive produces (`T::crd()`) to match the reference CRDs; see its
//! documentation.

pub mod colocation_profile;
pub mod common;
pub mod custom_node_resource;
pub mod device;
pub mod elastic_quota;
pub mod node_metric;
pub mod node_slo;
pub mod pod_group;
pub mod pod_migration_job;
pub mod reservation;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use kube::CustomResourceExt;
use serde_json::Value;

pub use colocation_profile::{
    ClusterColocationProfile, ClusterColocationProfileSpec, ClusterColocationProfileStatus,
};
pub use common::{JsonObject, ResourceList, parse_go_duration, same_go_duration};
pub use custom_node_resource::{
    CnrAllocation, CnrAttribute, CnrCondition, CnrProperty, CnrResources, CnrSibling, CnrTaint,
    CustomNodeResource, CustomNodeResourceSpec, CustomNodeResourceStatus, TopologyZone,
};
pub use device::{
    Device, DeviceAllocation, DeviceAllocationItem, DeviceInfo, DeviceSpec, DeviceStatus,
    DeviceTopology, VirtualFunction, VirtualFunctionGroup,
};
pub use elastic_quota::{ElasticQuota, ElasticQuotaSpec, ElasticQuotaStatus};
pub use node_metric::{
    AggregatePolicy, AggregatedUsage, AggregationType, HostApplicationMetricInfo, NodeMetric,
    NodeMetricCollectPolicy, NodeMetricInfo, NodeMetricSpec, NodeMetricStatus, PodMetricInfo,
    ReclaimableMetric, ResourceMap,
};
pub use node_slo::{
    BlkIOQOSCfg, BlockCfg, CPUBurstStrategy, CPUQOSCfg, CgroupPath, HostApplicationSpec,
    HostApplicationStrategy, IOCfg, MemoryQOSCfg, NetworkQOSCfg, NodeSLO, NodeSLOSpec,
    NodeSLOStatus, ResctrlQOSCfg, ResourceQOS, ResourceQOSPolicies, ResourceQOSStrategy,
    ResourceThresholdStrategy, SystemStrategy,
};
pub use pod_group::{PodGroup, PodGroupSpec, PodGroupStatus};
pub use pod_migration_job::{
    PodMigrateReservationOptions, PodMigrationJob, PodMigrationJobCondition,
    PodMigrationJobPreemptedReservation, PodMigrationJobPreemptionOptions, PodMigrationJobSpec,
    PodMigrationJobStatus,
};
pub use reservation::{
    PreAllocationPolicy, Reservation, ReservationCondition, ReservationControllerReference,
    ReservationOwner, ReservationSpec, ReservationStatus, ReservationTemplateSpec,
};

/// Every CRD, in this order: NodeMetric, NodeSLO, ClusterColocationProfile,
/// Reservation, PodMigrationJob, Device, ElasticQuota, PodGroup,
/// CustomNodeResource.
///
/// The definitions are `kube`'s derived ones (`T::crd()`), adjusted to match
/// the reference CRDs:
///
/// * the `nullable: true` flags kube's schema generator puts on every optional
///   field are removed (the reference has none, so the API server prunes
///   `null`s there as it does for Koordinator), except on
///   `PodMigrationJob.status.conditions[].lastProbeTime/lastTransitionTime`,
///   which the reference marks nullable;
/// * the root schema loses its `title`;
/// * Device, ElasticQuota and PodGroup lose the status subresource (the
///   reference CRDs have none; clients update `status` with the object);
/// * NodeMetric's `spec` is optional, as in the reference (Go
///   `json:"spec,omitempty"`): an agent may create its NodeMetric before a
///   manager wrote the spec, and reads a missing spec as the default one.
///
/// Each schema is structural and accepted by kube-apiserver 1.20.
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    const PMJ_CONDITION_TIMES: &[&[&str]] = &[
        &["status", "conditions", "lastProbeTime"],
        &["status", "conditions", "lastTransitionTime"],
    ];
    vec![
        optional_spec(finalize(NodeMetric::crd(), true, &[])),
        finalize(NodeSLO::crd(), true, &[]),
        finalize(ClusterColocationProfile::crd(), true, &[]),
        finalize(Reservation::crd(), true, &[]),
        finalize(PodMigrationJob::crd(), true, PMJ_CONDITION_TIMES),
        finalize(Device::crd(), false, &[]),
        finalize(ElasticQuota::crd(), false, &[]),
        finalize(PodGroup::crd(), false, &[]),
        finalize(CustomNodeResource::crd(), true, &[]),
    ]
}

/// Drops `spec` from the root schema's required properties (kube's derive
/// requires it because the Rust field is not an `Option`).
fn optional_spec(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        let schema = version.schema.as_mut().and_then(|v| v.open_api_v3_schema.as_mut());
        if let Some(schema) = schema
            && let Some(required) = schema.required.as_mut()
        {
            required.retain(|r| r != "spec");
            if required.is_empty() {
                schema.required = None;
            }
        }
    }
    crd
}

/// Applies the adjustments documented on [`all_crds`] to one definition.
/// `nullable` lists property paths (array items are entered implicitly) that
/// keep `nullable: true`.
fn finalize(
    mut crd: CustomResourceDefinition,
    status_subresource: bool,
    nullable: &[&[&str]],
) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        if !status_subresource {
            version.subresources = None;
        }
        let Some(validation) = version.schema.as_mut() else {
            continue;
        };
        let Some(schema) = validation.open_api_v3_schema.take() else {
            continue;
        };
        let mut value = serde_json::to_value(schema).expect("JSONSchemaProps serializes");
        strip_nullable(&mut value);
        if let Some(root) = value.as_object_mut() {
            root.remove("title");
        }
        for path in nullable {
            if let Some(node) = property_at(&mut value, path)
                && let Some(node) = node.as_object_mut()
            {
                node.insert("nullable".into(), Value::Bool(true));
            }
        }
        let schema: JSONSchemaProps =
            serde_json::from_value(value).expect("adjusted schema deserializes");
        validation.open_api_v3_schema = Some(schema);
    }
    crd
}

/// Removes `nullable` from a schema node and all its sub-schemas.
fn strip_nullable(schema: &mut Value) {
    let Some(node) = schema.as_object_mut() else {
        return;
    };
    node.remove("nullable");
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        properties.values_mut().for_each(strip_nullable);
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(sub) = node.get_mut(key) {
            match sub {
                Value::Array(items) => items.iter_mut().for_each(strip_nullable),
                other => strip_nullable(other),
            }
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(subs)) = node.get_mut(key) {
            subs.iter_mut().for_each(strip_nullable);
        }
    }
}

/// The schema of the property at `path`, descending through array items.
fn property_at<'a>(schema: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    let mut node = schema;
    for name in path {
        while node.get("type").and_then(Value::as_str) == Some("array") {
            node = node.get_mut("items")?;
        }
        node = node.get_mut("properties")?.get_mut(*name)?;
    }
    Some(node)
}
