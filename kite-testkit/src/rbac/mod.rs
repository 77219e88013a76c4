//! Authentication and RBAC, for a server built with
//! [`AuthorizationMode::Rbac`] (`kite-fake-apiserver --authorization-mode
//! RBAC`, kube-apiserver's flag): bearer tokens name the user (the admin's
//! token, in `system:masters`, and ServiceAccount tokens from the
//! TokenRequest API, `kubectl create token`); a request without one is
//! `system:anonymous`; `Impersonate-User` and `Impersonate-Group` need the
//! `impersonate` verb; every request is authorized by the cluster's Roles,
//! ClusterRoles and bindings ([`rules`]), and a refusal is the API server's
//! `403` sentence. `SelfSubjectAccessReview` answers `kubectl auth can-i`.
//!
//! The default mode, [`AuthorizationMode::AlwaysAllow`], allows everything.

pub(crate) mod reviews;
pub(crate) mod rules;

pub use crate::identity::{AuthorizationMode, UserInfo};
pub(crate) use crate::request_attributes::Attributes;

use crate::registry::ResourceKey;
use crate::state::Inner;
use crate::status::ApiError;
use crate::store::Store;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

/// `401 Unauthorized`.
fn unauthorized() -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized")
}

/// The user a request's client certificate (`peer`) or bearer token names,
/// in that order, as the API server's authenticators are tried;
/// `system:anonymous` with neither.
fn authenticate(inner: &Inner, headers: &HeaderMap, peer: Option<UserInfo>) -> Result<UserInfo, ApiError> {
    if let Some(user) = peer {
        return Ok(user);
    }
    let Some(header) = headers.get(http::header::AUTHORIZATION) else { return Ok(UserInfo::anonymous()) };
    let token = header.to_str().ok().and_then(|h| h.strip_prefix("Bearer ")).ok_or_else(unauthorized)?;
    inner.tokens().get(token.trim()).cloned().ok_or_else(unauthorized)
}

/// The API server's `403`, for `user` refused `request`
/// (`endpoints/handlers/responsewriters`' `forbiddenMessage`).
pub(crate) fn forbidden(user: &UserInfo, request: &Attributes) -> ApiError {
    let who = &user.name;
    let Some(path) = request.path else {
        let resource = match request.subresource {
            Some(sub) => format!("{}/{sub}", request.resource),
            None => request.resource.to_string(),
        };
        let scope = match request.namespace {
            Some(namespace) => format!("in the namespace \"{namespace}\""),
            None => "at the cluster scope".into(),
        };
        let why = format!(
            "User \"{who}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
            request.verb, request.group
        );
        let qualified = if request.group.is_empty() {
            request.resource.to_string()
        } else {
            format!("{}.{}", request.resource, request.group)
        };
        let message = match request.name {
            Some(name) => format!("{qualified} \"{name}\" is forbidden: {why}"),
            None => format!("{qualified} is forbidden: {why}"),
        };
        let mut details = json!({ "kind": request.resource });
        if let Some(name) = request.name {
            details["name"] = json!(name);
        }
        if !request.group.is_empty() {
            details["group"] = json!(request.group);
        }
        return ApiError::new(StatusCode::FORBIDDEN, "Forbidden", message).with_details(details);
    };
    ApiError::new(
        StatusCode::FORBIDDEN,
        "Forbidden",
        format!("forbidden: User \"{who}\" cannot {} path \"{path}\"", request.verb),
    )
}

/// Whether `user` may make `request`.
pub(crate) fn allows(store: &Store, user: &UserInfo, request: &Attributes) -> bool {
    rules::allows(store, user, request)
}

