//! The writes: create, update (PUT) and patch (every kind, server-side apply
//! included); the commit step updates and patches share is in `commit`.

use crate::admission::{self, Phase};
use crate::apply;
use crate::commit::{commit, writer};
use crate::field_validation::{decode_body, validate};
use crate::meta;
use crate::meta::name_of;
use crate::registry::ResourceType;
use crate::state::Inner;
use crate::status::{ApiError, Cause};
use crate::store::{ObjectKey, Store};
use crate::write_context::WriteCtx;
use serde_json::{Value, json};
use std::sync::Arc;

/// Checks the namespace a namespaced object goes into: it must exist and not be terminating.
fn check_namespace(store: &Store, resource: &ResourceType, namespace: &str) -> Result<(), ApiError> {
    if resource.kind == "Namespace" && resource.group.is_empty() {
        return Ok(());
    }
    let key = crate::registry::ResourceKey { group: String::new(), plural: "namespaces".into() };
    match store.get(&key, &(String::new(), namespace.to_string())) {
        None => Err(ApiError::not_found("namespaces", namespace)),
        Some(ns) if !ns["metadata"]["deletionTimestamp"].is_null() => Err(ApiError::forbidden(format!(
            "{} \"{}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
            resource.qualified_plural(),
            namespace
        ))
        .with_details(json!({"causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {namespace} is being terminated"), "field": "metadata.namespace"}]}))),
        Some(_) => Ok(()),
    }
}

/// The object key from the path's namespace and the body.
fn object_key(resource: &ResourceType, namespace: Option<&str>, name: &str) -> Result<ObjectKey, ApiError> {
    match (resource.namespaced, namespace) {
        (true, Some(ns)) => Ok((ns.to_string(), name.to_string())),
        (true, None) => {
            Err(ApiError::bad_request(format!("{} is namespaced: the request needs a namespace", resource.plural)))
        }
        (false, _) => Ok((String::new(), name.to_string())),
    }
}

/// Creates `object`.
pub fn create(
    inner: &Arc<Inner>,
    resource: &Arc<ResourceType>,
    namespace: Option<&str>,
    mut object: Value,
    ctx: &mut WriteCtx,
) -> Result<Value, ApiError> {
    if !object.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    decode_body(inner, resource, &mut object, ctx)?;
    check_body_namespace(resource, &object, namespace)?;
    name_or_generate(resource, &mut object)?;
    let name = name_of(&object).to_string();
    meta::check_name(resource, &name)?;
    let key = object_key(resource, namespace, &name)?;
    drop_server_fields(resource, ctx, &key, &mut object);
    if crate::crd::is_terminating(inner, resource) {
        return Err(ApiError::new(
            http::StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating",
        ));
    }
    meta::builtin_defaults(resource, &mut object, true);
    if ctx.admit {
        let store = inner.store();
        let request = admission::Request::of_write(ctx, "CREATE", resource, &key.0, &name, None);
        admission::admit(inner, &store, Phase::Mutating, &request, &mut object)?;
    }
    crate::crd::check_crd(resource, &object)?;
    validate(inner, resource, &mut object, None, ctx)?;
    if ctx.admit {
        let store = inner.store();
        let request = admission::Request::of_write(ctx, "CREATE", resource, &key.0, &name, None);
        admission::admit(inner, &store, Phase::Validating, &request, &mut object)?;
    }
    stamp_created(resource, ctx, &mut object);
    let stored = {
        let mut store = inner.store();
        if resource.namespaced {
            check_namespace(&store, resource, &key.0)?;
        }
        if store.get(&resource.key(), &key).is_some() {
            return Err(ApiError::already_exists(&resource.qualified_plural(), &name));
        }
        if ctx.dry_run {
            return Ok(object);
        }
        store.insert(&resource.key(), key, object)
    };
    crate::crd::after_write(inner, resource, &stored);
    Ok(stored)
}

