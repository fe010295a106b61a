//! End-to-end: the agent's Eviction API evictor against a real
//! kube-apiserver. Kubernetes 1.20 (the test cluster) lacks `policy/v1`
//! Eviction, so this also exercises the fall-back to `policy/v1beta1`.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kolo_kube::agent::{EvictionVersion, evict};
use kube::Api;
use kube::api::{DeleteParams, PostParams};

fn kubeconfig() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("KOLO_TEST_KUBECONFIG").map(Into::into);
    if path.is_none() {
        // Straight to stderr, past the harness's capture, so the skip shows.
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPED e2e_evict test: KOLO_TEST_KUBECONFIG is not set. \
             Run scripts/test (which starts a test cluster) to run it. ***"
        );
    }
    path
}

#[tokio::test]
async fn evicts_through_the_eviction_api_with_the_version_the_server_has() {
    let Some(path) = kubeconfig() else { return };
    let client = kolo_kube::client::connect(Some(&path)).await.unwrap();
    let ns = format!("e2e-evict-{}", std::process::id());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let object: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).unwrap();
    namespaces.create(&PostParams::default(), &object).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "victim", "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/pause"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();

    let v1beta1_only = AtomicBool::new(false);
    let version = evict(&client, &ns, "victim", &v1beta1_only).await;
    let info = client.apiserver_version().await.unwrap();
    let minor: u32 = info.minor.trim_end_matches('+').parse().unwrap_or(0);
    let version = version.unwrap();
    if minor < 22 {
        assert_eq!(version, EvictionVersion::V1beta1);
        assert!(v1beta1_only.load(Ordering::Relaxed), "the fall-back is remembered");
    } else {
        assert_eq!(version, EvictionVersion::V1);
    }
    // An unscheduled pod is deleted at once; a scheduled one would be
    // terminating.
    match pods.get_opt("victim").await.unwrap() {
        None => {}
        Some(p) => assert!(p.metadata.deletion_timestamp.is_some(), "{p:?}"),
    }
    // Evicting a pod that is gone succeeds (nothing left to do).
    let again = evict(&client, &ns, "victim", &v1beta1_only).await;
    remove_namespace(&namespaces, &ns).await;
    assert!(again.is_ok(), "{again:?}");
}

/// Deletes the namespace and does the namespace controller's last step,
/// which the test cluster lacks: the namespace is empty, so its
/// `kubernetes` finalizer may go.
async fn remove_namespace(namespaces: &Api<Namespace>, name: &str) {
    let _ = namespaces.delete(name, &DeleteParams::default()).await;
    if let Ok(Some(mut ns)) = namespaces.get_opt(name).await {
        if let Some(spec) = ns.spec.as_mut() {
            spec.finalizers = Some(Vec::new());
        }
        let _ = namespaces.replace_subresource("finalize", name, &PostParams::default(), &ns).await;
    }
}
