//! kubectl's typed commands (`kubectl create namespace|configmap|secret|...`,
//! `label`, `scale`) against `kite-fake-apiserver`: they send protobuf
//! bodies for built-in kinds and ask for protobuf answers, as client-go's
//! clientsets do. Also the refusals, with the API server's messages.

mod common;

use common::kubectl::{fresh, json};
use http::Request;

#[test]
fn typed_create_commands_send_protobuf_and_what_they_made_reads_back() {
    let (_dir, _server, kubectl) = fresh(&[]);
    let (ok, _, log) = kubectl.run(&["create", "namespace", "team", "-v=8"], None);
    assert!(ok, "{log}");
    assert!(log.contains("Content-Type: application/vnd.kubernetes.protobuf"), "kubectl sent protobuf: {log}");
    assert!(
        log.matches("Content-Type: application/vnd.kubernetes.protobuf").count() >= 2,
        "and was answered in protobuf: {log}"
    );
    for command in [
        &["create", "configmap", "settings", "-n", "team", "--from-literal=colour=blue"][..],
        &["create", "secret", "generic", "token", "-n", "team", "--from-literal=key=s3cret"],
        &["create", "serviceaccount", "robot", "-n", "team"],
        &["create", "role", "reader", "-n", "team", "--verb=get,list", "--resource=pods,configmaps"],
        &["create", "rolebinding", "robot-reads", "-n", "team", "--role=reader", "--serviceaccount=team:robot"],
        &["create", "deployment", "web", "-n", "team", "--image=nginx:1.27", "--replicas=2", "--port=80"],
    ] {
        let out = kubectl.ok(command);
        assert!(out.contains("created"), "{command:?}: {out}");
    }
    let namespace = json(&kubectl.ok(&["get", "namespace", "team", "-o", "json"]));
    let created = namespace["metadata"]["creationTimestamp"].as_str().unwrap();
    assert!(created.parse::<jiff::Timestamp>().is_ok() && created.ends_with('Z'), "{created}");
    let settings = json(&kubectl.ok(&["get", "configmap", "settings", "-n", "team", "-o", "json"]));
    assert_eq!(settings["data"]["colour"], "blue");
    let token = json(&kubectl.ok(&["get", "secret", "token", "-n", "team", "-o", "json"]));
    assert_eq!(token["data"]["key"], "czNjcmV0", "bytes travel as bytes and read back as base64");
    assert_eq!(token["type"], "Opaque");
    let role = json(&kubectl.ok(&["get", "role", "reader", "-n", "team", "-o", "json"]));
    assert_eq!(role["rules"][0]["verbs"], serde_json::json!(["get", "list"]), "{role}");
    let binding = json(&kubectl.ok(&["get", "rolebinding", "robot-reads", "-n", "team", "-o", "json"]));
    assert_eq!(binding["subjects"][0]["name"], "robot");
    assert_eq!(binding["roleRef"]["kind"], "Role");
    let web = json(&kubectl.ok(&["get", "deployment", "web", "-n", "team", "-o", "json"]));
    assert_eq!(web["spec"]["replicas"], 2);
    assert_eq!(web["spec"]["selector"]["matchLabels"]["app"], "web");
    let container = &web["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        (container["image"].as_str(), container["ports"][0]["containerPort"].as_i64()),
        (Some("nginx:1.27"), Some(80))
    );
}

#[test]
fn label_and_scale_change_what_they_name() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok(&["create", "namespace", "team"]);
    kubectl.ok(&["create", "configmap", "settings", "-n", "team", "--from-literal=a=b"]);
    kubectl.ok(&["create", "deployment", "web", "-n", "team", "--image=nginx", "--replicas=1"]);
    assert!(kubectl.ok(&["label", "configmap", "settings", "-n", "team", "tier=front"]).contains("labeled"));
    let labels = kubectl.ok(&["get", "configmap", "settings", "-n", "team", "-o", "jsonpath={.metadata.labels.tier}"]);
    assert_eq!(labels, "front");
    assert!(kubectl.ok(&["scale", "deployment", "web", "-n", "team", "--replicas=3"]).contains("scaled"));
    let web = json(&kubectl.ok(&["get", "deployment", "web", "-n", "team", "-o", "json"]));
    assert_eq!(web["spec"]["replicas"], 3);
    let scale = json(&kubectl.ok(&["get", "--raw", "/apis/apps/v1/namespaces/team/deployments/web/scale"]));
    assert_eq!((scale["apiVersion"].as_str(), scale["kind"].as_str()), (Some("autoscaling/v1"), Some("Scale")));
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["selector"], "app=web");
    let stale = r#"{"metadata":{"resourceVersion":"1"},"spec":{"replicas":5}}"#;
    let (ok, _, refused) = kubectl
        .run(&["patch", "deployment", "web", "-n", "team", "--subresource=scale", "--type=merge", "-p", stale], None);
    assert!(!ok);
    assert!(
        refused.contains("Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified"),
        "{refused}"
    );
    let (ok, _, refused) = kubectl.run(
        &[
            "patch",
            "deployment",
            "web",
            "-n",
            "team",
            "--subresource=scale",
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":-2}}"#,
        ],
        None,
    );
    assert!(!ok);
    assert!(
        refused.contains(
            "The Scale \"web\" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0"
        ),
        "{refused}"
    );
}

