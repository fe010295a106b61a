//! The four co-location resources of a node and the status patch that
//! publishes them.
//!
//! The reference writes each amount into **both** `status.capacity` and
//! `status.allocatable`, and deletes it from both when the resource is
//! withdrawn. [`ExtendedResources::status_patch`] is the equivalent JSON
//! merge patch (RFC 7386) for the node's `status` subresource: it names only
//! these four keys, so the kubelet's own resources are left alone, and a
//! `null` deletes a key.

use kolo_api::names::resource as names;
use kolo_api::quantity::{Format, Quantity};
use kolo_core::node::NodeView;
use kolo_core::resources::{ResourceName, ResourceVector};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// One of the four resources the manager publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ColocationResource {
    /// `kubernetes.io/batch-cpu` (milli-cores as a plain integer).
    BatchCpu,
    /// `kubernetes.io/batch-memory` (bytes).
    BatchMemory,
    /// `kubernetes.io/mid-cpu` (milli-cores as a plain integer).
    MidCpu,
    /// `kubernetes.io/mid-memory` (bytes).
    MidMemory,
}

impl ColocationResource {
    /// All four, in the order they are reported.
    pub const ALL: [ColocationResource; 4] = [
        ColocationResource::BatchCpu,
        ColocationResource::BatchMemory,
        ColocationResource::MidCpu,
        ColocationResource::MidMemory,
    ];

    /// The Kubernetes resource name.
    pub fn name(self) -> &'static str {
        match self {
            ColocationResource::BatchCpu => names::BATCH_CPU,
            ColocationResource::BatchMemory => names::BATCH_MEMORY,
            ColocationResource::MidCpu => names::MID_CPU,
            ColocationResource::MidMemory => names::MID_MEMORY,
        }
    }

    /// The slot of a [`ResourceVector`].
    pub fn resource_name(self) -> ResourceName {
        match self {
            ColocationResource::BatchCpu => ResourceName::BatchCpu,
            ColocationResource::BatchMemory => ResourceName::BatchMemory,
            ColocationResource::MidCpu => ResourceName::MidCpu,
            ColocationResource::MidMemory => ResourceName::MidMemory,
        }
    }

    /// Whether the amount is CPU (milli-cores) rather than memory (bytes).
    pub fn is_cpu(self) -> bool {
        matches!(self, ColocationResource::BatchCpu | ColocationResource::MidCpu)
    }

    /// The canonical Kubernetes quantity string of `amount`, as the
    /// reference writes it (`resource.NewQuantity` and `String()`): CPU
    /// resources in decimal SI (`25000` is written `25k`, `14800` stays
    /// `14800`), memory in binary SI when it is a whole number of
    /// Ki/Mi/Gi... (`32Gi`), else as plain bytes (`33000000000`).
    pub fn quantity(self, amount: i64) -> String {
        let format = if self.is_cpu() { Format::DecimalSI } else { Format::BinarySI };
        Quantity::from_value(amount, format).to_string()
    }
}

/// The amounts of the four resources; `None` means "not published" (absent
/// from the node's status, or to be removed from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtendedResources {
    /// `kubernetes.io/batch-cpu`, milli-cores.
    pub batch_cpu: Option<i64>,
    /// `kubernetes.io/batch-memory`, bytes.
    pub batch_memory: Option<i64>,
    /// `kubernetes.io/mid-cpu`, milli-cores.
    pub mid_cpu: Option<i64>,
    /// `kubernetes.io/mid-memory`, bytes.
    pub mid_memory: Option<i64>,
}

impl ExtendedResources {
    /// None of the four (what a reset publishes).
    pub const NONE: ExtendedResources =
        ExtendedResources { batch_cpu: None, batch_memory: None, mid_cpu: None, mid_memory: None };

    /// The amounts in the node's current `status.allocatable` (the values
    /// the reference compares new ones against). Deprecated and Katalyst
    /// spellings of the batch resources read as batch, as everywhere in kolo.
    pub fn from_status(node: &NodeView) -> ExtendedResources {
        let a = node.allocatable();
        let mut out = ExtendedResources::NONE;
        for r in ColocationResource::ALL {
            out.set(r, a.get(r.resource_name()));
        }
        out
    }

    /// The amount of `resource`.
    pub fn get(&self, resource: ColocationResource) -> Option<i64> {
        match resource {
            ColocationResource::BatchCpu => self.batch_cpu,
            ColocationResource::BatchMemory => self.batch_memory,
            ColocationResource::MidCpu => self.mid_cpu,
            ColocationResource::MidMemory => self.mid_memory,
        }
    }

