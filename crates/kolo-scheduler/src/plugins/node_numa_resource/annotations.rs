//! The pod and node annotations NodeNUMAResource reads and writes (spec
//! §6.2), and the policy enums they carry.
//!
//! Every reader returns an [`AnnotationError`] naming the annotation and the
//! field on malformed input; nothing here panics on what a user or another
//! component wrote. Policy values are parsed strictly: an unknown value is
//! an error rather than a silently different policy (Koordinator stores the
//! raw string and then treats an unknown policy as "no policy").

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kolo_api::names::annotation;
use kolo_core::resources::ResourceVector;
use serde::{Deserialize, Serialize};

use super::cpuset::CpuSet;

/// Kubelet's CPU manager settings as koordlet reports them on the node.
/// Missing from `kolo_api::names` because only this plugin reads it.
pub const KUBELET_CPU_MANAGER_POLICY: &str = "kubelet.koordinator.sh/cpu-manager-policy";

/// The kubelet CPU manager option that forces whole physical cores.
pub const KUBELET_FULL_PCPUS_ONLY_OPTION: &str = "full-pcpus-only";

/// A malformed annotation or label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {field}: {reason}")]
pub struct AnnotationError {
    /// The annotation (or label) key.
    pub key: &'static str,
    /// The field inside it (`"(json)"` when the document itself does not
    /// parse, `"(value)"` for a plain label).
    pub field: &'static str,
    /// What is wrong (quotes the value).
    pub reason: String,
}

impl AnnotationError {
    fn new(key: &'static str, field: &'static str, reason: impl Into<String>) -> AnnotationError {
        AnnotationError { key, field, reason: reason.into() }
    }

    fn json(key: &'static str, e: &serde_json::Error) -> AnnotationError {
        AnnotationError::new(key, "(json)", e.to_string())
    }
}

/// Defines a string-valued policy enum: its spelling, strict parsing and
/// serde as that spelling.
macro_rules! policy_enum {
    (
        $(#[$doc:meta])*
        $name:ident { $( $(#[$vdoc:meta])* $variant:ident = $text:literal ),+ $(,)? }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vdoc])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The Kubernetes spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }

            /// Parses the exact spelling.
            pub fn parse(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }

            /// The accepted spellings, for error messages.
            pub fn expected() -> String {
                [$($text),+].join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                $name::parse(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "unknown {} {:?} (expected one of {})",
                        stringify!($name), text, $name::expected()
                    ))
                })
            }
        }
    };
}

policy_enum! {
    /// How a pod's CPUs are bound (`requiredCPUBindPolicy` /
    /// `preferredCPUBindPolicy`).
    CpuBindPolicy {
        /// Use the scheduler's default (`defaultCPUBindPolicy`).
        Default = "Default",
        /// Whole physical cores: all hyper-threads of each core.
        FullPCPUs = "FullPCPUs",
        /// One hyper-thread per physical core first, then the siblings.
        SpreadByPCPUs = "SpreadByPCPUs",
        /// No cpuset; the node agent bursts within a constrained pool.
        ConstrainedBurst = "ConstrainedBurst",
    }
}

impl CpuBindPolicy {
    /// Whether the policy asks for a cpuset (FullPCPUs or SpreadByPCPUs).
    pub fn binds_cpus(self) -> bool {
        matches!(self, CpuBindPolicy::FullPCPUs | CpuBindPolicy::SpreadByPCPUs)
    }
}

policy_enum! {
    /// Which other exclusive pods a pod's CPUs must stay away from
    /// (`preferredCPUExclusivePolicy`).
    CpuExclusivePolicy {
        /// No exclusion.
        None = "None",
        /// Avoid physical cores that hold CPUs of other PCPULevel pods.
        PCPULevel = "PCPULevel",
        /// Avoid NUMA nodes that hold CPUs of other NUMANodeLevel pods.
        NUMANodeLevel = "NUMANodeLevel",
    }
}

// The enum comes from `policy_enum!`, which cannot derive it.
#[allow(clippy::derivable_impls)]
impl Default for CpuExclusivePolicy {
    fn default() -> Self {
        CpuExclusivePolicy::None
    }
}

