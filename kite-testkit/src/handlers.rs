//! The HTTP surface: one handler that reads the path as the API server
//! does and dispatches to reads, writes, watches, discovery and the test
//! controls under `/testkit/`.

use crate::faults::{Fault, RequestRecord, Verb};
use crate::lifecycle::{self, DeleteOptions, Propagation};
use crate::path::{self, ResourcePath, Route};
use crate::server::FakeApiServer;
use crate::status::ApiError;
use crate::write::{self, FieldValidation, PatchKind, PatchRequest, WriteCtx};
use crate::{discovery, openapi, read, table, watch};
use axum::Router;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The router of a fake API server.
pub fn router(server: FakeApiServer) -> Router {
    Router::new().fallback(handle).with_state(server)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, [(http::header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

async fn handle(
    State(server): State<FakeApiServer>,
    method: Method,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let route = path::parse(uri.path(), &server.inner.registry());
    let registry = || server.inner.registry();
    let found = |doc: Option<Value>| match doc {
        Some(doc) => json_response(StatusCode::OK, &doc),
        None => ApiError::new(StatusCode::NOT_FOUND, "NotFound", "the server could not find the requested resource")
            .into_response(),
    };
    match route {
        Route::Version => json_response(StatusCode::OK, &discovery::version()),
        Route::Health => (StatusCode::OK, "ok").into_response(),
        Route::CoreVersions => json_response(StatusCode::OK, &discovery::core_versions()),
        Route::CoreResources => found(discovery::resources(&registry(), "", "v1")),
        Route::Groups => json_response(StatusCode::OK, &discovery::groups(&registry())),
        Route::Group(group) => found(discovery::group(&registry(), &group)),
        Route::GroupResources(group, version) => found(discovery::resources(&registry(), &group, &version)),
        Route::OpenApi(path) if path == "v2" => {
            (StatusCode::OK, [(http::header::CONTENT_TYPE, openapi::V2_PROTOBUF)], Bytes::new()).into_response()
        }
        Route::OpenApi(path) if path == "v3" => json_response(StatusCode::OK, &openapi::v3_root(&registry())),
        Route::OpenApi(path) => {
            found(path.strip_prefix("v3/").and_then(|gv| openapi::v3_group_version(&registry(), gv)))
        }
        Route::NotFound => found(None),
        Route::Testkit(what) => testkit(&server, &method, &what, &body),
        Route::Resource(path) => match resource(&server, &method, path, &query, &headers, &body).await {
            Ok(response) => response,
            Err(error) => error.into_response(),
        },
    }
}

fn verb_of(method: &Method, path: &ResourcePath, query: &HashMap<String, String>) -> Option<Verb> {
    let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    Some(match (method.as_str(), path.name.is_some()) {
        ("GET", _) if watch => Verb::Watch,
        ("GET", true) => Verb::Get,
        ("GET", false) => Verb::List,
        ("POST", false) => Verb::Create,
        ("PUT", true) => Verb::Update,
        ("PATCH", true) => Verb::Patch,
        ("DELETE", _) => Verb::Delete,
        _ => return None,
    })
}

fn parse_body(body: &Bytes, yaml_allowed: bool) -> Result<Value, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => Ok(value),
        Err(json_error) if yaml_allowed => {
            let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("the body is not UTF-8"))?;
            serde_saphyr::from_str::<Value>(text)
                .map_err(|e| ApiError::bad_request(format!("the body is neither JSON ({json_error}) nor YAML ({e})")))
        }
        Err(error) => Err(ApiError::bad_request(format!("the body is not valid JSON: {error}"))),
    }
}