    /// Sets (or with `None`, clears) the amount of `resource`.
    pub fn set(&mut self, resource: ColocationResource, amount: Option<i64>) {
        let slot = match resource {
            ColocationResource::BatchCpu => &mut self.batch_cpu,
            ColocationResource::BatchMemory => &mut self.batch_memory,
            ColocationResource::MidCpu => &mut self.mid_cpu,
            ColocationResource::MidMemory => &mut self.mid_memory,
        };
        *slot = amount;
    }

    /// The JSON merge patch of the node's `status` that publishes these
    /// amounts: each resource set in both `capacity` and `allocatable`, or
    /// `null` (deleted) when `None`.
    ///
    /// ```
    /// # use kolo_manager::noderesource::ExtendedResources;
    /// let r = ExtendedResources { batch_cpu: Some(25_000), batch_memory: Some(33_000_000_000),
    ///                             mid_cpu: None, mid_memory: None };
    /// let patch = r.status_patch();
    /// assert_eq!(patch["status"]["allocatable"]["kubernetes.io/batch-cpu"], "25k");
    /// assert_eq!(patch["status"]["capacity"]["kubernetes.io/batch-memory"], "33000000000");
    /// assert!(patch["status"]["allocatable"]["kubernetes.io/mid-cpu"].is_null());
    /// ```
    pub fn status_patch(&self) -> Value {
        let list: Map<String, Value> = ColocationResource::ALL
            .into_iter()
            .map(|r| {
                let value = self.get(r).map_or(Value::Null, |v| Value::String(r.quantity(v)));
                (r.name().to_owned(), value)
            })
            .collect();
        json!({ "status": { "capacity": list.clone(), "allocatable": list } })
    }

    /// Writes these amounts into a resource vector (a simulated node's
    /// capacity or allocatable): set where `Some`, removed where `None`.
    pub fn apply_to(&self, vector: &mut ResourceVector) {
        for r in ColocationResource::ALL {
            match self.get(r) {
                Some(v) => vector.set(r.resource_name(), v),
                None => {
                    vector.remove(r.resource_name());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Node;

    use super::*;

    #[test]
    fn patch_sets_and_deletes_in_both_lists() {
        let r = ExtendedResources {
            batch_cpu: Some(25_000),
            batch_memory: Some(33 << 30),
            mid_cpu: Some(1_500),
            mid_memory: None,
        };
        let patch = r.status_patch();
        for list in ["capacity", "allocatable"] {
            let l = &patch["status"][list];
            assert_eq!(l["kubernetes.io/batch-cpu"], "25k");
            assert_eq!(l["kubernetes.io/batch-memory"], "33Gi");
            assert_eq!(l["kubernetes.io/mid-cpu"], "1500");
            assert_eq!(l["kubernetes.io/mid-memory"], Value::Null);
            assert_eq!(l.as_object().unwrap().len(), 4);
        }
        let reset = ExtendedResources::NONE.status_patch();
        assert!(reset["status"]["allocatable"].as_object().unwrap().values().all(Value::is_null));
    }

    #[test]
    fn patch_round_trips_through_a_node() {
        // Apply the merge patch to a node and read it back: the published
        // numbers come back exactly (the quantity strings are canonical).
        let mut node = serde_json::json!({
            "metadata": {"name": "n1"},
            "status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "kubernetes.io/mid-cpu": "7"},
                "allocatable": {"cpu": "8", "memory": "32Gi", "kubernetes.io/mid-cpu": "7"}
            }
        });
        let r = ExtendedResources {
            batch_cpu: Some(12_345),
            batch_memory: Some(1_000_000_001),
            mid_cpu: None,
            mid_memory: Some(3 << 20),
        };
        json_patch::merge(&mut node, &r.status_patch());
        let node: Node = serde_json::from_value(node).unwrap();
        let view = NodeView::from_node(&node).unwrap();
        assert_eq!(ExtendedResources::from_status(&view), r);
        assert_eq!(view.allocatable().cpu(), 8_000, "kubelet resources untouched");
        assert_eq!(view.capacity().get(ResourceName::MidCpu), None, "deleted from capacity");

        let mut vector = *view.allocatable();
        ExtendedResources::NONE.apply_to(&mut vector);
        assert_eq!(vector.get(ResourceName::BatchCpu), None);
        r.apply_to(&mut vector);
        assert_eq!(vector.get(ResourceName::BatchCpu), Some(12_345));
    }
}
