//! The whole mutation pipeline: operations, profile order, probability,
//! translation gating, namespaces, denial, the JSON patch, idempotence and
//! robustness.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kolo_api::crd::ClusterColocationProfile;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::webhook::{MutateOutcome, Operation, PodAdmission};

fn profile(name: &str, spec: Value) -> ClusterColocationProfile {
    serde_json::from_value(json!({
        "apiVersion": "config.koordinator.sh/v1alpha1",
        "kind": "ClusterColocationProfile",
        "metadata": {"name": name},
        "spec": spec
    }))
    .unwrap()
}

fn skip_resources(mut p: ClusterColocationProfile) -> ClusterColocationProfile {
    p.metadata.annotations = Some(BTreeMap::from([(
        "config.koordinator.sh/skip-update-resources".to_string(),
        "true".to_string(),
    )]));
    p
}

/// The profile of Koordinator's colocation guide: batch for namespaces
/// labelled `koordinator.sh/enable-colocation=true`, pods labelled
/// `koordinator.sh/enable-colocation=true`.
fn batch_profile() -> ClusterColocationProfile {
    profile(
        "colocation-profile-example",
        json!({
            "namespaceSelector": {"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
            "selector": {"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
            "qosClass": "BE",
            "priorityClassName": "koord-batch",
            "koordinatorPriority": 1000,
            "schedulerName": "kolo-scheduler",
            "labels": {"koordinator.sh/mutated": "true"},
            "annotations": {"koordinator.sh/intercepted": "true"},
            "patch": {"spec": {"terminationGracePeriodSeconds": 30}}
        }),
    )
}

fn state(profiles: Vec<ClusterColocationProfile>) -> AdmissionState {
    let namespaces = BTreeMap::from([
        (
            "spark".to_string(),
            BTreeMap::from([("koordinator.sh/enable-colocation".to_string(), "true".to_string())]),
        ),
        ("web".to_string(), BTreeMap::new()),
    ]);
    let classes = BTreeMap::from([
        (
            "koord-batch".to_string(),
            PriorityClassInfo {
                value: 5500,
                preemption_policy: Some("PreemptLowerPriority".into()),
            },
        ),
        ("koord-mid".to_string(), PriorityClassInfo { value: 7500, preemption_policy: None }),
        ("koord-prod".to_string(), PriorityClassInfo { value: 9500, preemption_policy: None }),
    ]);
    AdmissionState::new(profiles, namespaces, classes)
}

fn raw_pod(namespace: &str, labels: Value, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace, "labels": labels, "annotations": annotations},
        "spec": {
            "initContainers": [{"name": "init", "image": "busybox", "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}}}],
            "containers": [{"name": "main", "image": "spark", "resources": {
                "requests": {"cpu": "1", "memory": "2Gi"},
                "limits": {"cpu": "2", "memory": "4Gi"}
            }}]
        }
    })
}

fn colocated_pod(namespace: &str) -> Value {
    raw_pod(namespace, json!({"koordinator.sh/enable-colocation": "true"}), json!({}))
}

fn create(raw: &Value) -> PodAdmission {
    PodAdmission {
        operation: Operation::Create,
        namespace: raw["metadata"]["namespace"].as_str().unwrap_or_default().to_string(),
        sub_resource: None,
        pod: serde_json::from_value(raw.clone()).unwrap(),
        old_pod: None,
    }
}

fn mutate(state: &AdmissionState, request: &PodAdmission, seed: u64) -> MutateOutcome {
    mutate_pod(state, request, &mut seeded_rng(seed))
}

/// The mutated pod as JSON, after checking that the patch turns the raw
/// request JSON into exactly that pod.
fn patched(outcome: &MutateOutcome, raw: &Value) -> (Value, Vec<String>) {
    let MutateOutcome::Patched { pod, patch, applied_profiles } = outcome else {
        panic!("expected a patch, got {outcome:?}");
    };
    let mut doc = raw.clone();
    json_patch::patch(&mut doc, patch).unwrap();
    let from_patch: Pod = serde_json::from_value(doc).unwrap();
    assert_eq!(&from_patch, pod.as_ref(), "the patch reproduces the mutated pod");
    (serde_json::to_value(pod.as_ref()).unwrap(), applied_profiles.clone())
}

#[test]
fn batch_profile_end_to_end() {
    let state = state(vec![batch_profile()]);
    assert_eq!(state.warnings(), Vec::<String>::new());
    let raw = colocated_pod("spark");
    let outcome = mutate(&state, &create(&raw), 1);
    let (pod, applied) = patched(&outcome, &raw);
    assert_eq!(applied, ["colocation-profile-example"]);
    assert_eq!(
        pod["metadata"]["labels"],
        json!({
            "koordinator.sh/enable-colocation": "true",
            "koordinator.sh/mutated": "true",
            "koordinator.sh/qosClass": "BE",
            "koordinator.sh/priority": "1000"
        })
    );
    assert_eq!(pod["metadata"]["annotations"]["koordinator.sh/intercepted"], "true");
    assert_eq!(pod["spec"]["schedulerName"], "kolo-scheduler");
    assert_eq!(pod["spec"]["priorityClassName"], "koord-batch");
    assert_eq!(pod["spec"]["priority"], 5500);
    assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 30);
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        json!({
            "requests": {"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "2Gi"},
            "limits": {"kubernetes.io/batch-cpu": "2k", "kubernetes.io/batch-memory": "4Gi"}
        })
    );
    assert_eq!(
        pod["spec"]["initContainers"][0]["resources"]["requests"],
        json!({"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "64Mi"})
    );
    assert_eq!(
        pod["metadata"]["annotations"]["node.koordinator.sh/extended-resource-spec"],
        r#"{"containers":{"main":{"limits":{"kubernetes.io/batch-cpu":"2k","kubernetes.io/batch-memory":"4Gi"},"requests":{"kubernetes.io/batch-cpu":"1k","kubernetes.io/batch-memory":"2Gi"}}}}"#
    );
    // The mutated pod passes validation.
    let mut check = create(&raw);
    check.pod = serde_json::from_value(pod).unwrap();
    assert_eq!(crate::webhook::validate_pod(&check), crate::webhook::ValidateOutcome::Allowed);
}

#[test]
fn operations_and_sub_resources() {
    let state = state(vec![batch_profile()]);
    let raw = colocated_pod("spark");
    let base = create(&raw);
    // A pod that already has batch resources but no annotation.
    let batch_raw = {
        let mut r = raw.clone();
        r["spec"]["containers"][0]["resources"] =
            json!({"requests": {"kubernetes.io/batch-cpu": "1k"}});
        r
    };
    let cases: Vec<(&str, PodAdmission, &str)> = vec![
        ("create", base.clone(), "full"),
        (
            "status sub-resource",
            PodAdmission { sub_resource: Some("status".into()), ..base.clone() },
            "unchanged",
        ),
        (
            "empty sub-resource is the pod",
            PodAdmission { sub_resource: Some(String::new()), ..base.clone() },
            "full",
        ),
        ("delete", PodAdmission { operation: Operation::Delete, ..base.clone() }, "unchanged"),
        ("connect", PodAdmission { operation: Operation::Connect, ..base.clone() }, "unchanged"),
        (
            "update: profiles do not run",
            PodAdmission {
                operation: Operation::Update,
                old_pod: Some(base.pod.clone()),
                ..base.clone()
            },
            "unchanged",
        ),
        (
            "update: the annotation is still maintained",
            PodAdmission { operation: Operation::Update, ..create(&batch_raw) },
            "annotation only",
        ),
        (
            "update with mutating-update label",
            {
                let mut r = raw.clone();
                r["metadata"]["labels"]["pod.koordinator.sh/mutating-update"] = json!("true");
                PodAdmission {
                    operation: Operation::Update,
                    old_pod: Some(base.pod.clone()),
                    ..create(&r)
                }
            },
            "full",
        ),
    ];
    for (case, request, expected) in cases {
        let outcome = mutate(&state, &request, 1);
        match (expected, &outcome) {
            ("unchanged", MutateOutcome::Unchanged) => {}
            ("full", MutateOutcome::Patched { applied_profiles, .. }) => {
                assert_eq!(applied_profiles, &["colocation-profile-example"], "{case}");
            }
            ("annotation only", MutateOutcome::Patched { patch, applied_profiles, .. }) => {
                assert!(applied_profiles.is_empty(), "{case}");
                assert_eq!(patch.0.len(), 1, "{case}: {patch}");
            }
            _ => panic!("{case}: expected {expected}, got {outcome:?}"),
        }
    }
}

#[test]
fn profiles_apply_in_name_order_and_later_ones_win() {
    let profiles = vec![
        profile("b-second", json!({"labels": {"tier": "b"}, "annotations": {"seen-b": "1"}})),
        profile("a-first", json!({"labels": {"tier": "a"}, "annotations": {"seen-a": "1"}})),
        profile(
            "c-other-namespace",
            json!({"namespaceSelector": {"matchLabels": {"x": "y"}}, "labels": {"tier": "c"}}),
        ),
    ];
    let state = state(profiles);
    assert_eq!(
        state.profile_names().collect::<Vec<_>>(),
        ["a-first", "b-second", "c-other-namespace"]
    );
    let raw = raw_pod("web", json!({}), json!({}));
    let (pod, applied) = patched(&mutate(&state, &create(&raw), 1), &raw);
    assert_eq!(applied, ["a-first", "b-second"]);
    assert_eq!(pod["metadata"]["labels"]["tier"], "b");
    // A Burstable pod without labels is Prod: nothing translated.
    assert_eq!(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"], "1");
}

/// Probability edges with a seeded RNG, and translation running although
/// every matching profile was skipped.
#[test]
fn probability_and_translation_gate() {
    let raw_be = raw_pod(
        "web",
        json!({"koordinator.sh/qosClass": "BE", "koordinator.sh/priority-class": "koord-batch"}),
        json!({}),
    );
    let cpu_of = |outcome: &MutateOutcome, raw: &Value| match outcome {
        MutateOutcome::Unchanged => {
            (raw["spec"]["containers"][0]["resources"]["requests"].clone(), vec![])
        }
        other => {
            let (pod, applied) = patched(other, raw);
            (pod["spec"]["containers"][0]["resources"]["requests"].clone(), applied)
        }
    };
    let translated = json!({"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "2Gi"});
    let untouched = json!({"cpu": "1", "memory": "2Gi"});
    // (case, profiles, expected requests, expected applied)
    let cases: Vec<(&str, Vec<ClusterColocationProfile>, &Value, Vec<&str>)> = vec![
        (
            "no profiles: the reference leaves a self-declared batch pod alone",
            vec![],
            &untouched,
            vec![],
        ),
        (
            "0% matches but never applies: still translated",
            vec![profile("p", json!({"probability": 0, "labels": {"x": "1"}}))],
            &translated,
            vec![],
        ),
        ("\"0%\" likewise", vec![profile("p", json!({"probability": "0%"}))], &translated, vec![]),
        (
            "100% applies",
            vec![profile("p", json!({"probability": "100%", "labels": {"x": "1"}}))],
            &translated,
            vec!["p"],
        ),
        (
            "skip-update-resources",
            vec![skip_resources(profile("p", json!({"labels": {"x": "1"}})))],
            &untouched,
            vec!["p"],
        ),
        (
            "skip-update-resources on a skipped profile still counts",
            vec![
                profile("a", json!({"labels": {"x": "1"}})),
                skip_resources(profile("b", json!({"probability": 0}))),
            ],
            &untouched,
            vec!["a"],
        ),
        (
            "a non-matching profile does not open the gate",
            vec![profile("p", json!({"selector": {"matchLabels": {"x": "y"}}}))],
            &untouched,
            vec![],
        ),
        (
            "an invalid profile is ignored, not matched",
            vec![profile(
                "p",
                json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}}),
            )],
            &untouched,
            vec![],
        ),
    ];
    for (case, profiles, expected, applied) in cases {
        let state = state(profiles);
        let (requests, got_applied) = cpu_of(&mutate(&state, &create(&raw_be), 3), &raw_be);
        assert_eq!(&requests, expected, "{case}");
        assert_eq!(got_applied, applied, "{case}");
    }
}

#[test]
fn fifty_percent_applies_to_about_half_and_is_reproducible() {
    let state = state(vec![profile("half", json!({"probability": "50%", "labels": {"x": "1"}}))]);
    let raw = raw_pod("web", json!({}), json!({}));
    let request = create(&raw);
    let mut rng = seeded_rng(42);
    let applied = (0..2000)
        .filter(|_| matches!(mutate_pod(&state, &request, &mut rng), MutateOutcome::Patched { .. }))
        .count();
    assert!((900..1100).contains(&applied), "{applied} of 2000");
    let run = |seed| (0..32).map(|_| mutate(&state, &request, seed)).collect::<Vec<_>>();
    assert_eq!(run(9), run(9));
}

#[test]
fn katalyst_reclaimed_pods_translate_without_a_profile() {
    let raw =
        raw_pod("web", json!({}), json!({"katalyst.kubewharf.io/qos_level": "reclaimed_cores"}));
    let (pod, applied) = patched(&mutate(&state(vec![]), &create(&raw), 1), &raw);
    assert!(applied.is_empty());
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["requests"],
        json!({"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "2Gi"})
    );
    // shared_cores is LS, hence Prod: untouched.
    let raw = raw_pod("web", json!({}), json!({"katalyst.kubewharf.io/qos_level": "shared_cores"}));
    assert_eq!(mutate(&state(vec![]), &create(&raw), 1), MutateOutcome::Unchanged);
}

#[test]
fn a_profile_setting_the_katalyst_annotation_translates() {
    let state = state(vec![profile(
        "katalyst-batch",
        json!({"annotations": {"katalyst.kubewharf.io/qos_level": "reclaimed_cores"}}),
    )]);
    let raw = raw_pod("web", json!({}), json!({}));
    let (pod, _) = patched(&mutate(&state, &create(&raw), 1), &raw);
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["limits"]["kubernetes.io/batch-cpu"],
        "2k"
    );
}

#[test]
fn explicit_katalyst_annotation_beats_a_profile_qos_class() {
    let state = state(vec![batch_profile()]);
    let mut raw = colocated_pod("spark");
    raw["metadata"]["annotations"] = json!({"katalyst.kubewharf.io/qos_level": "dedicated_cores"});
    // Not matched, so neither applied nor translated.
    assert_eq!(mutate(&state, &create(&raw), 1), MutateOutcome::Unchanged);
}

#[test]
fn namespaces() {
    let by_name = profile(
        "by-name",
        json!({
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "unknown-ns"}},
            "labels": {"hit": "1"}
        }),
    );
    let state = state(vec![batch_profile(), by_name]);
    // An unknown namespace has no colocation label: the batch profile does
    // not match (the reference would match it), the name label does.
    let raw = colocated_pod("unknown-ns");
    let (_, applied) = patched(&mutate(&state, &create(&raw), 1), &raw);
    assert_eq!(applied, ["by-name"]);
    // The request's namespace is used when the pod has none.
    let mut raw = colocated_pod("spark");
    raw["metadata"].as_object_mut().unwrap().remove("namespace");
    let mut request = create(&raw);
    request.namespace = "spark".into();
    let (pod, applied) = patched(&mutate(&state, &request, 1), &raw);
    assert_eq!(applied, ["colocation-profile-example"]);
    assert!(pod["metadata"].get("namespace").is_none(), "the namespace is not written");
}

