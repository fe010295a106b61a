//! The webhook's decision inputs from the cluster: ClusterColocationProfiles,
//! Namespaces (their labels) and PriorityClasses, kept current by
//! reflectors; every change rebuilds the admission state and swaps it in
//! whole ([`SharedState::replace`]), so a request sees one consistent
//! state.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kolo_api::crd::ClusterColocationProfile;
use kolo_core::snapshot::Snapshot;
use kolo_manager::webhook::server::state::{SharedState, state_from_snapshot};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

fn reflect<K>(api: Api<K>, changed: Arc<Notify>) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let kind = K::kind(&()).to_string();
    let stream =
        reflector::reflector(writer, watcher(api, watcher::Config::default())).default_backoff();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(_) => changed.notify_one(),
                Err(e) => tracing::warn!(%kind, error = %e, "watch failed; retrying"),
            }
        }
    });
    reader
}

/// Keeps `state` in step with the cluster. It stays pending (the webhook
/// admits pods unchanged and `/readyz` fails) until every list is in.
pub fn follow(client: Client, state: SharedState) {
    let changed = Arc::new(Notify::new());
    let profiles: Store<ClusterColocationProfile> =
        reflect(Api::all(client.clone()), changed.clone());
    let namespaces: Store<Namespace> = reflect(Api::all(client.clone()), changed.clone());
    let classes: Store<PriorityClass> = reflect(Api::all(client), changed.clone());
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
            let admission = state_from_snapshot(&snapshot);
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
