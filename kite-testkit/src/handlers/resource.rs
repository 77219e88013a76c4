//! A request for a resource, one step per function: the route checks, the
//! verb, the injected faults and latency, the content negotiation, and the
//! dispatch to the verb's handler.

use super::delete;
use super::response::{json_response, not_found};
use super::verbs::{self, Request};
use crate::fault_injection::inject_faults;
use crate::faults::{RequestRecord, Verb};
use crate::identity::UserInfo;
use crate::path::ResourcePath;
use crate::rbac;
use crate::registry::ResourceType;
use crate::request_attributes::Attributes;
use crate::shape::{Read, Shape};
use crate::state::Inner;
use crate::status::ApiError;
use crate::write_context::{FieldValidation, WriteCtx};
use crate::{protobuf, watch};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use std::collections::HashMap;
use std::sync::Arc;

/// Answers a request for a resource, or says why not.
pub(super) async fn answer(
    inner: &Arc<Inner>,
    user: Option<&UserInfo>,
    method: &Method,
    path: ResourcePath,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let resource = served_type(inner, &path)?;
    let verb = verb_of(method, &path, query)?;
    authorize(inner, user, verb, &resource, &path, query)?;
    if let Some(answer) = reviews(inner, user, verb, &resource, &path, headers, body).await? {
        return Ok(answer);
    }
    inject_faults(inner, record_of(verb, &resource, &path, query, user)).await?;
    let api_version = resource.api_version(&path.version);
    let body = read_body(&api_version, &resource.kind, headers, body)?;
    let accept = headers.get(http::header::ACCEPT).and_then(|a| a.to_str().ok()).unwrap_or("");
    let mut ctx = write_ctx(&resource, &path, query, headers);
    if let Some(user) = user {
        ctx.user = user.clone();
    }
    let request = Request { resource, path: &path, query, headers, body: &body, accept };
    let mut response = dispatch(inner, verb, &request, &mut ctx)?;
    for warning in &ctx.warnings {
        let quoted = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = http::HeaderValue::from_str(&format!("299 - \"{quoted}\"")) {
            response.headers_mut().append("Warning", value);
        }
    }
    let read = if path.name.is_some() { Read::One } else { Read::List };
    let whole_objects = matches!(Shape::of(accept, read), Ok(Shape::Objects));
    if verb != Verb::Watch && whole_objects && protobuf::preferred(accept) {
        response = as_protobuf(response).await;
    }
    Ok(response)
}

/// The body as JSON: a protobuf body of a built-in kind is read into JSON,
/// and must be of the kind of the URL; other bodies are as sent.
/// Custom resources and CBOR have no such form: 415, as the API server says it.
fn read_body(api_version: &str, kind: &str, headers: &HeaderMap, body: &Bytes) -> Result<Bytes, ApiError> {
    let content_type = verbs::content_type(headers);
    let media = content_type.split(';').next().unwrap_or("").trim();
    let unsupported = || {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {content_type:?})"
            ),
        )
    };
    if media == "application/cbor" {
        return Err(unsupported());
    }
    if media != protobuf::MEDIA_TYPE || body.is_empty() {
        return Ok(body.clone());
    }
    if !protobuf::has_message(api_version, kind) {
        return Err(unsupported());
    }
    let object = protobuf::decode(body).map_err(|error| match error {
        protobuf::ProtobufError::Unknown { .. } => unsupported(),
        protobuf::ProtobufError::Malformed(problem) => {
            ApiError::bad_request(format!("the protobuf body cannot be read: {problem}"))
        }
    })?;
    let named = |field: &str| object.get(field).and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
    if named("apiVersion") != api_version || named("kind") != kind {
        return Err(ApiError::bad_request(format!(
            "the body is a {} of {}, but the URL is for a {kind} of {api_version}",
            named("kind"),
            named("apiVersion")
        )));
    }
    Ok(Bytes::from(object.to_string()))
}

