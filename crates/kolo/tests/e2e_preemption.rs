//! End-to-end: `kolo scheduler` against a real kube-apiserver (v1.20)
//! preempts. A high-priority pod that fits nowhere gets its node
//! nominated (`status.nominatedNodeName`), the lower-priority pod there is
//! evicted through the Eviction API (`policy/v1beta1` on this server) with
//! a `Preempted` Event, and once it is gone the preemptor is bound there.
//!
//! LoadAwareScheduling is disabled for this profile: it keeps its own
//! estimates of the pods assigned since the last NodeMetric, which still
//! count the victim when preemption re-runs the filters, so it would (by
//! design, see docs/scheduler.md "Preemption") keep the node from being a
//! candidate. This test is about the driver's side.

mod common;
mod e2e_common;

use std::path::Path;
use std::time::Duration;

use common::{kubectl, run};
use e2e_common::{
    Daemon, TestObjects, component_args, create, create_node, events, get_json, node_of, patch,
    pod, report_usage, wait_for,
};

const TIMEOUT: Duration = Duration::from_secs(30);

/// A PriorityClass `<id>-<name>` (the API server's Priority admission sets
/// `spec.priority` from it).
fn priority_class(config: &Path, id: &str, name: &str, value: i32) -> String {
    let full = format!("{id}-{name}");
    create(
        config,
        &serde_json::json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": full, "labels": {"kolo-test": id}},
            "value": value,
        }),
    );
    full
}

/// This test's namespace, node (4 CPU, with a fresh NodeMetric), priority
/// classes `<id>-low` and `<id>-high`, and a running scheduler whose one
/// profile (`schedulerName: <id>`) has LoadAwareScheduling off. Returns
/// (node, low class, high class, scheduler).
fn cluster(config: &Path, id: &str, dir: &Path) -> (String, String, String, Daemon) {
    e2e_common::install_crds(config);
    run(kubectl(config).args(["create", "namespace", id]), None);
    let node = format!("{id}-n");
    create_node(config, &node, id, "4", "32Gi");
    create(
        config,
        &serde_json::json!({
            "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
            "metadata": {"name": node, "labels": {"kolo-test": id}}, "spec": {},
        }),
    );
    report_usage(config, &node, "1", "4Gi");
    let low = priority_class(config, id, "low", 1000);
    let high = priority_class(config, id, "high", 100_000);
    let mut args = vec!["scheduler".to_string()];
    args.extend(component_args(config));
    let config_file = dir.join("scheduler.yaml");
    let yaml = [
        "apiVersion: kubescheduler.config.k8s.io/v1",
        "kind: KubeSchedulerConfiguration",
        "profiles:",
        &format!("- schedulerName: {id}"),
        "  plugins:",
        "    multiPoint:",
        "      disabled: [{name: LoadAwareScheduling}]",
    ];
    std::fs::write(&config_file, yaml.join("\n")).unwrap();
    args.extend(["--config".into(), config_file.display().to_string()]);
    args.push("--leader-elect=false".into());
    let scheduler = Daemon::start(&format!("e2e-preemption-{id}"), &args);
    (node, low, high, scheduler)
}

/// Creates `name` (3 CPU) of this priority class.
fn create_pod(config: &Path, id: &str, name: &str, class: &str) {
    let mut p = pod(name, id, id, id, "3");
    p["spec"]["priorityClassName"] = class.into();
    create(config, &p);
}

