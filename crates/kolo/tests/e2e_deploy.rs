//! The manifests in `deploy/`: exactly `kolo install --out-dir` with the
//! defaults (so the CRDs are `kolo crds`), a kustomization kubectl builds,
//! the default `slo-controller-config` accepted key by key, the default
//! DeschedulerConfiguration accepted, and component arguments `kolo`
//! accepts. (`e2e_install.rs` applies the output to a real API server.)

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use common::{kolo, run, try_run, workspace_root};
use k8s_openapi::api::core::v1::ConfigMap;
use kolo_manager::config::SloConfigStore;

fn deploy() -> PathBuf {
    workspace_root().join("deploy")
}

/// Files in `deploy/` that `kolo install` does not write.
const NOT_GENERATED: [&str; 2] = ["kolo-runtime-proxy.service", "grafana-dashboard.json"];

#[test]
fn deploy_is_kolo_install_with_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    run(kolo().arg("install").arg("--out-dir").arg(dir.path()), None);
    let listing = |path: &std::path::Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !NOT_GENERATED.contains(&n.as_str()))
            .collect();
        names.sort();
        names
    };
    let generated = listing(dir.path());
    assert_eq!(
        listing(&deploy()),
        generated,
        "deploy/ has other files than `kolo install --out-dir` writes"
    );
    for name in &generated {
        let want = std::fs::read_to_string(dir.path().join(name)).unwrap();
        let have = std::fs::read_to_string(deploy().join(name)).unwrap();
        assert!(
            want == have,
            "deploy/{name} is stale: regenerate deploy/ with `kolo install --out-dir deploy`"
        );
    }
}

#[test]
fn kustomization_builds() {
    let out = run(Command::new("kubectl").arg("kustomize").arg(deploy()), None);
    let objects: Vec<serde_json::Value> =
        serde_saphyr::from_str_multiple(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let images: Vec<&str> = objects
        .iter()
        .filter_map(|o| o["spec"]["template"]["spec"]["containers"].as_array())
        .flatten()
        .map(|c| c["image"].as_str().unwrap())
        .collect();
    assert_eq!(images.len(), 4, "three Deployments and the DaemonSet");
    let want = format!("kolo:{}", env!("CARGO_PKG_VERSION"));
    assert!(images.iter().all(|i| *i == want), "{images:?}");
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

/// Every metric in a PromQL expression (`kolo_*`, `process_*`), without a
/// histogram's `_bucket` / `_sum` / `_count`.
fn metrics_in(expr: &str) -> Vec<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| t.starts_with("kolo_") || t.starts_with("process_"))
        .map(|t| {
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| t.strip_suffix(s))
                .unwrap_or(t)
                .to_string()
        })
        .collect()
}

#[test]
fn the_dashboard_uses_only_documented_metrics() {
    let text = std::fs::read_to_string(deploy().join("grafana-dashboard.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    let documented: std::collections::BTreeSet<String> =
        ["scheduler", "manager", "descheduler", "agent", "runtime_proxy", "webhook"]
            .iter()
            .flat_map(|c| common::metrics_doc::documented(c))
            .collect();
    let panels = dashboard["panels"].as_array().unwrap();
    let mut used = 0;
    for panel in panels {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap();
            let names = metrics_in(expr);
            assert!(!names.is_empty(), "{}: no kolo metric in {expr}", panel["title"]);
            for name in names {
                assert!(
                    documented.contains(&name),
                    "{}: {name} is not in docs/metrics.md",
                    panel["title"]
                );
                used += 1;
            }
        }
    }
    assert!(used >= 20, "{used}");
    // Grid positions do not overlap: every panel shows.
    let mut cells = std::collections::BTreeSet::new();
    for panel in panels {
        let g = &panel["gridPos"];
        let (x, y, w, h) = (
            g["x"].as_u64().unwrap(),
            g["y"].as_u64().unwrap(),
            g["w"].as_u64().unwrap(),
            g["h"].as_u64().unwrap(),
        );
        assert!(x + w <= 24, "{}", panel["title"]);
        for cx in x..x + w {
            for cy in y..y + h {
                assert!(cells.insert((cx, cy)), "{} overlaps another panel", panel["title"]);
            }
        }
    }
}
