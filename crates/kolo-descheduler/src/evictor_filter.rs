//! Which pods the descheduler may evict at all: the rules Kubernetes'
//! descheduler and Koordinator's migration controller apply before any
//! limit (spec §10.3, "non-retryable filter").
//!
//! A pod failing one of these rules never becomes evictable by waiting, so
//! a PodMigrationJob for it fails (`ForbiddenMigratePod`) instead of
//! staying Pending. Rules, in the order checked (the first that fails is
//! the one reported):
//!
//! 1. terminating pods (a deletion timestamp) are left alone;
//! 2. mirror pods (`kubernetes.io/config.mirror`) never;
//! 3. static pods (`kubernetes.io/config.source` other than `api`) never;
//! 4. pods owned by a DaemonSet never (the DaemonSet recreates them in place);
//! 5. bare pods (no owner reference) never, except failed ones when
//!    `evictFailedBarePods`;
//! 6. system-critical pods (priority ≥ 2000000000, or class
//!    `system-node-critical` / `system-cluster-critical`) unless
//!    `evictSystemCriticalPods`;
//! 7. pods at or above `priorityThreshold` (its value, or the value of the
//!    class it names);
//! 8. pods with local storage (`emptyDir` / `hostPath` volumes) unless
//!    `evictLocalStoragePods`;
//! 9. pods with PersistentVolumeClaims when `ignorePvcPods`;
//! 10. Koordinator QoS LSE and LSR pods (bound CPUs) unless the kolo
//!     extension `evictLSEAndLSRPods`;
//! 11. pods whose eviction cost annotation is the maximum int32 (Koordinator:
//!     "never evict me");
//! 12. pods outside the evictable namespaces (`include` xor `exclude`);
//! 13. pods the label selector does not match.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as KubeLabelSelector;
use kolo_api::QoSClass;
use kolo_api::names::annotation::EVICTION_COST;
use kolo_core::HasMeta;
use kolo_core::pod::PodPhase;
use kolo_core::selector::{LabelSelector, SelectorError};
use kolo_scheduler::framework::PodInfo;

/// Kubelet's annotation on a mirror pod.
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// Kubelet's annotation naming where a pod came from (`api`, `file`, `http`).
pub const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
/// Kubernetes' lowest system-critical priority (`system-cluster-critical`).
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;
/// Priority of `system-node-critical`.
pub const SYSTEM_NODE_CRITICAL_PRIORITY: i32 = 2_000_001_000;

/// `priorityThreshold`: pods at or above it are not evicted.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PriorityThreshold {
    /// A priority value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<i32>,
    /// A priority class name; kolo knows the built-in classes
    /// (`system-node-critical`, `system-cluster-critical`) and
    /// Koordinator's (`koord-prod` 9000, `koord-mid` 7000, `koord-batch`
    /// 5000, `koord-free` 3000: the bottom of each band).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl PriorityThreshold {
    /// The threshold value; `Err` names the problem (both set, or a class
    /// kolo does not know).
    pub fn resolve(&self) -> Result<Option<i32>, String> {
        match (self.value, self.name.as_deref()) {
            (Some(_), Some(_)) => Err("only one of value and name may be set".into()),
            (Some(v), None) => Ok(Some(v)),
            (None, None) | (None, Some("")) => Ok(None),
            (None, Some(name)) => class_value(name)
                .map(Some)
                .ok_or_else(|| format!("priority class {name:?} is not one kolo knows")),
        }
    }
}

fn class_value(name: &str) -> Option<i32> {
    Some(match name {
        "system-node-critical" => SYSTEM_NODE_CRITICAL_PRIORITY,
        "system-cluster-critical" => SYSTEM_CRITICAL_PRIORITY,
        "koord-prod" => 9000,
        "koord-mid" => 7000,
        "koord-batch" => 5000,
        "koord-free" => 3000,
        _ => return None,
    })
}

/// `namespaces`: include xor exclude.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Namespaces {
    /// Only these namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Every namespace but these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

/// What the filter is built from (the migration controller's args carry
/// the same fields).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterArgs {
    /// `evictLocalStoragePods`.
    pub evict_local_storage_pods: bool,
    /// `evictSystemCriticalPods`.
    pub evict_system_critical_pods: bool,
    /// `ignorePvcPods`.
    pub ignore_pvc_pods: bool,
    /// `evictFailedBarePods`.
    pub evict_failed_bare_pods: bool,
    /// `evictLSEAndLSRPods` (kolo): allow QoS LSE and LSR pods.
    pub evict_lse_and_lsr_pods: bool,
    /// `priorityThreshold`.
    pub priority_threshold: Option<PriorityThreshold>,
    /// `namespaces`.
    pub namespaces: Option<Namespaces>,
    /// `labelSelector` (absent: every pod).
    pub label_selector: Option<KubeLabelSelector>,
}

