//! The handlers of get, list, create, update and patch, each answering one
//! resource request that passed the route checks; and the request they share.

use super::response::json_response;
use crate::faults::Verb;
use crate::path::ResourcePath;
use crate::read;
use crate::registry::ResourceType;
use crate::scale::{self, ScaleChange};
use crate::shape::{Read, Shape};
use crate::state::Inner;
use crate::status::ApiError;
use crate::write::{self, PatchKind, PatchRequest};
use crate::write_context::WriteCtx;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// A resource request whose type is served and whose verb is known.
pub(super) struct Request<'a> {
    /// The type the request is for.
    pub resource: Arc<ResourceType>,
    /// The path, as parsed.
    pub path: &'a ResourcePath,
    /// The query parameters.
    pub query: &'a HashMap<String, String>,
    /// The request headers.
    pub headers: &'a HeaderMap,
    /// The request body.
    pub body: &'a Bytes,
    /// What the client's `Accept` header asks for: the objects, a Table
    /// (as `kubectl get` does) or their metadata only.
    pub accept: &'a str,
}

impl Request<'_> {
    /// The namespace in the path, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.path.namespace.as_deref()
    }

    /// The object's name in the path; empty for a collection.
    pub fn name(&self) -> &str {
        self.path.name.as_deref().unwrap_or("")
    }

    /// `group/version` of the path.
    pub fn api_version(&self) -> String {
        self.resource.api_version(&self.path.version)
    }
}

/// The `Content-Type` header; empty when missing or not text.
pub(super) fn content_type(headers: &HeaderMap) -> &str {
    headers.get(http::header::CONTENT_TYPE).and_then(|c| c.to_str().ok()).unwrap_or("")
}

/// Reads a body as JSON, or as YAML too where the API server accepts it (apply patches).
pub(super) fn parse_body(body: &Bytes, yaml_allowed: bool) -> Result<Value, ApiError> {
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

/// `GET` of one object: the object, a Table or its metadata.
pub(super) fn get(inner: &Inner, request: &Request) -> Result<Response, ApiError> {
    let shape = Shape::of(request.accept, Read::One)?;
    let object = read::get(inner, &request.resource, request.namespace(), request.name())?;
    Ok(json_response(StatusCode::OK, &shape.one(&request.resource, &object)))
}

/// `GET` of a collection: a `<Kind>List`, a Table or a
/// `PartialObjectMetadataList`.
pub(super) fn list(inner: &Inner, request: &Request) -> Result<Response, ApiError> {
    let shape = Shape::of(request.accept, Read::List)?;
    let page = read::list(inner, &request.resource, request.namespace(), request.query)?;
    let kind = format!("{}List", request.resource.kind);
    let list = shape.list(&request.resource, &page.items, page.metadata, &kind, &request.api_version());
    Ok(json_response(StatusCode::OK, &list))
}

/// `POST` to a collection.
pub(super) fn create(inner: &Arc<Inner>, request: &Request, ctx: &mut WriteCtx) -> Result<Response, ApiError> {
    if request.path.subresource.is_some() {
        return Err(ApiError::method_not_allowed("create is not allowed on a subresource"));
    }
    let object = parse_body(request.body, false)?;
    let created = write::create(inner, &request.resource, request.namespace(), object, ctx)?;
    Ok(json_response(StatusCode::CREATED, &created))
}

/// `PUT` of one object.
pub(super) fn update(inner: &Arc<Inner>, request: &Request, ctx: &mut WriteCtx) -> Result<Response, ApiError> {
    let object = parse_body(request.body, false)?;
    let updated = write::update(inner, &request.resource, request.namespace(), request.name(), object, ctx)?;
    Ok(json_response(StatusCode::OK, &updated))
}

/// `PATCH` of one object, in the format its content type names.
pub(super) fn patch(inner: &Arc<Inner>, request: &Request, ctx: &mut WriteCtx) -> Result<Response, ApiError> {
    let content_type = content_type(request.headers);
    let kind =
        PatchKind::from_content_type(content_type).ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
    if kind == PatchKind::Apply && !request.query.contains_key("fieldManager") {
        return Err(ApiError::bad_request(
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ));
    }
    let body = parse_body(request.body, kind == PatchKind::Apply)?;
    let force = request.query.get("force").is_some_and(|f| f == "true");
    let patch = PatchRequest { kind, body: &body, force };
    let patched = write::patch(inner, &request.resource, request.namespace(), request.name(), patch, ctx)?;
    Ok(json_response(StatusCode::OK, &patched))
}

/// The `scale` subresource: get, update and patch of the object's `Scale`.
pub(super) fn scale(inner: &Arc<Inner>, verb: Verb, request: &Request, ctx: &WriteCtx) -> Result<Response, ApiError> {
    let (resource, namespace, name) = (&request.resource, request.namespace(), request.name());
    let scale = match verb {
        Verb::Get => scale::get(inner, resource, namespace, name)?,
        Verb::Update => {
            scale::write(inner, resource, namespace, name, ScaleChange::Replace(parse_body(request.body, false)?), ctx)?
        }
        Verb::Patch => {
            let content_type = content_type(request.headers);
            let kind = PatchKind::from_content_type(content_type)
                .ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
            let body = parse_body(request.body, false)?;
            scale::write(inner, resource, namespace, name, ScaleChange::Patch(kind, &body), ctx)?
        }
        _ => {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
    };
    Ok(json_response(StatusCode::OK, &scale))
}