/// Refuses a body whose namespace is not the request's.
fn check_body_namespace(resource: &ResourceType, object: &Value, namespace: Option<&str>) -> Result<(), ApiError> {
    let body_namespace = object["metadata"]["namespace"].as_str();
    if resource.namespaced
        && let (Some(body), Some(path)) = (body_namespace, namespace)
        && body != path
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// Names an object without a name from its `generateName`, or refuses it.
fn name_or_generate(resource: &ResourceType, object: &mut Value) -> Result<(), ApiError> {
    if object["metadata"]["name"].as_str().is_some_and(|name| !name.is_empty()) {
        return Ok(());
    }
    match object["metadata"]["generateName"].as_str() {
        Some(prefix) if !prefix.is_empty() => {
            object["metadata"]["name"] = json!(meta::generate_name(prefix));
            Ok(())
        }
        _ => Err(ApiError::invalid(
            &resource.kind,
            &resource.group,
            "",
            vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value: name or generateName is required".into(),
                field: "metadata.name".into(),
            }],
        )),
    }
}

/// Drops what the server sets on a new object (uid, versions, timestamps,
/// status behind its subresource), and writes its apiVersion, kind and namespace.
fn drop_server_fields(resource: &ResourceType, ctx: &WriteCtx, key: &ObjectKey, object: &mut Value) {
    object["apiVersion"] = json!(ctx.api_version);
    object["kind"] = json!(resource.kind);
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for server_owned in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "selfLink",
        ] {
            metadata.remove(server_owned);
        }
        if ctx.record_ownership {
            metadata.remove("managedFields");
        }
        if resource.namespaced {
            metadata.insert("namespace".into(), json!(key.0));
        } else {
            metadata.remove("namespace");
        }
    }
    if resource.status_subresource
        && !(resource.group.is_empty() && resource.kind == "Namespace")
        && let Some(map) = object.as_object_mut()
    {
        map.remove("status");
    }
}

/// Gives a new object its uid, creation time and first generation, and records its ownership.
fn stamp_created(resource: &ResourceType, ctx: &WriteCtx, object: &mut Value) {
    let now = meta::now();
    object["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
    object["metadata"]["creationTimestamp"] = json!(now);
    if resource.generation || resource.crd_name.is_some() {
        object["metadata"]["generation"] = json!(1);
    }
    if ctx.record_ownership {
        apply::record_update(None, object, resource, &writer(ctx, &now));
    }
}

/// Creates an object from inside the server (bootstrap, the builder's helpers).
pub fn create_internal(
    inner: &Arc<Inner>,
    group: &str,
    version: &str,
    plural: &str,
    namespace: Option<&str>,
    object: Value,
) -> Result<Value, ApiError> {
    let resource =
        inner.registry().find(group, version, plural).ok_or_else(|| ApiError::not_found("resources", plural))?;
    let api_version = resource.api_version(version);
    create(inner, &resource, namespace, object, &mut WriteCtx::internal(&api_version))
}

/// Replaces an object (PUT).
pub fn update(
    inner: &Arc<Inner>,
    resource: &Arc<ResourceType>,
    namespace: Option<&str>,
    name: &str,
    mut object: Value,
    ctx: &mut WriteCtx,
) -> Result<Value, ApiError> {
    let key = object_key(resource, namespace, name)?;
    decode_body(inner, resource, &mut object, ctx)?;
    let stored = {
        let mut store = inner.store();
        let old = store
            .get(&resource.key(), &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&resource.qualified_plural(), name))?;
        commit(inner, &mut store, resource, &key, &old, object, ctx)?
    };
    crate::crd::after_write(inner, resource, &stored);
    Ok(stored)
}

/// The patch formats, by content type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchKind {
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// A PATCH request's body and how to read it.
#[derive(Clone, Copy, Debug)]
pub struct PatchRequest<'a> {
    /// The patch format.
    pub kind: PatchKind,
    /// The patch.
    pub body: &'a Value,
    /// For an apply: take fields other managers own.
    pub force: bool,
}

