//! The [`AdmissionState`] the server decides with, shared by every request
//! and replaceable at run time (a cluster driver swaps in a new one when a
//! profile, namespace or PriorityClass changes).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use kolo_manager::webhook::AdmissionState;

/// A shared, swappable [`AdmissionState`].
///
/// Cloning gives another handle to the same state. Readers take an
/// `Arc` of the current state ([`SharedState::current`]) and decide with it
/// while a writer may already have replaced it: a request is decided
/// entirely with the state it started with.
#[derive(Debug, Clone)]
pub struct SharedState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: RwLock<Arc<AdmissionState>>,
    ready: AtomicBool,
}

impl SharedState {
    /// A state that is ready at once (`/readyz` answers 200).
    pub fn new(state: AdmissionState) -> SharedState {
        SharedState {
            inner: Arc::new(Inner {
                state: RwLock::new(Arc::new(state)),
                ready: AtomicBool::new(true),
            }),
        }
    }

    /// An empty state that is not ready yet: `/readyz` answers 503 until
    /// the first [`SharedState::replace`] (e.g. once the cluster watches
    /// have synced). Requests meanwhile are decided with no profiles.
    pub fn pending() -> SharedState {
        SharedState {
            inner: Arc::new(Inner {
                state: RwLock::new(Arc::new(AdmissionState::default())),
                ready: AtomicBool::new(false),
            }),
        }
    }

    /// The current state.
    pub fn current(&self) -> Arc<AdmissionState> {
        // The lock only guards an Arc swap, which cannot panic half-way: a
        // poisoned lock still holds a whole state.
        Arc::clone(&self.inner.state.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Replaces the state for the requests that start from now on, and
    /// marks it ready.
    pub fn replace(&self, state: AdmissionState) {
        *self.inner.state.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(state);
        self.inner.ready.store(true, Ordering::Release);
    }

    /// Whether a state has been provided.
    pub fn is_ready(&self) -> bool {
        self.inner.ready.load(Ordering::Acquire)
    }

    /// [`SharedState::is_ready`] as a readiness check of the process's
    /// health endpoint.
    pub fn readiness(&self) -> Result<(), String> {
        if self.is_ready() {
            Ok(())
        } else {
            Err("admission webhook: no admission state yet".to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_state_is_seen_by_new_readers_and_old_readers_keep_theirs() {
        let shared = SharedState::pending();
        assert!(!shared.is_ready());
        assert_eq!(shared.readiness(), Err("admission webhook: no admission state yet".into()));
        let before = shared.current();
        let other = shared.clone();
        other.replace(AdmissionState::default());
        assert!(shared.is_ready());
        assert_eq!(shared.readiness(), Ok(()));
        assert!(!Arc::ptr_eq(&before, &shared.current()));
        assert!(Arc::ptr_eq(&other.current(), &shared.current()));
    }
}
