//! `kolo why pod NAMESPACE/NAME`: the pod, its Events, a scheduling
//! what-if when it is pending, and its node agent's actions.

use std::io::Write;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kolo_agent::AgentPod;
use kolo_core::clock::Timestamp;
use kolo_scheduler::whatif::{self, load_config};
use kube::{Api, Client};

use super::explain::{AgentAnswer, PodFacts, WhatIf, explain_pod};
use super::{Args, BoxError, agent_url_for, fetch};
use crate::{CliError, OutputFormat, write_json};

/// Explains the pod `key` and prints the explanation.
pub async fn run(
    client: &Client,
    args: &Args,
    key: &str,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let command = |e: BoxError| CliError::Command(e);
    let (namespace, name) =
        key.split_once('/')
            .filter(|(ns, n)| !ns.is_empty() && !n.is_empty())
            .ok_or_else(|| command(format!("{key}: expected NAMESPACE/NAME").into()))?;
    let found = Api::<Pod>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| command(format!("reading Pod/{namespace}/{name}: {e}").into()))?;
    let gone = found.is_none();
    // A pod already deleted (an eviction's end): its Events and, with
    // --agent-url, its agent's history still tell.
    let pod = found.unwrap_or_else(|| Pod {
        metadata: ObjectMeta {
            namespace: Some(namespace.into()),
            name: Some(name.into()),
            deletion_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                Timestamp::now(),
            )),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    });
    let qos = match (gone, AgentPod::from_pod(&pod)) {
        (true, _) => "unknown: the pod is gone".to_string(),
        (false, Ok(p)) => p.qos.to_string(),
        (false, Err(e)) => return Err(command(format!("Pod/{namespace}/{name}: {e}").into())),
    };
    let uid = pod.metadata.uid.as_deref();
    let events = fetch::pod_events(client, namespace, name, uid).await.map_err(command)?;
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    let what_if = match (&node, gone) {
        (None, false) => what_if(client, args, &pod).await.map_err(command)?,
        _ => None,
    };
    let agent = match (&node, &args.agent_url) {
        (Some(node), _) => {
            ask_agent(agent_url_for(
                args,
                fetch::agent_url(client, node, &args.agent_namespace, args.agent_port).await,
            ))
            .await
        }
        (None, Some(url)) => ask_agent(Ok(url.clone())).await,
        (None, None) => AgentAnswer::NotAsked,
    };
    let why = explain_pod(PodFacts { pod: &pod, qos, events, what_if, agent });
    match args.output {
        OutputFormat::Json => write_json(&why, out),
        OutputFormat::Text => {
            for line in &why.lines {
                writeln!(out, "{line}")?;
            }
            if !why.events.is_empty() {
                writeln!(out, "\nEvents (oldest first):")?;
                for e in &why.events {
                    writeln!(
                        out,
                        "  {}  {} ×{}  {}: {}",
                        e.time, e.reason, e.count, e.reporter, e.note
                    )?;
                }
            }
            Ok(())
        }
    }
}

/// The agent's history, or why it could not be had.
pub(super) async fn ask_agent(url: Result<String, BoxError>) -> AgentAnswer {
    let url = match url {
        Ok(url) => url,
        Err(e) => return AgentAnswer::Unreachable { url: "-".into(), error: e.to_string() },
    };
    match fetch::agent_actions(&url).await {
        Ok(history) => AgentAnswer::Reachable { url, history },
        Err(e) => AgentAnswer::Unreachable { url, error: e.to_string() },
    }
}

/// `kolo schedule`'s what-if for this one pod on the cluster as it is now
/// (nodes, bound pods, NodeMetrics; other pending pods left out), with
/// kolo's default profile; `None` when the pod is not kolo's scheduler's.
async fn what_if(client: &Client, args: &Args, pod: &Pod) -> Result<Option<WhatIf>, BoxError> {
    let mut snapshot = fetch::snapshot(client, None, &args.config_namespace).await?;
    let uid = pod.metadata.uid.as_deref();
    snapshot.pods.retain(|p| {
        p.object.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
            || p.object.metadata.uid.as_deref() == uid
    });
    let options = whatif::Options { now: Some(Timestamp::now()), ..whatif::Options::default() };
    let run = whatif::schedule(snapshot, &load_config(None)?, &options)?;
    let key = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    );
    let result = run.report.pods.into_iter().find(|p| p.pod == key);
    Ok(result.map(|p| WhatIf { node: p.node, message: p.message }))
}
