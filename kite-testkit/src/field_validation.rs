//! `fieldValidation`: an object checked against its type's schema before
//! it is stored. A custom resource against its CRD's schema (defaults,
//! pruning, then the rules), a KubeVirt or CDI object against the strict
//! upstream schema, a built-in object as its Go type decodes it; unknown
//! fields are refused, warned about or dropped as the request asks.

use crate::meta::name_of;
use crate::protobuf;
use crate::registry::ResourceType;
use crate::state::Inner;
use crate::status::ApiError;
use crate::write_context::{FieldValidation, WriteCtx};
use serde_json::Value;

/// Validates against the type's schema and drops unknown fields as asked.
pub fn validate(
    inner: &Inner,
    resource: &ResourceType,
    object: &mut Value,
    old: Option<&Value>,
    ctx: &mut WriteCtx,
) -> Result<(), ApiError> {
    let name = name_of(object).to_string();
    let strict_override = inner.schema_overrides.get(&(resource.group.clone(), resource.kind.clone()));
    if let Some(schema) = strict_override {
        let causes = schema.validate(object, old);
        if !causes.is_empty() {
            return Err(ApiError::invalid(&resource.kind, &resource.group, &name, causes));
        }
        return Ok(());
    }
    let Some(schema) = &resource.schema else { return decode_builtin(resource, object, ctx) };
    schema.apply_defaults(object);
    let mut pruned = object.clone();
    let unknown = schema.prune(&mut pruned);
    if !unknown.is_empty() {
        match ctx.field_validation {
            FieldValidation::Strict => {
                let listed: Vec<String> = unknown.iter().map(|u| format!("unknown field \"{u}\"")).collect();
                return Err(ApiError::bad_request(format!("strict decoding error: {}", listed.join(", "))));
            }
            FieldValidation::Warn => ctx.warnings.extend(unknown.iter().map(|u| format!("unknown field \"{u}\""))),
            FieldValidation::Ignore => {}
        }
        *object = pruned;
    }
    let causes = schema.validate(object, old);
    if !causes.is_empty() {
        return Err(ApiError::invalid(&resource.kind, &resource.group, &name, causes));
    }
    Ok(())
}

/// A request's body decoded as the API server's handler decodes it, before any
/// work on the stored object: a built-in object of the wrong shape is a
/// `400 BadRequest` even when the object it would replace has moved on (the
/// `409 Conflict` comes only after a body was read). Custom resources and the
/// strict KubeVirt and CDI schemas are checked by [`validate`].
pub fn decode_body(
    inner: &Inner,
    resource: &ResourceType,
    object: &mut Value,
    ctx: &mut WriteCtx,
) -> Result<(), ApiError> {
    let strict_override = inner.schema_overrides.contains_key(&(resource.group.clone(), resource.kind.clone()));
    if strict_override || resource.schema.is_some() || !object.is_object() {
        return Ok(());
    }
    decode_builtin(resource, object, ctx)
}

/// A built-in kind's object decoded as the API server decodes it into its Go
/// type (see [`protobuf::prune`]): a value of the wrong type is a
/// `400 BadRequest`; unknown fields are dropped, with a warning, or refused
/// with `fieldValidation=Strict`.
fn decode_builtin(resource: &ResourceType, object: &mut Value, ctx: &mut WriteCtx) -> Result<(), ApiError> {
    let Ok(descriptor) = protobuf::message(&ctx.api_version, &resource.kind) else { return Ok(()) };
    let cannot = |problem: String| {
        let version = ctx.api_version.rsplit('/').next().unwrap_or_default();
        let kind = &resource.kind;
        ApiError::bad_request(format!("{kind} in version \"{version}\" cannot be handled as a {kind}: {problem}"))
    };
    let unknown = protobuf::prune(&descriptor, object).map_err(cannot)?;
    if unknown.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = unknown.iter().map(|u| format!("unknown field \"{u}\"")).collect();
    match ctx.field_validation {
        FieldValidation::Strict => Err(cannot(format!("strict decoding error: {}", listed.join(", ")))),
        FieldValidation::Warn => {
            ctx.warnings.extend(listed);
            Ok(())
        }
        FieldValidation::Ignore => Ok(()),
    }
}
