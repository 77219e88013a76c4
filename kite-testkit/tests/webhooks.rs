//! Admission webhooks honoured as the API server honours them: a webhook
//! whose Service is missing or has no ready endpoint fails the requests it
//! matches (creates and, the trap of an uninstall, deletes) unless its
//! `failurePolicy` is `Ignore`; an in-process handler allows, refuses or
//! mutates; rules and selectors decide which requests it sees.

mod common;

use common::kubectl::fresh;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kite_testkit::admission::call::WebhookTarget;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use std::sync::Arc;

const LONGHORN_WEBHOOK: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: longhorn-webhook-validator}
webhooks:
- name: validator.longhorn.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig:
    service: {namespace: longhorn-system, name: longhorn-admission-webhook, path: /v1/webhook/validation, port: 9502}
  rules:
  - {operations: [CREATE, DELETE], apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps], scope: Namespaced}
";

const UNREACHABLE: &str = "Internal error occurred: failed calling webhook \"validator.longhorn.io\": failed to call webhook: Post \"https://longhorn-admission-webhook.longhorn-system.svc:9502/v1/webhook/validation?timeout=10s\": ";

fn set_failure_policy(kubectl: &common::kubectl::Kubectl, policy: &str) {
    let patch = format!(r#"[{{"op":"replace","path":"/webhooks/0/failurePolicy","value":"{policy}"}}]"#);
    kubectl.ok(&["patch", "validatingwebhookconfiguration", "longhorn-webhook-validator", "--type=json", "-p", &patch]);
}

#[test]
fn a_webhook_outliving_its_service_blocks_what_it_matches_even_deletes() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok(&["create", "namespace", "team"]);
    kubectl.ok(&["create", "configmap", "before", "-n", "team"]);
    kubectl.ok_with(&["apply", "-f", "-"], Some(LONGHORN_WEBHOOK));
    let (ok, _, refused) = kubectl.run(&["create", "configmap", "settings", "-n", "team"], None);
    assert!(!ok);
    assert!(refused.contains(&format!("{UNREACHABLE}service \"longhorn-admission-webhook\" not found")), "{refused}");
    let (ok, _, refused) = kubectl.run(&["delete", "configmap", "before", "-n", "team"], None);
    assert!(
        !ok && refused.contains("service \"longhorn-admission-webhook\" not found"),
        "deletes are blocked too: {refused}"
    );
    kubectl.ok(&["create", "namespace", "longhorn-system"]);
    kubectl.ok(&[
        "create",
        "service",
        "clusterip",
        "longhorn-admission-webhook",
        "-n",
        "longhorn-system",
        "--tcp=9502:9502",
    ]);
    let (ok, _, refused) = kubectl.run(&["create", "configmap", "settings", "-n", "team"], None);
    assert!(!ok);
    assert!(
        refused.contains(&format!("{UNREACHABLE}no endpoints available for service \"longhorn-admission-webhook\"")),
        "{refused}"
    );
    set_failure_policy(&kubectl, "Ignore");
    kubectl.ok(&["create", "configmap", "settings", "-n", "team"]);
    set_failure_policy(&kubectl, "Fail");
    assert!(!kubectl.run(&["delete", "configmap", "before", "-n", "team"], None).0);
    kubectl.ok(&["delete", "validatingwebhookconfiguration", "longhorn-webhook-validator"]);
    kubectl.ok(&["delete", "configmap", "before", "-n", "team"]);
}

fn configuration(kind: &str, name: &str, service: &str, extra: Value) -> Value {
    let mut webhook = json!({
        "name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "clientConfig": { "service": { "namespace": "hooks", "name": service } },
        "rules": [{ "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"] }],
    });
    if let (Some(webhook), Some(extra)) = (webhook.as_object_mut(), extra.as_object()) {
        webhook.extend(extra.clone());
    }
    json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": { "name": name }, "webhooks": [webhook] })
}

fn answer(review: &Value, allowed: bool, extra: Value) -> Value {
    let mut response = json!({ "uid": review["request"]["uid"], "allowed": allowed });
    if let (Some(response), Some(extra)) = (response.as_object_mut(), extra.as_object()) {
        response.extend(extra.clone());
    }
    json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response })
}

fn config_map(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({ "metadata": { "name": name, "labels": labels } })).unwrap()
}

