//! What a simulated controller reads from the store and writes through the
//! server's own write path: the objects of a type, one object, a write as a
//! named field manager, and a deletion.

pub(crate) use crate::read::find;
use crate::state::Inner;
use crate::write::PatchKind;
use crate::write_context::WriteCtx;
use serde_json::Value;
use std::sync::Arc;

/// The objects of one served type.
pub(crate) fn objects(inner: &Arc<Inner>, group: &str, plural: &str) -> Vec<Value> {
    objects_where(inner, group, plural, |_, _| true)
}

/// The objects of one served type that `wanted` picks, looking at each in
/// the store (with the store at hand, to look at others): a step copies
/// only the objects it has work to do on, not a thousand settled ones every
/// step.
pub(crate) fn objects_where(
    inner: &Arc<Inner>,
    group: &str,
    plural: &str,
    wanted: impl Fn(&crate::store::Store, &Value) -> bool,
) -> Vec<Value> {
    let key = crate::registry::ResourceKey { group: group.into(), plural: plural.into() };
    let store = inner.store();
    store.list(&key).filter(|(_, o)| wanted(&store, o)).map(|(_, o)| o.clone()).collect()
}

/// Writes as the named controller would, through the server's own write path.
pub(crate) fn write(
    inner: &Arc<Inner>,
    manager: &str,
    (group, version, plural): (&str, &str, &str),
    namespace: &str,
    name: Option<&str>,
    body: Value,
    status: bool,
) {
    let Some(resource) = inner.registry().find(group, version, plural) else { return };
    let mut ctx = WriteCtx::internal(&resource.api_version(version));
    ctx.manager = manager.into();
    if status && resource.status_subresource {
        ctx.subresource = Some("status".into());
    }
    let result = match name {
        Some(name) => crate::write::patch(
            inner,
            &resource,
            Some(namespace),
            name,
            crate::write::PatchRequest { kind: PatchKind::Merge, body: &body, force: false },
            &mut ctx,
        ),
        None => crate::write::create(inner, &resource, Some(namespace), body, &mut ctx),
    };
    if let Err(error) = result {
        tracing::debug!(manager, plural, namespace, message = %error.message, "a simulated controller's write was refused");
    }
}

pub(crate) fn delete(inner: &Arc<Inner>, group: &str, plural: &str, namespace: &str, name: &str) {
    let key = crate::registry::ResourceKey { group: group.into(), plural: plural.into() };
    let result = {
        let mut store = inner.store();
        crate::lifecycle::delete(
            inner,
            &mut store,
            &key,
            &(namespace.into(), name.into()),
            crate::lifecycle::DeleteOptions::BACKGROUND,
        )
    };
    // A CRD deleted goes on as the API server's does: its objects removed, then the CRD.
    // (The registry's guard must be gone before: finishing a CRD withdraws its kind from the registry.)
    let resource = inner.registry().by_key(&key);
    if let (Ok(deleted), Some(resource)) = (result, resource) {
        crate::crd::after_write(inner, &resource, &deleted);
    }
}