/// Why a [`FilterArgs`] does not build a filter; names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// `labelSelector` does not compile.
    #[error("labelSelector.{0}")]
    LabelSelector(#[from] SelectorError),
    /// `priorityThreshold` is wrong.
    #[error("priorityThreshold: {0}")]
    PriorityThreshold(String),
    /// Both `namespaces.include` and `namespaces.exclude` are set.
    #[error("namespaces: only one of include and exclude may be set")]
    Namespaces,
}

/// The compiled rules (see the module documentation).
#[derive(Debug, Clone)]
pub struct EvictorFilter {
    args: FilterArgs,
    threshold: Option<i32>,
    selector: Option<LabelSelector>,
}

impl EvictorFilter {
    /// Compiles `args`.
    pub fn new(args: FilterArgs) -> Result<EvictorFilter, FilterError> {
        let threshold = match &args.priority_threshold {
            Some(t) => t.resolve().map_err(FilterError::PriorityThreshold)?,
            None => None,
        };
        if args.namespaces.as_ref().is_some_and(|n| !n.include.is_empty() && !n.exclude.is_empty())
        {
            return Err(FilterError::Namespaces);
        }
        let selector = args.label_selector.as_ref().map(LabelSelector::compile).transpose()?;
        Ok(EvictorFilter { args, threshold, selector })
    }

    /// Whether `pod` may be evicted; `Err` names the first rule that
    /// forbids it.
    pub fn check(&self, pod: &PodInfo) -> Result<(), String> {
        check_kind(pod)?;
        self.check_owner(pod)?;
        self.check_priority(pod)?;
        self.check_volumes(pod)?;
        self.check_qos_and_cost(pod)?;
        self.check_scope(pod)
    }

    fn check_owner(&self, pod: &PodInfo) -> Result<(), String> {
        let kinds = owner_kinds(pod);
        if kinds.iter().any(|k| k == "DaemonSet") {
            return Err("pod is owned by a DaemonSet".into());
        }
        if kinds.is_empty() {
            let failed = pod.view().phase() == PodPhase::Failed;
            if !(failed && self.args.evict_failed_bare_pods) {
                return Err(if failed {
                    "pod is a failed bare pod (no owner) and evictFailedBarePods is off".into()
                } else {
                    "pod has no owner (a bare pod)".into()
                });
            }
        }
        Ok(())
    }

    fn check_priority(&self, pod: &PodInfo) -> Result<(), String> {
        let priority = pod.view().priority();
        let class = pod.pod().spec.as_ref().and_then(|s| s.priority_class_name.as_deref());
        let critical = priority >= SYSTEM_CRITICAL_PRIORITY
            || matches!(class, Some("system-node-critical" | "system-cluster-critical"));
        if critical && !self.args.evict_system_critical_pods {
            return Err(format!("pod is system-critical (priority {priority})"));
        }
        if let Some(threshold) = self.threshold
            && priority >= threshold
        {
            return Err(format!(
                "pod priority {priority} is at or above the threshold {threshold}"
            ));
        }
        Ok(())
    }

    fn check_volumes(&self, pod: &PodInfo) -> Result<(), String> {
        let volumes = pod.pod().spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or(&[]);
        if !self.args.evict_local_storage_pods
            && let Some(v) = volumes.iter().find(|v| v.empty_dir.is_some() || v.host_path.is_some())
        {
            return Err(format!("pod uses local storage (volume {:?})", v.name));
        }
        if self.args.ignore_pvc_pods
            && let Some(v) = volumes.iter().find(|v| v.persistent_volume_claim.is_some())
        {
            return Err(format!("pod has a PersistentVolumeClaim (volume {:?})", v.name));
        }
        Ok(())
    }

    fn check_qos_and_cost(&self, pod: &PodInfo) -> Result<(), String> {
        let qos = pod.view().qos();
        if matches!(qos, QoSClass::LSE | QoSClass::LSR) && !self.args.evict_lse_and_lsr_pods {
            return Err(format!("pod has QoS class {} (bound CPUs)", qos.as_str()));
        }
        let cost = pod.view().annotation(EVICTION_COST).and_then(|c| c.trim().parse::<i32>().ok());
        if cost == Some(i32::MAX) {
            return Err("pod's eviction cost is the maximum (never evict)".into());
        }
        Ok(())
    }

