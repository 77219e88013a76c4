//! The handler of `DELETE`, of one object or of a collection: its options
//! (propagation policy, preconditions, dry run) from the query and the body.

use super::response::json_response;
use super::verbs::{Request, parse_body};
use crate::lifecycle::{self, DeleteOptions, Propagation};
use crate::state::Inner;
use crate::status::ApiError;
use crate::store::Store;
use crate::write_context::WriteCtx;
use crate::{admission, crd, read};
use axum::response::Response;
use http::StatusCode;
use serde_json::json;
use std::sync::Arc;

/// `DELETE` of one object, or of every object of a collection that the selectors match.
pub(super) fn delete(inner: &Arc<Inner>, request: &Request, ctx: &WriteCtx) -> Result<Response, ApiError> {
    let resource = &request.resource;
    let dry_run = ctx.dry_run;
    let options = if request.body.is_empty() { json!({}) } else { parse_body(request.body, false)? };
    let policy_text = request
        .query
        .get("propagationPolicy")
        .cloned()
        .or_else(|| options["propagationPolicy"].as_str().map(String::from));
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
    let namespace =
        if resource.namespaced { request.path.namespace.clone().unwrap_or_default() } else { String::new() };
    let key = resource.key();
    match &request.path.name {
        Some(name) => {
            let result = {
                let mut store = inner.store();
                admit(inner, &store, request, ctx, &namespace, name, dry_run)?;
                lifecycle::delete(
                    inner,
                    &mut store,
                    &key,
                    &(namespace, name.clone()),
                    DeleteOptions { policy, precondition, dry_run },
                )?
            };
            crd::after_write(inner, resource, &result);
            Ok(json_response(StatusCode::OK, &result))
        }
        None => {
            let page = read::list(inner, resource, request.namespace(), request.query)?;
            let mut deleted = Vec::new();
            for object in page.items {
                let object_key = (
                    object["metadata"]["namespace"].as_str().unwrap_or("").to_string(),
                    object["metadata"]["name"].as_str().unwrap_or("").to_string(),
                );
                let result = {
                    let mut store = inner.store();
                    admit(inner, &store, request, ctx, &object_key.0, &object_key.1, dry_run)?;
                    lifecycle::delete(
                        inner,
                        &mut store,
                        &key,
                        &object_key,
                        DeleteOptions { policy, precondition: None, dry_run },
                    )
                };
                if let Ok(result) = result {
                    crd::after_write(inner, resource, &result);
                    deleted.push(result);
                }
            }
            let list = json!({"apiVersion": request.api_version(), "kind": format!("{}List", resource.kind), "metadata": {}, "items": deleted});
            Ok(json_response(StatusCode::OK, &list))
        }
    }
}

/// The admission webhooks' word on deleting `namespace/name`, if it exists.
fn admit(
    inner: &Inner,
    store: &Store,
    request: &Request,
    ctx: &WriteCtx,
    namespace: &str,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let key = (namespace.to_string(), name.to_string());
    let Some(object) = store.get(&request.resource.key(), &key) else { return Ok(()) };
    let review = admission::Request {
        operation: "DELETE",
        resource: &request.resource,
        version: &request.path.version,
        subresource: None,
        namespace,
        name,
        old: Some(object),
        dry_run,
        user: &ctx.user,
    };
    admission::admit_delete(inner, store, &review, object)
}
