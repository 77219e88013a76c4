//! `kite manifests`: the reference deployment on K3s. The committed
//! `deploy/k3s/kite.yaml` is what the code generates; every pod meets the
//! `restricted` Pod Security profile; no rule has a `*`, and neither the API
//! nor the gateway may read Secrets across the cluster; the book's table is
//! the one the RBAC is built from. Applied with the real kubectl to
//! kite-fake-apiserver in its RBAC mode, the Deployments become Available
//! and `kubectl auth can-i --list` for each ServiceAccount shows exactly its
//! grants.

mod support;

use kite_bin::manifests::rbac::{self, Component, Scope};
use kite_bin::manifests::{self, ManifestArgs};
use serde_json::Value;
use std::collections::BTreeSet;
use support::kubectl;

fn documents(yaml: &str) -> Vec<Value> {
    serde_saphyr::from_multiple(yaml).unwrap()
}

fn of_kind<'a>(documents: &'a [Value], kind: &str) -> Vec<&'a Value> {
    documents.iter().filter(|d| d["kind"] == kind).collect()
}

#[test]
fn the_committed_manifests_match_the_generated_ones() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kite")).arg("manifests").output().unwrap();
    assert!(output.status.success(), "kite manifests failed: {}", String::from_utf8_lossy(&output.stderr));
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/k3s/kite.yaml")).unwrap();
    assert!(
        committed.as_bytes() == output.stdout,
        "deploy/k3s/kite.yaml is stale: run `cargo run -p kite-bin -- manifests > deploy/k3s/kite.yaml`"
    );
}

#[test]
fn every_pod_meets_the_restricted_profile_with_probes_and_resources() {
    let all = documents(&manifests::render(&ManifestArgs::default()).unwrap());
    let namespace = of_kind(&all, "Namespace")[0];
    assert_eq!(namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted");
    let deployments = of_kind(&all, "Deployment");
    assert_eq!(deployments.len(), 3);
    for deployment in deployments {
        let name = deployment["metadata"]["name"].as_str().unwrap();
        // The gateway keeps its store on its own volume, so it runs once (more need S3).
        let replicas = if name == "kite-gateway" { 1 } else { 2 };
        assert_eq!(deployment["spec"]["replicas"], replicas, "{name}");
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], name, "each component runs as its own account");
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{name}");
        assert_eq!(pod["securityContext"]["runAsUser"], manifests::RUN_AS, "{name}");
        assert_eq!(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault", "{name}");
        let container = &pod["containers"][0];
        let security = &container["securityContext"];
        assert_eq!(security["allowPrivilegeEscalation"], false, "{name}");
        assert_eq!(security["readOnlyRootFilesystem"], true, "{name}");
        assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]), "{name}");
        assert!(security["capabilities"]["add"].is_null(), "{name}");
        for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
            assert!(container[probe]["httpGet"]["path"].is_string(), "{name} has a {probe}");
        }
        assert!(
            container["resources"]["requests"]["memory"].is_string()
                && container["resources"]["limits"]["memory"].is_string()
        );
        assert_eq!(container["image"], manifests::DEFAULT_IMAGE);
    }
    let budgets = of_kind(&all, "PodDisruptionBudget");
    assert_eq!(budgets.len(), 3);
    // kite-gateway-external (the controller's) and the tenants' SSH policy select the
    // gateway's pods by `app`; the Service finds its port by name.
    let gateway = all.iter().find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "kite-gateway").unwrap();
    let template = &gateway["spec"]["template"];
    let (key, value) = kite_core::gateway::desired::GATEWAY_SELECTOR;
    assert_eq!(template["metadata"]["labels"][key], value);
    assert_eq!(template["spec"]["containers"][0]["ports"][0]["name"], kite_core::gateway::desired::GATEWAY_PORT_NAME);
}

