//! Every validation rule and message, on create and on update.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// A pod with the given labels, annotations, `spec.priority` and container
/// resources.
fn pod(labels: Value, annotations: Value, priority: Option<i32>, resources: Value) -> Pod {
    let mut spec = json!({"containers": [{"name": "c", "resources": resources}]});
    if let Some(p) = priority {
        spec["priority"] = json!(p);
    }
    serde_json::from_value(json!({
        "metadata": {"name": "p", "labels": labels, "annotations": annotations},
        "spec": spec
    }))
    .unwrap()
}

fn request(operation: Operation, pod: Pod, old_pod: Option<Pod>) -> PodAdmission {
    PodAdmission { operation, namespace: "ns".into(), sub_resource: None, pod, old_pod }
}

fn messages(pod: Pod) -> Vec<String> {
    match validate_pod(&request(Operation::Create, pod, None)) {
        ValidateOutcome::Allowed => vec![],
        ValidateOutcome::Denied(m) => m,
    }
}

const BATCH: Option<i32> = Some(5500);
const PROD: Option<i32> = Some(9500);
const MID: Option<i32> = Some(7500);

fn qos(class: &str) -> Value {
    json!({"koordinator.sh/qosClass": class})
}

fn level(level: &str) -> Value {
    json!({"katalyst.kubewharf.io/qos_level": level})
}

