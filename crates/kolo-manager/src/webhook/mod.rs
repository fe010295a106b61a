//! Pod admission: ClusterColocationProfile mutation and QoS validation
//! (Koordinator spec §4), Katalyst's `qos_level` honoured the same way, and
//! the AdmissionReviews they are asked and answered with. All pure.
//!
//! [`mutate_pod`] and [`validate_pod`] take the pod, what the webhook knows
//! of the cluster ([`AdmissionState`], built from a snapshot by
//! [`AdmissionInputs`]) and a random source (profiles apply with a
//! probability), and return the outcome. [`review`] decodes an
//! AdmissionReview request into a [`PodAdmission`]; [`answer`] encodes an
//! outcome as the AdmissionReview response. The HTTPS server that carries
//! them is on the act side (`kolo_kube::webhook::server`).

pub mod answer;
pub mod inputs;
pub mod mutation;
pub mod review;
pub mod validation;

use k8s_openapi::api::core::v1::Pod;

pub use self::inputs::AdmissionInputs;
pub use self::mutation::{AdmissionState, PriorityClassInfo, mutate_pod};
pub use self::validation::validate_pod;

/// The operation being admitted (AdmissionReview `request.operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `CONNECT`.
    Connect,
}

/// One pod admission request, decoded.
#[derive(Debug, Clone)]
pub struct PodAdmission {
    /// What is being done.
    pub operation: Operation,
    /// The request's namespace (a pod being created may not carry one yet).
    pub namespace: String,
    /// The sub-resource (`status`, `binding`, ...), if any: the webhooks
    /// ignore sub-resource requests.
    pub sub_resource: Option<String>,
    /// The pod as it will be stored (`request.object`).
    pub pod: Pod,
    /// The pod as stored before an update (`request.oldObject`).
    pub old_pod: Option<Pod>,
}

/// What the mutating webhook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum MutateOutcome {
    /// Nothing to change.
    Unchanged,
    /// The pod changed; `patch` turns the request's pod into `pod`.
    Patched {
        /// The mutated pod.
        pod: Box<Pod>,
        /// RFC 6902 JSON Patch from the request's pod to `pod`.
        patch: json_patch::Patch,
        /// Names of the profiles that were applied, in order.
        applied_profiles: Vec<String>,
    },
    /// The pod must be rejected (e.g. a profile names a PriorityClass that
    /// does not exist); the message says what to change.
    Denied(String),
}

/// What the validating webhook decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValidateOutcome {
    /// The pod is acceptable.
    Allowed,
    /// The pod breaks one or more rules; each message names the field and
    /// says what to change.
    Denied(Vec<String>),
}
