//! Where a real node's agent gets its pods, and the agent built over them.

use std::path::PathBuf;

use kolo_agent::agent::{Agent, AgentConfig, AgentError};
use kolo_agent::pods::file::FileSource;
use kolo_agent::pods::kubelet::{KubeletConfig, KubeletError, KubeletSource, KubeletTls};
use kolo_agent::pods::{Fetched, PodSource, PodSourceError};

/// Where the pods come from.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceConfig {
    /// A file of Pod objects (re-read when it changes); with the node's
    /// name it only gives pods bound to that node or to none.
    File {
        /// The file.
        path: PathBuf,
        /// Only pods of this node (or of none).
        node_name: Option<String>,
    },
    /// The kubelet's `/pods/`.
    Kubelet {
        /// `HOST[:PORT]` (a bracketed IPv6 address may have a port).
        address: String,
        /// Bearer token file (re-read on every request).
        token_file: Option<PathBuf>,
        /// CA bundle to verify the kubelet's certificate (without it the
        /// certificate is not verified).
        ca_file: Option<PathBuf>,
    },
}

/// Why the agent could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// `--kubelet`'s port is not a number.
    #[error("--kubelet {address}: the port is not a number: {source}")]
    Port {
        /// The address given.
        address: String,
        /// What is wrong.
        source: std::num::ParseIntError,
    },
    /// The kubelet source could not be set up (TLS, token file).
    #[error("--kubelet: {0}")]
    Kubelet(#[from] KubeletError),
    /// The agent could not start (cgroups, capacity).
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// The pod source of a real node's agent.
pub enum Source {
    /// From a file.
    File(FileSource),
    /// From the kubelet.
    Kubelet(Box<KubeletSource>),
}

impl PodSource for Source {
    fn name(&self) -> &str {
        match self {
            Source::File(s) => s.name(),
            Source::Kubelet(s) => s.name(),
        }
    }

    fn is_kubelet(&self) -> bool {
        matches!(self, Source::Kubelet(_))
    }

    fn fetch(&mut self) -> Result<Fetched, PodSourceError> {
        match self {
            Source::File(s) => s.fetch(),
            Source::Kubelet(s) => s.fetch(),
        }
    }
}

impl SourceConfig {
    /// The source, and whether it is cheap to ask every tick (a file: an
    /// unchanged one costs a `stat`).
    pub fn build(&self) -> Result<(Source, bool), SourceError> {
        match self {
            SourceConfig::File { path, node_name } => {
                let mut file = FileSource::new(path);
                if let Some(n) = node_name {
                    file = file.with_node_name(n.clone());
                }
                Ok((Source::File(file), true))
            }
            SourceConfig::Kubelet { address, token_file, ca_file } => {
                let (host, port) = split_host_port(address)?;
                let mut cfg = KubeletConfig::new(host);
                if let Some(port) = port {
                    cfg.port = port;
                }
                cfg.token_file = token_file.clone();
                if let Some(ca) = ca_file {
                    cfg.tls = KubeletTls::Verify { ca_file: ca.clone(), server_name: None };
                }
                Ok((Source::Kubelet(Box::new(KubeletSource::new(cfg)?)), false))
            }
        }
    }
}

/// `HOST`, `HOST:PORT`, `[V6]:PORT` → host and port; a bare IPv6 address
/// has no port.
fn split_host_port(address: &str) -> Result<(String, Option<u16>), SourceError> {
    match address.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') || h.starts_with('[') => {
            let port = p
                .parse::<u16>()
                .map_err(|source| SourceError::Port { address: address.into(), source })?;
            Ok((h.trim_matches(['[', ']']).to_string(), Some(port)))
        }
        _ => Ok((address.to_string(), None)),
    }
}

/// The agent of `config` over the pods of `source`.
pub fn build_agent(
    mut config: AgentConfig,
    source: &SourceConfig,
) -> Result<Agent<Source>, SourceError> {
    let (source, every_tick) = source.build()?;
    config.sync_pods_every_tick = every_tick;
    Ok(Agent::new(config, source)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_addresses() {
        let cases = [
            ("node-1", Some(("node-1", None))),
            ("node-1:10255", Some(("node-1", Some(10255)))),
            ("[fd00::1]:10250", Some(("fd00::1", Some(10250)))),
            ("fd00::1", Some(("fd00::1", None))),
            ("node-1:http", None),
        ];
        for (address, want) in cases {
            let got = split_host_port(address).ok();
            let got = got.as_ref().map(|(h, p)| (h.as_str(), *p));
            assert_eq!(got, want, "{address}");
        }
    }
}
