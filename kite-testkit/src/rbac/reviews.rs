//! The authentication and authorization APIs a client calls: the
//! TokenRequest subresource of a ServiceAccount (`kubectl create token`),
//! the access reviews (`kubectl auth can-i`, with `--list`), and
//! `SelfSubjectReview` (`kubectl auth whoami`).

use super::allows;
use crate::identity::UserInfo;
use crate::registry::ResourceKey;
use crate::request_attributes::Attributes;
use crate::state::Inner;
use crate::status::{ApiError, Cause};
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

/// What a review's spec asks about: its resource or non-resource attributes.
fn attributes_of(spec: &Value) -> Attributes<'_> {
    let resource = &spec["resourceAttributes"];
    let non_resource = &spec["nonResourceAttributes"];
    if non_resource.is_object() {
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
    }
}

/// The checks every access review's spec must pass (`pkg/apis/authorization/validation`).
fn attribute_causes(spec: &Value) -> Vec<Cause> {
    let resource = spec["resourceAttributes"].is_object();
    let non_resource = spec["nonResourceAttributes"].is_object();
    match (resource, non_resource) {
        (true, true) => vec![Cause::invalid(
            "spec.nonResourceAttributes",
            format!(
                "Invalid value: {}: cannot be specified in combination with resourceAttributes",
                spec["nonResourceAttributes"]
            ),
        )],
        (false, false) => vec![Cause::invalid(
            "spec.resourceAttributes",
            "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
        _ => Vec::new(),
    }
}

fn refuse(kind: &str, causes: Vec<Cause>) -> Result<(), ApiError> {
    if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid(kind, "authorization.k8s.io", "", causes)) }
}

fn review(kind: &str, spec: &Value, status: Value) -> Value {
    json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": kind,
        "metadata": { "creationTimestamp": null }, "spec": spec, "status": status,
    })
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews` (`kubectl auth can-i`):
/// whether the requester may do what the spec asks.
pub(crate) fn self_subject_access_review(
    inner: &Inner,
    user: Option<&UserInfo>,
    body: &Value,
) -> Result<Value, ApiError> {
    let spec = &body["spec"];
    refuse("SelfSubjectAccessReview", attribute_causes(spec))?;
    let allowed = user.is_none_or(|user| allows(&inner.store(), user, &attributes_of(spec)));
    Ok(review("SelfSubjectAccessReview", spec, json!({ "allowed": allowed })))
}

/// `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`: whether the
/// user and groups the spec names may do what it asks.
pub(crate) fn subject_access_review(inner: &Inner, user: Option<&UserInfo>, body: &Value) -> Result<Value, ApiError> {
    let spec = &body["spec"];
    let mut causes = attribute_causes(spec);
    let name = spec["user"].as_str().unwrap_or_default();
    let groups: Vec<String> =
        spec["groups"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
    if name.is_empty() && groups.is_empty() {
        causes
            .push(Cause::invalid("spec.user", "Invalid value: \"\": at least one of user or group must be specified"));
    }
    refuse("SubjectAccessReview", causes)?;
    let subject = UserInfo { name: name.to_string(), groups };
    let allowed = user.is_none() || allows(&inner.store(), &subject, &attributes_of(spec));
    Ok(review("SubjectAccessReview", spec, json!({ "allowed": allowed })))
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews` (`kubectl auth can-i --list`):
/// every rule that applies to the requester in the spec's namespace.
pub(crate) fn self_subject_rules_review(
    inner: &Inner,
    user: Option<&UserInfo>,
    body: &Value,
) -> Result<Value, ApiError> {
    let spec = &body["spec"];
    let namespace = spec["namespace"].as_str().unwrap_or_default();
    let rules = match user {
        Some(user) => super::rules::rules_for(&inner.store(), user, Some(namespace).filter(|n| !n.is_empty())),
        // A server that allows everything: one rule that says so.
        None => vec![
            json!({ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }),
            json!({ "verbs": ["*"], "nonResourceURLs": ["*"] }),
        ],
    };
    let field = |rule: &Value, name: &str| rule[name].as_array().cloned().unwrap_or_default();
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in &rules {
        if rule["nonResourceURLs"].as_array().is_some_and(|urls| !urls.is_empty()) {
            non_resource_rules
                .push(json!({ "verbs": field(rule, "verbs"), "nonResourceURLs": field(rule, "nonResourceURLs") }));
        } else {
            let mut entry = json!({ "verbs": field(rule, "verbs"), "apiGroups": field(rule, "apiGroups"), "resources": field(rule, "resources") });
            if rule["resourceNames"].as_array().is_some_and(|names| !names.is_empty()) {
                entry["resourceNames"] = rule["resourceNames"].clone();
            }
            resource_rules.push(entry);
        }
    }
    let status =
        json!({ "resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false });
    Ok(review("SelfSubjectRulesReview", spec, status))
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews` (`kubectl auth whoami`): who the requester is.
pub(crate) fn self_subject_review(user: Option<&UserInfo>) -> Value {
    let user = user.cloned().unwrap_or_else(UserInfo::anonymous);
    json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
        "metadata": { "creationTimestamp": null },
        "status": { "userInfo": { "username": user.name, "groups": user.groups } },
    })
}
