//! What `kolo why` reads from the live cluster: the objects, turned into
//! the same [`Snapshot`] a dump gives (so the what-if code is the dump's);
//! a pod's Events; the node agent's `/actions`.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::events::v1::Event;
use kolo_agent::history::HistoryView;
use kolo_api::crd::NodeMetric;
use kolo_core::snapshot::Snapshot;
use kube::api::ListParams;
use kube::{Api, Client};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::explain::EventView;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long the agent may take to answer.
const AGENT_TIMEOUT: Duration = Duration::from_secs(3);

/// Lists `api` (with `params`), naming the kind in the error.
async fn list<K>(api: Api<K>, params: &ListParams, kind: &str) -> Result<Vec<K>, BoxError>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let list = api.list(params).await.map_err(|e| format!("listing {kind}: {e}"))?;
    Ok(list.items)
}

/// The live objects a what-if needs, as a snapshot: the nodes, the pods
/// (`pods_on`: only those of this node), their NodeMetrics and the
/// `slo-controller-config` ConfigMap of `config_namespace`.
pub async fn snapshot(
    client: &Client,
    nodes: Option<&str>,
    config_namespace: &str,
) -> Result<Snapshot, BoxError> {
    let mut node_params = ListParams::default();
    let mut pod_params = ListParams::default();
    if let Some(name) = nodes {
        node_params = node_params.fields(&format!("metadata.name={name}"));
        pod_params = pod_params.fields(&format!("spec.nodeName={name}"));
    }
    let mut items: Vec<serde_json::Value> = Vec::new();
    push(&mut items, list(Api::<Node>::all(client.clone()), &node_params, "nodes").await?)?;
    push(&mut items, list(Api::<Pod>::all(client.clone()), &pod_params, "pods").await?)?;
    let metrics = list(Api::<NodeMetric>::all(client.clone()), &node_params, "NodeMetrics").await;
    push(&mut items, metrics?)?;
    let configs: Api<ConfigMap> = Api::namespaced(client.clone(), config_namespace);
    let config = configs
        .get_opt(kolo_manager::config::DEFAULT_CONFIG_NAME)
        .await
        .map_err(|e| format!("reading ConfigMap {config_namespace}/slo-controller-config: {e}"))?;
    push(&mut items, config)?;
    let text = serde_json::to_string(&serde_json::json!({
        "apiVersion": "v1", "kind": "List", "items": items,
    }))?;
    Ok(Snapshot::parse(&text, "the cluster")?)
}

fn push<T: Serialize>(
    items: &mut Vec<serde_json::Value>,
    objects: impl IntoIterator<Item = T>,
) -> Result<(), BoxError> {
    for o in objects {
        items.push(serde_json::to_value(o)?);
    }
    Ok(())
}

/// The Events (`events.k8s.io/v1`, which also shows those written through
/// the core API) about the pod `namespace/name` with `uid` (any UID when
/// `None`), oldest first.
pub async fn pod_events(
    client: &Client,
    namespace: &str,
    name: &str,
    uid: Option<&str>,
) -> Result<Vec<EventView>, BoxError> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let events = list(api, &ListParams::default(), "events.k8s.io Events").await?;
    let mut views: Vec<(String, EventView)> = events
        .into_iter()
        .filter(|e| {
            let r = e.regarding.as_ref();
            r.and_then(|r| r.kind.as_deref()) == Some("Pod")
                && r.and_then(|r| r.name.as_deref()) == Some(name)
                && uid.is_none_or(|u| r.and_then(|r| r.uid.as_deref()).is_none_or(|x| x == u))
        })
        .map(|e| {
            let time = event_time(&e);
            (time.clone(), event_view(e, time))
        })
        .collect();
    views.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(views.into_iter().map(|(_, v)| v).collect())
}

/// When an Event was last seen: its series' last observation, else its
/// time, else its deprecated timestamps, else its creation.
fn event_time(e: &Event) -> String {
    let series = e.series.as_ref().map(|s| s.last_observed_time.0.to_string());
    series
        .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string()))
        .or_else(|| e.deprecated_last_timestamp.as_ref().map(|t| t.0.to_string()))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0.to_string()))
        .unwrap_or_default()
}

fn event_view(e: Event, time: String) -> EventView {
    let count = e.series.as_ref().map(|s| s.count).or(e.deprecated_count).unwrap_or(1);
    let reporter = e
        .reporting_controller
        .clone()
        .filter(|r| !r.is_empty())
        .or_else(|| e.deprecated_source.as_ref().and_then(|s| s.component.clone()))
        .unwrap_or_else(|| "-".into());
    EventView {
        reason: e.reason.unwrap_or_default(),
        note: e.note.unwrap_or_default(),
        reporter,
        time,
        count,
    }
}

/// The label of the agent's pods (as `kolo install` writes it).
const AGENT_LABEL: &str = "app.kubernetes.io/name=kolo-agent";

/// The agent's URL on `node` at `port`: its agent pod's IP (the pod of
/// `agent_namespace` labelled [`AGENT_LABEL`] on the node; the DaemonSet
/// does not use the host network), else the node's InternalIP (an agent
/// run as a host process).
pub async fn agent_url(
    client: &Client,
    node: &str,
    agent_namespace: &str,
    port: u16,
) -> Result<String, BoxError> {
    let params = ListParams::default().labels(AGENT_LABEL).fields(&format!("spec.nodeName={node}"));
    let pods = Api::<Pod>::namespaced(client.clone(), agent_namespace);
    let pod_ip = list(pods, &params, "agent pods")
        .await?
        .into_iter()
        .filter_map(|p| p.status.and_then(|s| s.pod_ip))
        .next();
    let ip = match pod_ip {
        Some(ip) => ip,
        None => {
            let object = Api::<Node>::all(client.clone())
                .get(node)
                .await
                .map_err(|e| format!("reading Node/{node}: {e}"))?;
            let addresses = object.status.and_then(|s| s.addresses).unwrap_or_default();
            addresses
                .iter()
                .find(|a| a.type_ == "InternalIP")
                .map(|a| a.address.clone())
                .ok_or_else(|| format!("Node/{node}: no agent pod and no InternalIP"))?
        }
    };
    let host = if ip.contains(':') { format!("[{ip}]") } else { ip };
    Ok(format!("http://{host}:{port}"))
}

/// GETs `{url}/actions` (plain HTTP, [`AGENT_TIMEOUT`]).
pub async fn agent_actions(url: &str) -> Result<HistoryView, BoxError> {
    let body = tokio::time::timeout(AGENT_TIMEOUT, http_get(url, "/actions"))
        .await
        .map_err(|_| format!("no answer within {} s", AGENT_TIMEOUT.as_secs()))??;
    Ok(serde_json::from_str(&body).map_err(|e| format!("{url}/actions: {e}"))?)
}

/// One HTTP/1.0 GET (the agent answers it with the whole body and closes).
async fn http_get(url: &str, path: &str) -> Result<String, BoxError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: only http:// agent URLs are supported"))?;
    let host = rest.trim_end_matches('/');
    let mut stream = tokio::net::TcpStream::connect(host).await?;
    let request =
        format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: application/json\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) =
        answer.split_once("\r\n\r\n").ok_or_else(|| format!("{url}{path}: no HTTP answer"))?;
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("{url}{path}: {status}").into());
    }
    Ok(body.to_string())
}
