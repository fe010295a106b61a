//! Leader election with a `coordination.k8s.io/v1` Lease, as client-go's
//! `leaderelection` does it: the holder renews the Lease every
//! `retry_period`; a candidate takes it over once `renewTime +
//! leaseDurationSeconds` has passed; every write carries the Lease's
//! `resourceVersion`, so of two candidates racing for an expired Lease only
//! one write succeeds (the other gets 409 Conflict).
//!
//! The decision ([`decide`]) is a pure function of the Lease, the identity
//! and the time; [`Elector`] does the I/O around it.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::sync::watch;

use crate::error::KubeError;
use crate::health::Health;

/// Where the Lease is and how it is held.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name (one per component, e.g. `kolo-scheduler`).
    pub name: String,
    /// This instance's identity (the pod name, plus a random suffix).
    pub identity: String,
    /// How long a Lease stays valid after its last renewal.
    pub lease_duration: Duration,
    /// How long the holder keeps trying to renew before it gives up
    /// leadership (shorter than `lease_duration`, so it stops acting before
    /// anyone else may start).
    pub renew_deadline: Duration,
    /// How often the holder renews and a candidate retries.
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry.
    pub fn new(namespace: &str, name: &str, identity: &str) -> LeaseConfig {
        LeaseConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    fn object(&self) -> String {
        format!("Lease/{}/{}", self.namespace, self.name)
    }
}

/// What a candidate does with the Lease it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseDecision {
    /// There is no Lease: create it, held by us.
    Create,
    /// We hold it: renew it.
    Renew,
    /// Its holder let it expire (or there is none): take it over.
    TakeOver,
    /// Someone else holds it and it has not expired.
    Wait {
        /// The current holder.
        holder: String,
    },
}

/// Decides what `identity` does with `lease` (`None`: it does not exist) at
/// `now`.
pub fn decide(lease: Option<&LeaseSpec>, identity: &str, now: Timestamp) -> LeaseDecision {
    let Some(spec) = lease else { return LeaseDecision::Create };
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder == identity {
        return LeaseDecision::Renew;
    }
    if holder.is_empty() {
        return LeaseDecision::TakeOver;
    }
    let duration = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(0)));
    let expired = match &spec.renew_time {
        Some(MicroTime(renewed)) => renewed.checked_add(duration).map_or(true, |end| end <= now),
        None => true,
    };
    if expired { LeaseDecision::TakeOver } else { LeaseDecision::Wait { holder: holder.into() } }
}

/// The Lease spec a successful [`LeaseDecision`] writes.
pub fn next_spec(
    old: Option<&LeaseSpec>,
    decision: &LeaseDecision,
    config: &LeaseConfig,
    now: Timestamp,
) -> LeaseSpec {
    let mut spec = old.cloned().unwrap_or_default();
    spec.holder_identity = Some(config.identity.clone());
    spec.lease_duration_seconds = Some(config.lease_duration.as_secs().max(1) as i32);
    spec.renew_time = Some(MicroTime(now));
    if *decision != LeaseDecision::Renew {
        spec.acquire_time = Some(MicroTime(now));
        let transitions = old.and_then(|s| s.lease_transitions).unwrap_or(0);
        spec.lease_transitions = Some(if old.is_some() { transitions + 1 } else { 0 });
    }
    spec
}

/// Campaigns for and holds one Lease.
#[derive(Clone)]
pub struct Elector {
    api: Api<Lease>,
    config: LeaseConfig,
}

/// Held leadership: [`Leadership::lost`] resolves when it ends.
#[derive(Debug)]
pub struct Leadership {
    lost: watch::Receiver<bool>,
    lease: String,
}

impl Leadership {
    /// Resolves with [`KubeError::LeadershipLost`] once this instance can
    /// no longer renew the Lease, or someone else holds it.
    pub async fn lost(&mut self) -> KubeError {
        while !*self.lost.borrow() {
            if self.lost.changed().await.is_err() {
                break;
            }
        }
        KubeError::LeadershipLost { lease: self.lease.clone() }
    }

    /// Whether leadership has already been lost.
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// [`lost`](Self::lost) for a component that may run without leader
    /// election (`None`): then it never resolves.
    pub async fn lost_if_held(leadership: Option<Leadership>) -> KubeError {
        match leadership {
            Some(mut l) => l.lost().await,
            None => std::future::pending().await,
        }
    }
}

impl Elector {
    /// An elector for `config`'s Lease.
    pub fn new(client: Client, config: LeaseConfig) -> Elector {
        Elector { api: Api::namespaced(client, &config.namespace), config }
    }

