//! The errors of the act side: each names the object and the operation.

/// Why a call to the API server (or the setup around it) failed.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// The kubeconfig could not be read or used.
    #[error("loading kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The file, or `<in-cluster / $KUBECONFIG>` when inferred.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// An API call failed.
    #[error("{operation} {object}: {source}")]
    Api {
        /// What was attempted (`patch status of`, `create`, `bind` ...).
        operation: &'static str,
        /// The object (`Node/n1`, `Pod/ns/name` ...).
        object: String,
        /// The client's error.
        source: kube::Error,
    },
    /// The health / metrics listener could not start.
    #[error("serving health on {addr}: {source}")]
    Health {
        /// The address.
        addr: std::net::SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// This instance held the leader Lease and lost it; it stops so that
    /// only one instance acts (its Deployment restarts it as a candidate).
    #[error("lost leadership of Lease {lease}")]
    LeadershipLost {
        /// `namespace/name` of the Lease.
        lease: String,
    },
    /// The admission webhook could not start (certificate, TLS, listener).
    #[error("admission webhook: {0}")]
    Webhook(String),
    /// The scheduling thread could not start.
    #[error("starting the scheduling thread: {source}")]
    Thread {
        /// The I/O error.
        source: std::io::Error,
    },
    /// A Reservation's status could not be computed (the object is
    /// refused; the message names the field).
    #[error("Reservation/{name}: {message}")]
    Reservation {
        /// The reservation.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The scheduler configuration was refused.
    #[error("scheduler configuration: {0}")]
    SchedulerConfig(#[from] kolo_scheduler::config::ConfigError),
}

impl KubeError {
    /// An [`KubeError::Api`] for `operation` on `object`.
    pub fn api(operation: &'static str, object: impl Into<String>, source: kube::Error) -> Self {
        KubeError::Api { operation, object: object.into(), source }
    }
}