    fn check_scope(&self, pod: &PodInfo) -> Result<(), String> {
        let namespace = pod.view().namespace();
        if let Some(ns) = &self.args.namespaces {
            if !ns.include.is_empty() && !ns.include.iter().any(|n| n == namespace) {
                return Err(format!("namespace {namespace:?} is not in namespaces.include"));
            }
            if ns.exclude.iter().any(|n| n == namespace) {
                return Err(format!("namespace {namespace:?} is in namespaces.exclude"));
            }
        }
        if let Some(selector) = &self.selector
            && !selector.matches(pod.view().labels())
        {
            return Err("pod does not match the labelSelector".into());
        }
        Ok(())
    }
}

/// Rules 1–3: terminating, mirror and static pods.
fn check_kind(pod: &PodInfo) -> Result<(), String> {
    let view = pod.view();
    if view.deletion_timestamp().is_some() {
        return Err("pod is terminating".into());
    }
    if view.annotation(MIRROR_POD_ANNOTATION).is_some() {
        return Err("pod is a mirror pod".into());
    }
    if let Some(source) = view.annotation(CONFIG_SOURCE_ANNOTATION)
        && source != "api"
    {
        return Err(format!("pod is a static pod (config source {source:?})"));
    }
    Ok(())
}

/// The kinds of every owner reference of `pod` (the object's, else the
/// view's one owner: tests and the simulator build views directly).
fn owner_kinds(pod: &PodInfo) -> Vec<String> {
    match pod.pod().metadata.owner_references.as_deref() {
        Some(refs) if !refs.is_empty() => refs.iter().map(|r| r.kind.clone()).collect(),
        _ => pod.view().owner().map(|o| vec![o.kind.to_string()]).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;

    /// A running ReplicaSet pod in namespace `app`, then `edit` applied to
    /// its JSON.
    fn pod(edit: impl FnOnce(&mut serde_json::Value)) -> PodInfo {
        let mut value = json!({
            "metadata": {
                "namespace": "app", "name": "p", "uid": "u1", "labels": {"tier": "web"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "rs", "uid": "rs-1", "controller": true}]
            },
            "spec": {"containers": [{"name": "c"}], "priority": 100},
            "status": {"phase": "Running"}
        });
        edit(&mut value);
        let pod: Pod = serde_json::from_value(value).expect("test pod");
        PodInfo::new(pod).expect("test pod reads")
    }

    fn filter(edit: impl FnOnce(&mut FilterArgs)) -> EvictorFilter {
        let mut args = FilterArgs::default();
        edit(&mut args);
        EvictorFilter::new(args).expect("test args")
    }

    type Edit = fn(&mut serde_json::Value);
    type ArgsEdit = fn(&mut FilterArgs);

    #[test]
    fn every_rule_forbids_and_its_opt_in_or_absence_allows() {
        let none: ArgsEdit = |_| {};
        // (what, pod edit, args that forbid, args that allow (None: never), expected error part)
        let cases: Vec<(&str, Edit, ArgsEdit, Option<ArgsEdit>, &str)> = vec![
            (
                "terminating",
                |p| p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z"),
                none,
                None,
                "terminating",
            ),
            (
                "mirror",
                |p| p["metadata"]["annotations"] = json!({MIRROR_POD_ANNOTATION: "x"}),
                none,
                None,
                "mirror pod",
            ),
            (
                "static",
                |p| p["metadata"]["annotations"] = json!({CONFIG_SOURCE_ANNOTATION: "file"}),
                none,
                None,
                "static pod",
            ),
            (
                "daemonset",
                |p| p["metadata"]["ownerReferences"][0]["kind"] = json!("DaemonSet"),
                none,
                None,
                "owned by a DaemonSet",
            ),
            ("bare", |p| p["metadata"]["ownerReferences"] = json!([]), none, None, "bare pod"),
            (
                "failed bare",
                |p| {
                    p["metadata"]["ownerReferences"] = json!([]);
                    p["status"]["phase"] = json!("Failed");
                },
                none,
                Some(|a| a.evict_failed_bare_pods = true),
                "failed bare pod",
            ),
            (
                "system critical by value",
                |p| p["spec"]["priority"] = json!(2_000_000_000),
                none,
                Some(|a| a.evict_system_critical_pods = true),
                "system-critical",
            ),
            (
                "system critical by class",
                |p| p["spec"]["priorityClassName"] = json!("system-node-critical"),
                none,
                Some(|a| a.evict_system_critical_pods = true),
                "system-critical",
            ),
            (
                "priority threshold value",
                |_| {},
                |a| a.priority_threshold = Some(PriorityThreshold { value: Some(100), name: None }),
                Some(|a| {
                    a.priority_threshold = Some(PriorityThreshold { value: Some(101), name: None })
                }),
                "at or above the threshold 100",
            ),
            (
                "priority threshold class",
                |p| p["spec"]["priority"] = json!(9500),
                |a| {
                    a.priority_threshold =
                        Some(PriorityThreshold { value: None, name: Some("koord-prod".into()) })
                },
                Some(|a| {
                    a.priority_threshold = Some(PriorityThreshold {
                        value: None,
                        name: Some("system-cluster-critical".into()),
                    })
                }),
                "threshold 9000",
            ),
            (
                "emptyDir",
                |p| p["spec"]["volumes"] = json!([{"name": "scratch", "emptyDir": {}}]),
                none,
                Some(|a| a.evict_local_storage_pods = true),
                "local storage (volume \"scratch\")",
            ),
            (
                "hostPath",
                |p| p["spec"]["volumes"] = json!([{"name": "h", "hostPath": {"path": "/x"}}]),
                none,
                Some(|a| a.evict_local_storage_pods = true),
                "local storage",
            ),
            (
                "pvc",
                |p| {
                    p["spec"]["volumes"] =
                        json!([{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}])
                },
                |a| a.ignore_pvc_pods = true,
                Some(|_| {}),
                "PersistentVolumeClaim",
            ),
            (
                "LSE",
                |p| p["metadata"]["labels"] = json!({"koordinator.sh/qosClass": "LSE"}),
                none,
                Some(|a| a.evict_lse_and_lsr_pods = true),
                "QoS class LSE",
            ),
            (
                "LSR",
                |p| p["metadata"]["labels"] = json!({"koordinator.sh/qosClass": "LSR"}),
                none,
                Some(|a| a.evict_lse_and_lsr_pods = true),
                "QoS class LSR",
            ),
            (
                "max eviction cost",
                |p| p["metadata"]["annotations"] = json!({EVICTION_COST: "2147483647"}),
                none,
                None,
                "eviction cost",
            ),
            (
                "namespace include",
                |_| {},
                |a| {
                    a.namespaces =
                        Some(Namespaces { include: vec!["other".into()], exclude: vec![] })
                },
                Some(|a| {
                    a.namespaces = Some(Namespaces { include: vec!["app".into()], exclude: vec![] })
                }),
                "not in namespaces.include",
            ),
            (
                "namespace exclude",
                |_| {},
                |a| {
                    a.namespaces = Some(Namespaces { include: vec![], exclude: vec!["app".into()] })
                },
                Some(|a| {
                    a.namespaces =
                        Some(Namespaces { include: vec![], exclude: vec!["other".into()] })
                }),
                "in namespaces.exclude",
            ),
            (
                "label selector",
                |_| {},
                |a| {
                    a.label_selector = Some(KubeLabelSelector {
                        match_labels: Some([("tier".to_string(), "db".to_string())].into()),
                        ..Default::default()
                    })
                },
                Some(|a| {
                    a.label_selector = Some(KubeLabelSelector {
                        match_labels: Some([("tier".to_string(), "web".to_string())].into()),
                        ..Default::default()
                    })
                }),
                "labelSelector",
            ),
        ];
        for (what, edit, forbid, allow, expected) in cases {
            let p = pod(edit);
            let err = filter(forbid).check(&p).expect_err(what);
            assert!(err.contains(expected), "{what}: {err:?} lacks {expected:?}");
            if let Some(allow) = allow {
                assert_eq!(filter(allow).check(&p), Ok(()), "{what} with its opt-in");
            }
        }
        // The plain ReplicaSet pod passes the default filter.
        assert_eq!(filter(|_| {}).check(&pod(|_| {})), Ok(()));
    }

    #[test]
    fn bad_args_name_the_field() {
        let both = FilterArgs {
            namespaces: Some(Namespaces { include: vec!["a".into()], exclude: vec!["b".into()] }),
            ..Default::default()
        };
        assert_eq!(EvictorFilter::new(both).unwrap_err(), FilterError::Namespaces);
        let unknown = FilterArgs {
            priority_threshold: Some(PriorityThreshold { value: None, name: Some("vip".into()) }),
            ..Default::default()
        };
        let err = EvictorFilter::new(unknown).unwrap_err().to_string();
        assert!(err.starts_with("priorityThreshold:") && err.contains("vip"), "{err}");
    }
}
