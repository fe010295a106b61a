//! `kolo install` against a real kube-apiserver with RBAC on (a private
//! API-only cluster): the whole output applies server-side, applies again
//! without conflicts, creates what it says, and every component's service
//! account can do what it needs and not what it must not (`kubectl auth
//! can-i --as`). Another namespace and one component dry-run on the same
//! server.

mod common;
mod e2e_common;

use common::{kolo, kubectl, run, try_run};
use e2e_common::rbac_cluster;
use serde_json::Value;

const FILE: &str = "e2e_install";

/// `kolo install ARGS` for the test server (Kubernetes 1.20).
fn install(args: &[&str]) -> Vec<u8> {
    run(kolo().arg("install").args(["--set", "kubeVersion=1.20"]).args(args), None).stdout
}

fn get(config: &std::path::Path, args: &[&str]) -> Value {
    let out = run(kubectl(config).arg("get").args(args).args(["-o", "json"]), None);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn install_applies_server_side_twice_and_grants_only_what_is_needed() {
    let test = "install_applies_server_side_twice_and_grants_only_what_is_needed";
    let Some(cluster) = rbac_cluster::shared(FILE, test, &[], &["nodemetrics.slo.koordinator.sh"])
    else {
        return;
    };
    let config = cluster.kubeconfig();
    let manifests = install(&[]);
    let apply = || {
        let (description, out) = try_run(
            kubectl(&config).args([
                "apply",
                "--server-side",
                "--field-manager=kolo-install",
                "-f",
                "-",
            ]),
            Some(&manifests),
        );
        assert!(
            out.status.success(),
            "{description}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let first = apply();
    assert!(first.contains("daemonset.apps/kolo-agent serverside-applied"), "{first}");
    // Applying the same output again is how an operator upgrades: no
    // conflict, nothing refused.
    let second = apply();
    assert_eq!(first.lines().count(), second.lines().count(), "{second}");

    let ns = "kolo-system";
    assert_eq!(
        names(&get(&config, &["deployments", "-n", ns])),
        ["kolo-descheduler", "kolo-manager", "kolo-scheduler"]
    );
    assert_eq!(names(&get(&config, &["daemonsets", "-n", ns])), ["kolo-agent"]);
    assert_eq!(
        names(&get(&config, &["poddisruptionbudgets", "-n", ns])),
        ["kolo-descheduler", "kolo-manager", "kolo-scheduler"]
    );
    let batch = get(&config, &["priorityclass", "koord-batch"]);
    assert_eq!(batch["value"], kolo_api::PriorityClass::Batch.installed_value());
    assert_eq!(batch["preemptionPolicy"], "Never");
    let config_map = get(&config, &["configmap", "slo-controller-config", "-n", ns]);
    assert!(config_map["data"]["colocation-config"].is_string());

    // What each service account may and may not do.
    let may = |account: &str, verb: &str, resource: &str, scope: &[&str]| {
        let mut cmd = kubectl(&config);
        match resource.split_once('/') {
            Some((resource, sub)) => {
                cmd.args(["auth", "can-i", verb, resource, "--subresource", sub])
            }
            None => cmd.args(["auth", "can-i", verb, resource]),
        };
        cmd.arg(format!("--as=system:serviceaccount:{ns}:{account}")).args(scope);
        let (description, out) = try_run(&mut cmd, None);
        match String::from_utf8_lossy(&out.stdout).trim() {
            "yes" => true,
            "no" => false,
            other => panic!("{description}: {other:?} {}", String::from_utf8_lossy(&out.stderr)),
        }
    };
    let all = ["--all-namespaces"];
    let in_ns = ["-n", ns];
    let needed: &[(&str, &str, &str, &[&str])] = &[
        ("kolo-scheduler", "create", "pods/binding", &all),
        ("kolo-scheduler", "create", "pods/eviction", &all),
        ("kolo-scheduler", "patch", "pods/status", &all),
        ("kolo-scheduler", "update", "leases.coordination.k8s.io", &in_ns),
        ("kolo-manager", "patch", "nodes/status", &all),
        ("kolo-manager", "get", "secrets", &in_ns),
        ("kolo-manager", "list", "configmaps", &in_ns),
        ("kolo-agent", "create", "pods/eviction", &all),
        ("kolo-agent", "patch", "nodemetrics.slo.koordinator.sh/status", &all),
        ("kolo-descheduler", "create", "pods/eviction", &all),
    ];
    for (account, verb, resource, scope) in needed {
        assert!(may(account, verb, resource, scope), "{account} cannot {verb} {resource}");
    }
    let forbidden: &[(&str, &str, &str, &[&str])] = &[
        ("kolo-scheduler", "get", "secrets", &all),
        ("kolo-scheduler", "create", "pods", &all),
        ("kolo-scheduler", "delete", "pods", &all),
        ("kolo-manager", "get", "secrets", &["-n", "default"]),
        ("kolo-manager", "update", "pods", &all),
        ("kolo-manager", "delete", "nodes", &all),
        ("kolo-agent", "get", "secrets", &all),
        ("kolo-agent", "update", "pods", &all),
        ("kolo-agent", "delete", "pods", &all),
        ("kolo-agent", "create", "pods/exec", &all),
        ("kolo-descheduler", "delete", "pods", &all),
        ("kolo-descheduler", "get", "secrets", &all),
        ("kolo-descheduler", "patch", "nodes", &all),
    ];
    for (account, verb, resource, scope) in forbidden {
        assert!(!may(account, verb, resource, scope), "{account} may {verb} {resource} {scope:?}");
    }
}

#[test]
fn one_component_into_another_namespace_dry_runs_on_the_server() {
    let test = "one_component_into_another_namespace_dry_runs_on_the_server";
    let Some(cluster) = rbac_cluster::shared(FILE, test, &[], &["nodemetrics.slo.koordinator.sh"])
    else {
        return;
    };
    let config = cluster.kubeconfig();
    // A server-side dry run of namespaced objects needs their namespace.
    let (_, out) = try_run(kubectl(&config).args(["create", "namespace", "kolo-alt"]), None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() || stderr.contains("AlreadyExists"), "{stderr}");
    let manifests = install(&[
        "--namespace",
        "kolo-alt",
        "--components",
        "scheduler",
        "--set",
        "scheduler.replicas=1",
    ]);
    let out = run(
        kubectl(&config).args(["apply", "--server-side", "--dry-run=server", "-f", "-"]),
        Some(&manifests),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("deployment.apps/kolo-scheduler serverside-applied"), "{text}");
    for absent in ["kolo-agent", "kolo-manager", "kolo-descheduler", "poddisruptionbudget"] {
        assert!(!text.contains(absent), "{absent} installed:\n{text}");
    }
    let text = String::from_utf8_lossy(&manifests);
    assert!(!text.contains("kolo-system"), "the namespace reaches every reference");
}
