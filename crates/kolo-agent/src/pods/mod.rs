//! Where the agent's pod list comes from.
//!
//! * [`kubelet::KubeletSource`]: the node's kubelet, `GET https://<addr>:10250/pods/`
//!   with a bearer token (what Koordinator's koordlet does, spec §3.2);
//! * [`file::FileSource`]: a YAML / JSON file of Pod objects, re-read when
//!   it changes, for running the agent without a cluster.
//!
//! Both implement [`PodSource`]. [`LastGood`] wraps a source with the
//! reference's rule: **an answer that fails or holds zero pods is ignored
//! and the last good list kept** (a restarting kubelet answers with an
//! empty list for a moment; acting on it would make every pod look gone).
//!
//! Sources are synchronous (a kubelet request is bounded by its timeout,
//! 3 s by default); an async caller runs them on a blocking thread.

pub mod file;
pub mod kubelet;

use k8s_openapi::api::core::v1::Pod;

pub use self::file::{FileSource, FileSourceError};
pub use self::kubelet::{KubeletConfig, KubeletError, KubeletSource, KubeletTls};

/// What a source answered.
#[derive(Debug, Clone)]
pub enum Fetched {
    /// The current pods.
    Pods(Vec<Pod>),
    /// Nothing changed since this source's last successful answer (a file
    /// that was not modified); the caller keeps what it has.
    Unchanged,
}

/// A provider of the node's pods.
pub trait PodSource: Send {
    /// A short description for logs and errors, e.g.
    /// `kubelet https://10.0.0.7:10250/pods/` or `file /etc/kolo/pods.yaml`.
    fn name(&self) -> &str;

    /// Whether the pods come from the kubelet, so that a failing source
    /// means the kubelet is down or restarting (see
    /// [`crate::qos::NodeState::kubelet_down`]).
    fn is_kubelet(&self) -> bool {
        false
    }

    /// Asks for the current pods. May block up to the source's timeout.
    fn fetch(&mut self) -> Result<Fetched, PodSourceError>;
}

/// A source could not give its pods.
#[derive(Debug, thiserror::Error)]
pub enum PodSourceError {
    /// The kubelet request failed.
    #[error(transparent)]
    Kubelet(#[from] KubeletError),
    /// The pods file could not be read or is malformed.
    #[error(transparent)]
    File(#[from] FileSourceError),
    /// The source answered with zero pods, which [`LastGood`] does not
    /// believe.
    #[error("{source_name}: answered with zero pods; keeping the last good list")]
    Empty {
        /// [`PodSource::name`] of the source.
        source_name: String,
    },
}

/// A [`PodSource`] plus the last good list it gave.
///
/// [`sync`](LastGood::sync) asks the source once: a non-empty answer
/// replaces the list wholesale; an error or an empty answer leaves the list
/// as it was and is returned (and logged: at `warn` when a failure streak
/// starts or its message changes, at `debug` while it repeats).
#[derive(Debug)]
pub struct LastGood<S> {
    source: S,
    pods: Vec<Pod>,
    generation: u64,
    failures: u32,
    last_error: Option<String>,
}

impl<S: PodSource> LastGood<S> {
    /// Wraps `source`; the list is empty until the first good sync.
    pub fn new(source: S) -> LastGood<S> {
        LastGood { source, pods: Vec::new(), generation: 0, failures: 0, last_error: None }
    }

    /// Asks the source once. `Ok(true)`: the list was replaced; `Ok(false)`:
    /// the source reported no change; `Err`: the last good list was kept.
    pub fn sync(&mut self) -> Result<bool, PodSourceError> {
        let result = match self.source.fetch() {
            Ok(Fetched::Pods(pods)) if pods.is_empty() => {
                Err(PodSourceError::Empty { source_name: self.source.name().to_string() })
            }
            Ok(Fetched::Pods(pods)) => {
                self.pods = pods;
                self.generation += 1;
                Ok(true)
            }
            Ok(Fetched::Unchanged) => Ok(false),
            Err(e) => Err(e),
        };
        match &result {
            Ok(_) => {
                if self.failures > 0 {
                    tracing::info!(
                        source = self.source.name(),
                        failures = self.failures,
                        pods = self.pods.len(),
                        "pod source recovered"
                    );
                }
                self.failures = 0;
                self.last_error = None;
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let message = e.to_string();
                if self.last_error.as_deref() != Some(message.as_str()) {
                    tracing::warn!(
                        error = %message,
                        kept = self.pods.len(),
                        "pod source failed; keeping the last good pod list"
                    );
                } else {
                    tracing::debug!(error = %message, failures = self.failures, "pod source still failing");
                }
                self.last_error = Some(message);
            }
        }
        result
    }

    /// The last good list (empty before the first good sync).
    pub fn pods(&self) -> &[Pod] {
        &self.pods
    }

    /// How many times the list was replaced: 0 until the first good sync.
    /// Consumers compare it to skip work when nothing changed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether a good list was ever received.
    pub fn has_synced(&self) -> bool {
        self.generation > 0
    }

    /// Syncs that failed (or were empty) since the last good one.
    pub fn consecutive_failures(&self) -> u32 {
        self.failures
    }

    /// The message of the last failure, while failing.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// The wrapped source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The wrapped source, mutably.
    pub fn source_mut(&mut self) -> &mut S {
        &mut self.source
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::VecDeque;

    use super::*;

    /// A pod named `name` with one container.
    pub(crate) fn pod(name: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }))
        .unwrap()
    }

