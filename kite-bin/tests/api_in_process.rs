//! The API tested in-process, as axum's own examples do: the application
//! `kite api` serves, built from its library and driven with
//! `Router::oneshot`, on kite-testkit's API server, with no listener and no
//! child process.

use axum::Router;
use axum::body::Body;
use axum::extract::connect_info::MockConnectInfo;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::Namespace;
use kite_bin::api::{Options, state};
use kite_bin::app::app;
use kite_testkit::FakeApiServer;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use tower::ServiceExt;

async fn application() -> (FakeApiServer, Router) {
    application_with(false).await
}

async fn application_with(secure_cookies: bool) -> (FakeApiServer, Router) {
    let server = FakeApiServer::new().unwrap();
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).unwrap();
    }
    let client = server.client();
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some("kite".into());
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
    let state = state(
        client,
        "kite",
        Options { secure_cookies, trusted_proxies: Vec::new(), first_signup_is_admin: true, gateway: None },
    )
    .await
    .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !state.synced() {
        assert!(tokio::time::Instant::now() < deadline, "the caches did not sync within 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    (server, app(state).unwrap().layer(MockConnectInfo(peer)))
}

async fn call(app: &Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn post(path: &str, body: Value) -> Request<Body> {
    Request::post(path).header(header::CONTENT_TYPE, "application/json").body(Body::from(body.to_string())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_up_sign_in_and_ask_who_i_am_without_a_listener() {
    let (_server, app) = application().await;
    let signup = json!({ "username": "root", "email": "root@example.org", "password": "root-password" });
    let (status, answer) = call(&app, post("/api/v1/auth/signup", signup)).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["user"]["access_level"], 3, "the first account is an admin: {answer}");
    let login = json!({ "email": "root@example.org", "password": "root-password" });
    let (status, answer) = call(&app, post("/api/v1/auth/login", login)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let token = answer["token"].as_str().unwrap().to_string();
    let me = Request::get("/api/v1/me").header(header::AUTHORIZATION, format!("Bearer {token}")).body(Body::empty());
    let (status, answer) = call(&app, me.unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["user"]["username"], "root");
    let (status, answer) = call(&app, Request::get("/api/v1/me").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "no session, no answer: {answer}");
    assert!(answer["message"].as_str().is_some_and(|m| !m.is_empty()), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_from_the_caches_without_asking_the_cluster_and_says_when_a_watch_fails() {
    let (server, app) = application().await;
    let lists = |server: &FakeApiServer| {
        server
            .requests()
            .iter()
            .filter(|r| r.verb == kite_testkit::Verb::List && r.resource.starts_with("kite"))
            .count()
    };
    let before = lists(&server);
    for _ in 0..20 {
        let (status, answer) = call(&app, Request::get("/api/v1/health").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    assert_eq!(lists(&server), before, "an anonymous health check costs the API server nothing");

    // The users' watch breaks and cannot list again: health says so.
    server.inject(kite_testkit::Fault {
        verb: None,
        resource: Some("kiteusers".into()),
        count: 10_000,
        code: 500,
        message: "etcd is down".into(),
    });
    server.drop_watches();
    let answer =
        kite_testkit::fixtures::eventually(Duration::from_secs(20), "health to see the failed watch", || async {
            let (status, answer) = call(&app, Request::get("/api/v1/health").body(Body::empty()).unwrap()).await;
            (status == StatusCode::SERVICE_UNAVAILABLE).then_some(answer)
        })
        .await;
    let users = answer["checks"].as_array().unwrap().iter().find(|c| c["name"] == "kiteusers").unwrap().clone();
    assert_eq!(users["status"], "failed", "{answer}");
    assert!(!users["message"].as_str().unwrap().contains("etcd"), "a sentence, not the cluster's error: {answer}");
}

fn form(path: &str, fields: &str) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(fields.to_string()))
        .unwrap()
}

async fn page(app: &Router, request: Request<Body>) -> (StatusCode, axum::http::HeaderMap, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_up_and_sign_in_forms_post_and_work_without_the_script() {
    let (_server, app) = application().await;
    // The forms post: a password never goes into a URL, even when the script does not run.
    for (path, action) in [("/login", "/login"), ("/signup", "/signup")] {
        let (status, _, html) = page(&app, Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains(&format!(r#"method="post" action="{action}""#)), "{path}: {html}");
    }
    let fields = "username=Ada&email=ada%40example.org&password=ada-password";
    let (status, headers, html) = page(&app, form("/signup", fields)).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{html}");
    assert_eq!(headers[header::LOCATION], "/");
    assert!(headers.get_all(header::SET_COOKIE).iter().any(|c| c.to_str().unwrap().starts_with("kite_session=")));

    let (status, _, html) = page(&app, form("/login", "email=ada%40example.org&password=wrong-password")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(html.contains("the email or password is not right"), "the page says why: {html}");
    assert!(html.contains(r#"value="ada@example.org""#), "and keeps the email typed: {html}");
    // Another site cannot sign a visitor in to an account of its choosing.
    let mut forged = form("/login", "email=ada%40example.org&password=ada-password");
    forged.headers_mut().insert(header::ORIGIN, "https://evil.example".parse().unwrap());
    forged.headers_mut().insert(header::HOST, "kite.example".parse().unwrap());
    let (status, headers, _) = page(&app, forged).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(headers.get(header::SET_COOKIE).is_none());
    let (status, headers, html) = page(&app, form("/login", "email=ada%40example.org&password=ada-password")).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{html}");
    assert_eq!(headers[header::LOCATION], "/");
    assert!(headers.get_all(header::SET_COOKIE).iter().any(|c| c.to_str().unwrap().starts_with("kite_session=")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_https_the_cookies_are_host_only_so_a_machines_domain_cannot_toss_one() {
    let (_server, app) = application_with(true).await;
    let signup = json!({ "username": "Ada", "email": "ada@example.org", "password": "ada-password" });
    let (_, headers, body) = page(&app, post("/api/v1/auth/signup", signup)).await;
    let set: Vec<String> =
        headers.get_all(header::SET_COOKIE).iter().map(|c| c.to_str().unwrap().to_string()).collect();
    for name in ["__Host-kite_session=", "__Host-kite_csrf="] {
        let cookie = set.iter().find(|c| c.starts_with(name)).unwrap_or_else(|| panic!("{name} in {set:?}: {body}"));
        assert!(cookie.contains("Secure") && cookie.contains("Path=/") && !cookie.contains("Domain"), "{cookie}");
    }
    let session = set.iter().find(|c| c.starts_with("__Host-kite_session=")).unwrap();
    let token = session.split(';').next().unwrap().trim_start_matches("__Host-kite_session=").to_string();
    let me = |cookie: String| Request::get("/api/v1/me").header(header::COOKIE, cookie).body(Body::empty()).unwrap();
    let (status, _) = call(&app, me(format!("__Host-kite_session={token}"))).await;
    assert_eq!(status, StatusCode::OK, "the host-only cookie signs in");
    // A cookie without the prefix could come from `<machine>.<baseDomain>`: it is not read.
    let (status, _) = call(&app, me(format!("kite_session={token}"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_https_redirects_plain_http_and_sends_hsts_over_https() {
    let (server, app) = application().await;
    let get = |path: &str, proto: Option<&str>| {
        let mut request = Request::get(path).header(header::HOST, "kite.example.org");
        if let Some(proto) = proto {
            request = request.header("x-forwarded-proto", proto);
        }
        request.body(Body::empty()).unwrap()
    };
    // Not forced: plain HTTP answers, without HSTS.
    let response = app.clone().oneshot(get("/api/v1/config", Some("http"))).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get(header::STRICT_TRANSPORT_SECURITY).is_none());

    let mut spec = kite_core::api::KitePlatformSpec::default();
    spec.platform_ingress.host = Some("kite.example.org".into());
    spec.platform_ingress.tls_secret = Some("kite-tls".into());
    spec.platform_ingress.force_https = true;
    Api::<kite_core::api::KitePlatform>::all(server.client())
        .create(&PostParams::default(), &kite_core::api::KitePlatform::new("kite", spec))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let redirected = loop {
        let response = app.clone().oneshot(get("/login?next=%2F", Some("http"))).await.unwrap();
        if response.status() == StatusCode::PERMANENT_REDIRECT {
            break response;
        }
        assert!(tokio::time::Instant::now() < deadline, "the platform's forceHttps was not followed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(redirected.headers()[header::LOCATION], "https://kite.example.org/login?next=%2F");
    let api = app.clone().oneshot(get("/api/v1/config", None)).await.unwrap();
    assert_eq!(api.status(), StatusCode::PERMANENT_REDIRECT, "no forwarded protocol is plain HTTP");
    let secure = app.clone().oneshot(get("/api/v1/config", Some("https"))).await.unwrap();
    assert_eq!(secure.status(), StatusCode::OK);
    assert_eq!(secure.headers()[header::STRICT_TRANSPORT_SECURITY], "max-age=31536000");
    // The kubelet's probes speak plain HTTP to the pod.
    for probe in ["/healthz", "/api/v1/health"] {
        let response = app.clone().oneshot(get(probe, None)).await.unwrap();
        assert!(response.status().is_success(), "{probe}: {}", response.status());
    }
}
