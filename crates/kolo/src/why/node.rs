//! `kolo why node NAME`: `kolo noderesource` on the node's live objects,
//! and its agent's recent QoS actions.

use std::io::Write;

use kolo_core::clock::Timestamp;
use kolo_manager::whatif::NodeSelection;
use kolo_manager::whatif::noderesource::{NodeReport, Options, evaluate, write_table};
use kube::Client;
use serde::Serialize;

use super::explain::AgentAnswer;
use super::pod::ask_agent;
use super::{Args, agent_url_for, fetch};
use crate::{CliError, OutputFormat, write_json};

/// How many of the agent's actions the text output lists.
const RECENT: usize = 10;

/// `kolo why node`'s answer (`-o json`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeWhy<'a> {
    /// The evaluation time (RFC 3339).
    now: String,
    /// Where `colocation-config` came from.
    config_source: &'a str,
    /// `kolo noderesource`'s report of the node.
    resources: &'a NodeReport,
    /// What the agent said.
    agent: AgentAnswer,
}

/// Explains node `name` and prints the explanation.
pub async fn run(
    client: &Client,
    args: &Args,
    name: &str,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let command = |e: Box<dyn std::error::Error + Send + Sync>| CliError::Command(e);
    let snapshot =
        fetch::snapshot(client, Some(name), &args.config_namespace).await.map_err(command)?;
    if snapshot.nodes.is_empty() {
        return Err(command(format!("Node/{name} not found").into()));
    }
    let options = Options {
        now: Some(Timestamp::now()),
        nodes: NodeSelection(vec![name.to_string()]),
        ..Options::default()
    };
    let evaluation = evaluate(&snapshot, &options).map_err(|e| command(e.into()))?;
    crate::warn_all(evaluation.warnings());
    let agent = ask_agent(agent_url_for(
        args,
        fetch::agent_url(client, name, &args.agent_namespace, args.agent_port).await,
    ))
    .await;
    let report = &evaluation.report;
    match args.output {
        OutputFormat::Json => {
            let why = NodeWhy {
                now: report.now.clone(),
                config_source: &report.config.source,
                resources: &report.nodes[0],
                agent,
            };
            write_json(&why, out)
        }
        OutputFormat::Text => {
            write_table(&evaluation, false, out)?;
            writeln!(out)?;
            agent_text(&agent, out)
        }
    }
}

fn agent_text(agent: &AgentAnswer, out: &mut dyn Write) -> Result<(), CliError> {
    let history = match agent {
        AgentAnswer::Reachable { url, history } => {
            writeln!(
                out,
                "QoS actions (agent at {url}{}): {} since it started, the last {} kept",
                if history.dry_run { ", dry run" } else { "" },
                history.total,
                history.actions.len()
            )?;
            history
        }
        AgentAnswer::Unreachable { url, error } => {
            writeln!(out, "QoS actions: the agent at {url} did not answer ({error})")?;
            return Ok(());
        }
        AgentAnswer::NotAsked => return Ok(()),
    };
    for c in &history.current {
        writeln!(
            out,
            "  in force: {} {} = {} since {} [{}] {}",
            c.target, c.resource, c.value, c.since, c.strategy, c.reason
        )?;
    }
    let skip = history.actions.len().saturating_sub(RECENT);
    for a in history.actions.iter().skip(skip) {
        let change = match (&a.resource, &a.new) {
            (Some(r), Some(new)) => format!("{r} {} → {new}", a.old.as_deref().unwrap_or("?")),
            _ => format!("{:?}", a.kind).to_lowercase(),
        };
        writeln!(
            out,
            "  #{} {} [{}] {} {change}: {}",
            a.seq, a.time, a.strategy, a.target, a.reason
        )?;
    }
    Ok(())
}