async fn resource(
    server: &FakeApiServer,
    method: &Method,
    path: ResourcePath,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let inner = &server.inner;
    let not_found =
        || ApiError::new(StatusCode::NOT_FOUND, "NotFound", "the server could not find the requested resource");
    let resource = inner.registry().find(&path.group, &path.version, &path.plural).ok_or_else(not_found)?;
    if path.namespace.is_some() && !resource.namespaced {
        return Err(not_found());
    }
    if let Some(sub) = &path.subresource
        && !(sub == "status" && resource.status_subresource)
    {
        return Err(not_found());
    }
    let verb = verb_of(method, &path, query).ok_or_else(|| {
        ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {method}"
        ))
    })?;
    let resource_name = match &path.subresource {
        Some(sub) => format!("{}/{sub}", resource.plural),
        None => resource.plural.clone(),
    };
    let record = RequestRecord {
        verb,
        resource: resource_name,
        namespace: path.namespace.clone(),
        name: path.name.clone(),
        field_manager: query.get("fieldManager").cloned(),
    };
    let (fault, latency) = {
        let mut faults = inner.faults();
        (faults.on_request(record), faults.latency)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(fault) = fault {
        return Err(fault_error(&fault));
    }

    let content_type = headers.get(http::header::CONTENT_TYPE).and_then(|c| c.to_str().ok()).unwrap_or("");
    if content_type.starts_with("application/vnd.kubernetes.protobuf") || content_type.starts_with("application/cbor") {
        // JSON only, as an API server with protobuf off: clients fall back to JSON on 415.
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {content_type:?})"
            ),
        ));
    }
    let accept = headers.get(http::header::ACCEPT).and_then(|a| a.to_str().ok()).unwrap_or("");
    let as_table = table::wants_table(accept);
    let namespace = path.namespace.as_deref();
    let api_version = resource.api_version(&path.version);
    let mut ctx = WriteCtx {
        manager: field_manager(query, headers),
        dry_run: query.get("dryRun").is_some_and(|d| d == "All"),
        field_validation: match query.get("fieldValidation").map(String::as_str) {
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            _ => FieldValidation::Warn,
        },
        api_version: api_version.clone(),
        subresource: path.subresource.clone(),
        warnings: Vec::new(),
        record_ownership: true,
    };
    let name = path.name.as_deref().unwrap_or("");
    let (status, object) = match verb {
        Verb::Get => {
            let object = read::get(inner, &resource, namespace, name)?;
            if as_table {
                let metadata = json!({"resourceVersion": object["metadata"]["resourceVersion"]});
                return Ok(json_response(StatusCode::OK, &table::table(&resource, &[object], metadata)));
            }
            (StatusCode::OK, object)
        }
        Verb::List => {
            let page = read::list(inner, &resource, namespace, query)?;
            if as_table {
                return Ok(json_response(StatusCode::OK, &table::table(&resource, &page.items, page.metadata)));
            }
            let list = json!({"apiVersion": api_version, "kind": format!("{}List", resource.kind), "metadata": page.metadata, "items": page.items});
            (StatusCode::OK, list)
        }
        Verb::Watch => return watch::watch(inner, resource, path.namespace.clone(), query, as_table),
        Verb::Create => {
            if path.subresource.is_some() {
                return Err(ApiError::method_not_allowed("create is not allowed on a subresource"));
            }
            let object = parse_body(body, false)?;
            (StatusCode::CREATED, write::create(inner, &resource, namespace, object, &mut ctx)?)
        }
        Verb::Update => {
            let object = parse_body(body, false)?;
            (StatusCode::OK, write::update(inner, &resource, namespace, name, object, &mut ctx)?)
        }
        Verb::Patch => {
            let content_type = headers.get(http::header::CONTENT_TYPE).and_then(|c| c.to_str().ok()).unwrap_or("");
            let kind = PatchKind::from_content_type(content_type)
                .ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
            if kind == PatchKind::Apply && !query.contains_key("fieldManager") {
                return Err(ApiError::bad_request(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                ));
            }
            let patch = parse_body(body, kind == PatchKind::Apply)?;
            let force = query.get("force").is_some_and(|f| f == "true");
            (
                StatusCode::OK,
                write::patch(inner, &resource, namespace, name, PatchRequest { kind, body: &patch, force }, &mut ctx)?,
            )
        }
        Verb::Delete => delete(server, &resource, &path, query, body, ctx.dry_run)?,
    };
    let mut response = json_response(status, &object);
    for warning in &ctx.warnings {
        if let Ok(value) = http::HeaderValue::from_str(&format!("299 - \"{}\"", warning.replace('"', "'"))) {
            response.headers_mut().append("Warning", value);
        }
    }
    Ok(response)
}

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