/// A JSON answer re-encoded as protobuf, when its kind has a message
/// (objects, their lists, `Status`); any other answer stays JSON, which
/// every client that asks for protobuf also accepts.
async fn as_protobuf(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Response::from_parts(parts, axum::body::Body::empty());
    };
    let encoded =
        serde_json::from_slice::<serde_json::Value>(&bytes).ok().and_then(|json| protobuf::encode(&json).ok());
    match encoded {
        Some(encoded) => {
            parts.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(protobuf::MEDIA_TYPE));
            parts.headers.remove(http::header::CONTENT_LENGTH);
            Response::from_parts(parts, axum::body::Body::from(encoded))
        }
        None => Response::from_parts(parts, axum::body::Body::from(bytes)),
    }
}

/// RBAC's word on the request (none when the server allows everything).
fn authorize(
    inner: &Inner,
    user: Option<&UserInfo>,
    verb: Verb,
    resource: &ResourceType,
    path: &ResourcePath,
    query: &HashMap<String, String>,
) -> Result<(), ApiError> {
    let verb = if verb == Verb::Delete && path.name.is_none() { "deletecollection" } else { verb.as_str() };
    // As the real server's request info: a list or watch whose field selector
    // requires one `metadata.name` is authorized as a request for that name,
    // so `resourceNames` can grant it.
    let selected = match verb {
        "list" | "watch" => query.get("fieldSelector").and_then(|selector| name_required_by(selector)),
        _ => None,
    };
    let request = Attributes {
        verb,
        group: &resource.group,
        resource: &resource.plural,
        subresource: path.subresource.as_deref(),
        name: path.name.as_deref().or(selected),
        namespace: path.namespace.as_deref(),
        path: None,
    };
    rbac::authorize(inner, user, &request)
}

/// The name a field selector requires exactly (`metadata.name=x` or `==x`), if any.
fn name_required_by(selector: &str) -> Option<&str> {
    selector.split(',').find_map(|requirement| {
        let value = requirement.trim().strip_prefix("metadata.name")?;
        let value = value.strip_prefix("==").or_else(|| value.strip_prefix('='))?;
        (!value.starts_with('=')).then_some(value)
    })
}

/// The APIs that answer instead of storing: a ServiceAccount's token, the
/// access reviews and `SelfSubjectReview`. Their bodies may be protobuf
/// (client-go's typed clients send it) and are answered as `Accept` asks.
async fn reviews(
    inner: &Inner,
    user: Option<&UserInfo>,
    verb: Verb,
    resource: &ResourceType,
    path: &ResourcePath,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Option<Response>, ApiError> {
    let token = resource.group.is_empty()
        && resource.plural == "serviceaccounts"
        && path.subresource.as_deref() == Some("token");
    let reviewed = matches!(
        (resource.group.as_str(), resource.plural.as_str()),
        ("authorization.k8s.io", "selfsubjectaccessreviews" | "subjectaccessreviews" | "selfsubjectrulesreviews")
            | ("authentication.k8s.io", "selfsubjectreviews")
    );
    if !(token || reviewed) {
        return Ok(None);
    }
    if verb != Verb::Create {
        return Err(ApiError::method_not_allowed("the server does not allow this method on the requested resource"));
    }
    let body = if body.is_empty() {
        serde_json::json!({})
    } else if verbs::content_type(headers).starts_with(protobuf::MEDIA_TYPE) {
        protobuf::decode(body).map_err(|e| ApiError::bad_request(format!("the protobuf body cannot be read: {e}")))?
    } else {
        verbs::parse_body(body, false)?
    };
    let answer = match resource.plural.as_str() {
        "serviceaccounts" => rbac::reviews::token_request(
            inner,
            path.namespace.as_deref().unwrap_or(""),
            path.name.as_deref().unwrap_or(""),
            &body,
        )?,
        "selfsubjectaccessreviews" => rbac::reviews::self_subject_access_review(inner, user, &body)?,
        "subjectaccessreviews" => rbac::reviews::subject_access_review(inner, user, &body)?,
        "selfsubjectrulesreviews" => rbac::reviews::self_subject_rules_review(inner, user, &body)?,
        _ => rbac::reviews::self_subject_review(user),
    };
    let response = json_response(StatusCode::CREATED, &answer);
    let accept = headers.get(http::header::ACCEPT).and_then(|a| a.to_str().ok()).unwrap_or("");
    Ok(Some(if protobuf::preferred(accept) { as_protobuf(response).await } else { response }))
}

/// The route checks: the type is served at this group, version and plural,
/// in a namespace only if it is namespaced, and the subresource is one it has.
fn served_type(inner: &Inner, path: &ResourcePath) -> Result<Arc<ResourceType>, ApiError> {
    let resource = inner.registry().find(&path.group, &path.version, &path.plural).ok_or_else(not_found)?;
    if path.namespace.is_some() && !resource.namespaced {
        return Err(not_found());
    }
    if let Some(sub) = &path.subresource
        && !(sub == "status" && resource.status_subresource
            || sub == "scale" && resource.scale.is_some()
            || sub == "token" && resource.group.is_empty() && resource.plural == "serviceaccounts")
    {
        return Err(not_found());
    }
    Ok(resource)
}

/// The verb of a request: its method, whether it names an object, and `?watch`.
fn verb_of(method: &Method, path: &ResourcePath, query: &HashMap<String, String>) -> Result<Verb, ApiError> {
    let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    Ok(match (method.as_str(), path.name.is_some()) {
        ("GET", _) if watch => Verb::Watch,
        ("GET", true) => Verb::Get,
        ("GET", false) => Verb::List,
        ("POST", false) => Verb::Create,
        // A subresource one creates on an object: a ServiceAccount's token.
        ("POST", true) if path.subresource.is_some() => Verb::Create,
        ("PUT", true) => Verb::Update,
        ("PATCH", true) => Verb::Patch,
        ("DELETE", _) => Verb::Delete,
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {method}"
            )));
        }
    })
}