#[test]
fn no_rule_has_a_wildcard_and_neither_the_api_nor_the_gateway_reads_secrets_across_the_cluster() {
    let all = documents(&manifests::render(&ManifestArgs::default()).unwrap());
    let roles: Vec<&Value> = all.iter().filter(|d| d["kind"] == "ClusterRole" || d["kind"] == "Role").collect();
    assert!(roles.len() >= 5, "{roles:?}");
    for role in &roles {
        for rule in role["rules"].as_array().unwrap() {
            for field in ["apiGroups", "resources", "verbs", "resourceNames"] {
                assert!(!rule[field].to_string().contains('*'), "{} has a wildcard: {rule}", role["metadata"]["name"]);
            }
            assert!(rule["resourceNames"] != serde_json::json!([]), "an empty resourceNames means every name: {rule}");
        }
    }
    let namespaces = ManifestArgs::default().namespaces();
    for grant in rbac::grants(&namespaces) {
        if grant.component != Component::Controller && grant.resources.contains(&"secrets") {
            assert_ne!(grant.scope, Scope::Cluster, "{:?} reads Secrets cluster-wide", grant.component);
            assert!(!grant.verbs.contains(&"list") && !grant.verbs.contains(&"watch"), "{grant:?}");
            assert!(grant.verbs == ["create"] || !grant.names.is_empty(), "only named Secrets are read: {grant:?}");
        }
    }
}

#[test]
fn the_book_shows_the_grants_as_the_code_makes_them() {
    let book =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../book/src/deploying-on-k3s.md")).unwrap();
    let table = rbac::markdown_table(&ManifestArgs::default().namespaces());
    assert!(
        book.contains(&table),
        "the table in book/src/deploying-on-k3s.md differs from the grants; it should read:\n{table}"
    );
}

/// `kubectl auth can-i --list` as `account` in `namespace`: (resource, names, verbs) per line.
fn can_i_list(kubeconfig: &std::path::Path, account: &str, namespace: &str) -> BTreeSet<(String, String, String)> {
    let out = kubectl(kubeconfig, &["auth", "can-i", "--list", "-n", namespace, &format!("--as={account}")]);
    out.lines()
        .skip(1)
        .filter_map(|line| {
            let columns: Vec<&str> = line.split("   ").map(str::trim).filter(|c| !c.is_empty()).collect();
            // Resources, Non-Resource URLs, Resource Names, Verbs.
            (columns.len() == 4 && columns[1] == "[]")
                .then(|| (columns[0].to_string(), columns[2].to_string(), columns[3].to_string()))
        })
        .collect()
}

/// What `kubectl auth can-i --list` prints for `grants`: per resource, its names and verbs.
fn expected(grants: &[&rbac::Grant]) -> BTreeSet<(String, String, String)> {
    let mut lines = BTreeSet::new();
    for grant in grants {
        for resource in grant.resources {
            // kubectl prints `<resource>.<group>/<subresource>`.
            let (plural, sub) = match resource.split_once('/') {
                Some((plural, sub)) => (plural, format!("/{sub}")),
                None => (*resource, String::new()),
            };
            let resource = if grant.group.is_empty() {
                format!("{plural}{sub}")
            } else {
                format!("{plural}.{}{sub}", grant.group)
            };
            let verbs = format!("[{}]", grant.verbs.join(" "));
            // kubectl prints a rule that names several objects once per name.
            if grant.names.is_empty() {
                lines.insert((resource, "[]".to_string(), verbs));
            } else {
                for name in &grant.names {
                    lines.insert((resource.clone(), format!("[{name}]"), verbs.clone()));
                }
            }
        }
    }
    lines
}