fn delete(
    server: &FakeApiServer,
    resource: &Arc<crate::registry::ResourceType>,
    path: &ResourcePath,
    query: &HashMap<String, String>,
    body: &Bytes,
    dry_run: bool,
) -> Result<(StatusCode, Value), ApiError> {
    let inner = &server.inner;
    let options = if body.is_empty() { json!({}) } else { parse_body(body, false)? };
    let policy_text =
        query.get("propagationPolicy").cloned().or_else(|| options["propagationPolicy"].as_str().map(String::from));
    let policy = match policy_text {
        Some(text) => Propagation::parse(&text)
            .ok_or_else(|| ApiError::bad_request(format!("unknown propagationPolicy {text:?}")))?,
        None => Propagation::Background,
    };
    let dry_run = dry_run || options["dryRun"].as_array().is_some_and(|d| d.iter().any(|x| x == "All"));
    let precondition = options["preconditions"]["uid"]
        .as_str()
        .map(|u| ("uid", u))
        .or_else(|| options["preconditions"]["resourceVersion"].as_str().map(|r| ("resourceVersion", r)));
    let namespace = if resource.namespaced { path.namespace.clone().unwrap_or_default() } else { String::new() };
    let key = resource.key();
    match &path.name {
        Some(name) => {
            let result = {
                let mut store = inner.store();
                lifecycle::delete(
                    inner,
                    &mut store,
                    &key,
                    &(namespace, name.clone()),
                    DeleteOptions { policy, precondition, dry_run },
                )?
            };
            crate::crd::after_write(inner, resource, &result);
            Ok((StatusCode::OK, result))
        }
        None => {
            let page = read::list(inner, resource, path.namespace.as_deref(), query)?;
            let mut deleted = Vec::new();
            for object in page.items {
                let object_key = (
                    object["metadata"]["namespace"].as_str().unwrap_or("").to_string(),
                    object["metadata"]["name"].as_str().unwrap_or("").to_string(),
                );
                let result = {
                    let mut store = inner.store();
                    lifecycle::delete(
                        inner,
                        &mut store,
                        &key,
                        &object_key,
                        DeleteOptions { policy, precondition: None, dry_run },
                    )
                };
                if let Ok(result) = result {
                    crate::crd::after_write(inner, resource, &result);
                    deleted.push(result);
                }
            }
            let list = json!({"apiVersion": resource.api_version(&path.version), "kind": format!("{}List", resource.kind), "metadata": {}, "items": deleted});
            Ok((StatusCode::OK, list))
        }
    }
}

fn testkit(server: &FakeApiServer, method: &Method, what: &str, body: &Bytes) -> Response {
    let ok = || json_response(StatusCode::OK, &json!({"status": "ok"}));
    match (method.as_str(), what) {
        ("GET", "requests") => json_response(StatusCode::OK, &json!(server.request_counts())),
        ("GET", "requests/log") => json_response(StatusCode::OK, &json!(server.requests())),
        ("DELETE", "requests") => {
            server.reset_requests();
            ok()
        }
        ("POST", "faults") => match serde_json::from_slice::<Fault>(body) {
            Ok(fault) => {
                server.inject(fault);
                ok()
            }
            Err(error) => {
                ApiError::bad_request(format!("a fault is {{verb?, resource?, count, code, message?}}: {error}"))
                    .into_response()
            }
        },
        ("POST", "latency") => match serde_json::from_slice::<Value>(body).ok().and_then(|v| v["millis"].as_u64()) {
            Some(millis) => {
                server.set_latency(std::time::Duration::from_millis(millis));
                ok()
            }
            None => ApiError::bad_request("latency is {\"millis\": N}").into_response(),
        },
        ("POST", "drop-watches") => {
            server.drop_watches();
            ok()
        }
        ("POST", "compact") => {
            server.compact();
            ok()
        }
        _ => ApiError::new(StatusCode::NOT_FOUND, "NotFound", format!("no test control {method} /testkit/{what}"))
            .into_response(),
    }
}
