//! Where a Service routes: whether it exists and which of its endpoints are
//! ready, read from its EndpointSlices as kube-proxy and the API server's
//! service resolver read them. Webhooks and aggregated APIs are called this way.

use crate::registry::ResourceKey;
use crate::store::Store;
use serde_json::Value;

/// Why a Service cannot be reached, or the first ready endpoint it routes to.
pub(crate) enum Route {
    /// No Service of that name.
    NoService,
    /// The Service has no ready endpoint.
    NoReadyEndpoint,
    /// A ready endpoint (an `endpoints[]` entry of an EndpointSlice).
    Ready(Value),
}

/// Where the Service `namespace/name` routes.
pub(crate) fn route(store: &Store, namespace: &str, name: &str) -> Route {
    let services = ResourceKey { group: String::new(), plural: "services".into() };
    if store.get(&services, &(namespace.to_string(), name.to_string())).is_none() {
        return Route::NoService;
    }
    let slices = ResourceKey { group: "discovery.k8s.io".into(), plural: "endpointslices".into() };
    store
        .list(&slices)
        .filter(|(k, s)| k.0 == namespace && s["metadata"]["labels"]["kubernetes.io/service-name"] == name)
        .flat_map(|(_, s)| s["endpoints"].as_array().cloned().unwrap_or_default())
        .find(|e| e["conditions"]["ready"] == true)
        .map_or(Route::NoReadyEndpoint, Route::Ready)
}
