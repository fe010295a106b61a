//! `all_crds()`: identity of each definition (names, group, version, scope,
//! subresources, printer columns) and the structural-schema rules a
//! kube-apiserver 1.20 enforces.
//!
//! Setting `KOLO_CRD_DUMP=<file>` writes all definitions there, ready for
//! `kubectl apply -f <file>`: a multi-document YAML stream if the name ends
//! in `.yaml`, otherwise one `v1 List` in JSON.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kolo_api::crd::all_crds;
use serde_json::Value;

struct Expected {
    name: &'static str,
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    short_names: &'static [&'static str],
    scope: &'static str,
    status_subresource: bool,
    printer_columns: &'static [&'static str],
}

const EXPECTED: &[Expected] = &[
    Expected {
        name: "nodemetrics.slo.koordinator.sh",
        group: "slo.koordinator.sh",
        kind: "NodeMetric",
        plural: "nodemetrics",
        singular: "nodemetric",
        short_names: &[],
        scope: "Cluster",
        status_subresource: true,
        printer_columns: &[],
    },
    Expected {
        name: "nodeslos.slo.koordinator.sh",
        group: "slo.koordinator.sh",
        kind: "NodeSLO",
        plural: "nodeslos",
        singular: "nodeslo",
        short_names: &[],
        scope: "Cluster",
        status_subresource: true,
        printer_columns: &[],
    },
    Expected {
        name: "clustercolocationprofiles.config.koordinator.sh",
        group: "config.koordinator.sh",
        kind: "ClusterColocationProfile",
        plural: "clustercolocationprofiles",
        singular: "clustercolocationprofile",
        short_names: &[],
        scope: "Cluster",
        status_subresource: true,
        printer_columns: &[],
    },
    Expected {
        name: "reservations.scheduling.koordinator.sh",
        group: "scheduling.koordinator.sh",
        kind: "Reservation",
        plural: "reservations",
        singular: "reservation",
        short_names: &[],
        scope: "Cluster",
        status_subresource: true,
        printer_columns: &["Phase", "Age", "Node", "TTL", "Expires"],
    },
    Expected {
        name: "podmigrationjobs.scheduling.koordinator.sh",
        group: "scheduling.koordinator.sh",
        kind: "PodMigrationJob",
        plural: "podmigrationjobs",
        singular: "podmigrationjob",
        short_names: &[],
        scope: "Cluster",
        status_subresource: true,
        printer_columns: &[
            "Phase",
            "Status",
            "Age",
            "Node",
            "Reservation",
            "PodNamespace",
            "Pod",
            "NewPod",
            "TTL",
        ],
    },
    Expected {
        name: "devices.scheduling.koordinator.sh",
        group: "scheduling.koordinator.sh",
        kind: "Device",
        plural: "devices",
        singular: "device",
        short_names: &[],
        scope: "Cluster",
        status_subresource: false,
        printer_columns: &[],
    },
    Expected {
        name: "elasticquotas.scheduling.sigs.k8s.io",
        group: "scheduling.sigs.k8s.io",
        kind: "ElasticQuota",
        plural: "elasticquotas",
        singular: "elasticquota",
        short_names: &[],
        scope: "Namespaced",
        status_subresource: false,
        printer_columns: &[],
    },
    Expected {
        name: "podgroups.scheduling.sigs.k8s.io",
        group: "scheduling.sigs.k8s.io",
        kind: "PodGroup",
        plural: "podgroups",
        singular: "podgroup",
        short_names: &[],
        scope: "Namespaced",
        status_subresource: false,
        printer_columns: &[],
    },
    Expected {
        name: "customnoderesources.node.katalyst.kubewharf.io",
        group: "node.katalyst.kubewharf.io",
        kind: "CustomNodeResource",
        plural: "customnoderesources",
        singular: "customnoderesource",
        short_names: &["kcnr"],
        scope: "Cluster",
        status_subresource: true,
        printer_columns: &[],
    },
];