/// What every authenticated account may do (the bootstrap `system:basic-user`).
fn basic_user() -> BTreeSet<(String, String, String)> {
    [
        "selfsubjectaccessreviews.authorization.k8s.io",
        "selfsubjectrulesreviews.authorization.k8s.io",
        "selfsubjectreviews.authentication.k8s.io",
    ]
    .into_iter()
    .map(|r| (r.to_string(), "[]".to_string(), "[create]".to_string()))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applied_with_kubectl_under_rbac_the_deployments_run_and_each_account_can_do_exactly_its_grants() {
    let server = kite_testkit::FakeApiServer::builder()
        .authorization(kite_testkit::rbac::AuthorizationMode::Rbac)
        .build()
        .unwrap();
    let _workloads = kite_testkit::sim::workloads::start(&server, Default::default()).unwrap();
    let address = server.listen_tls("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("admin.kubeconfig");
    kite_testkit::kubeconfig::write_text(&kubeconfig, &server.admin_kubeconfig(address).unwrap()).unwrap();
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/k3s/kite.yaml");
    let applied = tokio::task::spawn_blocking({
        let kubeconfig = kubeconfig.clone();
        move || {
            // Longhorn is installed first, as the book says: its namespace exists.
            kubectl(&kubeconfig, &["create", "namespace", "longhorn-system"]);
            kubectl(&kubeconfig, &["apply", "-f", file])
        }
    })
    .await
    .unwrap();
    assert!(applied.contains("deployment.apps/kite-gateway created"), "{applied}");
    let kubeconfig_for_wait = kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(
            &kubeconfig_for_wait,
            &["wait", "--for=condition=Available", "deployment", "--all", "-n", "kite", "--timeout=20s"],
        )
    })
    .await
    .unwrap();

    let namespaces = ManifestArgs::default().namespaces();
    let grants = rbac::grants(&namespaces);
    for component in Component::ALL {
        let account = format!("system:serviceaccount:kite:{}", component.name());
        let mine: Vec<&rbac::Grant> = grants.iter().filter(|g| g.component == component).collect();
        for namespace in ["kite", "kite-user-ku-1"] {
            let here: Vec<&rbac::Grant> = mine
                .iter()
                .copied()
                .filter(|g| g.scope == Scope::Cluster || g.scope == Scope::Namespace(namespace.into()))
                .collect();
            let mut want = expected(&here);
            want.extend(basic_user());
            let (kubeconfig, account_for_list, namespace_for_list) =
                (kubeconfig.clone(), account.clone(), namespace.to_string());
            let got =
                tokio::task::spawn_blocking(move || can_i_list(&kubeconfig, &account_for_list, &namespace_for_list))
                    .await
                    .unwrap();
            assert_eq!(got, want, "{account} in {namespace}");
        }
    }
    let denied = server.denials();
    assert!(denied.is_empty(), "the admin was refused nothing: {denied:?}");
}

#[test]
fn one_gateway_keeps_its_store_on_a_volume_and_several_share_none() {
    let all = documents(&manifests::render(&ManifestArgs::default()).unwrap());
    let claim = of_kind(&all, "PersistentVolumeClaim");
    assert_eq!(claim.len(), 1);
    assert_eq!(claim[0]["metadata"]["name"], "kite-gateway-audit");
    let gateway = of_kind(&all, "Deployment").into_iter().find(|d| d["metadata"]["name"] == "kite-gateway").unwrap();
    assert_eq!(gateway["spec"]["strategy"]["type"], "Recreate", "one node mounts the volume at a time");
    let pod = &gateway["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["fsGroup"], manifests::RUN_AS, "the volume is writable by the image's user");
    let args: Vec<&str> =
        pod["containers"][0]["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let dir = args.iter().position(|a| *a == "--audit-dir").map(|i| args[i + 1]).unwrap();
    assert_eq!(pod["containers"][0]["volumeMounts"][0]["mountPath"], dir);
    // The control API is headless, and only the API's pods may reach it.
    let control =
        of_kind(&all, "Service").into_iter().find(|s| s["metadata"]["name"] == "kite-gateway-control").unwrap();
    assert_eq!(control["spec"]["clusterIP"], "None");
    let policy = of_kind(&all, "NetworkPolicy")
        .into_iter()
        .find(|p| p["metadata"]["name"] == "kite-gateway-control-from-api")
        .unwrap();
    assert_eq!(policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["app"], "kite-api");

    let several = ManifestArgs { gateway_replicas: 3, ..ManifestArgs::default() };
    let all = documents(&manifests::render(&several).unwrap());
    assert!(of_kind(&all, "PersistentVolumeClaim").is_empty());
    let gateway = of_kind(&all, "Deployment").into_iter().find(|d| d["metadata"]["name"] == "kite-gateway").unwrap();
    assert_eq!(gateway["spec"]["replicas"], 3);
    assert!(gateway["spec"]["template"]["spec"]["volumes"].is_null());
    assert!(!gateway.to_string().contains("--audit-dir"));
}
