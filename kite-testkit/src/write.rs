//! The writes: create, update (PUT), patch (every kind, server-side apply
//! included) and their shared commit step.

use crate::admission::{self, Phase};
use crate::apply::{self, Writer};
use crate::field_validation::{decode_body, validate};
use crate::lifecycle;
use crate::meta;
use crate::meta::name_of;
use crate::registry::ResourceType;
use crate::state::Inner;
use crate::status::{ApiError, Cause};
use crate::store::{ObjectKey, Store};
use crate::write_context::WriteCtx;
use serde_json::{Value, json};
use std::sync::Arc;

/// The ownership an update or an apply by `ctx` records, at `now`.
fn writer<'a>(ctx: &'a WriteCtx, now: &'a str) -> Writer<'a> {
    Writer { manager: &ctx.manager, subresource: ctx.subresource.as_deref(), api_version: &ctx.api_version, now }
}

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

/// The commit step of every update: keeps what a client may not change,
/// honours the status subresource, validates, counts the generation, and
/// stores the result (or removes the object once its last finalizer is gone).
pub fn commit(
    inner: &Arc<Inner>,
    store: &mut Store,
    resource: &Arc<ResourceType>,
    key: &ObjectKey,
    old: &Value,
    mut new: Value,
    ctx: &mut WriteCtx,
) -> Result<Value, ApiError> {
    let name = key.1.clone();
    check_update_target(resource, &name, old, &new)?;
    if ctx.subresource.as_deref() == Some("status") {
        new = status_write(old, &new);
    } else {
        keep_server_fields(resource, old, &mut new);
        check_no_new_finalizers(resource, &name, old, &new)?;
    }
    new["apiVersion"] = json!(ctx.api_version);
    new["kind"] = json!(resource.kind);
    meta::builtin_defaults(resource, &mut new, false);
    if ctx.admit {
        let request = admission::Request::of_write(ctx, "UPDATE", resource, &key.0, &name, Some(old));
        admission::admit(inner, store, Phase::Mutating, &request, &mut new)?;
    }
    crate::crd::check_crd(resource, &new)?;
    validate(inner, resource, &mut new, Some(old), ctx)?;
    if ctx.admit {
        let request = admission::Request::of_write(ctx, "UPDATE", resource, &key.0, &name, Some(old));
        admission::admit(inner, store, Phase::Validating, &request, &mut new)?;
    }
    if (resource.generation || resource.crd_name.is_some()) && meta::spec_part(&new) != meta::spec_part(old) {
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
        new["metadata"]["generation"] = json!(generation + 1);
    }
    let now = meta::now();
    if ctx.record_ownership {
        apply::record_update(Some(old), &mut new, resource, &writer(ctx, &now));
    }
    new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
    if new == *old || ctx.dry_run {
        return Ok(new);
    }
    Ok(store_update(inner, store, resource, key, new))
}

/// Refuses an update that is not an object, is of another resourceVersion
/// than the stored one, or names another object than the URL.
fn check_update_target(resource: &ResourceType, name: &str, old: &Value, new: &Value) -> Result<(), ApiError> {
    if !new.is_object() {
        return Err(ApiError::bad_request("the object must be a JSON object"));
    }
    if let Some(rv) = new["metadata"]["resourceVersion"].as_str()
        && Some(rv) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(ApiError::conflict(&resource.qualified_plural(), name));
    }
    if new["metadata"]["name"].as_str().is_some_and(|n| n != name) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            new["metadata"]["name"].as_str().unwrap_or("")
        )));
    }
    Ok(())
}

/// A write to the status subresource: the stored object with only its
/// status, and the managed fields that record it, taken from `new`.
fn status_write(old: &Value, new: &Value) -> Value {
    let mut merged = old.clone();
    merged["status"] = new.get("status").cloned().unwrap_or(Value::Null);
    merged["metadata"]["managedFields"] = new["metadata"]["managedFields"].clone();
    if merged["status"].is_null()
        && let Some(m) = merged.as_object_mut()
    {
        m.remove("status");
    }
    merged
}

/// Keeps what an update may not change: the status behind its subresource,
/// and the metadata the server owns.
fn keep_server_fields(resource: &ResourceType, old: &Value, new: &mut Value) {
    if resource.status_subresource {
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    for kept in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "namespace",
        "name",
    ] {
        match old["metadata"].get(kept) {
            Some(value) => new["metadata"][kept] = value.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(kept);
                }
            }
        }
    }
}

/// Refuses finalizers added to an object being deleted.
fn check_no_new_finalizers(resource: &ResourceType, name: &str, old: &Value, new: &Value) -> Result<(), ApiError> {
    if old["metadata"]["deletionTimestamp"].is_null() {
        return Ok(());
    }
    let old_finalizers = old["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
    let added = new["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|x| !old_finalizers.contains(x)));
    if !added {
        return Ok(());
    }
    Err(ApiError::invalid(
        &resource.kind,
        &resource.group,
        name,
        vec![Cause {
            reason: "FieldValueForbidden".into(),
            message: "Forbidden: no new finalizers can be added if the object is being deleted".into(),
            field: "metadata.finalizers".into(),
        }],
    ))
}

/// Stores an updated object, or removes it (and collects its garbage) once
/// it is being deleted and its last finalizer is gone.
fn store_update(inner: &Arc<Inner>, store: &mut Store, resource: &ResourceType, key: &ObjectKey, new: Value) -> Value {
    let deleting = !new["metadata"]["deletionTimestamp"].is_null();
    let no_finalizers = new["metadata"]["finalizers"].as_array().is_none_or(Vec::is_empty);
    if deleting && no_finalizers {
        let removed = store.remove(&resource.key(), key).unwrap_or(new);
        lifecycle::collect_garbage(inner, store);
        return removed;
    }
    store.replace(&resource.key(), key.clone(), new)
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