/// Patches an object; a server-side apply of a missing object creates it.
pub fn patch(
    inner: &Arc<Inner>,
    resource: &Arc<ResourceType>,
    namespace: Option<&str>,
    name: &str,
    request: PatchRequest<'_>,
    ctx: &mut WriteCtx,
) -> Result<Value, ApiError> {
    let PatchRequest { kind, body, .. } = request;
    let key = object_key(resource, namespace, name)?;
    if kind == PatchKind::Strategic && resource.crd_name.is_some() {
        return Err(ApiError::new(
            http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            "strategic merge patch is not supported for custom resources; use a JSON merge patch or server-side apply",
        ));
    }
    let now = meta::now();
    let stored = {
        let mut store = inner.store();
        let old = store.get(&resource.key(), &key).cloned();
        let Some(old) = old else {
            drop(store);
            return create_by_apply(inner, resource, namespace, name, request, ctx, &now);
        };
        let new = match kind {
            PatchKind::Apply => {
                let applied = applied_object(&old, request, resource, ctx, &now)?;
                // The apply recorded its own ownership: commit() must not record an Update too.
                let mut apply_ctx = WriteCtx { record_ownership: false, ..ctx.clone() };
                let result = commit(inner, &mut store, resource, &key, &old, applied, &mut apply_ctx);
                ctx.warnings = apply_ctx.warnings;
                let stored = result?;
                drop(store);
                crate::crd::after_write(inner, resource, &stored);
                return Ok(stored);
            }
            PatchKind::Merge => {
                let mut new = old.clone();
                crate::patch::merge(&mut new, body);
                new
            }
            PatchKind::Json => {
                let mut new = old.clone();
                crate::patch::json(&mut new, body)?;
                new
            }
            PatchKind::Strategic => {
                let mut new = old.clone();
                crate::patch::strategic(&mut new, body, resource)?;
                new
            }
        };
        let mut new = new;
        if body["metadata"]["resourceVersion"].is_null() {
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
        }
        commit(inner, &mut store, resource, &key, &old, new, ctx)?
    };
    crate::crd::after_write(inner, resource, &stored);
    Ok(stored)
}

/// A patch of a missing object: a server-side apply creates it, any other patch is `404`.
fn create_by_apply(
    inner: &Arc<Inner>,
    resource: &Arc<ResourceType>,
    namespace: Option<&str>,
    name: &str,
    request: PatchRequest<'_>,
    ctx: &mut WriteCtx,
    now: &str,
) -> Result<Value, ApiError> {
    let PatchRequest { kind, body, force } = request;
    if kind != PatchKind::Apply || ctx.subresource.is_some() {
        return Err(ApiError::not_found(&resource.qualified_plural(), name));
    }
    if body["metadata"]["name"].as_str().is_some_and(|n| n != name) {
        return Err(ApiError::bad_request("the name in the applied object does not match the name on the URL"));
    }
    let mut object = apply::apply(None, body, resource, &writer(ctx, now), force)?;
    object["metadata"]["name"] = json!(name);
    let mut apply_ctx = WriteCtx { record_ownership: false, ..ctx.clone() };
    let created = create(inner, resource, namespace, object, &mut apply_ctx);
    ctx.warnings = apply_ctx.warnings;
    created
}

/// `old` with a server-side apply of `request` merged in, at the stored resourceVersion.
fn applied_object(
    old: &Value,
    request: PatchRequest<'_>,
    resource: &ResourceType,
    ctx: &WriteCtx,
    now: &str,
) -> Result<Value, ApiError> {
    let PatchRequest { body, force, .. } = request;
    if body["apiVersion"].is_null() || body["kind"].is_null() {
        return Err(ApiError::bad_request("an applied object needs apiVersion and kind"));
    }
    let mut applied = apply::apply(Some(old), body, resource, &writer(ctx, now), force)?;
    applied["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
    Ok(applied)
}
