//! Writing the node's NodeMetric status on the interval the NodeMetric
//! spec sets (the driver's value until a spec is seen), changed as soon as
//! the spec changes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kolo_agent::agent::Agent;
use kolo_agent::pods::PodSource;
use kolo_core::clock::Timestamp;
use tokio::sync::watch;
use tokio::time::Instant;

use super::nodemetric::NodeMetricWriter;
use super::ticks::lock;

/// Writes `agent`'s NodeMetric status with `writer` now and then every
/// `interval` (its latest value: a change re-times the next report from
/// the last one), forever. Must be spawned on a Tokio runtime.
pub async fn report_every<S: PodSource + Send + 'static>(
    agent: Arc<Mutex<Agent<S>>>,
    writer: NodeMetricWriter,
    mut interval: watch::Receiver<Duration>,
) {
    loop {
        let written = Instant::now();
        let metric = lock(&agent).node_metric(Timestamp::now());
        match writer.write(&metric).await {
            Ok(()) => tracing::debug!("NodeMetric status written"),
            Err(e) => {
                tracing::warn!(error = %e, "writing the NodeMetric status failed; retrying next report");
            }
        }
        loop {
            let every = (*interval.borrow_and_update()).max(Duration::from_secs(1));
            tokio::select! {
                () = tokio::time::sleep_until(written + every) => break,
                changed = interval.changed() => {
                    if changed.is_err() {
                        // The loop is gone: keep the last interval.
                        tokio::time::sleep_until(written + every).await;
                        break;
                    }
                }
            }
        }
    }
}
