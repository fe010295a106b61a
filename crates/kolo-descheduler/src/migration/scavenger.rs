//! The scavenger: deletes jobs (and their reservations) older than 30
//! minutes, or than their TTL + 5 minutes when they have one, whatever
//! their phase (as Koordinator). A deleted job is asked for once: the
//! controller remembers it until the store no longer shows it.

use std::collections::HashSet;
use std::time::Duration;

use kolo_core::clock::Timestamp;

use super::Memory;
use super::job;
use crate::cluster::Cluster;
use crate::plan::Action;

/// Age after which a job without a TTL is deleted.
pub const MAX_AGE: Duration = Duration::from_secs(30 * 60);
/// Added to a job's TTL to give its deletion age.
pub const TTL_GRACE: Duration = Duration::from_secs(5 * 60);

/// What the scavenger asks for.
#[derive(Debug, Default)]
pub struct Scavenged {
    /// Deletions.
    pub actions: Vec<Action>,
    /// The jobs being deleted (not reconciled this pass).
    pub jobs: HashSet<String>,
}

/// Scavenges `cluster`'s jobs at `now`.
pub(crate) fn scavenge(cluster: &Cluster, now: Timestamp, memory: &mut Memory) -> Scavenged {
    let mut out = Scavenged::default();
    for j in cluster.jobs() {
        let Some(created) = job::created(j) else { continue };
        let max_age = job::ttl(j).map_or(MAX_AGE, |ttl| ttl + TTL_GRACE);
        let age = now.as_nanosecond() - created.as_nanosecond();
        if age < i128::try_from(max_age.as_nanos()).unwrap_or(i128::MAX) {
            continue;
        }
        let name = job::name(j);
        if memory.deleted.insert(name.clone()) {
            if let Some(r) = job::reservation_ref(j) {
                out.actions.push(Action::DeleteReservation { name: r.to_string() });
            }
            out.actions.push(Action::DeleteJob { job: name.clone() });
        }
        out.jobs.insert(name);
    }
    out
}