    pub(crate) fn names(pods: &[Pod]) -> Vec<&str> {
        pods.iter().map(|p| p.metadata.name.as_deref().unwrap_or("")).collect()
    }

    struct Scripted(VecDeque<Result<Fetched, PodSourceError>>);

    impl PodSource for Scripted {
        fn name(&self) -> &str {
            "scripted"
        }
        fn fetch(&mut self) -> Result<Fetched, PodSourceError> {
            self.0.pop_front().expect("script ran out")
        }
    }

    fn failure() -> PodSourceError {
        PodSourceError::File(FileSourceError::Stat {
            path: "/x".into(),
            source: std::io::Error::other("boom"),
        })
    }

    #[test]
    fn keeps_the_last_good_list() {
        let mut s = LastGood::new(Scripted(VecDeque::from([
            Err(failure()),
            Ok(Fetched::Pods(vec![])),
            Ok(Fetched::Pods(vec![pod("a"), pod("b")])),
            Err(failure()),
            Ok(Fetched::Pods(vec![])),
            Ok(Fetched::Unchanged),
            Ok(Fetched::Pods(vec![pod("c")])),
        ])));
        assert!(s.sync().is_err());
        assert!(!s.has_synced() && s.pods().is_empty());
        let e = s.sync().unwrap_err();
        assert!(matches!(e, PodSourceError::Empty { .. }));
        assert_eq!(e.to_string(), "scripted: answered with zero pods; keeping the last good list");
        assert_eq!(s.consecutive_failures(), 2);
        assert!(s.sync().unwrap());
        assert_eq!(
            (names(s.pods()), s.generation(), s.consecutive_failures()),
            (vec!["a", "b"], 1, 0)
        );
        assert_eq!(s.sync().unwrap_err().to_string(), "reading /x: boom");
        assert_eq!(s.last_error(), Some("reading /x: boom"));
        assert!(s.sync().is_err());
        assert_eq!(names(s.pods()), vec!["a", "b"]);
        assert_eq!(s.consecutive_failures(), 2);
        assert!(!s.sync().unwrap(), "unchanged");
        assert_eq!((names(s.pods()), s.generation(), s.last_error()), (vec!["a", "b"], 1, None));
        assert!(s.sync().unwrap());
        assert_eq!((names(s.pods()), s.generation()), (vec!["c"], 2));
    }
}