#[tokio::test]
async fn an_in_process_handler_allows_refuses_and_mutates() {
    let server = common::server();
    let client = server.client();
    let service = |name: &str| WebhookTarget::Service { namespace: "hooks".into(), name: name.into() };
    server.serve_webhook(
        service("validator"),
        Arc::new(|review: &Value| {
            let name = review["request"]["object"]["metadata"]["name"].as_str().unwrap_or_default();
            if review["request"]["kind"]["kind"] != "ConfigMap" || review["request"]["operation"] != "CREATE" {
                return answer(review, false, json!({ "status": { "message": "unexpected request" } }));
            }
            if name.starts_with("bad") {
                return answer(
                    review,
                    false,
                    json!({ "status": { "code": 403, "message": "names starting with bad are refused" } }),
                );
            }
            answer(review, true, json!({}))
        }),
    );
    server.serve_webhook(
        service("mutator"),
        Arc::new(|review: &Value| {
            use base64::Engine as _;
            let patch = json!([{ "op": "add", "path": "/metadata/annotations", "value": { "mutated": "yes" } }]);
            let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
            answer(review, true, json!({ "patchType": "JSONPatch", "patch": patch }))
        }),
    );
    let configurations = [
        ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "mutate.example.org", "mutator", json!({})),
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            "deny.example.org",
            "validator",
            json!({ "objectSelector": { "matchExpressions": [{ "key": "unchecked", "operator": "DoesNotExist" }] },
                    "namespaceSelector": { "matchExpressions": [{ "key": "skip", "operator": "DoesNotExist" }] } }),
        ),
    ];
    for (kind, plural, name, service, extra) in configurations {
        let object = configuration(kind, name, service, extra);
        server.create("admissionregistration.k8s.io", "v1", plural, None, object).unwrap();
    }
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let made = maps.create(&PostParams::default(), &config_map("good", json!({}))).await.unwrap();
    assert_eq!(made.metadata.annotations.unwrap_or_default().get("mutated").map(String::as_str), Some("yes"));
    let refused = maps.create(&PostParams::default(), &config_map("bad-one", json!({}))).await.unwrap_err();
    let kube::Error::Api(status) = refused else { panic!("{refused}") };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "admission webhook \"deny.example.org\" denied the request: names starting with bad are refused"
    );
    maps.create(&PostParams::default(), &config_map("bad-but-unchecked", json!({ "unchecked": "true" })))
        .await
        .unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let skipped: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": "skipped", "labels": { "skip": "true" } } })).unwrap();
    namespaces.create(&PostParams::default(), &skipped).await.unwrap();
    let elsewhere: Api<ConfigMap> = Api::namespaced(client, "skipped");
    elsewhere.create(&PostParams::default(), &config_map("bad-elsewhere", json!({}))).await.unwrap();
}

#[tokio::test]
async fn a_webhook_is_told_who_writes_and_who_deletes() {
    let server = kite_testkit::FakeApiServer::builder()
        .authorization(kite_testkit::rbac::AuthorizationMode::Rbac)
        .build()
        .unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    server.serve_webhook(
        WebhookTarget::Service { namespace: "hooks".into(), name: "auditor".into() },
        Arc::new(move |review: &Value| {
            let request = &review["request"];
            record.lock().unwrap().push((request["operation"].clone(), request["userInfo"].clone()));
            answer(review, true, json!({}))
        }),
    );
    let mut hook = configuration("ValidatingWebhookConfiguration", "audit.example.org", "auditor", json!({}));
    hook["webhooks"][0]["rules"][0]["operations"] = json!(["CREATE", "DELETE"]);
    server.create("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", None, hook).unwrap();
    server.create("", "v1", "serviceaccounts", Some("default"), json!({ "metadata": { "name": "writer" } })).unwrap();
    server
        .create(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            Some("default"),
            json!({ "metadata": { "name": "cm" },
            "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"] }] }),
        )
        .unwrap();
    server
        .create(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            Some("default"),
            json!({ "metadata": { "name": "cm" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm" },
            "subjects": [{ "kind": "ServiceAccount", "name": "writer", "namespace": "default" }] }),
        )
        .unwrap();
    let writer = server.client_with_token(&server.service_account_token("default", "writer").unwrap());
    Api::<ConfigMap>::namespaced(writer, "default")
        .create(&PostParams::default(), &config_map("x", json!({})))
        .await
        .unwrap();
    Api::<ConfigMap>::namespaced(server.client(), "default").delete("x", &Default::default()).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, "CREATE");
    assert_eq!(seen[0].1["username"], "system:serviceaccount:default:writer");
    assert!(seen[0].1["groups"].as_array().unwrap().iter().any(|g| g == "system:serviceaccounts:default"), "{seen:?}");
    assert_eq!((seen[1].0.as_str(), seen[1].1["username"].as_str()), (Some("DELETE"), Some("kubernetes-admin")));
}
