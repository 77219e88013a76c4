//! `apply::ensure_in` and `apply::create_in` with watch caches, against
//! kite-testkit's API server: an absent child is made without a read, and
//! an object that is not Kite's is never taken over, whether the caches
//! show it already or not yet.

use k8s_openapi::api::core::v1::Service;
use kite_core::Error;
use kite_core::labels;
use kite_core::reconcile::apply;
use kite_core::reconcile::stores::Stores;
use kite_testkit::FakeApiServer;
use kube::api::{Api, Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::watcher;
use serde_json::{Value, json};
use std::time::Duration;

const MANAGER: &str = "kite-controller";

fn ours(name: &str, port: u16) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": "default", "labels": {labels::MANAGED_BY: labels::MANAGED_BY_CONTROLLER}},
           "spec": {"ports": [{"name": "ssh", "port": port, "protocol": "TCP"}]}})
}

/// Someone else's Service `name`, applied under their own field manager:
/// port 22 too, under another name.
async fn theirs(client: &kube::Client, name: &str) {
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                         "spec": {"ports": [{"name": "admin", "port": 22, "protocol": "TCP"}]}});
    Api::<Service>::namespaced(client.clone(), "default")
        .patch(name, &PatchParams::apply("someone"), &Patch::Apply(&service))
        .await
        .unwrap();
}

/// Stores caching Services, Kite's and the others' names, once both have listed.
async fn watching_services(client: &kube::Client) -> Stores {
    let stores = Stores::default();
    let resource = ApiResource::erase::<Service>(&());
    stores.watch_others(client.clone(), resource.clone());
    let config = watcher::Config::default().labels(&labels::managed_selector());
    let mut changes = Box::pin(stores.watch(client.clone(), resource.clone(), config));
    tokio::spawn(async move { while futures::StreamExt::next(&mut changes).await.is_some() {} });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !stores.knows_absent(&resource, Some("default"), "nothing-of-that-name") {
        assert!(tokio::time::Instant::now() < deadline, "the caches did not list within 5 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stores
}

fn gets(server: &FakeApiServer) -> u64 {
    server.request_counts().get("get services").copied().unwrap_or(0)
}

#[tokio::test]
async fn an_absent_child_is_made_without_a_read_when_the_caches_know_it_is_absent() {
    let server = FakeApiServer::builder().build().unwrap();
    let client = server.client();
    let stores = watching_services(&client).await;
    let resource = ApiResource::erase::<Service>(&());
    server.reset_requests();
    let made = apply::ensure_in(&stores, &client, MANAGER, &resource, &ours("vm-ssh", 22)).await.unwrap();
    assert!(made.written);
    assert_eq!(gets(&server), 0, "no GET: {:?}", server.request_counts());
    let again = apply::ensure_in(&stores, &client, MANAGER, &resource, &ours("vm-ssh", 22)).await.unwrap();
    assert!(!again.written, "the write's answer stands in for the cache");
    assert_eq!(gets(&server), 0, "{:?}", server.request_counts());
}

#[tokio::test]
async fn an_object_the_caches_show_as_someone_elses_is_left_alone_without_a_read() {
    let server = FakeApiServer::builder().build().unwrap();
    let client = server.client();
    let stores = watching_services(&client).await;
    let resource = ApiResource::erase::<Service>(&());
    theirs(&client, "vm-ssh").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while stores.knows_absent(&resource, Some("default"), "vm-ssh") {
        assert!(tokio::time::Instant::now() < deadline, "their Service did not reach the names within 5 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.reset_requests();
    let refused = apply::ensure_in(&stores, &client, MANAGER, &resource, &ours("vm-ssh", 22)).await;
    assert!(matches!(refused, Err(Error::NotOurs { .. })), "{refused:?}");
    assert_eq!(server.request_counts().values().sum::<u64>(), 0, "{:?}", server.request_counts());
}

#[tokio::test]
async fn an_object_someone_else_made_before_the_caches_showed_it_refuses_the_create_and_is_left_alone() {
    let server = FakeApiServer::builder().build().unwrap();
    let client = server.client();
    let resource = ApiResource::erase::<Service>(&());
    theirs(&client, "vm-ssh").await;
    // No caches at all: as if they had not seen it yet.
    let refused = apply::create_in(&Stores::default(), &client, MANAGER, &resource, &ours("vm-ssh", 22)).await;
    assert!(matches!(refused, Err(Error::NotOurs { .. })), "{refused:?}");
    let live = Api::<Service>::namespaced(client.clone(), "default").get("vm-ssh").await.unwrap();
    let ports = live.spec.unwrap().ports.unwrap();
    assert_eq!((ports.len(), ports[0].name.as_deref()), (1, Some("admin")), "their port is theirs still");
    assert!(!labels::is_managed_by_controller(live.metadata.labels.as_ref()), "and it did not become Kite's");
}

#[tokio::test]
async fn kites_own_object_edited_by_someone_is_taken_back_when_a_create_finds_it() {
    let server = FakeApiServer::builder().build().unwrap();
    let client = server.client();
    let resource = ApiResource::erase::<Service>(&());
    apply::create_in(&Stores::default(), &client, MANAGER, &resource, &ours("vm-ssh", 22)).await.unwrap();
    let edit = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "vm-ssh"},
                      "spec": {"ports": [{"name": "ssh", "port": 2222, "protocol": "TCP"}]}});
    Api::<Service>::namespaced(client.clone(), "default")
        .patch("vm-ssh", &PatchParams::apply("someone").force(), &Patch::Apply(&edit))
        .await
        .unwrap();
    let taken = apply::create_in(&Stores::default(), &client, MANAGER, &resource, &ours("vm-ssh", 22)).await.unwrap();
    assert_eq!(taken.live["spec"]["ports"][0]["port"], 22);
}
