//! Admission webhooks, as the API server runs them
//! (`k8s.io/apiserver/pkg/admission/plugin/webhook`): the
//! `MutatingWebhookConfiguration`s' webhooks, whose JSON patches change the
//! object, before the object is validated; then the
//! `ValidatingWebhookConfiguration`s'. Each is matched by its rules and
//! selectors ([`rules`]) and called ([`call`]): a webhook that cannot be
//! called fails the request (`Internal error occurred: failed calling
//! webhook "..."`) unless its `failurePolicy` is `Ignore`; one that refuses
//! answers `admission webhook "..." denied the request: ...`.
//!
//! Only requests from clients are admitted; the server's own writes (its
//! simulations, garbage collection, namespace clean-up) are not.

pub mod call;
pub(crate) mod rules;

use crate::registry::{ResourceKey, ResourceType};
use crate::state::Inner;
use crate::status::ApiError;
use crate::store::Store;
use base64::Engine as _;
use http::StatusCode;
use rules::Attributes;
use serde_json::{Value, json};

/// Mutating or validating.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `MutatingWebhookConfiguration`s, which may patch.
    Mutating,
    /// `ValidatingWebhookConfiguration`s.
    Validating,
}

impl Phase {
    fn plural(self) -> &'static str {
        match self {
            Phase::Mutating => "mutatingwebhookconfigurations",
            Phase::Validating => "validatingwebhookconfigurations",
        }
    }
}

/// One request to admit.
pub(crate) struct Request<'a> {
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'a str,
    /// The type.
    pub resource: &'a ResourceType,
    /// The version of the request.
    pub version: &'a str,
    /// The subresource, if any.
    pub subresource: Option<&'a str>,
    /// The namespace (empty for cluster-scoped objects).
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// The object before the request, for an update or a delete.
    pub old: Option<&'a Value>,
    /// Whether the request is a dry run.
    pub dry_run: bool,
    /// Who asks.
    pub user: &'a crate::identity::UserInfo,
}

impl<'a> Request<'a> {
    /// What webhooks are told of a write, under `ctx`, of `name` in `namespace`.
    pub(crate) fn of_write(
        ctx: &'a crate::write_context::WriteCtx,
        operation: &'a str,
        resource: &'a ResourceType,
        namespace: &'a str,
        name: &'a str,
        old: Option<&'a Value>,
    ) -> Self {
        Self {
            operation,
            resource,
            version: ctx.api_version.rsplit('/').next().unwrap_or_default(),
            subresource: ctx.subresource.as_deref(),
            namespace,
            name,
            old,
            dry_run: ctx.dry_run,
            user: &ctx.user,
        }
    }
}

/// The webhooks of `phase` that `request` meets, in the API server's order
/// (configurations by name, webhooks as listed).
fn matching(store: &Store, phase: Phase, request: &Request, object: &Value) -> Vec<Value> {
    let key = ResourceKey { group: "admissionregistration.k8s.io".into(), plural: phase.plural().into() };
    let mut configurations: Vec<&Value> = store.list(&key).map(|(_, c)| c).collect();
    configurations.sort_by_key(|c| c["metadata"]["name"].as_str().map(String::from));
    let namespaces = ResourceKey { group: String::new(), plural: "namespaces".into() };
    let is_namespace = request.resource.group.is_empty() && request.resource.kind == "Namespace";
    let namespace_labels = if is_namespace {
        Some(object["metadata"]["labels"].clone())
    } else if request.resource.namespaced {
        store.get(&namespaces, &(String::new(), request.namespace.to_string())).map(|n| n["metadata"]["labels"].clone())
    } else {
        None
    };
    let attributes = Attributes {
        operation: request.operation,
        group: &request.resource.group,
        version: request.version,
        resource: &request.resource.plural,
        subresource: request.subresource.unwrap_or(""),
        namespaced: request.resource.namespaced,
        object,
        namespace_labels: namespace_labels.as_ref(),
    };
    configurations
        .into_iter()
        .flat_map(|c| c["webhooks"].as_array().cloned().unwrap_or_default())
        .filter(|w| rules::matches(w, &attributes))
        .collect()
}