#[test]
fn a_high_priority_pod_preempts_through_the_eviction_api() {
    let Some(config) = common::kubeconfig("e2e_preemption") else { return };
    let id = e2e_common::run_id("preempt");
    let _cleanup = TestObjects {
        config: &config,
        id: id.clone(),
        labelled: "nodes,nodemetrics,priorityclasses",
        namespaced: "events,poddisruptionbudgets",
    };
    let dir = tempfile::tempdir().unwrap();
    let (node, low, high, scheduler) = cluster(&config, &id, dir.path());

    create_pod(&config, &id, "victim", &low);
    wait_for("the victim to be bound", TIMEOUT, || node_of(&config, &id, "victim"));
    create_pod(&config, &id, "preemptor", &high);
    // The preemptor is nominated to the node...
    let nominated = wait_for("nominatedNodeName", TIMEOUT, || {
        let p = get_json(&config, &["pod", "preemptor", "-n", &id])?;
        p["status"]["nominatedNodeName"].as_str().map(String::from)
    });
    assert_eq!(nominated, node, "scheduler log:\n{}", scheduler.log());
    // ... the victim is evicted (there is no kubelet to finish it: it is
    // marked for deletion) with kube-scheduler's Event.
    wait_for("the victim's deletion", TIMEOUT, || {
        let p = get_json(&config, &["pod", "victim", "-n", &id])?;
        p["metadata"]["deletionTimestamp"].as_str().map(String::from)
    });
    let (_, _, message) = wait_for("the Preempted Event", TIMEOUT, || {
        events(&config, &id)
            .into_iter()
            .find(|(pod, reason, _)| pod == "victim" && reason == "Preempted")
    });
    assert_eq!(message, format!("Preempted by {id}/preemptor on node {node}"));
    // While the victim is still there, the preemptor waits.
    assert_eq!(node_of(&config, &id, "preemptor"), None);

    // The victim's kubelet would finish it; here the test does.
    run(
        kubectl(&config).args([
            "delete",
            "pod",
            "victim",
            "-n",
            &id,
            "--grace-period=0",
            "--force",
        ]),
        None,
    );
    let bound =
        wait_for("the preemptor to be bound", TIMEOUT, || node_of(&config, &id, "preemptor"));
    assert_eq!(bound, node, "scheduler log:\n{}", scheduler.log());
}

#[test]
fn a_refused_eviction_leaves_the_victim_and_no_nomination() {
    let Some(config) = common::kubeconfig("e2e_preemption with a PDB") else { return };
    let id = e2e_common::run_id("preempt-pdb");
    let _cleanup = TestObjects {
        config: &config,
        id: id.clone(),
        labelled: "nodes,nodemetrics,priorityclasses",
        namespaced: "events,poddisruptionbudgets",
    };
    let dir = tempfile::tempdir().unwrap();
    let (_node, low, high, scheduler) = cluster(&config, &id, dir.path());
    // No disruption may happen to the victim (and with no disruption
    // controller in the test cluster, the budget is never even processed:
    // the API server refuses every eviction it covers, 429).
    create(
        &config,
        &serde_json::json!({
            "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep", "namespace": id},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"kolo-test": id}}},
        }),
    );
    create_pod(&config, &id, "victim", &low);
    wait_for("the victim to be bound", TIMEOUT, || node_of(&config, &id, "victim"));
    // Running, as its kubelet would report it: the API server ignores
    // budgets for Pending pods.
    let running = serde_json::json!({"status": {"phase": "Running"}});
    patch(&config, &["pod", "victim", "-n", &id, "--subresource=status"], &running);
    create_pod(&config, &id, "preemptor", &high);

    wait_for("the scheduler to drop the nomination", TIMEOUT, || {
        scheduler.log().contains("nomination dropped").then_some(())
    });
    let victim = get_json(&config, &["pod", "victim", "-n", &id]).unwrap();
    assert!(victim["metadata"]["deletionTimestamp"].is_null(), "{victim}");
    let preemptor = get_json(&config, &["pod", "preemptor", "-n", &id]).unwrap();
    assert!(preemptor["status"]["nominatedNodeName"].is_null(), "{preemptor}");
    assert_eq!(node_of(&config, &id, "preemptor"), None);
}

