//! Watches, as `kube::runtime::watcher` and reflectors use them: events from
//! a resourceVersion on, selectors, bookmarks, `410 Gone` and dropped streams.

mod common;

use common::{config_map, eventually, server};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;
use std::time::Duration;

async fn next_event(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
) -> WatchEvent<ConfigMap> {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("no watch event within 5s")
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn a_watch_streams_added_modified_and_deleted_from_a_version() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let before = api.create(&PostParams::default(), &config_map("old", "web")).await.unwrap();
    let rv = before.metadata.resource_version.clone().unwrap();
    let mut stream = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "v"}}))).await.unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let kinds: Vec<&str> = {
        let mut kinds = vec![];
        for _ in 0..3 {
            kinds.push(match next_event(&mut stream).await {
                WatchEvent::Added(c) if c.metadata.name.as_deref() == Some("a") => "added",
                WatchEvent::Modified(_) => "modified",
                WatchEvent::Deleted(_) => "deleted",
                other => panic!("unexpected {other:?}"),
            });
        }
        kinds
    };
    assert_eq!(kinds, ["added", "modified", "deleted"]);
}

#[tokio::test]
async fn a_watch_from_a_compacted_version_is_gone() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    server.compact();
    let rv = created.metadata.resource_version.unwrap();
    let old_rv = (rv.parse::<u64>().unwrap() - 1).to_string();
    let mut stream = api.watch(&WatchParams::default(), &old_rv).await.unwrap().boxed();
    match next_event(&mut stream).await {
        WatchEvent::Error(status) => assert_eq!((status.code, status.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410 Gone, got {other:?}"),
    }
}

#[tokio::test]
async fn bookmarks_come_when_asked_for() {
    let server = kite_testkit::FakeApiServer::builder().bookmark_interval(Duration::from_millis(20)).build().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let rv = server.resource_version().to_string();
    let mut stream = api.watch(&WatchParams { bookmarks: true, ..WatchParams::default() }, &rv).await.unwrap().boxed();
    match next_event(&mut stream).await {
        WatchEvent::Bookmark(bookmark) => assert_eq!(bookmark.metadata.resource_version, rv),
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

#[tokio::test]
async fn a_label_selected_watch_sees_objects_enter_and_leave_its_selection() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let rv = server.resource_version().to_string();
    let mut stream = api.watch(&WatchParams::default().labels("app=web"), &rv).await.unwrap().boxed();
    api.create(&PostParams::default(), &config_map("a", "db")).await.unwrap();
    api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})))
        .await
        .unwrap();
    assert!(matches!(next_event(&mut stream).await, WatchEvent::Added(_)), "entering the selection is ADDED");
    api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "db"}}})))
        .await
        .unwrap();
    assert!(matches!(next_event(&mut stream).await, WatchEvent::Deleted(_)), "leaving the selection is DELETED");
}

#[tokio::test]
async fn a_reflector_follows_the_server_and_survives_dropped_watches() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let (reader, writer) = reflector::store::<ConfigMap>();
    let config = watcher::Config::default();
    let stream = reflector(writer, watcher(api.clone(), config).default_backoff()).applied_objects();
    let task = tokio::spawn(async move {
        let mut stream = stream.boxed();
        while stream.try_next().await.is_ok() {}
    });
    api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    eventually("the reflector to see a", || async { reader.state().len() == 1 }).await;
    server.drop_watches();
    api.create(&PostParams::default(), &config_map("b", "web")).await.unwrap();
    eventually("the reflector to see b after the watch was dropped", || async { reader.state().len() == 2 }).await;
    server.compact();
    server.drop_watches();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    eventually("the reflector to relist after 410 and forget a", || async { reader.state().len() == 1 }).await;
    task.abort();
}

#[tokio::test]
async fn a_streaming_list_sends_initial_events_then_a_bookmark() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    let (reader, writer) = reflector::store::<ConfigMap>();
    let config = watcher::Config::default().streaming_lists();
    let stream = reflector(writer, watcher(api.clone(), config)).applied_objects();
    let task = tokio::spawn(async move {
        let mut stream = stream.boxed();
        while stream.try_next().await.is_ok() {}
    });
    eventually("the streaming list to fill the store", || async { reader.state().len() == 1 }).await;
    task.abort();
}

#[tokio::test]
async fn a_metadata_watch_lists_and_follows_the_objects_metadata_only() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    api.create(&PostParams::default(), &config_map("b", "db")).await.unwrap();

    let listed = api.list_metadata(&kube::api::ListParams::default().labels("app!=web")).await.unwrap();
    let names: Vec<_> = listed.items.iter().filter_map(|o| o.metadata.name.clone()).collect();
    assert_eq!(names, ["b"], "`!=` selects the objects without that value");
    let one = api.get_metadata("a").await.unwrap();
    assert_eq!(one.metadata.labels.unwrap()["app"], "web");

    let metadata: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(server.client(), "default");
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(metadata, watcher::Config::default())).applied_objects();
    let task = tokio::spawn(async move {
        let mut stream = stream.boxed();
        while stream.try_next().await.is_ok() {}
    });
    eventually("the metadata store to list both", || async { reader.state().len() == 2 }).await;
    api.create(&PostParams::default(), &config_map("c", "web")).await.unwrap();
    eventually("the metadata store to see c", || async { reader.state().len() == 3 }).await;
    task.abort();
}

#[tokio::test]
async fn metadata_is_answered_as_partial_object_metadata_and_the_wrong_kind_is_not_acceptable() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    let raw = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
        .body(Vec::new())
        .unwrap();
    let list = server.client().request::<serde_json::Value>(raw).await.unwrap();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    assert_eq!(list["items"][0]["metadata"]["name"], "a");
    assert!(list["items"][0].get("data").is_none(), "metadata only: {list}");
    let raw = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
        .body(Vec::new())
        .unwrap();
    let error = server.client().request::<serde_json::Value>(raw).await.unwrap_err();
    assert!(matches!(error, kube::Error::Api(status) if status.code == 406), "a list is a PartialObjectMetadataList");
}