#[test]
fn denied_when_the_priority_class_is_missing() {
    let state = state(vec![profile("needs-gold", json!({"priorityClassName": "gold"}))]);
    assert_eq!(
        state.warnings(),
        [
            "ClusterColocationProfile needs-gold: spec.priorityClassName: PriorityClass gold does not exist; pods the profile applies to are denied until it is created"
        ]
    );
    let raw = raw_pod("web", json!({}), json!({}));
    assert_eq!(
        mutate(&state, &create(&raw), 1),
        MutateOutcome::Denied(
            "ClusterColocationProfile needs-gold sets priorityClassName gold, but PriorityClass gold does not exist: \
             create it (for example `kubectl create priorityclass gold --value=5500`) or fix the profile's spec.priorityClassName"
                .into()
        )
    );
    // A known band name suggests its own default value.
    let state = state_with_classes(
        vec![profile("mid", json!({"priorityClassName": "koord-mid"}))],
        BTreeMap::new(),
    );
    let MutateOutcome::Denied(message) = mutate(&state, &create(&raw), 1) else { panic!() };
    assert!(message.contains("--value=7500"), "{message}");
}

fn state_with_classes(
    profiles: Vec<ClusterColocationProfile>,
    classes: BTreeMap<String, PriorityClassInfo>,
) -> AdmissionState {
    AdmissionState::new(profiles, BTreeMap::new(), classes)
}

