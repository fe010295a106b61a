//! The ElasticQuota controller's decisions (spec §7.1, §7.5), from the
//! manager's stores: the quota tree built afresh each pass from the quotas,
//! the pods and the managed nodes (the ElasticQuota plugin's
//! [`QuotaTree`], so the numbers are the scheduler's), then
//!
//! * for each quota whose `status.used` or controller annotations
//!   (`runtime`, `request`, `child-request`, `non-preemptible-*`) differ
//!   from what the tree says, the merge patch that writes them;
//! * when revocation is on (`monitorAllQuotas` and `enableRuntimeQuota`),
//!   the pods to evict from the quotas over their runtime for longer than
//!   `delayEvictTime` ([`select_revocations`]).
//!
//! Pure but for the clock the caller keeps ([`OverUseClock`]); the jobs
//! loop ([`super::jobs`]) makes the calls.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::{ElasticQuota, ResourceList};
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::resources::ResourceVector;
use kolo_scheduler::framework::PodInfo;
use kolo_scheduler::plugins::elastic_quota::args::ElasticQuotaArgs;
use kolo_scheduler::plugins::elastic_quota::plugin::pod_facts;
use kolo_scheduler::plugins::elastic_quota::spec::QuotaSpec;
use kolo_scheduler::plugins::elastic_quota::status::{
    OverUseClock, QuotaStatus, RevokeCandidate, quota_statuses, revoke_enabled, select_revocations,
};
use kolo_scheduler::plugins::elastic_quota::tree::{QuotaKind, QuotaTree, limited};
use kube::ResourceExt;

/// One pass's decisions.
#[derive(Debug, Default)]
pub struct QuotaPlan {
    /// The quota writes: (namespace, name, merge patch).
    pub writes: Vec<QuotaWrite>,
    /// The pods to evict (`namespace/name`), with the quota each is
    /// revoked from.
    pub evictions: Vec<(String, String)>,
    /// Objects left out, each error naming the object and field.
    pub refused: Vec<String>,
}

/// A write to one ElasticQuota.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaWrite {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The merge patch (the CRD has no status subresource: status and
    /// annotations are written on the object).
    pub patch: serde_json::Value,
}

/// What the pass reads.
pub struct QuotaInputs<'a> {
    /// The ElasticQuota objects.
    pub quotas: &'a [Arc<ElasticQuota>],
    /// Every pod.
    pub pods: &'a [Arc<Pod>],
    /// The managed nodes (their allocatable sums to the cluster total).
    pub nodes: &'a [Arc<Node>],
}

/// Decides one pass: the writes, and (when on) the revocations.
pub fn plan(
    args: &ElasticQuotaArgs,
    inputs: &QuotaInputs<'_>,
    clock: &mut OverUseClock,
    now: Timestamp,
) -> QuotaPlan {
    let mut plan = QuotaPlan::default();
    let (mut tree, starts) = match build_tree(args, inputs, &mut plan.refused) {
        Some(built) => built,
        None => return plan,
    };
    let statuses = quota_statuses(&mut tree, args);
    let by_name: HashMap<String, &ElasticQuota> =
        inputs.quotas.iter().map(|q| (q.name_any(), &**q)).collect();
    for status in &statuses {
        let Some(quota) = by_name.get(&status.name) else { continue };
        if let Some(patch) = quota_patch(quota, status) {
            plan.writes.push(QuotaWrite {
                namespace: quota.namespace().unwrap_or_default(),
                name: status.name.clone(),
                patch,
            });
        }
    }
    if revoke_enabled(args) {
        plan.evictions = revocations(args, &tree, &statuses, &starts, clock, now);
    }
    plan
}

/// The quota tree of the stores, and each pod's start (for the revoke
/// order). `None` when the plugin arguments are unusable (said in
/// `refused`).
fn build_tree(
    args: &ElasticQuotaArgs,
    inputs: &QuotaInputs<'_>,
    refused: &mut Vec<String>,
) -> Option<(QuotaTree, HashMap<String, Timestamp>)> {
    let (system_max, default_max) = match args.group_maxes() {
        Ok(maxes) => maxes,
        Err(e) => {
            refused.push(format!("elastic quota arguments: {e}"));
            return None;
        }
    };
    let mut tree = QuotaTree::new(system_max, default_max);
    for quota in inputs.quotas {
        if let Err(e) = QuotaSpec::from_object(quota).and_then(|spec| tree.apply(spec)) {
            refused.push(e.to_string());
        }
    }
    let mut total = ResourceVector::new();
    for node in inputs.nodes {
        match NodeView::from_node(node) {
            Ok(view) => total = total.saturating_add(view.allocatable()),
            Err(e) => refused.push(format!("Node/{}: {e}", node.name_any())),
        }
    }
    tree.set_cluster_total(total);
    let mut starts = HashMap::new();
    for pod in inputs.pods {
        charge(&mut tree, pod, &mut starts, refused);
    }
    Some((tree, starts))
}

