//! The HTTP surface: one handler that reads the path as the API server
//! does, answers version, health, discovery and OpenAPI itself, and hands
//! resource requests to `resource` and the test controls under `/testkit/`
//! to `controls`.

mod controls;
mod delete;
mod resource;
mod response;
mod verbs;

use crate::path::{self, Route};
use crate::state::Inner;
use crate::{discovery, openapi};
use axum::Router;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri};
use response::{json_response, not_found};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The router of a fake API server.
pub fn router(inner: Arc<Inner>) -> Router {
    Router::new()
        .route(crate::console::ROUTE, axum::routing::get(crate::console::serve))
        .fallback(handle)
        .with_state(inner)
}

/// The group-versions aggregated APIs claim.
fn aggregated(inner: &Inner) -> Vec<(String, String)> {
    crate::apiservice::aggregated(&inner.store()).into_iter().map(|(group, version, _)| (group, version)).collect()
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    peer: Option<axum::Extension<crate::tls::PeerUser>>,
    body: Bytes,
) -> Response {
    let peer = peer.and_then(|axum::Extension(crate::tls::PeerUser(user))| user);
    let user = match crate::rbac::requester(&inner, &headers, peer) {
        Ok(user) => user,
        Err(error) => return error.into_response(),
    };
    let route = path::parse(uri.path(), &inner.registry());
    let non_resource = !matches!(route, Route::Resource(_) | Route::Testkit(_));
    if non_resource {
        let request = crate::request_attributes::Attributes {
            verb: if method == Method::GET { "get" } else { "post" },
            group: "",
            resource: "",
            subresource: None,
            name: None,
            namespace: None,
            path: Some(uri.path()),
        };
        if let Err(error) = crate::rbac::authorize(&inner, user.as_ref(), &request) {
            return error.into_response();
        }
    }
    let registry = || inner.registry();
    let found = |doc: Option<Value>| match doc {
        Some(doc) => json_response(StatusCode::OK, &doc),
        None => not_found().into_response(),
    };
    match route {
        Route::Version => json_response(StatusCode::OK, &discovery::version()),
        Route::Health => (StatusCode::OK, "ok").into_response(),
        Route::CoreVersions => json_response(StatusCode::OK, &discovery::core_versions()),
        Route::CoreResources => found(discovery::resources(&registry(), "", "v1")),
        Route::Groups => json_response(StatusCode::OK, &discovery::groups(&registry(), &aggregated(&inner))),
        Route::Group(group) => found(discovery::group(&registry(), &aggregated(&inner), &group)),
        Route::GroupResources(group, version) => {
            let claimed = crate::apiservice::aggregated(&inner.store())
                .into_iter()
                .find(|(g, v, _)| *g == group && *v == version)
                .map(|(_, _, available)| available);
            match claimed {
                // kube-aggregator's answer for an unavailable APIService: plain text, 503.
                Some(false) => (StatusCode::SERVICE_UNAVAILABLE, "service unavailable\n").into_response(),
                Some(true) => json_response(
                    StatusCode::OK,
                    &serde_json::json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/{version}"), "resources": []}),
                ),
                None => found(discovery::resources(&registry(), &group, &version)),
            }
        }
        Route::OpenApi(path) if path == "v2" => {
            (StatusCode::OK, [(http::header::CONTENT_TYPE, openapi::V2_PROTOBUF)], Bytes::new()).into_response()
        }
        Route::OpenApi(path) if path == "v3" => json_response(StatusCode::OK, &openapi::v3_root(&registry())),
        Route::OpenApi(path) => {
            found(path.strip_prefix("v3/").and_then(|gv| openapi::v3_group_version(&registry(), gv)))
        }
        Route::NotFound => found(None),
        Route::Testkit(what) => controls::answer(&inner, &method, &what, &body),
        Route::Resource(path) => {
            match resource::answer(&inner, user.as_ref(), &method, path, &query, &headers, &body).await {
                Ok(response) => response,
                Err(error) => error.into_response(),
            }
        }
    }
}
