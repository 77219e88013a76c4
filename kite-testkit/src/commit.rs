//! The commit step every update and patch ends with: what a client may not
//! change kept, the status subresource honoured, admission and validation,
//! the generation counted, and the object stored (or removed once its last
//! finalizer is gone); and the ownership a write records.

use crate::admission::{self, Phase};
use crate::apply::{self, Writer};
use crate::field_validation::validate;
use crate::lifecycle;
use crate::meta;
use crate::registry::ResourceType;
use crate::state::Inner;
use crate::status::{ApiError, Cause};
use crate::store::{ObjectKey, Store};
use crate::write_context::WriteCtx;
use serde_json::{Value, json};
use std::sync::Arc;

/// The ownership an update or an apply by `ctx` records, at `now`.
pub(crate) fn writer<'a>(ctx: &'a WriteCtx, now: &'a str) -> Writer<'a> {
    Writer { manager: &ctx.manager, subresource: ctx.subresource.as_deref(), api_version: &ctx.api_version, now }
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
