//! Fault injection and the request counters, in-process and over HTTP.

mod common;

use common::{api_error, config_map, server};
use k8s_openapi::api::core::v1::ConfigMap;
use kite_testkit::{Fault, Verb};
use kube::api::{Api, ListParams, PostParams};
use std::time::{Duration, Instant};

#[tokio::test]
async fn the_next_matching_requests_fail_as_asked() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    server.inject(Fault {
        verb: Some(Verb::Create),
        resource: Some("configmaps".into()),
        count: 2,
        code: 503,
        message: "try later".into(),
    });
    for _ in 0..2 {
        let error = api_error(api.create(&PostParams::default(), &config_map("a", "x")).await.unwrap_err());
        assert_eq!((error.code, error.message.as_str()), (503, "try later"));
    }
    api.list(&ListParams::default()).await.expect("other verbs are not affected");
    api.create(&PostParams::default(), &config_map("a", "x")).await.expect("the third create goes through");
}

#[tokio::test]
async fn requests_are_counted_by_verb_and_resource() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    server.reset_requests();
    api.create(&PostParams::default(), &config_map("a", "x")).await.unwrap();
    api.get("a").await.unwrap();
    api.get("a").await.unwrap();
    api.list(&ListParams::default()).await.unwrap();
    let counts = server.request_counts();
    assert_eq!(counts.get("create configmaps"), Some(&1));
    assert_eq!(counts.get("get configmaps"), Some(&2));
    assert_eq!(counts.get("list configmaps"), Some(&1));
    assert_eq!(server.write_count(), 1);
}

#[tokio::test]
async fn latency_delays_every_request() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    server.set_latency(Duration::from_millis(100));
    let started = Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(100));
}

#[tokio::test]
async fn the_counters_and_faults_are_reachable_over_http() {
    let server = server();
    let address = server.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("a", "x")).await.unwrap();
    let counts = http_request(address, "GET", "/testkit/requests", "").await;
    let counts: serde_json::Value = serde_json::from_str(&counts).unwrap();
    assert_eq!(counts["create configmaps"], 1);
    http_request(address, "POST", "/testkit/faults", r#"{"verb":"get","count":1,"code":500}"#).await;
    assert_eq!(api_error(api.get("a").await.unwrap_err()).code, 500);
    api.get("a").await.unwrap();
}

/// A minimal HTTP/1.1 request over loopback; returns the body.
async fn http_request(address: std::net::SocketAddr, method: &str, path: &str, body: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut response)).await.unwrap().unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response.split("\r\n\r\n").nth(1).unwrap_or("").to_string()
}
