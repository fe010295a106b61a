//! AdmissionReview in: decoding a request body into a [`Review`], whether
//! the decisions should see it ([`skip_reason`]), and its pod(s) as a
//! [`PodAdmission`]. The answer going out is [`super::answer`].
//!
//! The envelope is decoded with `request.object` / `request.oldObject` kept
//! as raw JSON, so that a request whose object is not a pod (or not one the
//! webhook can read) still yields its `uid` and gets a proper answer
//! instead of an HTTP error. Pure: bytes in, typed data out.

use k8s_openapi::api::core::v1::Pod;
use kube::core::admission::Operation as KubeOperation;
use kube::core::gvk::{GroupVersionKind, GroupVersionResource};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::webhook::{Operation, PodAdmission};

/// `admission.k8s.io/v1`.
pub const ADMISSION_V1: &str = "admission.k8s.io/v1";
/// `admission.k8s.io/v1beta1`: same shape, also accepted (the answer uses
/// the request's version, as the API server requires).
pub const ADMISSION_V1BETA1: &str = "admission.k8s.io/v1beta1";

/// Why a request body is not an AdmissionReview the server can answer; the
/// server answers HTTP 400 with this message.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// Not JSON, or not shaped like an AdmissionReview.
    #[error(
        "not an AdmissionReview: {}{message}",
        path.as_deref().map(|p| format!("{p}: ")).unwrap_or_default()
    )]
    Json {
        /// Where in the document, when known (e.g. `request.uid`).
        path: Option<String>,
        /// The JSON error.
        message: String,
    },
    /// `apiVersion` is not a version the server speaks.
    #[error("apiVersion {0:?} is not {ADMISSION_V1} (or {ADMISSION_V1BETA1})")]
    ApiVersion(String),
    /// `kind` is not `AdmissionReview`.
    #[error("kind {0:?} is not AdmissionReview")]
    Kind(String),
    /// There is no `request`.
    #[error("the AdmissionReview has no request")]
    NoRequest,
}

#[derive(Deserialize)]
struct ReviewIn {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    request: Option<RequestIn>,
}

/// The parts of `request` the webhooks use. Objects stay raw JSON.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestIn {
    /// The request's uid, echoed in the answer.
    pub uid: String,
    /// The object's kind (`v1 Pod` for the webhooks' requests).
    pub kind: GroupVersionKind,
    /// The resource (`v1 pods`).
    pub resource: GroupVersionResource,
    /// The sub-resource, if any.
    #[serde(default)]
    pub sub_resource: Option<String>,
    /// The object's name (empty for a pod created with `generateName`).
    #[serde(default)]
    pub name: String,
    /// The namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: KubeOperation,
    /// The object, raw.
    #[serde(default)]
    pub object: Option<Box<RawValue>>,
    /// The old object (UPDATE, DELETE), raw.
    #[serde(default)]
    pub old_object: Option<Box<RawValue>>,
}

/// A decoded AdmissionReview: its version (for the answer) and request.
#[derive(Debug)]
pub struct Review {
    /// `admission.k8s.io/v1` or `.../v1beta1`.
    pub api_version: &'static str,
    /// The request.
    pub request: RequestIn,
}

/// Decodes an AdmissionReview body.
pub fn decode_review(body: &[u8]) -> Result<Review, ReviewError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let review: ReviewIn = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        // `.` is the document itself and `?` an unknown place (the text
        // ended early): the message's line and column say more.
        let path = e.path().to_string();
        ReviewError::Json {
            path: (path != "." && path != "?").then_some(path),
            message: e.inner().to_string(),
        }
    })?;
    deserializer.end().map_err(|e| ReviewError::Json { path: None, message: e.to_string() })?;
    let api_version = match review.api_version.as_str() {
        ADMISSION_V1 => ADMISSION_V1,
        ADMISSION_V1BETA1 => ADMISSION_V1BETA1,
        _ => return Err(ReviewError::ApiVersion(review.api_version)),
    };
    if review.kind != "AdmissionReview" {
        return Err(ReviewError::Kind(review.kind));
    }
    let request = review.request.ok_or(ReviewError::NoRequest)?;
    Ok(Review { api_version, request })
}

/// Why a request is allowed without asking the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The object is not a `v1` Pod (the webhook configuration should not
    /// send those).
    NotAPod,
    /// A sub-resource (`pods/status`, `pods/binding`, ...): the webhooks
    /// ignore them, as Koordinator's do.
    SubResource,
    /// No object (DELETE, CONNECT).
    NoObject,
}

/// Whether the decision should see this request.
pub fn skip_reason(request: &RequestIn) -> Option<Skip> {
    let is_pod =
        |gvk: &GroupVersionKind| gvk.group.is_empty() && gvk.version == "v1" && gvk.kind == "Pod";
    if request.sub_resource.as_deref().is_some_and(|s| !s.is_empty()) {
        Some(Skip::SubResource)
    } else if !is_pod(&request.kind) || request.resource.resource != "pods" {
        Some(Skip::NotAPod)
    } else if request.object.is_none() {
        Some(Skip::NoObject)
    } else {
        None
    }
}

