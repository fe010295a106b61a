//! Watching a CRD that may not be installed (ElasticQuota, PodGroup,
//! Reservation): the component keeps running without it, says so once in
//! its log, and the watch keeps retrying (with kube-runtime's backoff) so
//! the CRD is picked up when someone installs it.

use kube::runtime::watcher;

/// Whether a watch error means the resource is not served (its CRD is not
/// installed: the list or watch answers 404).
pub fn is_not_installed(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => matches!(e, kube::Error::Api(s) if s.code == 404),
        watcher::Error::WatchError(s) => s.code == 404,
        watcher::Error::NoResourceVersion => false,
    }
}

/// What a watch of an optional CRD has told the log, so a missing CRD is
/// reported once (not on every retry) and its arrival once.
#[derive(Debug, Default)]
pub struct CrdPresence {
    missing_reported: bool,
}

/// What to do about one watch result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresenceNote {
    /// Nothing to say.
    Quiet,
    /// The CRD is missing, first time seen: log it, and treat the kind as
    /// having no objects.
    NowMissing,
    /// The CRD was missing and now answers.
    NowInstalled,
    /// Another error (not a missing CRD): log it as a watch failure.
    OtherError,
}

impl CrdPresence {
    /// A watch that has not reported anything yet.
    pub fn new() -> CrdPresence {
        CrdPresence::default()
    }

    /// Notes one watch result (`Ok` for any event, `Err` with the error).
    pub fn note(&mut self, result: Result<(), &watcher::Error>) -> PresenceNote {
        match result {
            Ok(()) if self.missing_reported => {
                self.missing_reported = false;
                PresenceNote::NowInstalled
            }
            Ok(()) => PresenceNote::Quiet,
            Err(e) if is_not_installed(e) => {
                if self.missing_reported {
                    PresenceNote::Quiet
                } else {
                    self.missing_reported = true;
                    PresenceNote::NowMissing
                }
            }
            Err(_) => PresenceNote::OtherError,
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    fn api(code: u16) -> watcher::Error {
        let status = Status::failure("x", "NotFound").with_code(code);
        watcher::Error::InitialListFailed(kube::Error::Api(status.boxed()))
    }

    #[test]
    fn a_missing_crd_is_reported_once_and_its_arrival_once() {
        let (missing, forbidden) = (api(404), api(403));
        let mut p = CrdPresence::new();
        let steps = [
            (Ok(()), PresenceNote::Quiet),
            (Err(&missing), PresenceNote::NowMissing),
            (Err(&missing), PresenceNote::Quiet),
            (Err(&forbidden), PresenceNote::OtherError),
            (Err(&missing), PresenceNote::Quiet),
            (Ok(()), PresenceNote::NowInstalled),
            (Ok(()), PresenceNote::Quiet),
            (Err(&missing), PresenceNote::NowMissing),
        ];
        for (i, (result, want)) in steps.into_iter().enumerate() {
            assert_eq!(p.note(result), want, "step {i}");
        }
    }

    #[test]
    fn only_404_means_not_installed() {
        assert!(is_not_installed(&api(404)));
        assert!(!is_not_installed(&api(403)));
        assert!(!is_not_installed(&api(500)));
        assert!(is_not_installed(&watcher::Error::WatchError(
            Status::failure("gone", "NotFound").with_code(404).boxed()
        )));
        assert!(!is_not_installed(&watcher::Error::NoResourceVersion));
    }
}