    /// One attempt: reads the Lease, decides, writes. `Ok(true)` if this
    /// instance holds the Lease afterwards.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, KubeError> {
        let object = self.config.object();
        let current = self
            .api
            .get_opt(&self.config.name)
            .await
            .map_err(|e| KubeError::api("get", &object, e))?;
        let now = Timestamp::now();
        let spec = current.as_ref().and_then(|l| l.spec.as_ref());
        let decision = decide(spec, &self.config.identity, now);
        if let LeaseDecision::Wait { holder } = &decision {
            tracing::debug!(lease = %object, %holder, "lease held by another instance");
            return Ok(false);
        }
        let mut lease = current.clone().unwrap_or_else(|| Lease {
            metadata: ObjectMeta {
                name: Some(self.config.name.clone()),
                namespace: Some(self.config.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: None,
        });
        lease.spec = Some(next_spec(spec, &decision, &self.config, now));
        let pp = PostParams::default();
        let result = match decision {
            LeaseDecision::Create => self.api.create(&pp, &lease).await.map(drop),
            // The resourceVersion read above makes this a compare-and-swap.
            _ => self.api.replace(&self.config.name, &pp, &lease).await.map(drop),
        };
        match result {
            Ok(()) => {
                if decision != LeaseDecision::Renew {
                    tracing::info!(lease = %object, identity = %self.config.identity, "became leader");
                }
                Ok(true)
            }
            // Another candidate wrote first: not an error, just not us.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(e) => Err(KubeError::api("write", object, e)),
        }
    }

    /// Waits until this instance holds the Lease, then keeps renewing it in
    /// the background; the returned [`Leadership`] says when it is lost.
    /// Errors while campaigning are logged and retried every
    /// `retry_period`.
    pub async fn acquire(self, health: Arc<Health>) -> Leadership {
        let lease = self.config.object();
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "leader election attempt failed"),
            }
            tokio::time::sleep(self.config.retry_period).await;
        }
        health.leader.set(1);
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            let mut last_renew = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(self.config.retry_period).await;
                match self.try_acquire_or_renew().await {
                    Ok(true) => last_renew = tokio::time::Instant::now(),
                    Ok(false) => {
                        tracing::error!(lease = %self.config.object(), "another instance took the lease");
                        break;
                    }
                    Err(e) => tracing::warn!(error = %e, "renewing the lease failed"),
                }
                if last_renew.elapsed() > self.config.renew_deadline {
                    tracing::error!(lease = %self.config.object(), "could not renew the lease in time");
                    break;
                }
            }
            health.leader.set(0);
            let _ = tx.send(true);
        });
        Leadership { lost: rx, lease }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: Option<&str>, renewed: Option<i64>, duration: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(Into::into),
            renew_time: renewed.map(|s| MicroTime(Timestamp::from_second(s).unwrap())),
            lease_duration_seconds: Some(duration),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn decisions() {
        let now = Timestamp::from_second(1_000).unwrap();
        let wait = LeaseDecision::Wait { holder: "b".into() };
        let cases: [(Option<LeaseSpec>, LeaseDecision); 6] = [
            (None, LeaseDecision::Create),
            (Some(spec(Some("a"), Some(999), 15)), LeaseDecision::Renew),
            (Some(spec(Some("b"), Some(990), 15)), wait),
            (Some(spec(Some("b"), Some(985), 15)), LeaseDecision::TakeOver),
            (Some(spec(Some("b"), None, 15)), LeaseDecision::TakeOver),
            (Some(spec(None, Some(999), 15)), LeaseDecision::TakeOver),
        ];
        for (lease, want) in cases {
            assert_eq!(decide(lease.as_ref(), "a", now), want, "{lease:?}");
        }
    }

    #[test]
    fn next_spec_counts_transitions_only_on_takeover() {
        let now = Timestamp::from_second(1_000).unwrap();
        let config = LeaseConfig::new("ns", "l", "a");
        let old = spec(Some("b"), Some(900), 15);
        let taken = next_spec(Some(&old), &LeaseDecision::TakeOver, &config, now);
        assert_eq!(taken.lease_transitions, Some(1));
        assert_eq!(taken.holder_identity.as_deref(), Some("a"));
        let renewed = next_spec(Some(&taken), &LeaseDecision::Renew, &config, now);
        assert_eq!(renewed.lease_transitions, Some(1));
        let created = next_spec(None, &LeaseDecision::Create, &config, now);
        assert_eq!(
            (created.lease_transitions, created.lease_duration_seconds),
            (Some(0), Some(15))
        );
    }
}