policy_enum! {
    /// A NUMA topology policy, of a pod (`numa-topology-spec`) or a node
    /// (label `node.koordinator.sh/numa-topology-policy`).
    NumaTopologyPolicy {
        /// No NUMA alignment.
        None = "None",
        /// Align when possible; never reject for it.
        BestEffort = "BestEffort",
        /// Admit only placements on a minimal set of NUMA nodes.
        Restricted = "Restricted",
        /// Admit only placements on one NUMA node.
        SingleNUMANode = "SingleNUMANode",
    }
}

policy_enum! {
    /// A node's forced CPU bind policy (label
    /// `node.koordinator.sh/cpu-bind-policy`).
    NodeCpuBindPolicy {
        /// Pods choose.
        None = "None",
        /// Every cpuset on the node is whole physical cores.
        FullPCPUsOnly = "FullPCPUsOnly",
        /// Every cpuset on the node is spread over physical cores.
        SpreadByPCPUs = "SpreadByPCPUs",
    }
}

impl NodeCpuBindPolicy {
    /// The pod bind policy the node forces, if any.
    pub fn required(self) -> Option<CpuBindPolicy> {
        match self {
            NodeCpuBindPolicy::None => None,
            NodeCpuBindPolicy::FullPCPUsOnly => Some(CpuBindPolicy::FullPCPUs),
            NodeCpuBindPolicy::SpreadByPCPUs => Some(CpuBindPolicy::SpreadByPCPUs),
        }
    }
}

policy_enum! {
    /// Which NUMA node (or socket) a cpuset is taken from first (label
    /// `node.koordinator.sh/numa-allocate-strategy`, or from the arguments).
    NumaAllocateStrategy {
        /// Pack: the node with the fewest free CPUs that still fits.
        MostAllocated = "MostAllocated",
        /// Spread: the node with the most free CPUs.
        LeastAllocated = "LeastAllocated",
        /// Spread evenly; for cpuset choice it orders like LeastAllocated.
        DistributeEvenly = "DistributeEvenly",
    }
}

policy_enum! {
    /// Whether a SingleNUMANode pod needs its NUMA node to itself.
    SingleNumaNodeExclusive {
        /// The NUMA node must not hold other single-NUMA pods.
        Required = "Required",
        /// Prefer such a node.
        Preferred = "Preferred",
    }
}

/// Reads an optional policy field: absent or `""` is `None`.
fn policy_field<T>(
    key: &'static str,
    field: &'static str,
    value: Option<String>,
    parse: impl Fn(&str) -> Option<T>,
    expected: impl Fn() -> String,
) -> Result<Option<T>, AnnotationError> {
    match value.as_deref() {
        None | Some("") => Ok(None),
        Some(text) => parse(text).map(Some).ok_or_else(|| {
            AnnotationError::new(
                key,
                field,
                format!("unknown value {text:?} (expected one of {})", expected()),
            )
        }),
    }
}

/// Pod annotation `scheduling.koordinator.sh/resource-spec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// `requiredCPUBindPolicy`: the pod is unschedulable unless bound this way.
    #[serde(rename = "requiredCPUBindPolicy", skip_serializing_if = "Option::is_none")]
    pub required_cpu_bind_policy: Option<CpuBindPolicy>,
    /// `preferredCPUBindPolicy`.
    #[serde(rename = "preferredCPUBindPolicy", skip_serializing_if = "Option::is_none")]
    pub preferred_cpu_bind_policy: Option<CpuBindPolicy>,
    /// `preferredCPUExclusivePolicy`.
    #[serde(rename = "preferredCPUExclusivePolicy", skip_serializing_if = "Option::is_none")]
    pub preferred_cpu_exclusive_policy: Option<CpuExclusivePolicy>,
}

impl ResourceSpec {
    /// Parses the annotation value.
    pub fn parse(json: &str) -> Result<ResourceSpec, AnnotationError> {
        const KEY: &str = annotation::RESOURCE_SPEC;
        // Strings first, then each field on its own, so an error names the
        // field (serde's own message names only line and column).
        #[derive(Deserialize)]
        struct Raw {
            #[serde(rename = "requiredCPUBindPolicy")]
            required: Option<String>,
            #[serde(rename = "preferredCPUBindPolicy")]
            preferred: Option<String>,
            #[serde(rename = "preferredCPUExclusivePolicy")]
            exclusive: Option<String>,
        }
        let raw: Raw = serde_json::from_str(json).map_err(|e| AnnotationError::json(KEY, &e))?;
        Ok(ResourceSpec {
            required_cpu_bind_policy: policy_field(
                KEY,
                "requiredCPUBindPolicy",
                raw.required,
                CpuBindPolicy::parse,
                CpuBindPolicy::expected,
            )?,
            preferred_cpu_bind_policy: policy_field(
                KEY,
                "preferredCPUBindPolicy",
                raw.preferred,
                CpuBindPolicy::parse,
                CpuBindPolicy::expected,
            )?,
            preferred_cpu_exclusive_policy: policy_field(
                KEY,
                "preferredCPUExclusivePolicy",
                raw.exclusive,
                CpuExclusivePolicy::parse,
                CpuExclusivePolicy::expected,
            )?,
        })
    }

