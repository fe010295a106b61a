//! AdmissionReview out: a decision (or the reason there was none) as the
//! `AdmissionResponse` the API server reads, with a base64 JSON Patch, and
//! the [`Outcome`] the server counts it as.
//!
//! The answer is written here rather than with
//! `kube::core::admission::AdmissionResponse` because that type serializes
//! `patch` as an array of numbers, where the API (a Go `[]byte`) defines
//! a base64 string. Pure: typed data in, bytes out.

use std::collections::BTreeMap;

use base64::Engine as _;
use kube::core::{Status, response::StatusCause, response::StatusDetails};
use serde::Serialize;

use crate::webhook::review::Review;
use crate::webhook::{MutateOutcome, ValidateOutcome};

/// Declares an enum of the ways a request can go, with the spelling its
/// metrics label and logs use ([`WebhookKind::as_str`] and the like) and
/// every variant in `ALL`, in order.
macro_rules! labelled_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The label value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }
    };
}

labelled_enum! {
    /// Which webhook a request went to.
    pub enum WebhookKind {
        /// `/mutate-pod`.
        Mutate => "mutate",
        /// `/validate-pod`.
        Validate => "validate",
    }
}

labelled_enum! {
    /// How a request was answered.
    pub enum Outcome {
        /// Mutation: allowed without a patch.
        Unchanged => "unchanged",
        /// Mutation: allowed with a patch.
        Patched => "patched",
        /// Validation: allowed.
        Allowed => "allowed",
        /// Denied by the decision.
        Denied => "denied",
        /// Not for the webhook (not a pod, a sub-resource, no object):
        /// allowed without a decision.
        Ignored => "ignored",
        /// The decision failed (panic, timeout, undecodable pod): allowed,
        /// unchanged.
        FailedOpen => "failed_open",
        /// Not a readable AdmissionReview: HTTP 400.
        BadRequest => "bad_request",
        /// Body over the size limit: HTTP 413.
        TooLarge => "too_large",
    }
}

labelled_enum! {
    /// Why a decision failed.
    pub enum FailureReason {
        /// The decision panicked.
        Panic => "panic",
        /// The decision did not finish within the per-request timeout.
        Timeout => "timeout",
        /// `request.object` is not a pod the webhook can read.
        UndecodablePod => "undecodable_pod",
    }
}