/// The requester after authentication and impersonation, when the server authorizes.
pub(crate) fn requester(
    inner: &Inner,
    headers: &HeaderMap,
    peer: Option<UserInfo>,
) -> Result<Option<UserInfo>, ApiError> {
    if inner.config.authorization == AuthorizationMode::AlwaysAllow {
        return Ok(None);
    }
    let user = authenticate(inner, headers, peer)?;
    let Some(target) = headers.get("Impersonate-User").and_then(|v| v.to_str().ok()) else { return Ok(Some(user)) };
    let check = |resource: &str, name: &str, namespace: Option<&str>| -> Result<(), ApiError> {
        let request = Attributes {
            verb: "impersonate",
            group: "",
            resource,
            subresource: None,
            name: Some(name),
            namespace,
            path: None,
        };
        authorize(inner, Some(&user), &request)
    };
    let mut impersonated = match target.strip_prefix("system:serviceaccount:").and_then(|rest| rest.split_once(':')) {
        Some((namespace, name)) => {
            check("serviceaccounts", name, Some(namespace))?;
            UserInfo::service_account(namespace, name)
        }
        None => {
            check("users", target, None)?;
            UserInfo { name: target.to_string(), groups: vec!["system:authenticated".into()] }
        }
    };
    for group in headers.get_all("Impersonate-Group").iter().filter_map(|g| g.to_str().ok()) {
        check("groups", group, None)?;
        if !impersonated.groups.iter().any(|g| g == group) {
            impersonated.groups.push(group.to_string());
        }
    }
    Ok(Some(impersonated))
}

/// Authorizes `request` by `user` (none: the server allows everything), counting a refusal.
pub(crate) fn authorize(inner: &Inner, user: Option<&UserInfo>, request: &Attributes) -> Result<(), ApiError> {
    let Some(user) = user else { return Ok(()) };
    if allows(&inner.store(), user, request) {
        return Ok(());
    }
    let refusal = forbidden(user, request);
    inner.faults().deny(json!({
        "user": user.name, "verb": request.verb, "group": request.group, "resource": request.resource,
        "subresource": request.subresource, "namespace": request.namespace, "name": request.name, "path": request.path,
    }));
    Err(refusal)
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": { "name": name, "labels": { "kubernetes.io/bootstrapping": "rbac-defaults" } }, "rules": rules })
}

fn cluster_role_binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> =
        groups.iter().map(|g| json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g })).collect();
    json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": { "name": name, "labels": { "kubernetes.io/bootstrapping": "rbac-defaults" } },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role }, "subjects": subjects })
}

/// The bootstrap roles every cluster has (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`), those Kite's tests rely on.
pub(crate) fn bootstrap_objects() -> Vec<(ResourceKey, Value)> {
    let roles = ResourceKey { group: "rbac.authorization.k8s.io".into(), plural: "clusterroles".into() };
    let bindings = ResourceKey { group: "rbac.authorization.k8s.io".into(), plural: "clusterrolebindings".into() };
    let discovery_urls = json!([
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/"
    ]);
    vec![
        (
            roles.clone(),
            cluster_role(
                "cluster-admin",
                json!([{ "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] }, { "nonResourceURLs": ["*"], "verbs": ["*"] }]),
            ),
        ),
        (
            roles.clone(),
            cluster_role("system:discovery", json!([{ "nonResourceURLs": discovery_urls, "verbs": ["get"] }])),
        ),
        (
            roles.clone(),
            cluster_role(
                "system:public-info-viewer",
                json!([{ "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"] }]),
            ),
        ),
        (
            roles.clone(),
            cluster_role(
                "system:basic-user",
                json!([
                    { "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"] },
                    { "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"] },
                ]),
            ),
        ),
        (bindings.clone(), cluster_role_binding("cluster-admin", "cluster-admin", &["system:masters"])),
        (bindings.clone(), cluster_role_binding("system:discovery", "system:discovery", &["system:authenticated"])),
        (
            bindings.clone(),
            cluster_role_binding(
                "system:public-info-viewer",
                "system:public-info-viewer",
                &["system:authenticated", "system:unauthenticated"],
            ),
        ),
        (bindings, cluster_role_binding("system:basic-user", "system:basic-user", &["system:authenticated"])),
    ]
}