    /// The annotation value.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Pod annotation `scheduling.koordinator.sh/numa-topology-spec`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NumaTopologySpec {
    /// `numaTopologyPolicy` (`None` when absent or empty).
    pub numa_topology_policy: Option<NumaTopologyPolicy>,
    /// `singleNUMANodeExclusive`.
    pub single_numa_node_exclusive: Option<SingleNumaNodeExclusive>,
}

impl NumaTopologySpec {
    /// Parses the annotation value.
    pub fn parse(json: &str) -> Result<NumaTopologySpec, AnnotationError> {
        const KEY: &str = annotation::NUMA_TOPOLOGY_SPEC;
        #[derive(Deserialize)]
        struct Raw {
            #[serde(rename = "numaTopologyPolicy")]
            policy: Option<String>,
            #[serde(rename = "singleNUMANodeExclusive")]
            exclusive: Option<String>,
        }
        let raw: Raw = serde_json::from_str(json).map_err(|e| AnnotationError::json(KEY, &e))?;
        Ok(NumaTopologySpec {
            numa_topology_policy: policy_field(
                KEY,
                "numaTopologyPolicy",
                raw.policy,
                NumaTopologyPolicy::parse,
                NumaTopologyPolicy::expected,
            )?,
            single_numa_node_exclusive: policy_field(
                KEY,
                "singleNUMANodeExclusive",
                raw.exclusive,
                SingleNumaNodeExclusive::parse,
                SingleNumaNodeExclusive::expected,
            )?,
        })
    }
}

/// The resources taken from one NUMA node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNodeResources {
    /// The NUMA node id.
    pub node: u32,
    /// The amounts (cpu in milli-cores, memory in bytes).
    pub resources: ResourceVector,
}

/// Pod annotation `scheduling.koordinator.sh/resource-status`, written by
/// PreBind: `{"cpuset":"0-3","numaNodeResources":[{"node":0,"resources":{"cpu":"4","memory":"8Gi"}}]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceStatus {
    /// The bound CPUs (empty: no cpuset).
    pub cpuset: CpuSet,
    /// The resources taken per NUMA node, by ascending node id.
    pub numa_node_resources: Vec<NumaNodeResources>,
}

#[derive(Serialize, Deserialize)]
struct RawNumaNodeResource {
    node: u32,
    #[serde(default)]
    resources: BTreeMap<String, KubeQuantity>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawResourceStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    cpuset: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    numa_node_resources: Vec<RawNumaNodeResource>,
}

impl ResourceStatus {
    /// The annotation value. Fields that are empty are left out, as
    /// Koordinator's `omitempty` does.
    pub fn to_json(&self) -> String {
        let raw = RawResourceStatus {
            cpuset: self.cpuset.to_string(),
            numa_node_resources: self
                .numa_node_resources
                .iter()
                .map(|n| RawNumaNodeResource {
                    node: n.node,
                    resources: n.resources.to_resource_list(),
                })
                .collect(),
        };
        // Serializing strings, integers and maps of strings cannot fail.
        serde_json::to_string(&raw).unwrap_or_default()
    }

