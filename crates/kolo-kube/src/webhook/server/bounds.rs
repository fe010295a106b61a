//! The bounds of the webhook server's [`Limits`]: what an operator may set
//! with `kolo manager webhook --max-body-bytes / --timeout-ms`, checked
//! before anything is generated, written or bound.

use std::ops::RangeInclusive;
use std::time::Duration;

use super::Limits;

/// Accepted `max_body_bytes`: 4 KiB (a small pod's AdmissionReview is about
/// 2 KiB; below this every request would get 413) to 64 MiB (20 times the
/// API server's own 3 MiB limit; more only lets a client make the server
/// buffer more).
pub const MAX_BODY_BYTES_RANGE: RangeInclusive<usize> = 4 * 1024..=64 * 1024 * 1024;

/// Accepted `decision_timeout`: 1 ms to 30 s (the largest `timeoutSeconds`
/// a webhook configuration may set; the API server gives up after it).
pub const DECISION_TIMEOUT_RANGE: RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(30);

/// A [`Limits`] field out of its bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {value} is out of range ({range})")]
pub struct LimitsError {
    /// The field (`max_body_bytes`, `decision_timeout`).
    pub field: &'static str,
    /// The value given, printed.
    pub value: String,
    /// The accepted range, printed.
    pub range: String,
}

impl Limits {
    /// Checks the operator-set limits against [`MAX_BODY_BYTES_RANGE`] and
    /// [`DECISION_TIMEOUT_RANGE`].
    pub fn validate(&self) -> Result<(), LimitsError> {
        if !MAX_BODY_BYTES_RANGE.contains(&self.max_body_bytes) {
            return Err(LimitsError {
                field: "max_body_bytes",
                value: self.max_body_bytes.to_string(),
                range: format!(
                    "{}..={} bytes",
                    MAX_BODY_BYTES_RANGE.start(),
                    MAX_BODY_BYTES_RANGE.end()
                ),
            });
        }
        if !DECISION_TIMEOUT_RANGE.contains(&self.decision_timeout) {
            return Err(LimitsError {
                field: "decision_timeout",
                value: format!("{} ms", self.decision_timeout.as_millis()),
                range: format!(
                    "{}..={} ms",
                    DECISION_TIMEOUT_RANGE.start().as_millis(),
                    DECISION_TIMEOUT_RANGE.end().as_millis()
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_table() {
        let ms = Duration::from_millis;
        // (max_body_bytes, decision_timeout, the field refused)
        let table = [
            (3 << 20, ms(500), None),
            (4096, ms(1), None),
            (64 << 20, ms(30_000), None),
            (0, ms(500), Some("max_body_bytes")),
            (4095, ms(500), Some("max_body_bytes")),
            ((64 << 20) + 1, ms(500), Some("max_body_bytes")),
            (usize::MAX, ms(500), Some("max_body_bytes")),
            (3 << 20, ms(0), Some("decision_timeout")),
            (3 << 20, ms(30_001), Some("decision_timeout")),
            (3 << 20, ms(u64::MAX), Some("decision_timeout")),
        ];
        for (max_body_bytes, decision_timeout, refused) in table {
            let limits = Limits { max_body_bytes, decision_timeout, ..Limits::default() };
            let got = limits.validate().err().map(|e| e.field);
            assert_eq!(got, refused, "{max_body_bytes} bytes, {decision_timeout:?}");
        }
        assert_eq!(Limits::default().validate(), Ok(()));
    }
}
