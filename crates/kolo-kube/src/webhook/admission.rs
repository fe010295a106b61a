//! The webhook's decision inputs from the cluster: ClusterColocationProfiles,
//! Namespaces (their labels) and PriorityClasses, kept current by
//! reflectors; every change rebuilds the admission state and swaps it in
//! whole ([`SharedState::replace`]), so a request sees one consistent
//! state.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kolo_api::crd::ClusterColocationProfile;
use kolo_core::snapshot::Snapshot;
use kolo_manager::webhook::AdmissionState;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::Notify;

use super::server::state::SharedState;
use crate::reflect::reflect;

/// Keeps `state` in step with the cluster. It stays pending (the webhook
/// admits pods unchanged and `/readyz` fails) until every list is in.
pub fn follow(client: Client, state: SharedState) {
    let changed = Arc::new(Notify::new());
    let profiles: Store<ClusterColocationProfile> =
        reflect(Api::all(client.clone()), watcher::Config::default(), changed.clone());
    let namespaces: Store<Namespace> =
        reflect(Api::all(client.clone()), watcher::Config::default(), changed.clone());
    let classes: Store<PriorityClass> =
        reflect(Api::all(client), watcher::Config::default(), changed.clone());
    tokio::spawn(async move {
        let _ = profiles.wait_until_ready().await;
        let _ = namespaces.wait_until_ready().await;
        let _ = classes.wait_until_ready().await;
        loop {
            let snapshot = Snapshot {
                colocation_profiles: profiles.state().iter().map(|p| (**p).clone()).collect(),
                namespaces: namespaces.state().iter().map(|n| (**n).clone()).collect(),
                priority_classes: classes.state().iter().map(|c| (**c).clone()).collect(),
                ..Snapshot::default()
            };
            let admission = AdmissionState::from_snapshot(&snapshot);
            for warning in admission.warnings() {
                tracing::warn!("{warning}");
            }
            tracing::debug!(
                profiles = snapshot.colocation_profiles.len(),
                "admission state rebuilt"
            );
            state.replace(admission);
            changed.notified().await;
            // A burst of namespace events makes one rebuild.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}
