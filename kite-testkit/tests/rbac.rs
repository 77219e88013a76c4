//! Authentication and RBAC (`AuthorizationMode::Rbac`), with kube clients:
//! a ServiceAccount's token authenticates as it, RBAC decides with the API
//! server's sentences, aggregated ClusterRoles and `resourceNames` count,
//! impersonation needs its verb, `SelfSubjectAccessReview` answers, and
//! every refusal is counted with who was refused what.
//!
//! kubectl is not used here: client-go sends no bearer token to a plain-HTTP
//! server, and kite-fake-apiserver serves plain HTTP.

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use kite_testkit::FakeApiServer;
use kite_testkit::rbac::AuthorizationMode;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

fn object<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

async fn cluster() -> (FakeApiServer, Client) {
    let server = FakeApiServer::builder().authorization(AuthorizationMode::Rbac).build().unwrap();
    let admin = server.client();
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &object(json!({ "metadata": { "name": "kite" } })))
        .await
        .unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "kite");
    accounts.create(&PostParams::default(), &object(json!({ "metadata": { "name": "kite-api" } }))).await.unwrap();
    let token = server.service_account_token("kite", "kite-api").unwrap();
    let client = server.client_with_token(&token);
    (server, client)
}

fn refusal(error: kube::Error) -> (u16, String) {
    match error {
        kube::Error::Api(status) => (status.code, status.message),
        other => panic!("not an API error: {other}"),
    }
}

async fn create(server: &FakeApiServer, plural: &str, namespace: Option<&str>, body: Value) {
    server.create("rbac.authorization.k8s.io", "v1", plural, namespace, body).unwrap();
}

#[tokio::test]
async fn a_service_account_may_do_what_its_roles_allow_and_is_told_what_not() {
    let (server, api) = cluster().await;
    let secrets: Api<Secret> = Api::namespaced(api.clone(), "kite");
    let (code, message) = refusal(
        secrets.create(&PostParams::default(), &object(json!({ "metadata": { "name": "s" } }))).await.unwrap_err(),
    );
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "secrets is forbidden: User \"system:serviceaccount:kite:kite-api\" cannot create resource \"secrets\" in API group \"\" in the namespace \"kite\""
    );
    create(&server, "roles", Some("kite"), json!({ "metadata": { "name": "secrets" },
        "rules": [{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "list"] },
                  { "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["settings"] }] })).await;
    create(
        &server,
        "rolebindings",
        Some("kite"),
        json!({ "metadata": { "name": "api" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "secrets" },
        "subjects": [{ "kind": "ServiceAccount", "name": "kite-api", "namespace": "kite" }] }),
    )
    .await;
    secrets.create(&PostParams::default(), &object(json!({ "metadata": { "name": "s" } }))).await.unwrap();
    assert_eq!(secrets.list(&ListParams::default()).await.unwrap().items.len(), 1);
    let (code, message) = refusal(secrets.get("s").await.unwrap_err());
    assert_eq!(code, 403, "list does not give get");
    assert!(
        message.starts_with(
            "secrets \"s\" is forbidden: User \"system:serviceaccount:kite:kite-api\" cannot get resource \"secrets\""
        ),
        "{message}"
    );
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "kite");
    for name in ["settings", "other"] {
        maps.create(&PostParams::default(), &object(json!({ "metadata": { "name": name } }))).await.unwrap();
    }
    let own_maps: Api<ConfigMap> = Api::namespaced(api.clone(), "kite");
    own_maps.get("settings").await.unwrap();
    assert_eq!(refusal(own_maps.get("other").await.unwrap_err()).0, 403, "resourceNames name what may be read");
    let elsewhere: Api<Secret> = Api::namespaced(api, "default");
    assert_eq!(
        refusal(elsewhere.list(&ListParams::default()).await.unwrap_err()).0,
        403,
        "a Role binds in its namespace only"
    );
    let denials = server.denials();
    assert!(
        denials.iter().any(|d| d["user"] == "system:serviceaccount:kite:kite-api"
            && d["verb"] == "create"
            && d["resource"] == "secrets"),
        "{denials:?}"
    );
}

#[tokio::test]
async fn aggregated_cluster_roles_and_impersonation_and_access_reviews() {
    let (server, api) = cluster().await;
    create(&server, "clusterroles", None, json!({ "metadata": { "name": "kite-view" },
        "aggregationRule": { "clusterRoleSelectors": [{ "matchLabels": { "kite.example.org/aggregate-to-view": "true" } }] }, "rules": [] })).await;
    create(
        &server,
        "clusterroles",
        None,
        json!({ "metadata": { "name": "kite-view-nodes", "labels": { "kite.example.org/aggregate-to-view": "true" } },
        "rules": [{ "apiGroups": [""], "resources": ["nodes"], "verbs": ["list"] }] }),
    )
    .await;
    create(
        &server,
        "clusterrolebindings",
        None,
        json!({ "metadata": { "name": "api-view" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kite-view" },
        "subjects": [{ "kind": "Group", "name": "system:serviceaccounts:kite" }] }),
    )
    .await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(api.clone());
    nodes.list(&ListParams::default()).await.unwrap();

    let review = |resource: &str, verb: &str| SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                resource: Some(resource.into()),
                verb: Some(verb.into()),
                namespace: Some("kite".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let reviews: Api<SelfSubjectAccessReview> = Api::all(api.clone());
    let answer = reviews.create(&PostParams::default(), &review("nodes", "list")).await.unwrap();
    assert!(answer.status.unwrap().allowed);
    let answer = reviews.create(&PostParams::default(), &review("secrets", "delete")).await.unwrap();
    assert!(!answer.status.unwrap().allowed);

    let as_api = server.client_impersonating(&server.admin_token().unwrap(), "system:serviceaccount:kite:kite-api");
    let secrets: Api<Secret> = Api::namespaced(as_api, "kite");
    let (_, message) = refusal(secrets.list(&ListParams::default()).await.unwrap_err());
    assert!(
        message.contains("User \"system:serviceaccount:kite:kite-api\" cannot list resource \"secrets\""),
        "the admin acts as the account: {message}"
    );
    let sneaky =
        server.client_impersonating(&server.service_account_token("kite", "kite-api").unwrap(), "kubernetes-admin");
    let (code, message) =
        refusal(Api::<Secret>::namespaced(sneaky, "kite").list(&ListParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "users \"kubernetes-admin\" is forbidden: User \"system:serviceaccount:kite:kite-api\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
}

#[tokio::test]
async fn a_bad_token_is_unauthorized_and_no_token_is_anonymous() {
    let (server, _) = cluster().await;
    let (code, message) = refusal(
        Api::<Secret>::namespaced(server.client_with_token("bogus"), "kite")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!((code, message.as_str()), (401, "Unauthorized"));
    let anonymous = kube::Client::new(server.router(), "default");
    let (code, message) =
        refusal(Api::<Secret>::namespaced(anonymous.clone(), "kite").list(&ListParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(message.contains("User \"system:anonymous\""), "{message}");
    assert!(
        anonymous.apiserver_version().await.is_ok(),
        "anyone may read /version, as system:public-info-viewer allows"
    );
}