#[test]
fn a_pod_disruption_budget_steers_preemption_to_another_node() {
    let Some(config) = common::kubeconfig("e2e_preemption steered by a PDB") else { return };
    let id = e2e_common::run_id("preempt-steer");
    let _cleanup = TestObjects {
        config: &config,
        id: id.clone(),
        labelled: "nodes,nodemetrics,priorityclasses",
        namespaced: "events,poddisruptionbudgets",
    };
    let dir = tempfile::tempdir().unwrap();
    let (node_a, low, high, scheduler) = cluster(&config, &id, dir.path());
    let node_b = format!("{id}-b");
    create_node(&config, &node_b, &id, "4", "32Gi");
    create(
        &config,
        &serde_json::json!({
            "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
            "metadata": {"name": node_b, "labels": {"kolo-test": id}}, "spec": {},
        }),
    );
    report_usage(&config, &node_b, "1", "4Gi");
    let mid = priority_class(&config, &id, "mid", 2000);
    // The guarded victim (on a) has the lower priority, so without the
    // budget a is the better node (kube's second criterion); the budget
    // (never processed here: it allows no disruption) makes evicting it a
    // violation, and the first criterion picks b.
    create(
        &config,
        &serde_json::json!({
            "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard", "namespace": id},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
        }),
    );
    for (name, class, node, app) in
        [("guarded", &low, &node_a, "guarded"), ("unguarded", &mid, &node_b, "other")]
    {
        let mut p = pod(name, &id, &id, &id, "3");
        p["metadata"]["labels"]["app"] = app.into();
        p["spec"]["priorityClassName"] = class.as_str().into();
        p["spec"]["nodeName"] = node.as_str().into();
        create(&config, &p);
    }
    create_pod(&config, &id, "preemptor", &high);
    let nominated = wait_for("nominatedNodeName", TIMEOUT, || {
        let p = get_json(&config, &["pod", "preemptor", "-n", &id])?;
        p["status"]["nominatedNodeName"].as_str().map(String::from)
    });
    assert_eq!(nominated, node_b, "scheduler log:\n{}", scheduler.log());
    wait_for("the unguarded victim's deletion", TIMEOUT, || {
        let p = get_json(&config, &["pod", "unguarded", "-n", &id])?;
        p["metadata"]["deletionTimestamp"].as_str().map(String::from)
    });
    let guarded = get_json(&config, &["pod", "guarded", "-n", &id]).unwrap();
    assert!(guarded["metadata"]["deletionTimestamp"].is_null(), "{guarded}");
}

#[test]
fn a_dropped_nomination_is_cleared_in_the_api() {
    let Some(config) = common::kubeconfig("e2e_preemption clearing a nomination") else { return };
    let id = e2e_common::run_id("preempt-clear");
    let _cleanup = TestObjects {
        config: &config,
        id: id.clone(),
        labelled: "nodes,nodemetrics,priorityclasses",
        namespaced: "events,poddisruptionbudgets",
    };
    let dir = tempfile::tempdir().unwrap();
    let (node, low, high, scheduler) = cluster(&config, &id, dir.path());
    create_pod(&config, &id, "victim", &low);
    wait_for("the victim to be bound", TIMEOUT, || node_of(&config, &id, "victim"));
    create_pod(&config, &id, "preemptor", &high);
    let nominated = || {
        let p = get_json(&config, &["pod", "preemptor", "-n", &id])?;
        p["status"]["nominatedNodeName"].as_str().map(String::from)
    };
    assert_eq!(wait_for("nominatedNodeName", TIMEOUT, nominated), node);
    // The victim stays (no kubelet finishes it) and the node is now
    // tainted against the preemptor: it may preempt again, finds nowhere
    // to, and its nomination is dropped — in the API too.
    let taint =
        serde_json::json!({"spec": {"taints": [{"key": "maintenance", "effect": "NoSchedule"}]}});
    patch(&config, &["node", &node], &taint);
    wait_for("nominatedNodeName to be cleared", TIMEOUT, || nominated().is_none().then_some(()));
    assert!(scheduler.log().contains("nominatedNodeName cleared"), "{}", scheduler.log());
}
