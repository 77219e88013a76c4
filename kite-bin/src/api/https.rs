//! `KitePlatform.spec.platformIngress.forceHttps`: a request that came in
//! over plain HTTP (as the ingress controller's `X-Forwarded-Proto` says,
//! or no such header at all) is redirected to the same path over HTTPS,
//! and every answer over HTTPS carries `Strict-Transport-Security`, so the
//! browser does not try plain HTTP again. The health endpoints answer
//! either way: the kubelet's probes speak plain HTTP to the pod.

use super::state::AppState;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// One year, without `includeSubDomains`: machines' own domains under the
/// same base domain may be plain HTTP.
const HSTS: &str = "max-age=31536000";

/// The paths that answer over plain HTTP too.
const PROBES: [&str; 2] = ["/healthz", "/api/v1/health"];

/// Whether the client used HTTPS, as the ingress controller says.
fn over_https(request: &Request) -> bool {
    request
        .headers()
        .get("x-forwarded-proto")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
}

/// The middleware.
pub async fn force_https(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let spec = state.platform_spec().platform_ingress;
    if !spec.force_https || PROBES.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    if !over_https(&request) {
        let host = spec
            .host
            .clone()
            .or_else(|| request.headers().get(header::HOST).and_then(|h| h.to_str().ok()).map(|h| h.to_string()));
        let Some(host) = host else {
            return (StatusCode::BAD_REQUEST, "this platform answers over HTTPS only").into_response();
        };
        let path = request.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let location = format!("https://{host}{path}");
        return match HeaderValue::from_str(&location) {
            // 308 keeps the method and the body, so an API client's POST is not turned into a GET.
            Ok(location) => (StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, location)]).into_response(),
            Err(_) => (StatusCode::BAD_REQUEST, "this platform answers over HTTPS only").into_response(),
        };
    }
    let mut response = next.run(request).await;
    response.headers_mut().insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static(HSTS));
    response
}
