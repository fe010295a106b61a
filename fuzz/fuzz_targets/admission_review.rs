//! Feeds arbitrary bytes to the webhook as an AdmissionReview body. Decoding
//! must never panic; a review that decodes goes through mutation (with
//! three profiles) and validation, which must not panic either, and a
//! mutation's JSON patch must apply to the request's pod.
#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use kolo_manager::webhook::review::{decode_review, pod_admission, skip_reason};
use kolo_manager::webhook::{AdmissionState, MutateOutcome, mutate_pod, validate_pod};
use libfuzzer_sys::fuzz_target;
use rand::SeedableRng;

fn state() -> &'static AdmissionState {
    static STATE: OnceLock<AdmissionState> = OnceLock::new();
    STATE.get_or_init(|| {
        let profiles = serde_json::from_str(
            r#"[
            {"metadata":{"name":"batch"},"spec":{"selector":{"matchLabels":{"app":"spark"}},
              "qosClass":"BE","priorityClassName":"koord-batch","schedulerName":"kolo-scheduler",
              "labels":{"team":"ml"}}},
            {"metadata":{"name":"half"},"spec":{"probability":"50%","annotations":{"a":"b"}}},
            {"metadata":{"name":"mid"},"spec":{"namespaceSelector":{"matchLabels":{"tier":"mid"}},
              "koordinatorPriority":7500,"qosClass":"LS"}}
          ]"#,
        )
        .expect("fixed profiles parse");
        let classes = BTreeMap::from([(
            "koord-batch".to_string(),
            kolo_manager::webhook::PriorityClassInfo { value: 5500, preemption_policy: None },
        )]);
        AdmissionState::new(profiles, BTreeMap::new(), classes)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(review) = decode_review(data) else { return };
    if skip_reason(&review.request).is_some() {
        return;
    }
    let Ok(admission) = pod_admission(&review.request) else { return };
    let _ = validate_pod(&admission);
    let mut rng = rand::rngs::StdRng::seed_from_u64(data.len() as u64);
    if let MutateOutcome::Patched { pod, patch, .. } = mutate_pod(state(), &admission, &mut rng) {
        let mut original = serde_json::to_value(&admission.pod).expect("a pod serializes");
        json_patch::patch(&mut original, &patch).expect("the patch applies to the request pod");
        let mutated = serde_json::to_value(&*pod).expect("a pod serializes");
        assert_eq!(original, mutated, "patch result differs from the mutated pod");
    }
});
