//! Whatever a client sends, `kite api` answers with a documented status, a
//! `{"message"}` body for every refusal, and never a 500: random JSON and
//! near-valid bodies (a valid request with one field replaced or removed)
//! against every endpoint that takes a body, as an admin who may call them all.

mod support;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use reqwest::{Method, StatusCode};
use serde_json::{Map, Value, json};
use support::{Platform, Session};

/// An endpoint: method, path template, and a request it accepts.
struct Endpoint {
    method: Method,
    template: &'static str,
    valid: Value,
}

fn endpoints() -> Vec<Endpoint> {
    let e = |method: Method, template, valid| Endpoint { method, template, valid };
    vec![
        e(
            Method::POST,
            "/auth/signup",
            json!({ "username": "u", "email": "u@example.org", "password": "long-enough" }),
        ),
        e(Method::POST, "/auth/login", json!({ "email": "root@example.org", "password": "root-password" })),
        e(
            Method::POST,
            "/vms",
            json!({ "name": "web", "sshId": "web", "sshPassword": "machine-password", "disk": "25Gi", "cpu": 2, "memory": "4Gi", "domainPrefix": "web", "powerState": "On" }),
        ),
        e(
            Method::PATCH,
            "/vms/{name}",
            json!({ "cpu": 3, "memory": "2Gi", "disk": 30, "domainPrefix": "", "powerState": "Off" }),
        ),
        e(
            Method::POST,
            "/vm-offers/{name}/claim",
            json!({ "vmName": "gift", "sshId": "gift", "sshPassword": "machine-password" }),
        ),
        e(Method::PATCH, "/admin/users/{name}/access-level", json!({ "access_level": 1 })),
        e(
            Method::POST,
            "/admin/vm-offers",
            json!({ "targetUser": "root", "cpu": 1, "memory": "1Gi", "disk": "20Gi", "validHours": 1 }),
        ),
        e(
            Method::PATCH,
            "/admin/settings",
            json!({ "baseDomain": "example.org", "accessTokenTtlMinutes": 60, "sshGateway": { "externalEnabled": false, "externalPort": 2222, "publicPort": 22 } }),
        ),
        e(Method::PATCH, "/admin/vms/{namespace}/{name}/power", json!({ "powerState": "On" })),
        // Not the admin's current password: a change would end the session the run uses.
        e(
            Method::POST,
            "/me/password",
            json!({ "currentPassword": "not-the-password", "newPassword": "long-enough-password" }),
        ),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("20Gi".to_string()),
        Just("-1".to_string()),
        Just("www".to_string()),
        Just("On".to_string()),
        Just("x".repeat(300)),
        Just("\u{0}\u{7f}".to_string()),
        Just("../../etc".to_string()),
        "[a-z_][a-z0-9_-]{0,40}",
        ".{0,24}",
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..100).prop_map(Value::from),
        any::<f64>().prop_filter("JSON numbers are finite", |f| f.is_finite()).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A body: fully random, or the valid one with one field replaced or removed.
fn body(valid: Value) -> impl Strategy<Value = Value> {
    let fields: Vec<String> = valid.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    let count = fields.len().max(1);
    prop_oneof![
        value(),
        (0..count, value(), any::<bool>()).prop_map(move |(i, replacement, remove)| {
            let mut object: Map<String, Value> = valid.as_object().cloned().unwrap_or_default();
            if let Some(field) = fields.get(i) {
                if remove {
                    object.remove(field);
                } else {
                    object.insert(field.clone(), replacement);
                }
            }
            Value::Object(object)
        }),
    ]
}

/// A path segment the client sends as it is: the URL parser folds `.` and
/// `..` away (`/admin/vms/./web/power` becomes `/admin/vms/web/power`, a
/// different endpoint), so they never reach the server as segments.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![Just("web".to_string()), Just("root".to_string()), "[a-zA-Z0-9._~-]{1,70}"]
        .prop_filter("dot segments are folded by the client", |s| s != "." && s != "..")
}

/// The statuses the document lists for `method` on `template`.
fn documented(document: &Value, template: &str, method: &Method) -> Vec<u16> {
    document["paths"][template][method.as_str().to_lowercase()]["responses"]
        .as_object()
        .map(|answers| answers.keys().filter_map(|k| k.parse().ok()).collect())
        .unwrap_or_default()
}

#[test]
fn no_input_gives_a_500_or_an_undocumented_answer() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (platform, admin) = runtime.block_on(async {
        let platform = Platform::start().await;
        let admin = platform.sign_up("root").await;
        (platform, admin)
    });
    let document = runtime.block_on(admin.get("/openapi.json")).1;
    let endpoints = endpoints();
    let valid: Vec<Value> = endpoints.iter().map(|e| e.valid.clone()).collect();
    let strategy = (0..endpoints.len()).prop_flat_map(move |i| {
        let valid = valid[i].clone();
        (Just(i), body(valid), segment(), segment())
    });
    let mut runner = TestRunner::new(Config { cases: 300, failure_persistence: None, ..Config::default() });
    let checked = runner.run(&strategy, |(i, body, namespace, name)| {
        let endpoint = &endpoints[i];
        let path = endpoint.template.replace("{namespace}", &namespace).replace("{name}", &name);
        let (status, answer) = runtime.block_on(send(&admin, &endpoint.method, &path, &body));
        prop_assert!(status.as_u16() < 500, "{} {path} with {body} gave {status}: {answer}", endpoint.method);
        if !status.is_success() {
            prop_assert!(
                answer["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{status} without a message: {answer}"
            );
        }
        let listed = documented(&document, endpoint.template, &endpoint.method);
        prop_assert!(
            listed.contains(&status.as_u16()),
            "{} {} answered {status}, which the document does not list ({listed:?}): {answer}",
            endpoint.method,
            endpoint.template
        );
        Ok::<(), TestCaseError>(())
    });
    drop(platform);
    if let Err(failure) = checked {
        panic!("{failure}");
    }
}

async fn send(session: &Session, method: &Method, path: &str, body: &Value) -> (StatusCode, Value) {
    let url = format!("{}/api/v1{path}", session.base);
    session.send(session.http.request(method.clone(), url).json(body)).await
}
