//! Request paths: which resource, namespace, name and subresource a path
//! names, as the API server reads them.

use crate::registry::Registry;

/// A path that names resources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePath {
    /// The API group; empty for the core group.
    pub group: String,
    /// The API version.
    pub version: String,
    /// The plural resource name.
    pub plural: String,
    /// The namespace in the path, if any.
    pub namespace: Option<String>,
    /// The object's name, if the path names one.
    pub name: Option<String>,
    /// The subresource, such as `status`.
    pub subresource: Option<String>,
}

/// What a request path is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/api`.
    CoreVersions,
    /// `/api/v1`.
    CoreResources,
    /// `/apis`.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/apis/<group>/<version>`.
    GroupResources(String, String),
    /// `/openapi/v2` and `/openapi/v3...`.
    OpenApi(String),
    /// `/healthz`, `/readyz`, `/livez`.
    Health,
    /// `/testkit/...`: the test controls.
    Testkit(String),
    /// A resource path.
    Resource(ResourcePath),
    /// Nothing is served there.
    NotFound,
}

/// Reads `path` with the registry, which tells a namespaced collection
/// (`/api/v1/namespaces/x/configmaps`) from a namespace's subresource
/// (`/api/v1/namespaces/x/status`).
pub fn parse(path: &str, registry: &Registry) -> Route {
    let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "readyz" | "livez", ..] => Route::Health,
        ["openapi", rest @ ..] => Route::OpenApi(rest.join("/")),
        ["testkit", rest @ ..] => Route::Testkit(rest.join("/")),
        ["api"] => Route::CoreVersions,
        ["api", "v1"] => Route::CoreResources,
        ["api", version, rest @ ..] => resource("", version, rest, registry),
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group(group.to_string()),
        ["apis", group, version] => Route::GroupResources(group.to_string(), version.to_string()),
        ["apis", group, version, rest @ ..] => resource(group, version, rest, registry),
        _ => Route::NotFound,
    }
}

fn resource(group: &str, version: &str, rest: &[&str], registry: &Registry) -> Route {
    let make = |plural: &str, namespace: Option<&str>, name: Option<&str>, sub: Option<&str>| {
        Route::Resource(ResourcePath {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            namespace: namespace.map(String::from),
            name: name.map(String::from),
            subresource: sub.map(String::from),
        })
    };
    let namespaced_collection = |plural: &str| registry.find(group, version, plural).is_some_and(|t| t.namespaced);
    match rest {
        ["namespaces", ns, plural, tail @ ..] if group.is_empty() || namespaced_collection(plural) => {
            if group.is_empty() && !namespaced_collection(plural) && tail.is_empty() {
                // `/api/v1/namespaces/<name>/<subresource>`
                return make("namespaces", None, Some(ns), Some(plural));
            }
            match tail {
                [] => make(plural, Some(ns), None, None),
                [name] => make(plural, Some(ns), Some(name), None),
                [name, sub] => make(plural, Some(ns), Some(name), Some(sub)),
                _ => Route::NotFound,
            }
        }
        [plural] => make(plural, None, None, None),
        [plural, name] => make(plural, None, Some(name), None),
        [plural, name, sub] => make(plural, None, Some(name), Some(sub)),
        _ => Route::NotFound,
    }
}