#[test]
fn identities_in_order() {
    let crds = all_crds();
    assert_eq!(crds.len(), EXPECTED.len());
    for (crd, want) in crds.iter().zip(EXPECTED) {
        assert_eq!(crd.metadata.name.as_deref(), Some(want.name));
        let spec = &crd.spec;
        assert_eq!(spec.group, want.group, "{}", want.name);
        assert_eq!(spec.names.kind, want.kind, "{}", want.name);
        assert_eq!(spec.names.plural, want.plural, "{}", want.name);
        assert_eq!(spec.names.singular.as_deref(), Some(want.singular), "{}", want.name);
        let short: Vec<&str> =
            spec.names.short_names.iter().flatten().map(String::as_str).collect();
        assert_eq!(short, want.short_names, "{}: short names as in the reference", want.name);
        assert_eq!(spec.scope, want.scope, "{}", want.name);
        assert_eq!(spec.versions.len(), 1, "{}", want.name);
        let version = &spec.versions[0];
        assert_eq!(version.name, "v1alpha1", "{}", want.name);
        assert!(version.served && version.storage, "{}", want.name);
        let has_status = version.subresources.as_ref().is_some_and(|s| s.status.is_some());
        assert_eq!(has_status, want.status_subresource, "{}: status subresource", want.name);
        assert!(version.subresources.as_ref().is_none_or(|s| s.scale.is_none()), "{}", want.name);
        let columns: Vec<&str> =
            version.additional_printer_columns.iter().flatten().map(|c| c.name.as_str()).collect();
        assert_eq!(columns, want.printer_columns, "{}", want.name);
        // Groups under *.k8s.io are protected: the API server needs the approval annotation.
        if want.group.ends_with(".k8s.io") {
            let annotations = crd.metadata.annotations.as_ref().expect("annotations");
            assert!(annotations.contains_key("api-approved.kubernetes.io"), "{}", want.name);
        }
    }
}

fn schema_of(crd: &CustomResourceDefinition) -> Value {
    let schema = crd.spec.versions[0].schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref());
    serde_json::to_value(schema.expect("every version has a schema")).unwrap()
}

/// Formats the 1.20 API server knows; others are rejected or ignored.
const KNOWN_FORMATS: &[&str] =
    &["int32", "int64", "float", "double", "byte", "date", "date-time", "duration"];

/// Checks one schema node (and recursively its children) against the
/// structural-schema rules; collects violations as `path: message`.
fn check_node(path: &str, node: &Value, nullable_ok: &[&str], errors: &mut Vec<String>) {
    let Some(obj) = node.as_object() else {
        errors.push(format!("{path}: schema is not an object"));
        return;
    };
    let mut err = |m: &str| errors.push(format!("{path}: {m}"));
    for key in [
        "$ref",
        "$schema",
        "definitions",
        "oneOf",
        "anyOf",
        "allOf",
        "not",
        "x-kubernetes-validations",
        "title",
    ] {
        if obj.contains_key(key) {
            err(&format!("has `{key}`"));
        }
    }
    if obj.contains_key("nullable") && !nullable_ok.contains(&path) {
        err("unexpected `nullable`");
    }
    let int_or_string = obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    let preserve = obj.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    let ty = obj.get("type").and_then(Value::as_str);
    if int_or_string && ty.is_some() {
        err("int-or-string with a type");
    }
    if ty.is_none() && !int_or_string && !preserve {
        err("no `type`");
    }
    if let Some(format) = obj.get("format").and_then(Value::as_str)
        && !KNOWN_FORMATS.contains(&format)
    {
        err(&format!("unknown format {format}"));
    }
    let properties = obj.get("properties").and_then(Value::as_object);
    let additional = obj.get("additionalProperties");
    if (properties.is_some() || additional.is_some()) && ty != Some("object") {
        err("properties on a non-object");
    }
    if properties.is_some() && additional.is_some() {
        err("both properties and additionalProperties");
    }
    if matches!(additional, Some(Value::Bool(_))) {
        err("boolean additionalProperties");
    }
    if ty == Some("array") && !obj.contains_key("items") {
        err("array without items");
    }
    if let Some(required) = obj.get("required").and_then(Value::as_array) {
        for name in required {
            let name = name.as_str().unwrap_or_default();
            if !properties.is_some_and(|p| p.contains_key(name)) {
                err(&format!("required `{name}` is not a property"));
            }
        }
    }
    if let Some(properties) = properties {
        for (name, sub) in properties {
            check_node(&format!("{path}.{name}"), sub, nullable_ok, errors);
        }
    }
    if let Some(sub @ Value::Object(_)) = additional {
        check_node(&format!("{path}{{*}}"), sub, nullable_ok, errors);
    }
    if let Some(items) = obj.get("items") {
        check_node(&format!("{path}[]"), items, nullable_ok, errors);
    }
}

