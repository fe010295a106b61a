//! The manifests in `deploy/`: the CRDs are exactly `kolo crds`, the
//! default `slo-controller-config` is accepted key by key, the default
//! DeschedulerConfiguration is accepted, the component
//! arguments are ones `kolo` accepts, and (against a real kube-apiserver)
//! the whole kustomization applies cleanly with `--dry-run=server`.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::{kolo, kubectl, run, try_run, workspace_root};
use k8s_openapi::api::core::v1::ConfigMap;
use kolo_manager::config::SloConfigStore;

fn deploy() -> PathBuf {
    workspace_root().join("deploy")
}

#[test]
fn crds_yaml_is_kolo_crds() {
    let generated = String::from_utf8(run(kolo().arg("crds"), None).stdout).unwrap();
    let shipped = std::fs::read_to_string(deploy().join("crds.yaml")).unwrap();
    assert!(
        generated == shipped,
        "deploy/crds.yaml is stale: regenerate it with `kolo crds > deploy/crds.yaml`"
    );
}

#[test]
fn default_slo_controller_config_is_accepted() {
    let text = std::fs::read_to_string(deploy().join("slo-controller-config.yaml")).unwrap();
    let cm: ConfigMap = serde_saphyr::from_str(&text).unwrap();
    let data: BTreeMap<String, String> = cm.data.unwrap();
    let mut store = SloConfigStore::new();
    store.update(Some(&data));
    assert!(store.status().errors.is_empty(), "{:?}", store.status().errors);
    assert!(store.config().colocation.as_ref().unwrap().cluster.is_enabled());
}

#[test]
fn default_descheduler_configuration_is_accepted() {
    let text = std::fs::read_to_string(deploy().join("descheduler.yaml")).unwrap();
    let objects: Vec<serde_json::Value> = serde_saphyr::from_str_multiple(&text).unwrap();
    let file = objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .and_then(|cm| cm["data"]["descheduler.yaml"].as_str())
        .expect("the ConfigMap's descheduler.yaml");
    let config = kolo_kube::descheduler::DeschedulerConfig::from_yaml(file).unwrap();
    // Every plugin known and its args accepted (thresholds, limits).
    let descheduler = kolo_kube::descheduler::Descheduler::new(&config).unwrap();
    assert!(!descheduler.is_dry_run());
    assert!(descheduler.balances(), "LowNodeLoad enabled");
    assert_eq!(descheduler.interval(), std::time::Duration::from_secs(10));
}

/// Every container's `args` in a manifest, with `$(VAR)` references
/// replaced by a sample value.
fn container_args(file: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(deploy().join(file)).unwrap();
    let objects: Vec<serde_json::Value> = serde_saphyr::from_str_multiple(&text).unwrap();
    objects
        .iter()
        .filter_map(|o| o["spec"]["template"]["spec"]["containers"].as_array())
        .flatten()
        .map(|c| {
            c["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().replace("$(NODE_IP)", "10.0.0.1"))
                .collect()
        })
        .collect()
}

#[test]
fn component_arguments_parse() {
    for file in ["scheduler.yaml", "manager.yaml", "agent.yaml", "descheduler.yaml"] {
        for args in container_args(file) {
            // Parsing succeeds when clap gets as far as --help; an unknown
            // or malformed argument fails before.
            let (description, output) = try_run(kolo().args(&args).arg("--help"), None);
            assert!(
                output.status.success(),
                "{file}: {description}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

#[test]
fn kustomization_applies_with_server_dry_run() {
    let Some(config) = common::kubeconfig("e2e_deploy dry run") else { return };
    // A server-side dry run of namespaced objects needs their namespace.
    run(kubectl(&config).args(["apply", "-f"]).arg(deploy().join("namespace.yaml")), None);
    let out = run(kubectl(&config).args(["apply", "--dry-run=server", "-k"]).arg(deploy()), None);
    let text = String::from_utf8_lossy(&out.stdout);
    for object in [
        "deployment.apps/kolo-scheduler",
        "deployment.apps/kolo-manager",
        "deployment.apps/kolo-descheduler",
        "configmap/kolo-descheduler-config",
        "clusterrole.rbac.authorization.k8s.io/kolo-descheduler",
        "daemonset.apps/kolo-agent",
    ] {
        assert!(text.contains(object), "{object} missing:\n{text}");
    }
}
