//! How the S3 store's requests travel: object_store's HTTP client traits
//! over hyper with rustls on ring.

use super::layout::*;
use object_store::client::{
    ClientOptions, HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody, HttpResponse,
    HttpResponseBody, HttpService,
};
use std::sync::Arc;
use std::time::Duration;

/// object_store's requests, over hyper with rustls on ring (see the
/// workspace's Cargo.toml for why not object_store's own transport).
#[derive(Debug)]
pub(super) struct Transport {
    pub(super) allow_http: bool,
}

impl HttpConnector for Transport {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        let generic = |error: Box<dyn std::error::Error + Send + Sync>| object_store::Error::Generic {
            store: "S3",
            source: error,
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| generic(Box::new(error)))?;
        let tls = rustls_platform_verifier::BuilderVerifierExt::with_platform_verifier(tls)
            .map_err(|error| generic(Box::new(error)))?
            .with_no_client_auth();
        let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let https = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls);
        let https = if self.allow_http { https.https_or_http() } else { https.https_only() };
        let connector = https.enable_http1().wrap_connector(http);
        let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_timer(hyper_util::rt::TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(HttpClient::new(Hyper { client }))
    }
}

type HyperClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    HttpRequestBody,
>;

/// A hyper client as object_store's [`HttpService`].
pub(super) struct Hyper {
    client: HyperClient,
}

impl std::fmt::Debug for Hyper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hyper")
    }
}

#[async_trait::async_trait]
impl HttpService for Hyper {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        use http_body_util::BodyExt;
        let response = match tokio::time::timeout(REQUEST_TIMEOUT, self.client.request(request)).await {
            Err(elapsed) => return Err(HttpError::new(HttpErrorKind::Timeout, elapsed)),
            Ok(Err(error)) => {
                let kind = if error.is_connect() { HttpErrorKind::Connect } else { HttpErrorKind::Request };
                return Err(HttpError::new(kind, error));
            }
            Ok(Ok(response)) => response,
        };
        let (head, body) = response.into_parts();
        let body = body.map_err(|error| HttpError::new(HttpErrorKind::Interrupted, error));
        Ok(HttpResponse::from_parts(head, HttpResponseBody::new(body)))
    }
}
