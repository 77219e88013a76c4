//! The one way Kite names an object in caches, logs and back-off tables:
//! `namespace/name`, or `name` for a cluster-scoped object.
//!
//! ```
//! use kite_core::key::{key, object_key};
//! use kite_core::api::KitePlatform;
//!
//! assert_eq!(key(Some("kite-user-alice"), "web"), "kite-user-alice/web");
//! assert_eq!(key(None, "kite"), "kite");
//! let platform = KitePlatform::new("kite", Default::default());
//! assert_eq!(object_key(&platform), "kite");
//! ```

use kube::Resource;

/// The key of `name` in `namespace` (`None` for a cluster-scoped object).
pub fn key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    }
}

/// The key of `object`; see [`key`].
pub fn object_key<K: Resource>(object: &K) -> String {
    key(object.meta().namespace.as_deref(), object.meta().name.as_deref().unwrap_or_default())
}
