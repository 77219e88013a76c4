//! Get, list, create, replace, patch and delete through the real kube client,
//! with the API server's errors and metadata.

mod common;

use common::{api_error, config_map, server};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn a_new_server_has_the_namespaces_of_a_new_cluster() {
    let server = server();
    let namespaces: Api<Namespace> = Api::all(server.client());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
}

#[tokio::test]
async fn create_stamps_uid_creation_time_and_resource_version() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.as_ref().is_some_and(|u| u.len() == 36));
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    let fetched = api.get("a").await.unwrap();
    assert_eq!(fetched.metadata.resource_version, meta.resource_version);
    let error = api_error(api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap_err());
    assert_eq!((error.code, error.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(error.message, "configmaps \"a\" already exists");
}

#[tokio::test]
async fn a_missing_object_is_not_found() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let error = api_error(api.get("missing").await.unwrap_err());
    assert_eq!(
        (error.code, error.reason.as_str(), error.message.as_str()),
        (404, "NotFound", "configmaps \"missing\" not found")
    );
    let in_missing_namespace: Api<ConfigMap> = Api::namespaced(server.client(), "nowhere");
    let error =
        api_error(in_missing_namespace.create(&PostParams::default(), &config_map("a", "x")).await.unwrap_err());
    assert_eq!((error.code, error.message.as_str()), (404, "namespaces \"nowhere\" not found"));
}

#[tokio::test]
async fn replace_with_a_stale_resource_version_is_a_conflict() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let first = api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    let mut changed = first.clone();
    changed.data = Some([("key".to_string(), "new".to_string())].into());
    let replaced = api.replace("a", &PostParams::default(), &changed).await.unwrap();
    assert_ne!(replaced.metadata.resource_version, first.metadata.resource_version);
    // `changed` still carries the first resourceVersion.
    let error = api_error(api.replace("a", &PostParams::default(), &changed).await.unwrap_err());
    assert_eq!((error.code, error.reason.as_str()), (409, "Conflict"));
    assert!(error.message.contains("the object has been modified"), "{}", error.message);
}

#[tokio::test]
async fn list_filters_by_labels_and_name_and_pages_with_continue() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    for (name, app) in [("a", "web"), ("b", "db"), ("c", "web"), ("d", "web")] {
        api.create(&PostParams::default(), &config_map(name, app)).await.unwrap();
    }
    let names = |list: kube::core::ObjectList<ConfigMap>| {
        list.items.into_iter().filter_map(|c| c.metadata.name).collect::<Vec<_>>()
    };
    assert_eq!(names(api.list(&ListParams::default().labels("app=web")).await.unwrap()), ["a", "c", "d"]);
    assert_eq!(names(api.list(&ListParams::default().labels("app in (db)")).await.unwrap()), ["b"]);
    assert_eq!(names(api.list(&ListParams::default().fields("metadata.name=c")).await.unwrap()), ["c"]);
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    assert_eq!(first.metadata.remaining_item_count, Some(2));
    assert_eq!(names(first), ["a", "b"]);
    let second = api.list(&ListParams::default().limit(2).continue_token(&token)).await.unwrap();
    assert_eq!(second.metadata.continue_, None);
    assert_eq!(names(second), ["c", "d"]);
}

#[tokio::test]
async fn merge_json_and_strategic_patches_apply() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    let pp = PatchParams::default();
    let merged = api.patch("a", &pp, &Patch::Merge(json!({"data": {"extra": "1", "key": null}}))).await.unwrap();
    assert_eq!(merged.data.unwrap(), [("extra".to_string(), "1".to_string())].into());
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/extra", "value": "1"},
        {"op": "replace", "path": "/data/extra", "value": "2"}
    ]))
    .unwrap();
    let patched = api.patch("a", &pp, &Patch::<()>::Json(patch)).await.unwrap();
    assert_eq!(patched.data.unwrap()["extra"], "2");
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/data/extra", "value": "nope"}])).unwrap();
    let error = api_error(api.patch("a", &pp, &Patch::<()>::Json(failing)).await.unwrap_err());
    assert_eq!(error.code, 422);
    let strategic =
        api.patch("a", &pp, &Patch::Strategic(json!({"metadata": {"labels": {"tier": "front"}}}))).await.unwrap();
    assert_eq!(strategic.metadata.labels.unwrap().len(), 2);
}

#[tokio::test]
async fn secrets_take_string_data_as_the_api_server_does() {
    let server = server();
    let api: Api<Secret> = Api::namespaced(server.client(), "default");
    let mut secret = Secret::default();
    secret.metadata.name = Some("s".into());
    secret.string_data = Some([("password".to_string(), "hunter2".to_string())].into());
    let created = api.create(&PostParams::default(), &secret).await.unwrap();
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    assert_eq!(created.string_data, None);
    assert_eq!(created.data.unwrap()["password"].0, b"hunter2");
}

#[tokio::test]
async fn bad_names_are_invalid_with_the_field_path() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let error = api_error(api.create(&PostParams::default(), &config_map("Not_Valid", "x")).await.unwrap_err());
    assert_eq!((error.code, error.reason.as_str()), (422, "Invalid"));
    assert!(error.message.contains("metadata.name"), "{}", error.message);
}

#[tokio::test]
async fn delete_removes_and_reports_the_object() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    let deleted = api.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(deleted.is_left(), "a deleted object without finalizers comes back as the object");
    assert_eq!(api_error(api.get("a").await.unwrap_err()).code, 404);
    assert_eq!(api_error(api.delete("a", &DeleteParams::default()).await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams { dry_run: true, ..Default::default() }, &config_map("a", "web")).await.unwrap();
    assert_eq!(api_error(api.get("a").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn a_json_patch_test_for_null_passes_on_a_missing_path_and_is_all_or_nothing() {
    // kube's finalizer helper adds the first finalizer this way, as on a real API server.
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("a", "web")).await.unwrap();
    let pp = PatchParams::default();
    let add: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.org/cleanup"]}
    ]))
    .unwrap();
    let patched = api.patch("a", &pp, &Patch::<()>::Json(add)).await.unwrap();
    assert_eq!(patched.metadata.finalizers.unwrap(), ["example.org/cleanup"]);
    // A later failing operation leaves nothing of the earlier ones.
    let half: json_patch::Patch = serde_json::from_value(json!([
        {"op": "add", "path": "/data/half", "value": "1"},
        {"op": "test", "path": "/data/missing", "value": "x"}
    ]))
    .unwrap();
    assert_eq!(api_error(api.patch("a", &pp, &Patch::<()>::Json(half)).await.unwrap_err()).code, 422);
    assert!(!api.get("a").await.unwrap().data.unwrap().contains_key("half"));
}