#[derive(Serialize)]
struct ReviewOut<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'static str,
    response: ResponseOut,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseOut {
    uid: String,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    audit_annotations: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

impl ResponseOut {
    fn allowed(uid: &str) -> ResponseOut {
        ResponseOut {
            uid: uid.to_string(),
            allowed: true,
            status: None,
            patch: None,
            patch_type: None,
            audit_annotations: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }

    fn denied(uid: &str, messages: &[String]) -> ResponseOut {
        let mut status = Status::failure(&messages.join("; "), "Forbidden").with_code(403);
        if messages.len() > 1 {
            status.details = Some(StatusDetails {
                causes: messages
                    .iter()
                    .map(|m| StatusCause {
                        reason: "FieldValueForbidden".to_string(),
                        message: m.clone(),
                        field: String::new(),
                    })
                    .collect(),
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                retry_after_seconds: 0,
            });
        }
        ResponseOut { allowed: false, status: Some(status), ..ResponseOut::allowed(uid) }
    }
}

/// An answer: the outcome (for the metrics) and the AdmissionReview body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// How the request was answered.
    pub outcome: Outcome,
    /// The AdmissionReview JSON.
    pub body: Vec<u8>,
}

fn answer(api_version: &str, outcome: Outcome, response: ResponseOut) -> Answer {
    let review = ReviewOut { api_version, kind: "AdmissionReview", response };
    // Strings, booleans and maps of strings always serialize.
    let body = serde_json::to_vec(&review).unwrap_or_default();
    Answer { outcome, body }
}

/// "Allowed", without a decision (see [`Skip`]).
pub fn skipped(review: &Review) -> Answer {
    answer(review.api_version, Outcome::Ignored, ResponseOut::allowed(&review.request.uid))
}

/// "Allowed, unchanged" because the decision failed; the warning reaches
/// the client (`kubectl` prints it). `api_version` and `uid` are the
/// request's.
pub fn failed_open(
    api_version: &str,
    uid: &str,
    webhook: WebhookKind,
    reason: FailureReason,
) -> Answer {
    let what = match webhook {
        WebhookKind::Mutate => "the pod was admitted without colocation mutation",
        WebhookKind::Validate => "the pod was admitted without QoS validation",
    };
    let mut response = ResponseOut::allowed(uid);
    response.warnings.push(format!("kolo webhook: {what} ({})", reason.as_str()));
    answer(api_version, Outcome::FailedOpen, response)
}

/// Audit annotation listing the profiles a mutation applied (the API
/// server prefixes it with the webhook's name).
pub const APPLIED_PROFILES_AUDIT_KEY: &str = "applied-profiles";

/// The answer to a mutation decision.
pub fn mutation_answer(review: &Review, outcome: &MutateOutcome) -> Answer {
    let uid = &review.request.uid;
    match outcome {
        MutateOutcome::Unchanged => {
            answer(review.api_version, Outcome::Unchanged, ResponseOut::allowed(uid))
        }
        MutateOutcome::Patched { patch, applied_profiles, .. } => {
            let mut response = ResponseOut::allowed(uid);
            // A Patch is a list of operations on JSON values: it always
            // serializes.
            let patch = serde_json::to_vec(patch).unwrap_or_default();
            response.patch = Some(base64::engine::general_purpose::STANDARD.encode(patch));
            response.patch_type = Some("JSONPatch");
            if !applied_profiles.is_empty() {
                response
                    .audit_annotations
                    .insert(APPLIED_PROFILES_AUDIT_KEY.to_string(), applied_profiles.join(","));
            }
            answer(review.api_version, Outcome::Patched, response)
        }
        MutateOutcome::Denied(message) => answer(
            review.api_version,
            Outcome::Denied,
            ResponseOut::denied(uid, std::slice::from_ref(message)),
        ),
    }
}

/// The answer to a validation decision.
pub fn validation_answer(review: &Review, outcome: &ValidateOutcome) -> Answer {
    let uid = &review.request.uid;
    match outcome {
        ValidateOutcome::Allowed => {
            answer(review.api_version, Outcome::Allowed, ResponseOut::allowed(uid))
        }
        ValidateOutcome::Denied(messages) => {
            answer(review.api_version, Outcome::Denied, ResponseOut::denied(uid, messages))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::review::tests::{pod_request, review};
    use crate::webhook::review::{ADMISSION_V1, decode_review, pod_admission};
    use serde_json::{Value, json};

    #[test]
    fn answers_follow_the_api() {
        let review = decode_review(&review(pod_request())).unwrap();
        let patch: json_patch::Patch = serde_json::from_value(
            json!([{"op": "add", "path": "/spec/schedulerName", "value": "kolo-scheduler"}]),
        )
        .unwrap();
        let pod = pod_admission(&review.request).unwrap().pod;
        let outcome = MutateOutcome::Patched {
            pod: Box::new(pod),
            patch,
            applied_profiles: vec!["a".into(), "b".into()],
        };
        let answer = mutation_answer(&review, &outcome);
        assert_eq!(answer.outcome, Outcome::Patched);
        let body: Value = serde_json::from_slice(&answer.body).unwrap();
        let response = &body["response"];
        assert_eq!(response["patchType"], "JSONPatch");
        assert_eq!(response["auditAnnotations"], json!({"applied-profiles": "a,b"}));
        let patch = base64::engine::general_purpose::STANDARD
            .decode(response["patch"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&patch).unwrap(),
            json!([{"op": "add", "path": "/spec/schedulerName", "value": "kolo-scheduler"}])
        );

        let denied = validation_answer(
            &review,
            &ValidateOutcome::Denied(vec!["first".into(), "second".into()]),
        );
        assert_eq!(denied.outcome, Outcome::Denied);
        let body: Value = serde_json::from_slice(&denied.body).unwrap();
        assert_eq!(body["response"]["allowed"], false);
        assert_eq!(body["response"]["status"]["code"], 403);
        assert_eq!(body["response"]["status"]["reason"], "Forbidden");
        assert_eq!(body["response"]["status"]["message"], "first; second");
        assert_eq!(body["response"]["status"]["details"]["causes"][1]["message"], "second");

        let failed = failed_open(ADMISSION_V1, "u-1", WebhookKind::Mutate, FailureReason::Panic);
        let body: Value = serde_json::from_slice(&failed.body).unwrap();
        assert_eq!(body["response"]["allowed"], true);
        assert!(body["response"].get("patch").is_none());
        assert_eq!(
            body["response"]["warnings"][0],
            "kolo webhook: the pod was admitted without colocation mutation (panic)"
        );
    }
}
