//! Server-side apply with field ownership, as controllers use it.

mod common;

use common::{api_error, server};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

fn cm(data: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": data})
}

#[tokio::test]
async fn an_apply_creates_then_updates_and_records_its_manager() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created =
        api.patch("shared", &PatchParams::apply("alpha"), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap();
    let managed = created.metadata.managed_fields.unwrap();
    assert_eq!(managed.len(), 1);
    assert_eq!((managed[0].manager.as_deref(), managed[0].operation.as_deref()), (Some("alpha"), Some("Apply")));
    assert_eq!(managed[0].fields_v1.as_ref().unwrap().0, json!({"f:data": {"f:a": {}}}));
}

#[tokio::test]
async fn two_managers_owning_different_fields_both_keep_them() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.patch("shared", &PatchParams::apply("alpha"), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap();
    api.patch("shared", &PatchParams::apply("beta"), &Patch::Apply(cm(json!({"b": "2"})))).await.unwrap();
    // alpha applies again without b: b is beta's, so it stays.
    let result = api.patch("shared", &PatchParams::apply("alpha"), &Patch::Apply(cm(json!({"a": "3"})))).await.unwrap();
    let data = result.data.unwrap();
    assert_eq!((data["a"].as_str(), data["b"].as_str()), ("3", "2"));
}

#[tokio::test]
async fn a_field_no_longer_applied_is_removed() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.patch("shared", &PatchParams::apply("alpha"), &Patch::Apply(cm(json!({"a": "1", "gone": "x"})))).await.unwrap();
    let result = api.patch("shared", &PatchParams::apply("alpha"), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap();
    assert!(!result.data.unwrap().contains_key("gone"));
}

#[tokio::test]
async fn a_conflicting_apply_is_refused_unless_forced() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.patch("shared", &PatchParams::apply("alpha"), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap();
    let error = api_error(
        api.patch("shared", &PatchParams::apply("beta"), &Patch::Apply(cm(json!({"a": "2"})))).await.unwrap_err(),
    );
    assert_eq!((error.code, error.reason.as_str()), (409, "Conflict"));
    assert!(error.message.contains("conflict with \"alpha\": .data.a"), "{}", error.message);
    // Setting the same value is shared ownership, not a conflict.
    api.patch("shared", &PatchParams::apply("beta"), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap();
    let forced =
        api.patch("shared", &PatchParams::apply("beta").force(), &Patch::Apply(cm(json!({"a": "2"})))).await.unwrap();
    assert_eq!(forced.data.unwrap()["a"], "2");
    let managers: Vec<String> = forced.metadata.managed_fields.unwrap().into_iter().filter_map(|m| m.manager).collect();
    assert_eq!(managers, ["beta"], "the force moved ownership of data.a to beta, leaving alpha nothing");
}

#[tokio::test]
async fn an_update_takes_ownership_of_what_it_changes() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.patch("shared", &PatchParams::apply("alpha"), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap();
    let edited = api
        .patch(
            "shared",
            &PatchParams { field_manager: Some("editor".into()), ..Default::default() },
            &Patch::Merge(json!({"data": {"a": "edited"}})),
        )
        .await
        .unwrap();
    let managed = edited.metadata.managed_fields.unwrap();
    let editor = managed.iter().find(|m| m.manager.as_deref() == Some("editor")).unwrap();
    assert_eq!(editor.operation.as_deref(), Some("Update"));
    // alpha lost data.a, so applying it again without force is no conflict.
    assert!(managed.iter().all(|m| m.manager.as_deref() != Some("alpha")));
}

#[tokio::test]
async fn an_unchanged_apply_writes_nothing() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let first = api.patch("shared", &PatchParams::apply("alpha"), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap();
    let again = api.patch("shared", &PatchParams::apply("alpha"), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap();
    assert_eq!(
        first.metadata.resource_version, again.metadata.resource_version,
        "a no-op apply keeps the resourceVersion"
    );
}

#[tokio::test]
async fn apply_needs_a_field_manager() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let error = api_error(
        api.patch("shared", &PatchParams::default(), &Patch::Apply(cm(json!({"a": "1"})))).await.unwrap_err(),
    );
    assert_eq!(error.code, 400, "{}", error.message);
}
