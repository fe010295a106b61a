use super::*;
use serde_json::Value;

const ALL: [Component; 4] =
    [Component::Scheduler, Component::Manager, Component::Descheduler, Component::Agent];

fn values(sets: &[&str]) -> Values {
    Values::default().with_sets(&sets.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
}

/// Every object of the output, parsed.
fn parse_objects(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .flat_map(|p| {
            serde_saphyr::from_multiple::<Value>(&p.text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}\n{}", p.file, p.text))
        })
        .filter(|o| !o.is_null())
        .collect()
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

#[test]
fn every_part_renders_and_parses_with_the_defaults() {
    let parts = manifests(&Values::default(), &ALL).unwrap();
    let files: Vec<&str> = parts.iter().map(|p| p.file).collect();
    assert_eq!(
        files,
        [
            "crds.yaml",
            "namespace.yaml",
            "priorityclasses.yaml",
            "slo-controller-config.yaml",
            "rbac-scheduler.yaml",
            "rbac-manager.yaml",
            "rbac-descheduler.yaml",
            "rbac-agent.yaml",
            "scheduler.yaml",
            "manager.yaml",
            "descheduler.yaml",
            "agent.yaml",
        ]
    );
    for part in &parts {
        assert!(!part.text.contains("${"), "{} keeps a placeholder", part.file);
    }
    let objects = parse_objects(&parts);
    assert_eq!(of_kind(&objects, "Deployment").len(), 3);
    assert_eq!(of_kind(&objects, "DaemonSet").len(), 1);
    assert_eq!(
        of_kind(&objects, "CustomResourceDefinition").len(),
        kolo_api::crd::all_crds().len()
    );
    for o in &objects {
        let ns = &o["metadata"]["namespace"];
        assert!(ns.is_null() || ns == "kolo-system", "{} in {ns}", o["metadata"]["name"]);
    }
}

#[test]
fn the_namespace_reaches_every_object_and_reference() {
    let parts = manifests(&values(&["namespace=ops"]), &ALL).unwrap();
    for part in &parts {
        assert!(!part.text.contains("kolo-system"), "{} still names kolo-system", part.file);
    }
    let objects = parse_objects(&parts);
    for binding in of_kind(&objects, "ClusterRoleBinding") {
        assert_eq!(binding["subjects"][0]["namespace"], "ops");
    }
    let manager = of_kind(&objects, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["name"] == "kolo-manager")
        .unwrap();
    let args = manager["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    for arg in ["--config-namespace=ops", "--webhook-secret=ops/", "--webhook-service=ops/"] {
        assert!(args.contains(arg), "{arg} missing from {args}");
    }
}

#[test]
fn the_config_namespace_moves_the_config_and_the_role_that_reads_it() {
    let parts = manifests(&values(&["manager.configNamespace=koordinator-system"]), &ALL).unwrap();
    let objects = parse_objects(&parts);
    let config = of_kind(&objects, "ConfigMap")
        .into_iter()
        .find(|c| c["metadata"]["name"] == "slo-controller-config")
        .unwrap();
    assert_eq!(config["metadata"]["namespace"], "koordinator-system");
    let role = of_kind(&objects, "Role")
        .into_iter()
        .find(|r| r["metadata"]["name"] == "kolo-manager-config")
        .unwrap();
    assert_eq!(role["metadata"]["namespace"], "koordinator-system");
    assert_eq!(role["rules"][0]["resources"][0], "configmaps");
    let binding = of_kind(&objects, "RoleBinding")
        .into_iter()
        .find(|r| r["metadata"]["name"] == "kolo-manager-config")
        .unwrap();
    assert_eq!(binding["subjects"][0]["namespace"], "kolo-system", "the manager's own account");
}

#[test]
fn replicated_components_get_a_budget_and_spread_only_when_replicated() {
    let objects = parse_objects(&manifests(&Values::default(), &ALL).unwrap());
    let pdbs = of_kind(&objects, "PodDisruptionBudget");
    let names: Vec<&str> = pdbs.iter().map(|p| p["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["kolo-scheduler", "kolo-manager", "kolo-descheduler"]);
    for pdb in &pdbs {
        assert_eq!(pdb["apiVersion"], "policy/v1");
        assert_eq!(pdb["spec"]["minAvailable"], 1);
        assert_eq!(
            pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
            pdb["metadata"]["name"]
        );
    }
    for d in of_kind(&objects, "Deployment") {
        let spread = &d["spec"]["template"]["spec"]["topologySpreadConstraints"][0];
        assert_eq!(spread["topologyKey"], "kubernetes.io/hostname");
        assert_eq!(
            spread["labelSelector"]["matchLabels"]["app.kubernetes.io/name"],
            d["metadata"]["name"]
        );
    }
    let single = manifests(&values(&["scheduler.replicas=1", "kubeVersion=1.20"]), &ALL).unwrap();
    let single = parse_objects(&single);
    let pdbs = of_kind(&single, "PodDisruptionBudget");
    assert_eq!(pdbs.len(), 2, "a single replica gets no budget that would block every drain");
    assert!(pdbs.iter().all(|p| p["apiVersion"] == "policy/v1beta1"), "1.20 has no policy/v1");
}

#[test]
fn components_pick_their_parts() {
    let parts = manifests(&Values::default(), &[Component::Agent, Component::Agent]).unwrap();
    let files: Vec<&str> = parts.iter().map(|p| p.file).collect();
    assert_eq!(
        files,
        ["crds.yaml", "namespace.yaml", "priorityclasses.yaml", "rbac-agent.yaml", "agent.yaml"]
    );
}

#[test]
fn priority_classes_come_from_kolo_api() {
    let objects = parse_objects(&manifests(&Values::default(), &[]).unwrap());
    let classes = of_kind(&objects, "PriorityClass");
    assert_eq!(classes.len(), 4);
    for class in kolo_api::PriorityClass::NAMED {
        let object = classes.iter().find(|c| c["metadata"]["name"] == class.as_str()).unwrap();
        assert_eq!(object["value"], class.installed_value());
        assert_eq!(object["preemptionPolicy"], class.installed_preemption_policy());
        assert!(class.band().unwrap().contains(&class.installed_value()));
    }
}

#[test]
fn values_reach_the_workloads() {
    let v = values(&[
        "image=registry.example/kolo:1.2.3",
        "imagePullPolicy=Always",
        "agent.cpuLimit=2",
        "agent.memoryRequest=100Mi",
        "agent.port=9400",
        "scheduler.replicas=3",
        "descheduler.dryRun=true",
        "logFormat=text",
    ]);
    let objects = parse_objects(&manifests(&v, &ALL).unwrap());
    let agent = of_kind(&objects, "DaemonSet")[0];
    let container = &agent["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "registry.example/kolo:1.2.3");
    assert_eq!(container["imagePullPolicy"], "Always");
    assert_eq!(container["resources"]["limits"]["cpu"], 2);
    assert_eq!(container["resources"]["requests"]["memory"], "100Mi");
    assert_eq!(container["ports"][0]["containerPort"], 9400);
    let args = container["args"].to_string();
    assert!(args.contains("--listen=0.0.0.0:9400") && args.contains("--log-format=text"), "{args}");
    let scheduler = of_kind(&objects, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["name"] == "kolo-scheduler")
        .unwrap();
    assert_eq!(scheduler["spec"]["replicas"], 3);
    let config = of_kind(&objects, "ConfigMap")
        .into_iter()
        .find(|c| c["metadata"]["name"] == "kolo-descheduler-config")
        .unwrap();
    assert!(config["data"]["descheduler.yaml"].as_str().unwrap().contains("dryRun: true"));
}

#[test]
fn kustomization_lists_the_parts_and_splits_the_image() {
    let v = values(&["image=registry.example:5000/kolo:1.2.3"]);
    let parts = manifests(&v, &[Component::Agent]).unwrap();
    let text = kustomization(&parts, &v);
    let k: Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(k["resources"].as_array().unwrap().len(), parts.len());
    assert_eq!(k["images"][0]["name"], "registry.example:5000/kolo");
    assert_eq!(k["images"][0]["newTag"], "1.2.3");
    let v = values(&["image=registry.example:5000/kolo"]);
    let k: Value = serde_saphyr::from_str(&kustomization(&parts, &v)).unwrap();
    assert_eq!(k["images"][0]["name"], "registry.example:5000/kolo", "a port is not a tag");
}

#[test]
fn the_agent_reads_its_kubelet_with_the_narrowest_subresource_the_version_allows() {
    let rule = |sets: &[&str]| -> String {
        let objects = parse_objects(&manifests(&values(sets), &[Component::Agent]).unwrap());
        let role = of_kind(&objects, "ClusterRole")[0].clone();
        let rules = role["rules"].as_array().unwrap();
        let nodes: Vec<&str> = rules
            .iter()
            .flat_map(|r| r["resources"].as_array().unwrap())
            .filter_map(|r| r.as_str())
            .filter(|r| r.starts_with("nodes/"))
            .collect();
        assert_eq!(nodes.len(), 1, "{nodes:?}");
        nodes[0].to_string()
    };
    assert_eq!(rule(&[]), "nodes/pods", "1.33: fine-grained kubelet authorization");
    assert_eq!(rule(&["kubeVersion=1.32"]), "nodes/proxy");
    assert_eq!(rule(&["agent.kubeletSubresource=proxy"]), "nodes/proxy", "its gate turned off");
    let err = Values::default()
        .with_sets(&["agent.kubeletSubresource=exec".to_string()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("agent.kubeletSubresource"), "{err}");
}