#[test]
fn schemas_are_structural() {
    let nullable_ok: &[&str] =
        &[".status.conditions[].lastProbeTime", ".status.conditions[].lastTransitionTime"];
    let mut errors = Vec::new();
    for crd in all_crds() {
        let kind = crd.spec.names.kind.clone();
        let schema = schema_of(&crd);
        assert_eq!(schema["type"], "object", "{kind}: root type");
        let allowed: &[&str] = if kind == "PodMigrationJob" { nullable_ok } else { &[] };
        let mut local = Vec::new();
        check_node("", &schema, allowed, &mut local);
        errors.extend(local.into_iter().map(|e| format!("{kind}{e}")));
        // Metadata, apiVersion and kind are left to the API server.
        let root = schema["properties"].as_object().unwrap();
        let mut keys: Vec<&str> = root.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["spec", "status"], "{kind}: root properties");
        // `kubectl apply` stores the whole object in an annotation (256 KiB).
        let size = serde_json::to_string(&crd).unwrap().len();
        assert!(size < 200 * 1024, "{kind}: {size} bytes");
    }
    assert!(errors.is_empty(), "non-structural schema nodes:\n{}", errors.join("\n"));
}

fn find<'a>(schema: &'a Value, path: &[&str]) -> &'a Value {
    let mut node = schema;
    for name in path {
        while node["type"] == "array" {
            node = &node["items"];
        }
        node = &node["properties"][*name];
        assert!(!node.is_null(), "no property {name} in {path:?}");
    }
    node
}