/// Decodes the pod(s) of a request the decision should see (see
/// [`skip_reason`]). The error is the JSON error for `request.object` or
/// `request.oldObject`.
pub fn pod_admission(request: &RequestIn) -> Result<PodAdmission, String> {
    let decode = |raw: &RawValue, field: &str| {
        let mut deserializer = serde_json::Deserializer::from_str(raw.get());
        serde_path_to_error::deserialize::<_, Pod>(&mut deserializer)
            .map_err(|e| format!("request.{field}.{}: {}", e.path(), e.inner()))
    };
    let object = request.object.as_deref().ok_or_else(|| "request.object: missing".to_string())?;
    let pod = decode(object, "object")?;
    let old_pod = match request.old_object.as_deref() {
        Some(raw) if raw.get() != "null" => Some(decode(raw, "oldObject")?),
        _ => None,
    };
    let namespace = request
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .or_else(|| pod.metadata.namespace.clone())
        .unwrap_or_default();
    Ok(PodAdmission {
        operation: match request.operation {
            KubeOperation::Create => Operation::Create,
            KubeOperation::Update => Operation::Update,
            KubeOperation::Delete => Operation::Delete,
            KubeOperation::Connect => Operation::Connect,
        },
        namespace,
        sub_resource: request.sub_resource.clone(),
        pod,
        old_pod,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::webhook::answer::skipped;
    use serde_json::{Value, json};

    /// An AdmissionReview v1 body around `request`.
    pub(crate) fn review(request: Value) -> Vec<u8> {
        json!({"apiVersion": ADMISSION_V1, "kind": "AdmissionReview", "request": request})
            .to_string()
            .into_bytes()
    }

    /// A pod CREATE request, as the API server sends it.
    pub(crate) fn pod_request() -> Value {
        json!({
            "uid": "u-1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "team-a",
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-"},
                       "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
            "oldObject": null,
        })
    }

    #[test]
    fn decodes_a_pod_create() {
        let review = decode_review(&review(pod_request())).unwrap();
        assert_eq!(review.api_version, ADMISSION_V1);
        assert_eq!(skip_reason(&review.request), None);
        let admission = pod_admission(&review.request).unwrap();
        assert_eq!(admission.operation, Operation::Create);
        assert_eq!(admission.namespace, "team-a");
        assert_eq!(admission.pod.spec.unwrap().containers[0].image.as_deref(), Some("nginx"));
        assert!(admission.old_pod.is_none());
    }

    #[test]
    fn malformed_reviews_name_the_field() {
        let mut request = pod_request();
        request.as_object_mut().unwrap().remove("uid");
        let err = decode_review(&review(request)).unwrap_err().to_string();
        assert!(err.starts_with("not an AdmissionReview: request: missing field `uid`"), "{err}");
        let err = decode_review(b"{\"apiVersion\": 3").unwrap_err().to_string();
        assert!(err.starts_with("not an AdmissionReview: apiVersion: invalid type"), "{err}");
        let err = decode_review(b"{} x").unwrap_err().to_string();
        assert_eq!(err, "not an AdmissionReview: trailing characters at line 1 column 4");
        let err = decode_review(b"{\"apiVersion\": \"admission").unwrap_err().to_string();
        assert_eq!(
            err,
            "not an AdmissionReview: apiVersion: EOF while parsing a string at line 1 column 25"
        );
        let err = decode_review(b"{\"apiVersion\": \"x\"").unwrap_err().to_string();
        assert_eq!(err, "not an AdmissionReview: EOF while parsing an object at line 1 column 18");
        let err = decode_review(br#"{"apiVersion":"v1","kind":"Pod"}"#).unwrap_err().to_string();
        assert_eq!(
            err,
            r#"apiVersion "v1" is not admission.k8s.io/v1 (or admission.k8s.io/v1beta1)"#
        );
        let err =
            decode_review(br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#)
                .unwrap_err();
        assert!(matches!(err, ReviewError::NoRequest));
    }

    #[test]
    fn an_unreadable_pod_is_an_error_naming_the_field() {
        let mut request = pod_request();
        request["object"]["spec"]["containers"][0]["resources"] =
            json!({"requests": {"cpu": ["not", "a", "quantity"]}});
        let review = decode_review(&review(request)).unwrap();
        let err = pod_admission(&review.request).unwrap_err();
        assert!(
            err.starts_with("request.object.spec.containers[0].resources.requests.cpu:"),
            "{err}"
        );
    }

    #[test]
    fn skips_sub_resources_other_kinds_and_deletes() {
        let mut binding = pod_request();
        binding["subResource"] = json!("binding");
        binding["kind"] = json!({"group": "", "version": "v1", "kind": "Binding"});
        let mut deployment = pod_request();
        deployment["kind"] = json!({"group": "apps", "version": "v1", "kind": "Deployment"});
        deployment["resource"] =
            json!({"group": "apps", "version": "v1", "resource": "deployments"});
        let mut delete = pod_request();
        delete["operation"] = json!("DELETE");
        delete["oldObject"] = delete["object"].take();
        for (request, skip) in
            [(binding, Skip::SubResource), (deployment, Skip::NotAPod), (delete, Skip::NoObject)]
        {
            let review = decode_review(&review(request)).unwrap();
            assert_eq!(skip_reason(&review.request), Some(skip));
            let answer: Value = serde_json::from_slice(&skipped(&review).body).unwrap();
            assert_eq!(
                answer,
                json!({"apiVersion": ADMISSION_V1, "kind": "AdmissionReview",
                       "response": {"uid": "u-1", "allowed": true}})
            );
        }
    }
}
