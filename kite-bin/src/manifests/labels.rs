//! The labels and metadata of everything `kite manifests` makes: what
//! `kite uninstall` knows as Kite's.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

/// The labels of everything `kite manifests` makes: what `kite uninstall` may remove.
pub fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "kite".to_string()),
        ("app.kubernetes.io/part-of".to_string(), "kite".to_string()),
        ("app.kubernetes.io/managed-by".to_string(), "kite-manifests".to_string()),
        ("app.kubernetes.io/version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
    ])
}

/// The metadata of an object `kite manifests` makes: its name, its namespace and [`labels`].
pub fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(labels()),
        ..ObjectMeta::default()
    }
}