    /// Parses the annotation value (of an already bound pod, to rebuild the
    /// node's allocation state).
    pub fn parse(json: &str) -> Result<ResourceStatus, AnnotationError> {
        const KEY: &str = annotation::RESOURCE_STATUS;
        let raw: RawResourceStatus =
            serde_json::from_str(json).map_err(|e| AnnotationError::json(KEY, &e))?;
        let cpuset = CpuSet::parse(&raw.cpuset)
            .map_err(|e| AnnotationError::new(KEY, "cpuset", e.to_string()))?;
        let numa_node_resources = raw
            .numa_node_resources
            .iter()
            .map(|n| {
                ResourceVector::from_resource_list(&n.resources)
                    .map(|resources| NumaNodeResources { node: n.node, resources })
                    .map_err(|e| AnnotationError::new(KEY, "numaNodeResources", e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        Ok(ResourceStatus { cpuset, numa_node_resources })
    }
}

/// One logical CPU of the node annotation `node.koordinator.sh/cpu-topology`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTopologyEntry {
    /// Logical CPU id.
    pub id: u32,
    /// Physical core id (unique within its socket).
    pub core: u32,
    /// Socket id.
    pub socket: u32,
    /// NUMA node id.
    pub node: u32,
}

/// Node annotation `node.koordinator.sh/cpu-topology`:
/// `{"detail":[{"id":0,"core":0,"socket":0,"node":0},...]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTopologyAnnotation {
    /// Every logical CPU.
    #[serde(default)]
    pub detail: Vec<CpuTopologyEntry>,
}

impl CpuTopologyAnnotation {
    /// Parses the annotation value.
    pub fn parse(json: &str) -> Result<CpuTopologyAnnotation, AnnotationError> {
        serde_json::from_str(json)
            .map_err(|e| AnnotationError::json(annotation::NODE_CPU_TOPOLOGY, &e))
    }
}

/// One entry of node annotation `node.koordinator.sh/pod-cpu-allocs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodCpuAlloc {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// Pod uid.
    pub uid: String,
    /// The CPUs the pod holds.
    pub cpuset: CpuSet,
    /// Whether kubelet's static CPU manager (not kolo) assigned them.
    pub managed_by_kubelet: bool,
}

/// Parses `node.koordinator.sh/pod-cpu-allocs`.
pub fn parse_pod_cpu_allocs(json: &str) -> Result<Vec<PodCpuAlloc>, AnnotationError> {
    const KEY: &str = annotation::NODE_POD_CPU_ALLOCS;
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Raw {
        #[serde(default)]
        namespace: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        uid: String,
        #[serde(default)]
        cpuset: String,
        #[serde(default)]
        managed_by_kubelet: bool,
    }
    let raw: Vec<Raw> = serde_json::from_str(json).map_err(|e| AnnotationError::json(KEY, &e))?;
    raw.into_iter()
        .map(|r| {
            let cpuset = CpuSet::parse(&r.cpuset).map_err(|e| {
                AnnotationError::new(KEY, "cpuset", format!("pod {}/{}: {e}", r.namespace, r.name))
            })?;
            Ok(PodCpuAlloc {
                namespace: r.namespace,
                name: r.name,
                uid: r.uid,
                cpuset,
                managed_by_kubelet: r.managed_by_kubelet,
            })
        })
        .collect()
}

/// Node annotation `kubelet.koordinator.sh/cpu-manager-policy`:
/// `{"policy":"static","options":{"full-pcpus-only":"true"},"reservedCPUs":"0-1"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeletCpuManagerPolicy {
    /// `static` or `none`.
    pub policy: String,
    /// CPU manager policy options.
    pub options: BTreeMap<String, String>,
    /// CPUs kubelet keeps for system daemons.
    pub reserved_cpus: CpuSet,
}

impl KubeletCpuManagerPolicy {
    /// Parses the annotation value.
    pub fn parse(json: &str) -> Result<KubeletCpuManagerPolicy, AnnotationError> {
        const KEY: &str = KUBELET_CPU_MANAGER_POLICY;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Raw {
            #[serde(default)]
            policy: String,
            #[serde(default)]
            options: BTreeMap<String, String>,
            #[serde(default, rename = "reservedCPUs")]
            reserved_cpus: String,
        }
        let raw: Raw = serde_json::from_str(json).map_err(|e| AnnotationError::json(KEY, &e))?;
        let reserved_cpus = CpuSet::parse(&raw.reserved_cpus)
            .map_err(|e| AnnotationError::new(KEY, "reservedCPUs", e.to_string()))?;
        Ok(KubeletCpuManagerPolicy { policy: raw.policy, options: raw.options, reserved_cpus })
    }

    /// Static policy with `full-pcpus-only=true`: kubelet itself only hands
    /// out whole cores, so the node behaves as `FullPCPUsOnly`.
    pub fn full_pcpus_only(&self) -> bool {
        self.policy == "static"
            && self.options.get(KUBELET_FULL_PCPUS_ONLY_OPTION).is_some_and(|v| v == "true")
    }
}