fn batch_requests() -> Value {
    json!({"requests": {"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "1Gi"}})
}

fn cpu(amount: &str) -> Value {
    json!({"requests": {"cpu": amount}})
}

const BATCH_NEEDS_BE: &str = "labels.koordinator.sh/qosClass: Required value: must specify koordinator QoS BE with koordinator colocation resources; fix: label the pod koordinator.sh/qosClass=BE (or annotate it katalyst.kubewharf.io/qos_level=reclaimed_cores), or request cpu/memory instead of kubernetes.io/batch-cpu/batch-memory";

/// (case, labels, annotations, spec.priority, resources, expected messages)
type CreateCase = (&'static str, Value, Value, Option<i32>, Value, Vec<&'static str>);

/// (case, change to the pod, expected messages)
type UpdateCase = (&'static str, Box<dyn Fn(&mut Pod)>, Vec<&'static str>);

#[test]
fn create_rules_table() {
    // (case, labels, annotations, spec.priority, resources, expected messages)
    let cases: Vec<CreateCase> = vec![
        ("BE batch pod", qos("BE"), json!({}), BATCH, batch_requests(), vec![]),
        ("plain LS pod", qos("LS"), json!({}), None, cpu("500m"), vec![]),
        ("no labels at all", json!({}), json!({}), None, json!({}), vec![]),
        (
            "batch resources without QoS",
            json!({}),
            json!({}),
            BATCH,
            batch_requests(),
            vec![BATCH_NEEDS_BE],
        ),
        (
            "batch resources with LS",
            qos("LS"),
            json!({}),
            BATCH,
            batch_requests(),
            vec![BATCH_NEEDS_BE],
        ),
        (
            "batch limit only counts as a request",
            qos("LS"),
            json!({}),
            None,
            json!({"limits": {"kubernetes.io/batch-memory": "1Gi"}}),
            vec![BATCH_NEEDS_BE],
        ),
        (
            "a zero batch request is no batch request",
            qos("LS"),
            json!({}),
            None,
            json!({"requests": {"kubernetes.io/batch-cpu": "0"}}),
            vec![],
        ),
        (
            "deprecated alias counts",
            json!({}),
            json!({}),
            None,
            json!({"requests": {"koordinator.sh/batch-cpu": "500"}}),
            vec![BATCH_NEEDS_BE],
        ),
        (
            "katalyst alias without reclaimed_cores",
            json!({}),
            json!({}),
            None,
            json!({"requests": {"resource.katalyst.kubewharf.io/reclaimed_millicpu": "1k"}}),
            vec![BATCH_NEEDS_BE],
        ),
        (
            "katalyst reclaimed with batch resources",
            json!({}),
            level("reclaimed_cores"),
            None,
            batch_requests(),
            vec![],
        ),
        (
            "BE with priority None",
            qos("BE"),
            json!({}),
            None,
            json!({}),
            vec![
                "Pod: Forbidden: koordinator.sh/qosClass=BE and priorityClass= cannot be used in combination; fix: give the pod a batch priority: priorityClassName of a PriorityClass valued 5000-5999 (e.g. koord-batch), or the label koordinator.sh/priority-class=koord-batch; or drop the BE QoS",
            ],
        ),
        (
            "BE with prod",
            qos("BE"),
            json!({}),
            PROD,
            json!({}),
            vec![
                "Pod: Forbidden: koordinator.sh/qosClass=BE and priorityClass=koord-prod cannot be used in combination; fix: BE pods run on reclaimed resources and cannot have a koord-prod priority (9000-9999): use a PriorityClass valued 5000-5999 (e.g. koord-batch), or another QoS class",
            ],
        ),
        ("BE with mid is allowed", qos("BE"), json!({}), MID, json!({}), vec![]),
        (
            "BE with prod by label",
            json!({"koordinator.sh/qosClass": "BE", "koordinator.sh/priority-class": "koord-prod"}),
            json!({}),
            BATCH,
            json!({}),
            vec![
                "Pod: Forbidden: koordinator.sh/qosClass=BE and priorityClass=koord-prod cannot be used in combination; fix: BE pods run on reclaimed resources and cannot have a koord-prod priority (9000-9999): use a PriorityClass valued 5000-5999 (e.g. koord-batch), or another QoS class",
            ],
        ),
        (
            "LSR with batch",
            qos("LSR"),
            json!({}),
            BATCH,
            cpu("2"),
            vec![
                "Pod: Forbidden: koordinator.sh/qosClass=LSR and priorityClass=koord-batch cannot be used in combination; fix: LSR pods need a prod priority: use a PriorityClass valued 9000-9999 (e.g. koord-prod), or QoS LS / BE for a lower priority",
            ],
        ),
        (
            "LSR with None",
            qos("LSR"),
            json!({}),
            None,
            cpu("2"),
            vec![
                "Pod: Forbidden: koordinator.sh/qosClass=LSR and priorityClass= cannot be used in combination; fix: LSR pods need a prod priority: priorityClassName of a PriorityClass valued 9000-9999 (e.g. koord-prod), or the label koordinator.sh/priority-class=koord-prod; or use QoS LS",
            ],
        ),
        ("LSR prod with whole CPUs", qos("LSR"), json!({}), PROD, cpu("2"), vec![]),
        ("LSE is not held to priorities", qos("LSE"), json!({}), BATCH, cpu("1"), vec![]),
        (
            "LSR without CPUs",
            qos("LSR"),
            json!({}),
            PROD,
            json!({"requests": {"memory": "1Gi"}}),
            vec![
                "pod.spec.containers[*].resources.requests: Required value: LSR Pod must declare the requested CPUs; fix: request whole CPUs (e.g. cpu: \"2\") in the containers of this LSR pod, or use QoS LS",
            ],
        ),
        (
            "LSE with fractional CPUs",
            qos("LSE"),
            json!({}),
            PROD,
            cpu("1500m"),
            vec![
                "pod.spec.containers[*].resources.requests: Invalid value: \"1500m\": the requested CPUs of LSR Pod must be integer; fix: LSE pods get whole cores, so make the pod's total cpu request a whole number (e.g. 2), or use QoS LS",
            ],
        ),
        (
            "LSR cpu from the limit",
            qos("LSR"),
            json!({}),
            PROD,
            json!({"limits": {"cpu": "3", "memory": "1Gi"}}),
            vec![],
        ),
        (
            "katalyst dedicated is LSR: whole CPUs",
            json!({}),
            level("dedicated_cores"),
            None,
            cpu("100m"),
            vec![
                "pod.spec.containers[*].resources.requests: Invalid value: \"100m\": the requested CPUs of LSR Pod must be integer; fix: LSR pods get whole cores, so make the pod's total cpu request a whole number (e.g. 1), or use QoS LS",
            ],
        ),
        (
            "katalyst levels need no koordinator priority",
            json!({}),
            level("dedicated_cores"),
            None,
            cpu("2"),
            vec![],
        ),
        (
            "katalyst reclaimed without priority",
            json!({}),
            level("reclaimed_cores"),
            None,
            json!({}),
            vec![],
        ),
        (
            "katalyst reclaimed with prod",
            json!({}),
            level("reclaimed_cores"),
            PROD,
            json!({}),
            vec![
                "Pod: Forbidden: katalyst.kubewharf.io/qos_level=reclaimed_cores and priorityClass=koord-prod cannot be used in combination; fix: BE pods run on reclaimed resources and cannot have a koord-prod priority (9000-9999): use a PriorityClass valued 5000-5999 (e.g. koord-batch), or another QoS class",
            ],
        ),
        (
            "katalyst dedicated with mid",
            json!({}),
            level("dedicated_cores"),
            MID,
            cpu("2"),
            vec![
                "Pod: Forbidden: katalyst.kubewharf.io/qos_level=dedicated_cores and priorityClass=koord-mid cannot be used in combination; fix: LSR pods need a prod priority: use a PriorityClass valued 9000-9999 (e.g. koord-prod), or QoS LS / BE for a lower priority",
            ],
        ),
        (
            "agreeing label and annotation",
            qos("BE"),
            level("reclaimed_cores"),
            BATCH,
            batch_requests(),
            vec![],
        ),
        ("dedicated agrees with LSE", qos("LSE"), level("dedicated_cores"), PROD, cpu("4"), vec![]),
        (
            "reclaimed_cores with qosClass LS",
            qos("LS"),
            level("reclaimed_cores"),
            None,
            json!({}),
            vec![
                "Pod: Forbidden: koordinator.sh/qosClass=LS and katalyst.kubewharf.io/qos_level=reclaimed_cores declare different QoS classes (reclaimed_cores is BE); fix: remove one of them, or make them agree (qosClass=LS goes with qos_level=shared_cores)",
            ],
        ),
        (
            "unknown katalyst level",
            json!({}),
            level("gold_cores"),
            None,
            json!({}),
            vec![
                "annotations.katalyst.kubewharf.io/qos_level: Unsupported value: \"gold_cores\": supported values: \"dedicated_cores\", \"reclaimed_cores\", \"shared_cores\", \"system_cores\"; fix: use one of them or remove the annotation",
            ],
        ),
        (
            "malformed enhancement",
            json!({}),
            json!({"katalyst.kubewharf.io/qos_level": "dedicated_cores", "katalyst.kubewharf.io/cpu_enhancement": "binding"}),
            None,
            cpu("1"),
            vec![
                "annotations.katalyst.kubewharf.io/cpu_enhancement: Invalid value: \"binding\": must be a JSON object of strings (expected value at line 1 column 1); fix: write it as JSON, e.g. {\"numa_binding\":\"true\"}",
            ],
        ),
        (
            "reserve-pod annotation",
            json!({}),
            json!({"scheduling.koordinator.sh/reserve-pod": "true"}),
            None,
            json!({}),
            vec![
                "annotations.scheduling.koordinator.sh/reserve-pod: Forbidden: cannot set in annotations; fix: remove the annotation (only kolo's scheduler marks reserve pods)",
            ],
        ),
        (
            "several errors, in rule order",
            qos("LS"),
            json!({"katalyst.kubewharf.io/qos_level": "x", "scheduling.koordinator.sh/reserve-pod": ""}),
            None,
            batch_requests(),
            vec![
                BATCH_NEEDS_BE,
                "annotations.katalyst.kubewharf.io/qos_level: Unsupported value: \"x\": supported values: \"dedicated_cores\", \"reclaimed_cores\", \"shared_cores\", \"system_cores\"; fix: use one of them or remove the annotation",
                "annotations.scheduling.koordinator.sh/reserve-pod: Forbidden: cannot set in annotations; fix: remove the annotation (only kolo's scheduler marks reserve pods)",
            ],
        ),
    ];
    for (case, labels, annotations, priority, resources, expected) in cases {
        assert_eq!(messages(pod(labels, annotations, priority, resources)), expected, "{case}");
    }
}

#[test]
fn immutable_fields_on_update() {
    let base = || {
        pod(
            json!({"koordinator.sh/qosClass": "BE", "koordinator.sh/priority": "10"}),
            level("reclaimed_cores"),
            BATCH,
            json!({}),
        )
    };
    let changed = |f: &dyn Fn(&mut Pod)| {
        let mut p = base();
        f(&mut p);
        match validate_pod(&request(Operation::Update, p, Some(base()))) {
            ValidateOutcome::Allowed => vec![],
            ValidateOutcome::Denied(m) => m,
        }
    };
    let labels = |p: &mut Pod| p.metadata.labels.as_mut().unwrap().clone();
    let cases: Vec<UpdateCase> = vec![
        ("unchanged", Box::new(|_| {}), vec![]),
        (
            "other labels may change",
            Box::new(|p| {
                p.metadata.labels.as_mut().unwrap().insert("x".into(), "y".into());
            }),
            vec![],
        ),
        (
            "qos label changed",
            Box::new(|p| {
                p.metadata
                    .labels
                    .as_mut()
                    .unwrap()
                    .insert("koordinator.sh/qosClass".into(), "LS".into());
            }),
            vec![
                "labels.koordinator.sh/qosClass: Invalid value: \"LS\": field is immutable; fix: keep \"BE\", the value the pod was created with, or delete the pod and create it again",
                // The annotation no longer agrees either (new, not grandfathered).
                "Pod: Forbidden: koordinator.sh/qosClass=LS and katalyst.kubewharf.io/qos_level=reclaimed_cores declare different QoS classes (reclaimed_cores is BE); fix: remove one of them, or make them agree (qosClass=LS goes with qos_level=shared_cores)",
            ],
        ),
        (
            "qos label removed",
            Box::new(|p| {
                p.metadata.labels.as_mut().unwrap().remove("koordinator.sh/qosClass");
            }),
            vec![
                "labels.koordinator.sh/qosClass: Invalid value: \"\": field is immutable; fix: keep \"BE\", the value the pod was created with, or delete the pod and create it again",
            ],
        ),
        (
            "priority band changed",
            Box::new(|p| {
                p.spec.as_mut().unwrap().priority = Some(7500);
            }),
            vec![
                "spec.priority: Invalid value: \"koord-mid\": field is immutable; fix: keep \"koord-batch\", the value the pod was created with, or delete the pod and create it again",
            ],
        ),
        (
            "priority within the band",
            Box::new(|p| {
                p.spec.as_mut().unwrap().priority = Some(5999);
            }),
            vec![],
        ),
        (
            "sub-priority removed",
            Box::new(move |p| {
                let mut l = labels(p);
                l.remove("koordinator.sh/priority");
                p.metadata.labels = Some(l);
            }),
            vec![
                "labels.koordinator.sh/priority: Invalid value: \"\": field is immutable; fix: keep \"10\", the value the pod was created with, or delete the pod and create it again",
            ],
        ),
        (
            "katalyst level changed",
            Box::new(|p| {
                p.metadata
                    .annotations
                    .as_mut()
                    .unwrap()
                    .insert("katalyst.kubewharf.io/qos_level".into(), "shared_cores".into());
            }),
            vec![
                "annotations.katalyst.kubewharf.io/qos_level: Invalid value: \"shared_cores\": field is immutable; fix: keep \"reclaimed_cores\", the value the pod was created with, or delete the pod and create it again",
                "Pod: Forbidden: koordinator.sh/qosClass=BE and katalyst.kubewharf.io/qos_level=shared_cores declare different QoS classes (shared_cores is LS); fix: remove one of them, or make them agree (qosClass=BE goes with qos_level=reclaimed_cores)",
            ],
        ),
        (
            "reserve-pod added on update",
            Box::new(|p| {
                p.metadata
                    .annotations
                    .as_mut()
                    .unwrap()
                    .insert("scheduling.koordinator.sh/reserve-pod".into(), "true".into());
            }),
            vec![
                "annotations.scheduling.koordinator.sh/reserve-pod: Forbidden: cannot set in annotations; fix: remove the annotation (only kolo's scheduler marks reserve pods)",
            ],
        ),
    ];
    for (case, change, expected) in cases {
        assert_eq!(changed(change.as_ref()), expected, "{case}");
    }
}

/// A pod admitted before the webhook, already breaking a create rule, can
/// still be updated; a new problem is still reported.
#[test]
fn update_grandfathers_existing_problems() {
    let old = pod(json!({}), json!({}), None, batch_requests());
    let mut new = old.clone();
    new.metadata.finalizers = Some(vec![]);
    assert_eq!(
        validate_pod(&request(Operation::Update, new.clone(), Some(old.clone()))),
        ValidateOutcome::Allowed
    );
    new.metadata.annotations =
        Some([("scheduling.koordinator.sh/reserve-pod".to_string(), String::new())].into());
    let ValidateOutcome::Denied(m) =
        validate_pod(&request(Operation::Update, new.clone(), Some(old)))
    else {
        panic!()
    };
    assert_eq!(m.len(), 1);
    assert!(m[0].starts_with("annotations.scheduling.koordinator.sh/reserve-pod"));
    // Without the old pod, an update is judged like a create.
    let ValidateOutcome::Denied(m) = validate_pod(&request(Operation::Update, new, None)) else {
        panic!()
    };
    assert_eq!(m.len(), 2);
}

#[test]
fn ignored_requests() {
    let bad = pod(json!({}), json!({}), None, batch_requests());
    for (operation, sub) in
        [(Operation::Delete, None), (Operation::Connect, None), (Operation::Create, Some("status"))]
    {
        let mut r = request(operation, bad.clone(), None);
        r.sub_resource = sub.map(String::from);
        assert_eq!(validate_pod(&r), ValidateOutcome::Allowed, "{operation:?} {sub:?}");
    }
    let mut r = request(Operation::Create, bad, None);
    r.sub_resource = Some(String::new());
    assert!(matches!(validate_pod(&r), ValidateOutcome::Denied(_)));
}

#[test]
fn long_values_are_shortened_in_messages() {
    let long = "x".repeat(10_000);
    let m = messages(pod(json!({}), level(&long), None, json!({})));
    assert_eq!(m.len(), 1);
    assert!(m[0].len() < 300, "{}", m[0]);
    assert!(m[0].contains(&format!("{}...", "x".repeat(64))));
}

proptest! {
    /// Arbitrary labels, annotations and quantities never panic, and the
    /// verdict only depends on the pod.
    #[test]
    fn arbitrary_pods_never_panic(
        labels in proptest::collection::btree_map(
            prop_oneof![Just("koordinator.sh/qosClass".to_string()), Just("koordinator.sh/priority-class".to_string()), Just("koordinator.sh/priority".to_string()), ".{0,10}"],
            prop_oneof![Just("BE".to_string()), Just("LSR".to_string()), Just("koord-prod".to_string()), ".{0,10}"],
            0..4,
        ),
        annotations in proptest::collection::btree_map(
            prop_oneof![Just("katalyst.kubewharf.io/qos_level".to_string()), Just("katalyst.kubewharf.io/memory_enhancement".to_string()), ".{0,10}"],
            prop_oneof![Just("dedicated_cores".to_string()), Just("{\"numa_binding\":\"true\"}".to_string()), ".{0,30}"],
            0..4,
        ),
        resources in proptest::collection::btree_map(
            prop_oneof![Just("cpu".to_string()), Just("kubernetes.io/batch-cpu".to_string()), ".{0,10}"],
            prop_oneof![".{0,10}", "[0-9]{1,45}(m|Ki|e30)?"],
            0..4,
        ),
        priority in proptest::option::of(any::<i32>()),
        update in any::<bool>(),
    ) {
        let p = pod(json!(labels), json!(annotations), priority, json!({"requests": resources.clone(), "limits": resources}));
        let (operation, old) = if update { (Operation::Update, Some(pod(json!({}), json!({}), None, json!({})))) } else { (Operation::Create, None) };
        let r = request(operation, p, old);
        prop_assert_eq!(validate_pod(&r), validate_pod(&r));
    }
}
