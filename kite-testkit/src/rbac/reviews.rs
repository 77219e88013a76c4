//! The authentication and authorization APIs a client calls: the
//! TokenRequest subresource of a ServiceAccount (`kubectl create token`) and
//! `SelfSubjectAccessReview` (`kubectl auth can-i`).

use super::{Attributes, UserInfo, allows};
use crate::registry::ResourceKey;
use crate::state::Inner;
use crate::status::ApiError;
use rand::RngExt as _;
use serde_json::{Value, json};

/// `POST .../serviceaccounts/<name>/token`: a token that authenticates as the ServiceAccount.
pub(crate) fn token_request(inner: &Inner, namespace: &str, name: &str, body: &Value) -> Result<Value, ApiError> {
    let accounts = ResourceKey { group: String::new(), plural: "serviceaccounts".into() };
    if inner.store().get(&accounts, &(namespace.to_string(), name.to_string())).is_none() {
        return Err(ApiError::not_found("serviceaccounts", name));
    }
    let token: String = {
        let mut rng = rand::rng();
        (0..48).map(|_| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[rng.random_range(0..36)])).collect()
    };
    inner.tokens_mut().insert(token.clone(), UserInfo::service_account(namespace, name));
    let seconds = body["spec"]["expirationSeconds"].as_i64().unwrap_or(3600);
    let expires = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    let audiences =
        body["spec"]["audiences"].as_array().cloned().unwrap_or_else(|| vec![json!("https://kubernetes.default.svc")]);
    Ok(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "metadata": { "name": name, "namespace": namespace, "creationTimestamp": crate::meta::now() },
        "spec": { "audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": body["spec"]["boundObjectRef"] },
        "status": { "token": token, "expirationTimestamp": expires },
    }))
}

/// A non-empty string, or none.
fn text(value: &Value) -> Option<&str> {
    value.as_str().filter(|s| !s.is_empty())
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: whether the requester may do what the spec asks.
pub(crate) fn self_subject_access_review(inner: &Inner, user: Option<&UserInfo>, body: &Value) -> Value {
    let resource = &body["spec"]["resourceAttributes"];
    let non_resource = &body["spec"]["nonResourceAttributes"];
    let request = if non_resource.is_object() {
        Attributes {
            verb: text(&non_resource["verb"]).unwrap_or("get"),
            group: "",
            resource: "",
            subresource: None,
            name: None,
            namespace: None,
            path: text(&non_resource["path"]),
        }
    } else {
        Attributes {
            verb: text(&resource["verb"]).unwrap_or("get"),
            group: resource["group"].as_str().unwrap_or(""),
            resource: resource["resource"].as_str().unwrap_or(""),
            subresource: text(&resource["subresource"]),
            name: text(&resource["name"]),
            namespace: text(&resource["namespace"]),
            path: None,
        }
    };
    let allowed = user.is_none_or(|user| allows(&inner.store(), user, &request));
    json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "metadata": { "creationTimestamp": null }, "spec": body["spec"], "status": { "allowed": allowed },
    })
}