/// The `reservedCPUs` of node annotation `node.koordinator.sh/reservation`
/// (the other fields belong to other plugins).
pub fn parse_node_reservation_cpus(json: &str) -> Result<CpuSet, AnnotationError> {
    const KEY: &str = annotation::NODE_RESERVATION;
    #[derive(Deserialize)]
    struct Raw {
        #[serde(default, rename = "reservedCPUs")]
        reserved_cpus: String,
    }
    let raw: Raw = serde_json::from_str(json).map_err(|e| AnnotationError::json(KEY, &e))?;
    CpuSet::parse(&raw.reserved_cpus)
        .map_err(|e| AnnotationError::new(KEY, "reservedCPUs", e.to_string()))
}

/// Node annotation `node.koordinator.sh/system-qos-resource`:
/// `{"cpuset":"0-1","cpusetExclusive":true}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemQosResource {
    /// CPUs for SYSTEM pods.
    pub cpuset: CpuSet,
    /// Whether no other pod may use them (default true).
    pub cpuset_exclusive: bool,
}

impl SystemQosResource {
    /// Parses the annotation value.
    pub fn parse(json: &str) -> Result<SystemQosResource, AnnotationError> {
        const KEY: &str = annotation::NODE_SYSTEM_QOS_RESOURCE;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Raw {
            #[serde(default)]
            cpuset: String,
            cpuset_exclusive: Option<bool>,
        }
        let raw: Raw = serde_json::from_str(json).map_err(|e| AnnotationError::json(KEY, &e))?;
        let cpuset = CpuSet::parse(&raw.cpuset)
            .map_err(|e| AnnotationError::new(KEY, "cpuset", e.to_string()))?;
        Ok(SystemQosResource { cpuset, cpuset_exclusive: raw.cpuset_exclusive.unwrap_or(true) })
    }
}