/// Charges one pod to the tree: pending (no node) or assigned; a finished
/// pod is not charged.
fn charge(
    tree: &mut QuotaTree,
    pod: &Pod,
    starts: &mut HashMap<String, Timestamp>,
    refused: &mut Vec<String>,
) {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return;
    }
    let info = match PodInfo::new(pod.clone()) {
        Ok(info) => info,
        Err(e) => {
            refused.push(format!(
                "Pod/{}: {e}",
                kolo_core::pod::pod_key(&pod.namespace().unwrap_or_default(), &pod.name_any())
            ));
            return;
        }
    };
    let facts = pod_facts(&info);
    let start = pod
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .or(pod.metadata.creation_timestamp.as_ref())
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    starts.insert(facts.key.to_string(), start);
    if info.view().is_assigned() {
        tree.pod_assigned(facts);
    } else {
        tree.pod_pending(facts);
    }
}

/// The merge patch that brings a quota's `status.used` and controller
/// annotations to `status`, or `None` when they already are. A resource
/// no longer used is removed from `used` (set to null).
pub fn quota_patch(quota: &ElasticQuota, status: &QuotaStatus) -> Option<serde_json::Value> {
    let used = status.status_used();
    let old_used: ResourceList =
        quota.status.as_ref().and_then(|s| s.used.clone()).unwrap_or_default();
    let current = quota.annotations();
    let annotations: BTreeMap<String, String> =
        status.annotations().into_iter().filter(|(k, v)| current.get(k) != Some(v)).collect();
    if used == old_used && annotations.is_empty() {
        return None;
    }
    let mut patch = serde_json::json!({});
    if !annotations.is_empty() {
        patch["metadata"] = serde_json::json!({ "annotations": annotations });
    }
    if used != old_used {
        let mut list = serde_json::Map::new();
        for k in old_used.keys().filter(|k| !used.contains_key(*k)) {
            list.insert(k.clone(), serde_json::Value::Null);
        }
        for (k, v) in &used {
            list.insert(k.clone(), serde_json::Value::String(v.0.clone()));
        }
        patch["status"] = serde_json::json!({ "used": list });
    }
    Some(patch)
}