/// The `AdmissionReview` the API server sends for `request`.
fn review(request: &Request, object: &Value) -> Value {
    let resource = request.resource;
    let group_version_kind = json!({ "group": resource.group, "version": request.version, "kind": resource.kind });
    let group_version_resource =
        json!({ "group": resource.group, "version": request.version, "resource": resource.plural });
    let (new, old) = match request.operation {
        "DELETE" => (Value::Null, object.clone()),
        _ => (object.clone(), request.old.cloned().unwrap_or(Value::Null)),
    };
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uuid::Uuid::new_v4().to_string(),
            "kind": group_version_kind, "resource": group_version_resource,
            "requestKind": group_version_kind, "requestResource": group_version_resource,
            "subResource": request.subresource,
            "name": request.name, "namespace": request.namespace,
            "operation": request.operation,
            "userInfo": { "username": request.user.name, "groups": request.user.groups },
            "object": new, "oldObject": old,
            "dryRun": request.dry_run,
        }
    })
}

/// `admission webhook "name" denied the request: ...`, with the response's code (400 at least).
fn denied(name: &str, result: &Value) -> ApiError {
    let code = result["code"].as_u64().filter(|c| *c >= 400).unwrap_or(400);
    let by = format!("admission webhook \"{name}\" denied the request");
    let message = match (result["message"].as_str(), result["reason"].as_str()) {
        (Some(message), _) if !message.is_empty() => format!("{by}: {message}"),
        (_, Some(reason)) if !reason.is_empty() => format!("{by}: {reason}"),
        _ => format!("{by} without explanation"),
    };
    let status = StatusCode::from_u16(code as u16).unwrap_or(StatusCode::BAD_REQUEST);
    ApiError::new(status, result["reason"].as_str().unwrap_or(""), message)
}

/// `500 InternalError`, `Internal error occurred: ...`.
fn internal(problem: String) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", format!("Internal error occurred: {problem}"))
}

/// Runs the webhooks of `phase` on `object`; a mutating webhook's patch is applied to it.
pub(crate) fn admit(
    inner: &Inner,
    store: &Store,
    phase: Phase,
    request: &Request,
    object: &mut Value,
) -> Result<(), ApiError> {
    for webhook in matching(store, phase, request, object) {
        let name = webhook["name"].as_str().unwrap_or_default().to_string();
        let (target, url) = call::target(&webhook);
        let handler = inner.webhooks().get(&target).cloned();
        let answer = match handler {
            Some(handler) => Ok(handler(&review(request, object))),
            None => Err(call::unreachable(store, &target, &url)),
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(_) if webhook["failurePolicy"] == "Ignore" => continue,
            Err(failure) => {
                return Err(internal(format!("failed calling webhook \"{name}\": {failure}")));
            }
        };
        let response = &answer["response"];
        if response["allowed"] != true {
            return Err(denied(&name, &response["status"]));
        }
        if phase == Phase::Mutating
            && let Some(patch) = response["patch"].as_str()
        {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(patch)
                .map_err(|e| internal(format!("the patch of webhook \"{name}\" is not base64: {e}")))?;
            let patch: Value = serde_json::from_slice(&bytes)
                .map_err(|e| internal(format!("the patch of webhook \"{name}\" is not JSON: {e}")))?;
            crate::patch::json(object, &patch)?;
        }
    }
    Ok(())
}

/// Both phases, as for a delete (the object is the one deleted).
pub(crate) fn admit_delete(inner: &Inner, store: &Store, request: &Request, object: &Value) -> Result<(), ApiError> {
    let mut object = object.clone();
    admit(inner, store, Phase::Mutating, request, &mut object)?;
    admit(inner, store, Phase::Validating, request, &mut object)
}
