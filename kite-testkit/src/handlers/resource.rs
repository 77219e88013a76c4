//! A request for a resource, one step per function: the route checks, the
//! verb, the injected faults and latency, the content negotiation, and the
//! dispatch to the verb's handler.

use super::verbs::{self, Request};
use super::{delete, not_found};
use crate::faults::{Fault, RequestRecord, Verb};
use crate::path::ResourcePath;
use crate::registry::ResourceType;
use crate::state::Inner;
use crate::status::ApiError;
use crate::write::{FieldValidation, WriteCtx};
use crate::{table, watch};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use std::collections::HashMap;
use std::sync::Arc;

/// Answers a request for a resource, or says why not.
pub(super) async fn answer(
    inner: &Arc<Inner>,
    method: &Method,
    path: ResourcePath,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let resource = served_type(inner, &path)?;
    let verb = verb_of(method, &path, query)?;
    inject_faults(inner, record_of(verb, &resource, &path, query)).await?;
    let as_table = negotiate(headers)?;
    let mut ctx = write_ctx(&resource, &path, query, headers);
    let request = Request { resource, path: &path, query, headers, body, as_table };
    let mut response = dispatch(inner, verb, &request, &mut ctx)?;
    for warning in &ctx.warnings {
        if let Ok(value) = http::HeaderValue::from_str(&format!("299 - \"{}\"", warning.replace('"', "'"))) {
            response.headers_mut().append("Warning", value);
        }
    }
    Ok(response)
}

/// The route checks: the type is served at this group, version and plural,
/// in a namespace only if it is namespaced, and the subresource is one it has.
fn served_type(inner: &Inner, path: &ResourcePath) -> Result<Arc<ResourceType>, ApiError> {
    let resource = inner.registry().find(&path.group, &path.version, &path.plural).ok_or_else(not_found)?;
    if path.namespace.is_some() && !resource.namespaced {
        return Err(not_found());
    }
    if let Some(sub) = &path.subresource
        && !(sub == "status" && resource.status_subresource)
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
    }
}

/// Logs the request, waits out the injected latency, and fails it if an injected fault matches.
async fn inject_faults(inner: &Inner, record: RequestRecord) -> Result<(), ApiError> {
    let (fault, latency) = {
        let mut faults = inner.faults();
        (faults.on_request(record), faults.latency)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match fault {
        Some(fault) => Err(fault_error(&fault)),
        None => Ok(()),
    }
}

/// The error an injected fault answers with, its reason named as the API server names it.
fn fault_error(fault: &Fault) -> ApiError {
    let code = StatusCode::from_u16(fault.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let reason = match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    };
    ApiError::new(code, reason, fault.message.clone())
}

/// The content negotiation: bodies are JSON or YAML only, as on an API
/// server with protobuf off (clients fall back to JSON on 415); returns
/// whether the client asked for a Table.
fn negotiate(headers: &HeaderMap) -> Result<bool, ApiError> {
    let content_type = verbs::content_type(headers);
    if content_type.starts_with("application/vnd.kubernetes.protobuf") || content_type.starts_with("application/cbor") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {content_type:?})"
            ),
        ));
    }
    let accept = headers.get(http::header::ACCEPT).and_then(|a| a.to_str().ok()).unwrap_or("");
    Ok(table::wants_table(accept))
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
    match verb {
        Verb::Get => verbs::get(inner, request),
        Verb::List => verbs::list(inner, request),
        Verb::Watch => watch::watch(
            inner,
            Arc::clone(&request.resource),
            request.path.namespace.clone(),
            request.query,
            request.as_table,
        ),
        Verb::Create => verbs::create(inner, request, ctx),
        Verb::Update => verbs::update(inner, request, ctx),
        Verb::Patch => verbs::patch(inner, request, ctx),
        Verb::Delete => delete::delete(inner, request, ctx.dry_run),
    }
}
