//! Finalizers and deletionTimestamp, owner-reference garbage collection, and
//! namespaces that go through Terminating.

mod common;

use common::{api_error, config_map, eventually, server};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;
use std::time::Duration;

fn owned_by(owner: &ConfigMap, name: &str) -> ConfigMap {
    let mut child = config_map(name, "child");
    child.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().unwrap(),
        uid: owner.metadata.uid.clone().unwrap(),
        block_owner_deletion: Some(true),
        ..Default::default()
    }]);
    child
}

#[tokio::test]
async fn a_finalizer_holds_an_object_until_it_is_removed() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut held = config_map("held", "web");
    held.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    let response = api.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = response.left().expect("the object is still there");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert!(api.get("held").await.is_ok(), "the finalizer holds it");
    let error = api_error(
        api.patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/cleanup", "example.com/new"]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(error.code, 422, "no new finalizers while deleting: {}", error.message);
    api.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
    assert_eq!(api_error(api.get("held").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn background_deletion_collects_dependents_after_the_owner() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = api.create(&PostParams::default(), &config_map("owner", "web")).await.unwrap();
    api.create(&PostParams::default(), &owned_by(&owner, "child")).await.unwrap();
    api.delete("owner", &DeleteParams::background()).await.unwrap();
    assert_eq!(api_error(api.get("child").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn foreground_deletion_keeps_the_owner_until_dependents_are_gone() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = api.create(&PostParams::default(), &config_map("owner", "web")).await.unwrap();
    let mut child = owned_by(&owner, "child");
    child.metadata.finalizers = Some(vec!["example.com/slow".into()]);
    api.create(&PostParams::default(), &child).await.unwrap();
    api.delete("owner", &DeleteParams::foreground()).await.unwrap();
    let waiting = api.get("owner").await.unwrap();
    assert!(waiting.metadata.finalizers.unwrap().contains(&"foregroundDeletion".to_string()));
    assert!(api.get("child").await.unwrap().metadata.deletion_timestamp.is_some());
    api.patch("child", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}})))
        .await
        .unwrap();
    assert_eq!(api_error(api.get("child").await.unwrap_err()).code, 404);
    assert_eq!(api_error(api.get("owner").await.unwrap_err()).code, 404, "the owner goes once its dependents are gone");
}

#[tokio::test]
async fn orphan_deletion_leaves_dependents_without_the_owner_reference() {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = api.create(&PostParams::default(), &config_map("owner", "web")).await.unwrap();
    api.create(&PostParams::default(), &owned_by(&owner, "child")).await.unwrap();
    let orphan = DeleteParams { propagation_policy: Some(PropagationPolicy::Orphan), ..Default::default() };
    api.delete("owner", &orphan).await.unwrap();
    assert_eq!(api_error(api.get("owner").await.unwrap_err()).code, 404);
    let child = api.get("child").await.unwrap();
    assert!(child.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn a_deleted_namespace_terminates_refuses_new_content_then_goes() {
    let server =
        kite_testkit::FakeApiServer::builder().namespace_termination(Duration::from_millis(300)).build().unwrap();
    let namespaces: Api<Namespace> = Api::all(server.client());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("tenant".into());
    namespaces.create(&PostParams::default(), &ns).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "tenant");
    let mut held = config_map("held", "web");
    held.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();

    namespaces.delete("tenant", &DeleteParams::default()).await.unwrap();
    let terminating = namespaces.get("tenant").await.unwrap();
    assert_eq!(terminating.status.unwrap().phase.as_deref(), Some("Terminating"));
    let error = api_error(api.create(&PostParams::default(), &config_map("new", "web")).await.unwrap_err());
    assert_eq!((error.code, error.reason.as_str()), (403, "Forbidden"));
    assert!(
        error.message.contains("unable to create new content in namespace tenant because it is being terminated"),
        "{}",
        error.message
    );

    // The namespace waits for the finalizer of what is in it.
    eventually("the held object to be marked for deletion", || async {
        api.get("held").await.is_ok_and(|c| c.metadata.deletion_timestamp.is_some())
    })
    .await;
    // Its uid is read while it is still there: once the finalizer is gone
    // it may go before the next read.
    let uid = terminating_uid(&namespaces).await.expect("the namespace waits for the held object");
    api.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
    let gone = await_condition(namespaces.clone(), "tenant", conditions::is_deleted(&uid));
    tokio::time::timeout(Duration::from_secs(5), gone).await.expect("the namespace goes").unwrap();
    assert_eq!(api_error(namespaces.get("tenant").await.unwrap_err()).code, 404);
}

async fn terminating_uid(namespaces: &Api<Namespace>) -> Option<String> {
    namespaces.get("tenant").await.ok().and_then(|n| n.metadata.uid)
}