#[test]
fn warnings_name_profile_and_field() {
    let state = state(vec![
        profile(
            "bad-selector",
            json!({"selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
        ),
        profile("bad-probability", json!({"probability": "often"})),
        profile("clamped", json!({"probability": 200})),
        profile("dup", json!({"labels": {"v": "1"}})),
        profile("dup", json!({"labels": {"v": "2"}})),
    ]);
    assert_eq!(
        state.warnings(),
        [
            "ClusterColocationProfile bad-selector: spec.selector.matchExpressions[0].values: operator In needs at least one value; the profile is ignored until it is fixed",
            "ClusterColocationProfile bad-probability: spec.probability: \"often\" is not a percentage (write an integer from 0 to 100, or a string such as \"50%\"); the profile is ignored until it is fixed",
            "ClusterColocationProfile clamped: spec.probability 200 is outside 0-100; using 100%",
            "ClusterColocationProfile dup is defined more than once; the last definition is used",
        ]
    );
    assert_eq!(state.profile_names().collect::<Vec<_>>(), ["clamped", "dup"]);
    let raw = raw_pod("web", json!({}), json!({}));
    let (pod, _) = patched(&mutate(&state, &create(&raw), 1), &raw);
    assert_eq!(pod["metadata"]["labels"]["v"], "2");
}

#[test]
fn a_patch_that_breaks_the_pod_denies_it() {
    // Valid on an empty pod, but merging into this pod's container makes
    // `ports` hold a non-port.
    let state = state(vec![profile(
        "bad-patch",
        json!({"patch": {"spec": {"containers": [{"name": "main", "ports": [{"containerPort": 80, "protocol": 7}]}]}}}),
    )]);
    assert!(state.warnings().iter().any(|w| w.contains("bad-patch")), "{:?}", state.warnings());
    let state = state_with_classes(
        vec![profile(
            "env",
            json!({"patch": {"spec": {"containers": [{"name": "main", "env": [{"name": "A", "value": "1"}]}]}}}),
        )],
        BTreeMap::new(),
    );
    let raw = raw_pod("web", json!({}), json!({}));
    let (pod, _) = patched(&mutate(&state, &create(&raw), 1), &raw);
    assert_eq!(pod["spec"]["containers"][0]["env"], json!([{"name": "A", "value": "1"}]));
    assert_eq!(pod["spec"]["containers"][0]["image"], "spark");
}

#[test]
fn mutation_is_idempotent_on_its_own_output() {
    let state = state(vec![
        batch_profile(),
        profile(
            "suffix",
            json!({"labelSuffixes": {"koordinator.sh/enable-colocation": "-x"}, "labelKeysMapping": {"koordinator.sh/qosClass": "qos-copy"}}),
        ),
    ]);
    let raw = colocated_pod("spark");
    let (once, _) = patched(&mutate(&state, &create(&raw), 1), &raw);
    assert_eq!(mutate(&state, &create(&once), 1), MutateOutcome::Unchanged);
}

// --- properties ---------------------------------------------------------

fn arb_quantity() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..5000).prop_map(|m| format!("{m}m")),
        (0u64..64).prop_map(|n| n.to_string()),
        (1u64..4096).prop_map(|n| format!("{n}Mi")),
        Just("1.5".to_string()),
        Just("0.0001".to_string()),
    ]
}