/// A request with `body` as `content_type` to `path`; the status and the Status message.
async fn send(client: &kube::Client, path: &str, content_type: &str, body: Vec<u8>) -> (u16, String) {
    let request = Request::post(path).header(http::header::CONTENT_TYPE, content_type).body(body).unwrap();
    match client.request_text(request).await {
        Ok(text) => (200, text),
        Err(kube::Error::Api(status)) => (status.code, status.message),
        Err(other) => panic!("{other}"),
    }
}

#[tokio::test]
async fn bodies_the_server_cannot_read_are_refused_with_its_messages() {
    let server = common::server();
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).unwrap();
    }
    let client = server.client();
    let (code, message) =
        send(&client, "/apis/hy3ons.github.io/v1/kiteusers", "application/vnd.kubernetes.protobuf", b"k8s\0".to_vec())
            .await;
    assert_eq!(code, 415, "custom resources have no protobuf form");
    assert!(
        message.starts_with("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"),
        "{message}"
    );
    let (code, message) =
        send(&client, "/api/v1/namespaces", "application/vnd.kubernetes.protobuf", b"{}".to_vec()).await;
    assert_eq!(code, 400);
    assert!(message.contains("does not start with the protobuf magic number"), "{message}");
    let (code, message) = send(&client, "/api/v1/namespaces", "application/cbor", vec![0xa0]).await;
    assert_eq!((code, message.contains("unknown format")), (415, true), "{message}");
}

const DEPLOYMENT_WITH_A_TYPO: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, imagee: typo}]
";

#[test]
fn built_in_kinds_are_decoded_as_their_go_types_are() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok(&["create", "namespace", "team"]);
    let (ok, _, refused) = kubectl.run(&["apply", "-f", "-"], Some(DEPLOYMENT_WITH_A_TYPO));
    assert!(!ok, "kubectl validates strictly by default");
    assert!(
        refused.contains(
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.template.spec.containers[0].imagee\""
        ),
        "{refused}"
    );
    let (ok, _, warned) = kubectl.run(&["apply", "--validate=warn", "-f", "-"], Some(DEPLOYMENT_WITH_A_TYPO));
    assert!(ok, "{warned}");
    assert!(warned.contains("Warning: unknown field \"spec.template.spec.containers[0].imagee\""), "{warned}");
    let stored = json(&kubectl.ok(&["get", "deployment", "web", "-n", "team", "-o", "json"]));
    let container = &stored["spec"]["template"]["spec"]["containers"][0];
    assert!(
        container.get("imagee").is_none() && container["image"] == "nginx",
        "the unknown field is dropped: {container}"
    );
    // The API server reads the body before it looks at the stored object: a
    // body it cannot decode is a 400 even with a stale resourceVersion, never
    // a 409. (kubectl replace fills in the current one; the Deployment's
    // status, written meanwhile by the workload simulation, makes it stale at
    // random, so the test names a stale one.)
    let wrong_type = DEPLOYMENT_WITH_A_TYPO
        .replace("replicas: 1", "replicas: one")
        .replace(", imagee: typo", "")
        .replace("namespace: team}", "namespace: team, resourceVersion: \"1\"}");
    assert!(wrong_type.contains("resourceVersion"), "{wrong_type}");
    let (ok, _, refused) = kubectl.run(&["replace", "-f", "-"], Some(&wrong_type));
    assert!(!ok);
    assert!(
        refused.contains(
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
        ),
        "{refused}"
    );
}