/// The request as the log records it; subresources count as `<resource>/<subresource>`.
fn record_of(
    verb: Verb,
    resource: &ResourceType,
    path: &ResourcePath,
    query: &HashMap<String, String>,
    user: Option<&UserInfo>,
) -> RequestRecord {
    let resource_name = match &path.subresource {
        Some(sub) => format!("{}/{sub}", resource.plural),
        None => resource.plural.clone(),
    };
    RequestRecord {
        verb,
        resource: resource_name,
        namespace: path.namespace.clone(),
        name: path.name.clone(),
        field_manager: query.get("fieldManager").cloned(),
        user: user.map(|u| u.name.clone()),
    }
}

/// The options of a write, from the query and headers.
fn write_ctx(
    resource: &ResourceType,
    path: &ResourcePath,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
) -> WriteCtx {
    WriteCtx {
        manager: field_manager(query, headers),
        dry_run: query.get("dryRun").is_some_and(|d| d == "All"),
        field_validation: match query.get("fieldValidation").map(String::as_str) {
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            _ => FieldValidation::Warn,
        },
        api_version: resource.api_version(&path.version),
        subresource: path.subresource.clone(),
        warnings: Vec::new(),
        record_ownership: true,
        admit: true,
        user: crate::identity::admin(),
    }
}

/// The field manager: `?fieldManager`, else the client's name from its user agent.
fn field_manager(query: &HashMap<String, String>, headers: &HeaderMap) -> String {
    if let Some(manager) = query.get("fieldManager") {
        return manager.clone();
    }
    headers
        .get(http::header::USER_AGENT)
        .and_then(|u| u.to_str().ok())
        .and_then(|u| u.split('/').next())
        .filter(|u| !u.is_empty())
        .unwrap_or("unknown")
        .to_string()
}

/// Hands the request to the handler of its verb.
fn dispatch(inner: &Arc<Inner>, verb: Verb, request: &Request, ctx: &mut WriteCtx) -> Result<Response, ApiError> {
    if request.path.subresource.as_deref() == Some("scale") {
        return verbs::scale(inner, verb, request, ctx);
    }
    match verb {
        Verb::Get => verbs::get(inner, request),
        Verb::List => verbs::list(inner, request),
        Verb::Watch => watch::watch(
            inner,
            Arc::clone(&request.resource),
            request.path.namespace.clone(),
            request.query,
            Shape::of(request.accept, Read::One)?,
        ),
        Verb::Create => verbs::create(inner, request, ctx),
        Verb::Update => verbs::update(inner, request, ctx),
        Verb::Patch => verbs::patch(inner, request, ctx),
        Verb::Delete => delete::delete(inner, request, ctx),
    }
}