#[test]
fn schema_details_match_the_reference() {
    let crds = all_crds();
    let by_kind = |kind: &str| schema_of(crds.iter().find(|c| c.spec.names.kind == kind).unwrap());
    let nm = by_kind("NodeMetric");
    let slo = by_kind("NodeSLO");
    let ccp = by_kind("ClusterColocationProfile");
    let rsv = by_kind("Reservation");
    let pmj = by_kind("PodMigrationJob");
    let dev = by_kind("Device");
    let eq = by_kind("ElasticQuota");
    let pg = by_kind("PodGroup");
    let cnr = by_kind("CustomNodeResource");

    // Enumerations the reference validates.
    let enums: &[(&Value, &[&str], &[&str])] = &[
        (
            &nm,
            &["spec", "metricCollectPolicy", "nodeMemoryCollectPolicy"],
            &["usageWithHotPageCache", "usageWithoutPageCache", "usageWithPageCache"],
        ),
        (&ccp, &["spec", "qosClass"], &["LSE", "LSR", "LS", "BE", "SYSTEM"]),
        (&rsv, &["spec", "allocatePolicy"], &["Aligned", "Restricted"]),
    ];
    for (schema, path, values) in enums {
        let node = find(schema, path);
        assert_eq!(node["enum"], serde_json::json!(values), "{path:?}");
        assert_eq!(node["type"], "string", "{path:?}");
    }

    // Required fields and defaults. A NodeMetric needs no spec (the
    // reference's `omitempty`); the other kinds keep kube's required spec.
    assert!(nm.get("required").is_none(), "{:?}", nm.get("required"));
    assert_eq!(rsv["required"], serde_json::json!(["spec"]));
    assert_eq!(find(&rsv, &["spec"])["required"], serde_json::json!(["owners", "template"]));
    assert_eq!(find(&rsv, &["spec", "owners"])["minItems"], 1);
    assert_eq!(find(&rsv, &["spec", "owners"])["items"]["minProperties"], 1);
    assert_eq!(find(&rsv, &["spec", "ttl"])["default"], "24h");
    assert_eq!(find(&rsv, &["spec", "allocateOnce"])["default"], true);
    assert_eq!(find(&pmj, &["spec"])["required"], serde_json::json!(["podRef"]));
    assert_eq!(
        find(&pmj, &["status", "conditions"])["items"]["required"],
        serde_json::json!(["status", "type"])
    );
    assert_eq!(
        find(&dev, &["spec", "devices"])["items"]["required"],
        serde_json::json!(["health"])
    );
    assert_eq!(find(&dev, &["spec", "devices", "health"])["default"], false);
    assert_eq!(
        find(&dev, &["spec", "devices", "topology"])["required"],
        serde_json::json!(["nodeID", "pcieID", "socketID"])
    );

    // Nullable exactly where the reference has it.
    for field in ["lastProbeTime", "lastTransitionTime"] {
        let node = find(&pmj, &["status", "conditions", field]);
        assert_eq!(node["nullable"], true, "{field}");
        assert_eq!(node["format"], "date-time", "{field}");
        assert!(find(&rsv, &["status", "conditions", field]).get("nullable").is_none(), "{field}");
    }

    // Schemaless / preserved parts.
    let preserved: &[(&Value, &[&str])] = &[
        (&rsv, &["spec", "template"]),
        (&pmj, &["spec", "reservationOptions", "template"]),
        (&slo, &["spec", "extensions"]),
        (&nm, &["status", "podsMetric", "extensions"]),
        (&ccp, &["spec", "patch"]),
        (&cnr, &["status", "nodeMetricStatus"]),
    ];
    for (schema, path) in preserved {
        let node = find(schema, path);
        assert_eq!(node["x-kubernetes-preserve-unknown-fields"], true, "{path:?}");
        assert!(node.get("properties").is_none(), "{path:?}");
    }
    assert!(find(&ccp, &["spec", "patch"]).get("type").is_none(), "patch may be any JSON value");
    // A CNR zone's children are a list of schemaless zones (a structural
    // schema cannot recurse), as are resource packages and pools.
    for path in [
        &["status", "topologyZone", "children"][..],
        &["status", "resources", "resourcePackages"][..],
        &["status", "resources", "resourcePools"][..],
    ] {
        let node = find(&cnr, path);
        assert_eq!(node["type"], "array", "{path:?}");
        assert_eq!(node["items"]["x-kubernetes-preserve-unknown-fields"], true, "{path:?}");
    }

    // Quantities are int-or-string, in resource lists and alone.
    let quantities: &[(&Value, &[&str])] = &[
        (&nm, &["status", "nodeMetric", "nodeUsage", "resources"]),
        (&rsv, &["status", "allocatable"]),
        (&eq, &["spec", "max"]),
        (&eq, &["status", "used"]),
        (&pg, &["spec", "minResources"]),
        (&dev, &["spec", "devices", "resources"]),
        (&cnr, &["status", "resources", "allocatable"]),
        (&cnr, &["status", "resources", "capacity"]),
        (&cnr, &["status", "topologyZone", "resources", "allocatable"]),
    ];
    for (schema, path) in quantities {
        let node = find(schema, path);
        assert_eq!(node["type"], "object", "{path:?}");
        assert_eq!(node["additionalProperties"]["x-kubernetes-int-or-string"], true, "{path:?}");
    }
    assert_eq!(
        find(&slo, &["spec", "systemStrategy", "totalNetworkBandwidth"])["x-kubernetes-int-or-string"],
        true
    );
    assert_eq!(find(&ccp, &["spec", "probability"])["x-kubernetes-int-or-string"], true);
    let net = find(&slo, &["spec", "resourceQOSStrategy", "beClass", "networkQOS", "ingressLimit"]);
    assert_eq!(net["x-kubernetes-int-or-string"], true);

    // A few validation ranges of the reference.
    let memory = find(&slo, &["spec", "resourceQOSStrategy", "lsClass", "memoryQOS"]);
    assert_eq!(
        (
            memory["properties"]["wmarkMinAdj"]["minimum"].as_f64(),
            memory["properties"]["wmarkMinAdj"]["maximum"].as_f64()
        ),
        (Some(-25.0), Some(50.0))
    );
    let threshold =
        find(&slo, &["spec", "resourceUsedThresholdWithBE", "cpuSuppressThresholdPercent"]);
    assert_eq!(
        (threshold["minimum"].as_f64(), threshold["maximum"].as_f64()),
        (Some(0.0), Some(100.0))
    );

    // Times are RFC 3339 strings.
    for (schema, path) in [
        (&nm, &["status", "updateTime"][..]),
        (&rsv, &["spec", "expires"][..]),
        (&pg, &["status", "scheduleStartTime"][..]),
    ] {
        let node = find(schema, path);
        assert_eq!(
            (node["type"].as_str(), node["format"].as_str()),
            (Some("string"), Some("date-time")),
            "{path:?}"
        );
    }
}

#[test]
fn dump_for_kubectl() {
    let Some(path) = std::env::var_os("KOLO_CRD_DUMP") else {
        return;
    };
    let text = if path.to_string_lossy().ends_with(".yaml") {
        let docs: Vec<String> = all_crds()
            .iter()
            .map(|crd| serde_saphyr::to_string(crd).expect("CRD serializes to YAML"))
            .collect();
        format!("---\n{}", docs.join("---\n"))
    } else {
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": all_crds()});
        serde_json::to_string_pretty(&list).unwrap()
    };
    std::fs::write(&path, text).expect("write KOLO_CRD_DUMP");
}
