//! Authentication and RBAC (`AuthorizationMode::Rbac`), with kube clients:
//! a ServiceAccount's token authenticates as it, RBAC decides with the API
//! server's sentences, aggregated ClusterRoles and `resourceNames` count,
//! impersonation needs its verb, `SelfSubjectAccessReview` answers, and
//! every refusal is counted with who was refused what; over HTTPS, a minted
//! ServiceAccount kubeconfig and client certificates authenticate, and
//! `SubjectAccessReview` answers for the subject it names. kubectl's side
//! of the same is in `kubectl_rbac.rs`.

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
    // As on a real server, a list that selects one name by field is a request for that name.
    create(&server, "roles", Some("kite"), json!({ "metadata": { "name": "one-map" },
        "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"], "resourceNames": ["settings"] }] })).await;
    create(
        &server,
        "rolebindings",
        Some("kite"),
        json!({ "metadata": { "name": "one-map" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "one-map" },
        "subjects": [{ "kind": "ServiceAccount", "name": "kite-api", "namespace": "kite" }] }),
    )
    .await;
    let named = own_maps.list(&ListParams::default().fields("metadata.name=settings")).await.unwrap();
    assert_eq!(named.items.len(), 1);
    for fields in ["metadata.name=other", "metadata.name!=settings"] {
        let refused = own_maps.list(&ListParams::default().fields(fields)).await.unwrap_err();
        assert_eq!(refusal(refused).0, 403, "{fields}");
    }
    assert_eq!(
        refusal(own_maps.list(&ListParams::default()).await.unwrap_err()).0,
        403,
        "a list of all is not a list of one"
    );
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

/// A kube client from a kubeconfig's text, as a component deployed with it would build one.
async fn client_from(kubeconfig: &str) -> Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
    Client::try_from(config).unwrap()
}

#[tokio::test]
async fn over_https_a_minted_service_account_kubeconfig_and_a_client_certificate_authenticate() {
    let (server, _) = cluster().await;
    let address = server.listen_tls("127.0.0.1:0".parse().unwrap()).await.unwrap();

    let account = client_from(&server.service_account_kubeconfig(address, "kite", "kite-api").unwrap()).await;
    let (code, message) =
        refusal(Api::<Secret>::namespaced(account.clone(), "kite").list(&ListParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(message.contains("User \"system:serviceaccount:kite:kite-api\" cannot list"), "{message}");

    let admin = client_from(&server.admin_kubeconfig(address).unwrap()).await;
    let namespaces = Api::<Namespace>::all(admin.clone()).list(&ListParams::default()).await.unwrap();
    assert!(namespaces.items.iter().any(|n| n.metadata.name.as_deref() == Some("kite")));

    // No credentials over HTTPS: the anonymous user, who may read the version.
    let anonymous = client_from(&kite_testkit::kubeconfig::render_https(
        address,
        &server.ca_pem().unwrap(),
        &kite_testkit::kubeconfig::Credentials::None,
    ))
    .await;
    assert!(anonymous.apiserver_version().await.is_ok());
    let (_, message) = refusal(Api::<Namespace>::all(anonymous).list(&ListParams::default()).await.unwrap_err());
    assert_eq!(
        message,
        "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );

    // A certificate names its user by CN and its groups by O, nothing else.
    let operators = kite_testkit::rbac::UserInfo { name: "ops-alice".into(), groups: vec!["operators".into()] };
    create(
        &server,
        "clusterrolebindings",
        None,
        json!({ "metadata": { "name": "operators-view-nodes" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nodes-reader" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "operators" }] }),
    )
    .await;
    create(
        &server,
        "clusterroles",
        None,
        json!({ "metadata": { "name": "nodes-reader" },
        "rules": [{ "apiGroups": [""], "resources": ["nodes"], "verbs": ["list"] }] }),
    )
    .await;
    let issued = server.client_certificate(&operators).unwrap();
    let kubeconfig = kite_testkit::kubeconfig::render_https(
        address,
        &server.ca_pem().unwrap(),
        &kite_testkit::kubeconfig::Credentials::ClientCertificate(issued),
    );
    let alice = client_from(&kubeconfig).await;
    Api::<k8s_openapi::api::core::v1::Node>::all(alice.clone()).list(&ListParams::default()).await.unwrap();
    let (_, message) = refusal(Api::<Namespace>::all(alice).list(&ListParams::default()).await.unwrap_err());
    assert_eq!(
        message,
        "namespaces is forbidden: User \"ops-alice\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );
}

#[tokio::test]
async fn a_subject_access_review_answers_for_the_subject_it_names_and_refuses_one_without_a_subject() {
    let (server, _) = cluster().await;
    create(
        &server,
        "roles",
        Some("kite"),
        json!({ "metadata": { "name": "cm" },
        "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"] }] }),
    )
    .await;
    create(
        &server,
        "rolebindings",
        Some("kite"),
        json!({ "metadata": { "name": "cm" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm" },
        "subjects": [{ "kind": "ServiceAccount", "name": "kite-api", "namespace": "kite" }] }),
    )
    .await;
    let reviews: Api<k8s_openapi::api::authorization::v1::SubjectAccessReview> = Api::all(server.client());
    let ask = |user: &str, verb: &str| -> k8s_openapi::api::authorization::v1::SubjectAccessReview {
        object(json!({ "spec": { "user": user, "groups": ["system:serviceaccounts", "system:authenticated"],
            "resourceAttributes": { "namespace": "kite", "verb": verb, "resource": "configmaps" } } }))
    };
    let account = "system:serviceaccount:kite:kite-api";
    let answer = reviews.create(&PostParams::default(), &ask(account, "get")).await.unwrap();
    assert!(answer.status.unwrap().allowed);
    let answer = reviews.create(&PostParams::default(), &ask(account, "delete")).await.unwrap();
    assert!(!answer.status.unwrap().allowed);
    let answer = reviews.create(&PostParams::default(), &ask("someone-else", "get")).await.unwrap();
    assert!(!answer.status.unwrap().allowed);

    let nobody = object(json!({ "spec": { "resourceAttributes": { "verb": "get", "resource": "pods" } } }));
    let (code, message) = refusal(reviews.create(&PostParams::default(), &nobody).await.unwrap_err());
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified"
    );
    // The account itself may not ask about others: that needs create on subjectaccessreviews.
    let token = server.service_account_token("kite", "kite-api").unwrap();
    let as_account: Api<k8s_openapi::api::authorization::v1::SubjectAccessReview> =
        Api::all(server.client_with_token(&token));
    let (code, _) = refusal(as_account.create(&PostParams::default(), &ask(account, "get")).await.unwrap_err());
    assert_eq!(code, 403);
}
