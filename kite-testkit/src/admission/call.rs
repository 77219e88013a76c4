//! Calling one webhook: an in-process handler a test registered for its
//! Service or URL, or, as the API server would find it, nothing to call,
//! with the API server's sentence for why (`service "x" not found`, `no
//! endpoints available for service "x"`, `connection refused`).

pub use crate::webhook_target::{WebhookHandler, WebhookTarget};

use crate::service_routes::Route;
use crate::store::Store;
use serde_json::Value;

/// Where `webhook` is reached, and the URL the API server would post to.
pub(super) fn target(webhook: &Value) -> (WebhookTarget, String) {
    let config = &webhook["clientConfig"];
    let timeout = webhook["timeoutSeconds"].as_i64().unwrap_or(10);
    if let Some(url) = config["url"].as_str() {
        return (WebhookTarget::Url(url.to_string()), url.to_string());
    }
    let service = &config["service"];
    let (namespace, name) =
        (service["namespace"].as_str().unwrap_or_default(), service["name"].as_str().unwrap_or_default());
    let port = service["port"].as_i64().unwrap_or(443);
    let path = service["path"].as_str().unwrap_or("");
    let url = format!("https://{name}.{namespace}.svc:{port}{path}?timeout={timeout}s");
    (WebhookTarget::Service { namespace: namespace.into(), name: name.into() }, url)
}

/// Why a webhook with no handler cannot be called, as the API server's
/// service resolver and dialer say it.
pub(super) fn unreachable(store: &Store, target: &WebhookTarget, url: &str) -> String {
    let failed = |why: String| format!("failed to call webhook: Post \"{url}\": {why}");
    let WebhookTarget::Service { namespace, name } = target else {
        return failed("dial tcp: connect: connection refused".into());
    };
    match crate::service_routes::route(store, namespace, name) {
        Route::NoService => failed(format!("service \"{name}\" not found")),
        Route::NoReadyEndpoint => failed(format!("no endpoints available for service \"{name}\"")),
        Route::Ready(endpoint) => {
            let ip = endpoint["addresses"][0].as_str().unwrap_or_default();
            failed(format!("dial tcp {ip}:443: connect: connection refused"))
        }
    }
}