/// The pods to evict from user quotas over their runtime for longer than
/// `delayEvictTime`: (pod, quota). The selection is deterministic, so
/// while earlier victims are still terminating the same pods come out
/// again; the caller skips the terminating ones.
fn revocations(
    args: &ElasticQuotaArgs,
    tree: &QuotaTree,
    statuses: &[QuotaStatus],
    starts: &HashMap<String, Timestamp>,
    clock: &mut OverUseClock,
    now: Timestamp,
) -> Vec<(String, String)> {
    clock.retain(|q| statuses.iter().any(|s| s.name == q));
    let mut evictions = Vec::new();
    for status in statuses.iter().filter(|s| s.kind == QuotaKind::User) {
        if !clock.observe(&status.name, status.over_used(), now, args.delay_evict_time) {
            continue;
        }
        let Some(index) = tree.index(&status.name) else { continue };
        let max = tree.node(index).max;
        let candidates: Vec<RevokeCandidate> = tree
            .members(index)
            .filter(|c| c.assigned)
            .map(|c| RevokeCandidate {
                key: c.facts.key.to_string(),
                priority: c.facts.priority,
                start: starts.get(&*c.facts.key).copied().unwrap_or(Timestamp::UNIX_EPOCH),
                request: limited(&c.facts.request, &max),
                preemptible: !c.facts.non_preemptible,
            })
            .collect();
        for i in select_revocations(&status.used, &status.runtime, &candidates) {
            evictions.push((candidates[i].key.clone(), status.name.clone()));
        }
    }
    evictions
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use kolo_api::crd::{ElasticQuotaSpec, ElasticQuotaStatus};

    use super::*;

    fn quota(used: &[(&str, &str)], annotations: &[(&str, &str)]) -> ElasticQuota {
        let mut q = ElasticQuota::new("q", ElasticQuotaSpec::default());
        q.metadata.namespace = Some("ns".into());
        q.metadata.annotations =
            Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        let used: ResourceList =
            used.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect();
        q.status = Some(ElasticQuotaStatus { used: (!used.is_empty()).then_some(used) });
        q
    }

    fn status(used_cpu_milli: i64, runtime_cpu_milli: i64) -> QuotaStatus {
        let v = |cpu| ResourceVector::cpu_memory(cpu, 1 << 30);
        QuotaStatus {
            name: "q".into(),
            kind: QuotaKind::User,
            used: v(used_cpu_milli),
            runtime: v(runtime_cpu_milli),
            request: v(used_cpu_milli),
            child_request: v(used_cpu_milli),
            non_preemptible_request: ResourceVector::new(),
            non_preemptible_used: ResourceVector::new(),
        }
    }

    #[test]
    fn writes_used_and_annotations_only_when_they_differ() {
        let s = status(2000, 3000);
        // Nothing written yet: everything.
        let patch = quota_patch(&quota(&[], &[]), &s).unwrap();
        assert_eq!(patch["status"]["used"], serde_json::json!({"cpu": "2", "memory": "1Gi"}));
        let annotations = patch["metadata"]["annotations"].as_object().unwrap();
        assert_eq!(annotations.len(), 5, "{patch}");
        let runtime = &annotations["quota.scheduling.koordinator.sh/runtime"];
        assert_eq!(runtime, r#"{"cpu":"3","memory":"1Gi"}"#);
        // As written: nothing.
        let written: Vec<(String, String)> = s.annotations().into_iter().collect();
        let written: Vec<(&str, &str)> =
            written.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let q = quota(&[("cpu", "2"), ("memory", "1Gi")], &written);
        assert_eq!(quota_patch(&q, &s), None);
        // A resource used before and not now is removed; annotations that
        // did not change are not repeated.
        let q = quota(&[("cpu", "2"), ("memory", "1Gi"), ("nvidia.com/gpu", "1")], &written);
        let patch = quota_patch(&q, &s).unwrap();
        assert_eq!(
            patch,
            serde_json::json!({"status": {"used": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": null}}})
        );
    }

    fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Arc<T> {
        Arc::new(serde_json::from_value(value).unwrap())
    }

    /// A 2-core pod of quota `q`, on `node` when given, started at `start`.
    fn quota_pod(name: &str, node: Option<&str>, start: &str) -> Arc<Pod> {
        object(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns", "creationTimestamp": start,
                         "labels": {"quota.scheduling.koordinator.sh/name": "q"}},
            "spec": {"nodeName": node, "containers": [{"name": "c",
                     "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]},
            "status": {"phase": if node.is_some() { "Running" } else { "Pending" }},
        }))
    }

    fn inputs_quota() -> Arc<ElasticQuota> {
        object(serde_json::json!({
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
            "metadata": {"name": "q", "namespace": "ns"},
            "spec": {"min": {"cpu": "1"}, "max": {"cpu": "3", "memory": "8Gi"}},
        }))
    }

    fn node() -> Arc<Node> {
        object(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"allocatable": {"cpu": "16", "memory": "32Gi", "pods": "110"}},
        }))
    }

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    #[test]
    fn a_pass_writes_what_the_quota_uses_and_requests() {
        let quotas = [inputs_quota()];
        let pods = [
            quota_pod("a", Some("n"), "2027-01-01T00:00:00Z"),
            quota_pod("b", None, "2027-01-01T00:00:01Z"),
        ];
        let nodes = [node()];
        let inputs = QuotaInputs { quotas: &quotas, pods: &pods, nodes: &nodes };
        let args = ElasticQuotaArgs::default();
        let plan = plan(&args, &inputs, &mut OverUseClock::default(), t(0));
        assert!(plan.refused.is_empty(), "{:?}", plan.refused);
        assert!(plan.evictions.is_empty());
        let [write] = &plan.writes[..] else { panic!("{:?}", plan.writes) };
        assert_eq!((write.namespace.as_str(), write.name.as_str()), ("ns", "q"));
        // Used: the bound pod; request: both (masked to max's keys).
        assert_eq!(write.patch["status"]["used"], serde_json::json!({"cpu": "2", "memory": "1Gi"}));
        let annotations = &write.patch["metadata"]["annotations"];
        let request = annotations["quota.scheduling.koordinator.sh/request"].as_str().unwrap();
        assert_eq!(request, r#"{"cpu":"4","memory":"2Gi"}"#);
    }

    #[test]
    fn an_over_used_quota_loses_its_newest_pod_after_the_delay() {
        // Two bound pods of 2 cores each use 4 of a quota whose max, and so
        // runtime, is 3.
        let quotas = [inputs_quota()];
        let pods = [
            quota_pod("old", Some("n"), "2027-01-01T00:00:00Z"),
            quota_pod("new", Some("n"), "2027-01-01T00:00:05Z"),
        ];
        let nodes = [node()];
        let inputs = QuotaInputs { quotas: &quotas, pods: &pods, nodes: &nodes };
        let mut clock = OverUseClock::default();
        let off = ElasticQuotaArgs::default();
        assert!(plan(&off, &inputs, &mut clock, t(0)).evictions.is_empty(), "off by default");
        let on = ElasticQuotaArgs {
            monitor_all_quotas: true,
            delay_evict_time: std::time::Duration::from_secs(10),
            ..ElasticQuotaArgs::default()
        };
        let mut clock = OverUseClock::default();
        // Over since 0; not yet 10 s later, then past the delay.
        assert!(plan(&on, &inputs, &mut clock, t(0)).evictions.is_empty());
        assert!(plan(&on, &inputs, &mut clock, t(10)).evictions.is_empty());
        let evictions = plan(&on, &inputs, &mut clock, t(11)).evictions;
        assert_eq!(evictions, vec![("ns/new".to_string(), "q".to_string())]);
    }
}
