//! Every built-in kind the project needs is served, and strategic merge
//! patches merge list items by their merge key.

mod common;

use common::server;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::discovery::Discovery;
use serde_json::json;

const KINDS: &[(&str, &str, &str, &str, bool)] = &[
    ("", "v1", "Namespace", "namespaces", false),
    ("", "v1", "Secret", "secrets", true),
    ("", "v1", "ConfigMap", "configmaps", true),
    ("", "v1", "Service", "services", true),
    ("", "v1", "ServiceAccount", "serviceaccounts", true),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true),
    ("", "v1", "Event", "events", true),
    ("", "v1", "ResourceQuota", "resourcequotas", true),
    ("", "v1", "LimitRange", "limitranges", true),
    ("events.k8s.io", "v1", "Event", "events", true),
    ("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true),
    ("storage.k8s.io", "v1", "StorageClass", "storageclasses", false),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false),
    ("apps", "v1", "Deployment", "deployments", true),
    ("coordination.k8s.io", "v1", "Lease", "leases", true),
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", false),
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", false),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false),
];

#[tokio::test]
async fn every_needed_built_in_kind_is_discovered_and_stores_objects() {
    let server = server();
    let discovery = Discovery::new(server.client()).run().await.unwrap();
    for &(group, version, kind, plural, namespaced) in KINDS {
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (found, capabilities) =
            discovery.resolve_gvk(&gvk).unwrap_or_else(|| panic!("{kind} of {group:?} is not discovered"));
        assert_eq!(found.plural, plural);
        assert_eq!(capabilities.scope == kube::discovery::Scope::Namespaced, namespaced, "{kind}");
        if kind == "Namespace" || kind == "CustomResourceDefinition" {
            continue;
        }
        let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(server.client(), "default", &resource)
        } else {
            Api::all_with(server.client(), &resource)
        };
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": resource.api_version, "kind": kind, "metadata": {"name": "probe"}
        }))
        .unwrap();
        api.create(&PostParams::default(), &object).await.unwrap_or_else(|e| panic!("creating a {kind}: {e}"));
        assert_eq!(api.get("probe").await.unwrap().metadata.name.as_deref(), Some("probe"));
    }
}

#[tokio::test]
async fn a_strategic_merge_patch_merges_containers_by_name() {
    let server = server();
    let api: Api<Deployment> = Api::namespaced(server.client(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "gateway"},
        "spec": {"selector": {"matchLabels": {"app": "gateway"}}, "template": {
            "metadata": {"labels": {"app": "gateway"}},
            "spec": {"containers": [{"name": "gateway", "image": "kite:1"}, {"name": "sidecar", "image": "proxy:1"}]}}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &deployment).await.unwrap();
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "gateway", "image": "kite:2"},
        {"name": "sidecar", "$patch": "delete"},
        {"name": "metrics", "image": "exporter:1"}
    ]}}}});
    let patched = api.patch("gateway", &PatchParams::default(), &Patch::Strategic(patch)).await.unwrap();
    let containers: Vec<(String, String)> =
        patched.spec.template.spec.unwrap().containers.into_iter().map(|c| (c.name, c.image.unwrap())).collect();
    assert_eq!(
        containers,
        [("gateway".to_string(), "kite:2".to_string()), ("metrics".to_string(), "exporter:1".to_string())]
    );
    assert_eq!(patched.metadata.generation, Some(2));
}