fn arb_resource_list() -> impl Strategy<Value = BTreeMap<&'static str, String>> {
    let names = prop_oneof![
        Just("cpu"),
        Just("memory"),
        Just("kubernetes.io/batch-cpu"),
        Just("resource.katalyst.kubewharf.io/reclaimed_millicpu"),
        Just("nvidia.com/gpu"),
    ];
    proptest::collection::btree_map(names, arb_quantity(), 0..4)
}

fn arb_resources() -> impl Strategy<Value = Value> {
    (arb_resource_list(), arb_resource_list())
        .prop_map(|(requests, limits)| json!({"requests": requests, "limits": limits}))
}

fn arb_labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    let key = prop_oneof![
        Just("koordinator.sh/qosClass".to_string()),
        Just("koordinator.sh/priority-class".to_string()),
        Just("app".to_string()),
        Just("koordinator.sh/enable-colocation".to_string()),
    ];
    let value = prop_oneof![
        Just("BE".to_string()),
        Just("LS".to_string()),
        Just("LSR".to_string()),
        Just("koord-batch".to_string()),
        Just("koord-mid".to_string()),
        Just("true".to_string()),
        "[a-z]{0,3}",
    ];
    proptest::collection::btree_map(key, value, 0..4)
}

fn arb_raw_pod() -> impl Strategy<Value = Value> {
    let level = prop_oneof![
        Just(None),
        Just(Some("reclaimed_cores")),
        Just(Some("shared_cores")),
        Just(Some("dedicated_cores")),
        Just(Some("bogus")),
    ];
    (
        arb_labels(),
        level,
        proptest::collection::vec(arb_resources(), 1..3),
        proptest::option::of(arb_resources()),
        prop_oneof![Just("spark"), Just("web"), Just("elsewhere")],
        proptest::option::of(prop_oneof![Just(5500), Just(7100), Just(9500), Just(0)]),
    )
        .prop_map(|(labels, level, containers, init, namespace, priority)| {
            let containers: Vec<Value> = containers
                .into_iter()
                .enumerate()
                .map(|(i, r)| json!({"name": format!("c{i}"), "resources": r}))
                .collect();
            let mut spec = json!({"containers": containers});
            if let Some(r) = init {
                spec["initContainers"] = json!([{"name": "init", "resources": r}]);
            }
            if let Some(p) = priority {
                spec["priority"] = json!(p);
            }
            let annotations = match level {
                Some(l) => json!({"katalyst.kubewharf.io/qos_level": l}),
                None => json!({}),
            };
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": namespace, "labels": labels, "annotations": annotations},
                "spec": spec
            })
        })
}

