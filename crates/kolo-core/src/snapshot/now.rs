//! The time a what-if command judges a snapshot at: `--now` when given,
//! else the newest NodeMetric update in the snapshot (so a dump reads as of
//! when it was taken), else the machine's clock. `kolo schedule` and `kolo
//! noderesource` resolve it alike.

use crate::clock::Timestamp;

use super::Snapshot;

/// Where the evaluation time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NowSource {
    /// `--now`.
    Flag,
    /// The newest NodeMetric `status.updateTime` in the snapshot.
    NodeMetric,
    /// The machine's clock (the snapshot has no NodeMetric update time).
    SystemClock,
}

impl NowSource {
    /// How tables and JSON reports name the source.
    pub fn describe(self) -> &'static str {
        match self {
            NowSource::Flag => "--now",
            NowSource::NodeMetric => "newest NodeMetric updateTime",
            NowSource::SystemClock => "system clock",
        }
    }
}

impl Snapshot {
    /// The time to judge the snapshot at, given the `--now` flag's value,
    /// and where it came from (see the module docs).
    pub fn what_if_now(&self, flag: Option<Timestamp>) -> (Timestamp, NowSource) {
        match (flag, self.newest_metric_update()) {
            (Some(now), _) => (now, NowSource::Flag),
            (None, Some(now)) => (now, NowSource::NodeMetric),
            (None, None) => (Timestamp::now(), NowSource::SystemClock),
        }
    }
}

/// Parses `--now` (RFC 3339, e.g. `2026-11-22T04:00:00Z`).
pub fn parse_now(text: &str) -> Result<Timestamp, String> {
    text.parse::<Timestamp>().map_err(|e| format!("not an RFC 3339 time: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRIC: &str = "apiVersion: slo.koordinator.sh/v1alpha1\nkind: NodeMetric\nmetadata: {name: n1}\nspec: {}\nstatus: {updateTime: \"2026-11-22T03:00:00Z\"}\n";

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn the_flag_wins_then_the_newest_metric_then_the_clock() {
        let with_metric = Snapshot::parse(METRIC, "metric.yaml").unwrap();
        let empty = Snapshot::default();
        let flag = at("2026-11-22T04:00:00Z");
        assert_eq!(with_metric.what_if_now(Some(flag)), (flag, NowSource::Flag));
        assert_eq!(
            with_metric.what_if_now(None),
            (at("2026-11-22T03:00:00Z"), NowSource::NodeMetric)
        );
        let before = Timestamp::now();
        let (now, source) = empty.what_if_now(None);
        assert_eq!(source, NowSource::SystemClock);
        assert!(now >= before && now <= Timestamp::now(), "{now} is not the clock's time");
    }

    #[test]
    fn parse_now_takes_rfc3339_with_offsets() {
        assert_eq!(parse_now("2026-11-22T04:00:00Z"), Ok(at("2026-11-22T04:00:00Z")));
        assert_eq!(parse_now("2026-11-22T05:00:00+01:00"), Ok(at("2026-11-22T04:00:00Z")));
        assert!(parse_now("2026-11-22").unwrap_err().starts_with("not an RFC 3339 time"));
    }
}