/// Parses a node label holding one policy value; `""` is absent.
pub(crate) fn parse_label<T>(
    key: &'static str,
    value: Option<&str>,
    parse: impl Fn(&str) -> Option<T>,
    expected: impl Fn() -> String,
) -> Result<Option<T>, AnnotationError> {
    policy_field(key, "(value)", value.map(str::to_owned), parse, expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kolo_core::resources::ResourceName;

    const GI: i64 = 1 << 30;

    #[test]
    fn resource_spec_parses_and_names_bad_fields() {
        let spec = ResourceSpec::parse(
            r#"{"requiredCPUBindPolicy":"FullPCPUs","preferredCPUExclusivePolicy":"PCPULevel"}"#,
        )
        .unwrap();
        assert_eq!(spec.required_cpu_bind_policy, Some(CpuBindPolicy::FullPCPUs));
        assert_eq!(spec.preferred_cpu_bind_policy, None);
        assert_eq!(spec.preferred_cpu_exclusive_policy, Some(CpuExclusivePolicy::PCPULevel));
        assert_eq!(
            spec.to_json(),
            r#"{"requiredCPUBindPolicy":"FullPCPUs","preferredCPUExclusivePolicy":"PCPULevel"}"#
        );
        assert_eq!(
            ResourceSpec::parse(r#"{"preferredCPUBindPolicy":""}"#).unwrap(),
            ResourceSpec::default()
        );

        let err = ResourceSpec::parse(r#"{"preferredCPUBindPolicy":"Whole"}"#).unwrap_err();
        assert_eq!(err.key, annotation::RESOURCE_SPEC);
        assert_eq!(err.field, "preferredCPUBindPolicy");
        assert!(err.to_string().contains("\"Whole\""), "{err}");
        let err = ResourceSpec::parse("{not json").unwrap_err();
        assert_eq!(err.field, "(json)");
        assert!(err.to_string().starts_with("scheduling.koordinator.sh/resource-spec"));
    }

    #[test]
    fn numa_topology_spec() {
        let spec = NumaTopologySpec::parse(
            r#"{"numaTopologyPolicy":"SingleNUMANode","singleNUMANodeExclusive":"Preferred"}"#,
        )
        .unwrap();
        assert_eq!(spec.numa_topology_policy, Some(NumaTopologyPolicy::SingleNUMANode));
        assert_eq!(spec.single_numa_node_exclusive, Some(SingleNumaNodeExclusive::Preferred));
        let err = NumaTopologySpec::parse(r#"{"numaTopologyPolicy":"Single"}"#).unwrap_err();
        assert_eq!(err.field, "numaTopologyPolicy");
    }

    #[test]
    fn resource_status_round_trip() {
        let status = ResourceStatus {
            cpuset: CpuSet::parse("0-3").unwrap(),
            numa_node_resources: vec![NumaNodeResources {
                node: 0,
                resources: ResourceVector::cpu_memory(4000, 8 * GI),
            }],
        };
        let json = status.to_json();
        assert_eq!(
            json,
            r#"{"cpuset":"0-3","numaNodeResources":[{"node":0,"resources":{"cpu":"4","memory":"8Gi"}}]}"#
        );
        assert_eq!(ResourceStatus::parse(&json).unwrap(), status);
        assert_eq!(ResourceStatus::default().to_json(), "{}");
        let err = ResourceStatus::parse(r#"{"cpuset":"3-1"}"#).unwrap_err();
        assert_eq!(err.field, "cpuset");
        let err = ResourceStatus::parse(
            r#"{"numaNodeResources":[{"node":1,"resources":{"cpu":"lots"}}]}"#,
        )
        .unwrap_err();
        assert_eq!(err.field, "numaNodeResources");
        assert!(err.reason.contains("lots"));
        let half = ResourceStatus::parse(
            r#"{"numaNodeResources":[{"node":1,"resources":{"cpu":"1500m"}}]}"#,
        )
        .unwrap();
        assert_eq!(half.numa_node_resources[0].resources.get(ResourceName::Cpu), Some(1500));
    }

    #[test]
    fn node_annotations() {
        let topo = CpuTopologyAnnotation::parse(
            r#"{"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":0,"socket":0,"node":0}]}"#,
        )
        .unwrap();
        assert_eq!(topo.detail.len(), 2);
        assert!(CpuTopologyAnnotation::parse(r#"{"detail":[{"id":-1}]}"#).is_err());

        let allocs = parse_pod_cpu_allocs(
            r#"[{"namespace":"ns","name":"a","uid":"u","cpuset":"2-3","managedByKubelet":true}]"#,
        )
        .unwrap();
        assert_eq!(allocs[0].cpuset.to_string(), "2-3");
        assert!(allocs[0].managed_by_kubelet);
        let err =
            parse_pod_cpu_allocs(r#"[{"namespace":"ns","name":"a","cpuset":"x"}]"#).unwrap_err();
        assert!(err.to_string().contains("pod ns/a"), "{err}");

        let kubelet = KubeletCpuManagerPolicy::parse(
            r#"{"policy":"static","options":{"full-pcpus-only":"true"},"reservedCPUs":"0-1"}"#,
        )
        .unwrap();
        assert!(kubelet.full_pcpus_only());
        assert_eq!(kubelet.reserved_cpus.to_string(), "0-1");
        assert!(!KubeletCpuManagerPolicy::parse(r#"{"policy":"none"}"#).unwrap().full_pcpus_only());

        assert_eq!(
            parse_node_reservation_cpus(r#"{"resources":{"cpu":"1"},"reservedCPUs":"4"}"#)
                .unwrap()
                .to_string(),
            "4"
        );
        let sys = SystemQosResource::parse(r#"{"cpuset":"0-1"}"#).unwrap();
        assert!(sys.cpuset_exclusive, "defaults to exclusive");
        let sys = SystemQosResource::parse(r#"{"cpuset":"0-1","cpusetExclusive":false}"#).unwrap();
        assert!(!sys.cpuset_exclusive);
    }

    #[test]
    fn enum_spellings() {
        for p in CpuBindPolicy::ALL {
            assert_eq!(CpuBindPolicy::parse(p.as_str()), Some(*p));
        }
        assert_eq!(NodeCpuBindPolicy::FullPCPUsOnly.required(), Some(CpuBindPolicy::FullPCPUs));
        assert_eq!(NodeCpuBindPolicy::None.required(), None);
        assert!(CpuBindPolicy::SpreadByPCPUs.binds_cpus());
        assert!(!CpuBindPolicy::ConstrainedBurst.binds_cpus());
        let err = serde_json::from_str::<NumaAllocateStrategy>("\"Most\"").unwrap_err();
        assert!(err.to_string().contains("MostAllocated, LeastAllocated, DistributeEvenly"));
    }
}