fn arb_profiles() -> impl Strategy<Value = Vec<ClusterColocationProfile>> {
    let one = (
        "[a-d]",
        prop_oneof![Just(None), Just(Some("BE")), Just(Some("LS")), Just(Some("LSR"))],
        prop_oneof![
            Just(None),
            Just(Some("koord-batch")),
            Just(Some("koord-mid")),
            Just(Some("koord-prod"))
        ],
        prop_oneof![Just(json!(100)), Just(json!(0)), Just(json!("50%"))],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(name, qos, priority, probability, select, skip)| {
            let mut spec = json!({
                "probability": probability,
                "labels": {"from": name.clone()},
                "labelSuffixes": {"app": "-s"},
                "labelKeysMapping": {"koordinator.sh/enable-colocation": "colocation-copy"},
            });
            if let Some(q) = qos {
                spec["qosClass"] = json!(q);
            }
            if let Some(p) = priority {
                spec["priorityClassName"] = json!(p);
            }
            if select {
                spec["namespaceSelector"] =
                    json!({"matchLabels": {"koordinator.sh/enable-colocation": "true"}});
            }
            let p = profile(&name, spec);
            if skip { skip_resources(p) } else { p }
        });
    proptest::collection::vec(one, 0..4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The patch turns the raw request JSON into the mutated pod, and
    /// mutating the result again changes nothing when every profile applies
    /// (100%) or none does (0%) — i.e. given the same random outcomes.
    #[test]
    fn patch_reproduces_the_mutation_and_mutation_is_idempotent(
        raw in arb_raw_pod(),
        profiles in arb_profiles(),
        seed in any::<u64>(),
    ) {
        let deterministic = profiles.iter().all(|p| p.spec.probability != Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("50%".into())));
        let state = state(profiles);
        let request = create(&raw);
        match mutate(&state, &request, seed) {
            MutateOutcome::Unchanged => {}
            MutateOutcome::Denied(message) => prop_assert!(!message.is_empty()),
            outcome @ MutateOutcome::Patched { .. } => {
                let (pod, _) = patched(&outcome, &raw);
                if deterministic {
                    let again = mutate(&state, &create(&pod), seed);
                    prop_assert_eq!(again, MutateOutcome::Unchanged);
                }
            }
        }
    }

    /// Arbitrary strings in labels, annotations, resource names and
    /// quantities, and in profile fields, never panic.
    #[test]
    fn arbitrary_strings_never_panic(
        labels in proptest::collection::btree_map(".{0,20}", ".{0,20}", 0..4),
        annotations in proptest::collection::btree_map(
            prop_oneof![Just("katalyst.kubewharf.io/qos_level".to_string()), Just("node.koordinator.sh/extended-resource-spec".to_string()), ".{0,12}"],
            ".{0,40}",
            0..4,
        ),
        resources in proptest::collection::btree_map(
            prop_oneof![Just("cpu".to_string()), Just("memory".to_string()), Just("kubernetes.io/batch-cpu".to_string()), ".{0,12}"],
            prop_oneof![".{0,12}", "[0-9]{1,40}(m|Ki|e9|E)?"],
            0..4,
        ),
        probability in prop_oneof![".{0,8}".prop_map(|s| json!(s)), any::<i32>().prop_map(|n| json!(n))],
        qos in ".{0,6}",
        operator in prop_oneof![Just("In".to_string()), Just("Exists".to_string()), ".{0,6}"],
        seed in any::<u64>(),
    ) {
        let raw = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "spark", "labels": labels, "annotations": annotations},
            "spec": {"containers": [{"name": "c", "resources": {"requests": resources.clone(), "limits": resources}}]}
        });
        let profiles = vec![
            profile("fuzz", json!({
                "probability": probability,
                "qosClass": qos,
                "priorityClassName": "koord-batch",
                "selector": {"matchExpressions": [{"key": "a", "operator": operator, "values": ["x"]}]}
            })),
            profile("plain", json!({"qosClass": "BE", "priorityClassName": "koord-batch"})),
        ];
        let state = state(profiles);
        let request = create(&raw);
        let outcome = mutate(&state, &request, seed);
        if let outcome @ MutateOutcome::Patched { .. } = &outcome {
            patched(outcome, &raw);
        }
        let _ = crate::webhook::validate_pod(&request);
    }
}
