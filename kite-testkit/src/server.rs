//! The handle tests hold, [`FakeApiServer`], and its [`Builder`]. The state
//! behind the handle is in the `state` module.

use crate::config::Config;
use crate::faults::{Fault, Faults, RequestRecord};
use crate::identity::{ADMIN, AuthorizationMode, UserInfo, admin};
use crate::registry::Registry;
use crate::state::Inner;
use crate::status::ApiError;
use crate::store::Store;
use crate::webhook_target::{WebhookHandler, WebhookTarget};
use crate::{Error, builtins, handlers};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::net::TcpListener;

/// Builds a [`FakeApiServer`].
#[derive(Debug, Default)]
pub struct Builder {
    config: Config,
}

impl Builder {
    /// How long a deleted namespace stays `Terminating`.
    pub fn namespace_termination(mut self, duration: Duration) -> Self {
        self.config.namespace_termination = duration;
        self
    }

    /// How many events are kept for watches.
    pub fn event_log_limit(mut self, events: usize) -> Self {
        self.config.event_log_limit = events.max(1);
        self
    }

    /// How often watches that asked for bookmarks get one.
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.config.bookmark_interval = interval;
        self
    }

    /// How requests are authorized: [`AuthorizationMode::Rbac`] authenticates
    /// bearer tokens and authorizes by RBAC, with the bootstrap roles of a
    /// cluster; [`FakeApiServer::client`] and the admin kubeconfig keep full rights.
    pub fn authorization(mut self, mode: AuthorizationMode) -> Self {
        self.config.authorization = mode;
        self
    }

    /// Starts the server (in memory; see [`FakeApiServer::listen`] for TCP)
    /// with the namespaces a new cluster has: `default`, `kube-system`,
    /// `kube-public` and `kube-node-lease`. Must run inside a tokio runtime.
    pub fn build(self) -> Result<FakeApiServer, Error> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let (watch_drops, _) = tokio::sync::watch::channel(0);
        let server = FakeApiServer {
            inner: Arc::new(Inner {
                store: Mutex::new(Store::new(self.config.event_log_limit)),
                registry: RwLock::new(Registry::new(builtins::all())),
                faults: Mutex::new(Faults::default()),
                config: self.config,
                schema_overrides: crate::upstream::strict_schemas(),
                watch_drops,
                tokens: RwLock::new(HashMap::new()),
                webhooks: RwLock::new(HashMap::new()),
                consoles: RwLock::new(None),
                pki: std::sync::OnceLock::new(),
                runtime,
            }),
        };
        crate::apiservice::start(Arc::downgrade(&server.inner), &server.inner.runtime);
        for namespace in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            server.create(
                "",
                "v1",
                "namespaces",
                None,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
            )?;
        }
        if server.inner.config.authorization == AuthorizationMode::Rbac {
            for (key, object) in crate::rbac::bootstrap_objects() {
                server.create(&key.group, "v1", &key.plural, None, object)?;
            }
            server.inner.tokens_mut().insert(uuid::Uuid::new_v4().simple().to_string(), admin());
        }
        Ok(server)
    }
}

/// A listener on `address` (port 0 picks a free one), and the address it got.
async fn bind(address: SocketAddr) -> Result<(TcpListener, SocketAddr), Error> {
    let listener = TcpListener::bind(address)
        .await
        .map_err(|source| Error::Io { what: format!("listening on {address}"), source })?;
    let bound =
        listener.local_addr().map_err(|source| Error::Io { what: "reading the listening address".into(), source })?;
    Ok((listener, bound))
}

/// A stateful, in-memory Kubernetes API server for tests and `kite demo`.
///
/// Cheap to clone: every clone is the same server.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_openapi::api::core::v1::Namespace;
/// use kube::Api;
///
/// let server = kite_testkit::FakeApiServer::new()?;
/// let namespaces: Api<Namespace> = Api::all(server.client());
/// let default = namespaces.get("default").await?;
/// assert_eq!(default.status.unwrap().phase.as_deref(), Some("Active"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct FakeApiServer {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for FakeApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApiServer").field("resource_version", &self.inner.store().resource_version()).finish()
    }
}

impl FakeApiServer {
    /// A builder, to change the [`Config`].
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A server with the default configuration.
    pub fn new() -> Result<Self, Error> {
        Self::builder().build()
    }

    /// The server as an axum router, to serve or to call in-process.
    pub fn router(&self) -> axum::Router {
        handlers::router(Arc::clone(&self.inner))
    }

    /// A `kube::Client` that talks to this server in-process, with no
    /// socket; with RBAC, as the admin.
    pub fn client(&self) -> kube::Client {
        match self.admin_token() {
            Some(token) => self.client_with_token(&token),
            None => kube::Client::new(self.router(), "default"),
        }
    }

    /// A `kube::Client` whose requests carry `token`, in-process.
    pub fn client_with_token(&self, token: &str) -> kube::Client {
        self.client_with_headers(vec![(http::header::AUTHORIZATION, format!("Bearer {token}"))])
    }

    /// A `kube::Client` whose requests carry `token` and impersonate `user` (`Impersonate-User`).
    pub fn client_impersonating(&self, token: &str, user: &str) -> kube::Client {
        self.client_with_headers(vec![
            (http::header::AUTHORIZATION, format!("Bearer {token}")),
            (http::HeaderName::from_static("impersonate-user"), user.to_string()),
        ])
    }

    fn client_with_headers(&self, headers: Vec<(http::HeaderName, String)>) -> kube::Client {
        let headers: Vec<(http::HeaderName, http::HeaderValue)> = headers
            .into_iter()
            .filter_map(|(name, value)| http::HeaderValue::from_str(&value).ok().map(|value| (name, value)))
            .collect();
        let router = self.router().layer(axum::middleware::map_request(move |mut request: axum::extract::Request| {
            let headers = headers.clone();
            async move {
                for (name, value) in headers {
                    request.headers_mut().insert(name, value);
                }
                request
            }
        }));
        kube::Client::new(router, "default")
    }

    /// The admin's bearer token, when the server authorizes by RBAC.
    pub fn admin_token(&self) -> Option<String> {
        self.inner.tokens().iter().find(|(_, user)| user.name == ADMIN).map(|(token, _)| token.clone())
    }

    /// A token for the ServiceAccount `namespace/name` (which must exist),
    /// as the TokenRequest API gives one: a kubeconfig or a client can carry it.
    pub fn service_account_token(&self, namespace: &str, name: &str) -> Result<String, Error> {
        let request = crate::rbac::reviews::token_request(&self.inner, namespace, name, &json!({})).map_err(|e| {
            Error::Refused { what: format!("a token for the ServiceAccount {namespace}/{name}"), message: e.message }
        })?;
        Ok(request["status"]["token"].as_str().unwrap_or_default().to_string())
    }

    /// The requests RBAC refused: who was refused what (also at `GET /testkit/denials`).
    pub fn denials(&self) -> Vec<Value> {
        self.inner.faults().denials().to_vec()
    }

    /// Serves the API on `listener` (plain HTTP, no authentication) until the task is dropped.
    pub async fn serve(&self, listener: TcpListener) -> Result<(), Error> {
        axum::serve(listener, self.router())
            .await
            .map_err(|source| Error::Io { what: "serving the fake API server".into(), source })
    }

    /// Listens on `address` (port 0 picks a free one) and serves in a
    /// background task; returns the bound address.
    pub async fn listen(&self, address: SocketAddr) -> Result<SocketAddr, Error> {
        let (listener, bound) = bind(address).await?;
        let server = self.clone();
        self.inner.runtime.spawn(async move {
            if let Err(error) = server.serve(listener).await {
                tracing::error!(%error, "the fake API server stopped");
            }
        });
        Ok(bound)
    }

    /// Listens on `address` (port 0 picks a free one) and serves HTTPS in a
    /// background task, with the server's own CA (see [`ca_pem`](Self::ca_pem));
    /// a client certificate the CA signed authenticates its `CN` as the user
    /// and each `O` as a group. Returns the bound address.
    pub async fn listen_tls(&self, address: SocketAddr) -> Result<SocketAddr, Error> {
        let acceptor = self.inner.pki()?.acceptor();
        let (listener, bound) = bind(address).await?;
        let router = self.router();
        let runtime = self.inner.runtime.clone();
        self.inner.runtime.spawn(async move {
            loop {
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        tracing::warn!(%error, "accepting an HTTPS connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                runtime.spawn(crate::tls::serve_connection(acceptor.clone(), stream, router.clone()));
            }
        });
        Ok(bound)
    }

    /// The CA the server's HTTPS certificate is signed by, PEM (made on first use).
    pub fn ca_pem(&self) -> Result<String, Error> {
        Ok(self.inner.pki()?.ca_pem())
    }

    /// A client certificate that authenticates as `user` over HTTPS.
    pub fn client_certificate(&self, user: &UserInfo) -> Result<crate::tls::ClientCertificate, Error> {
        self.inner.pki()?.client_certificate(user)
    }

    /// A kubeconfig for the server listening with HTTPS at `address`
    /// ([`listen_tls`](Self::listen_tls)), as the admin: a client
    /// certificate for `kubernetes-admin` in `system:masters`, as kubeadm writes.
    pub fn admin_kubeconfig(&self, address: SocketAddr) -> Result<String, Error> {
        let credentials = crate::kubeconfig::Credentials::ClientCertificate(self.client_certificate(&admin())?);
        Ok(crate::kubeconfig::render_https(address, &self.ca_pem()?, &credentials))
    }

    /// A kubeconfig for the server listening with HTTPS at `address`, as the
    /// ServiceAccount `namespace/name` (which must exist), with a token from
    /// the TokenRequest API: what a component deployed with that account can do.
    pub fn service_account_kubeconfig(
        &self,
        address: SocketAddr,
        namespace: &str,
        name: &str,
    ) -> Result<String, Error> {
        let token = self.service_account_token(namespace, name)?;
        let credentials = crate::kubeconfig::Credentials::Token(token);
        Ok(crate::kubeconfig::render_https(address, &self.ca_pem()?, &credentials))
    }

    /// `"<verb> <resource>"` → how many such requests were answered since the
    /// last [`reset_requests`](Self::reset_requests). Subresources count as
    /// `<resource>/<subresource>`, for example `"patch kitevirtualmachines/status"`.
    /// Requests RBAC refused count as `"denied <verb> <resource>"` (who was
    /// refused is in [`denials`](Self::denials)).
    pub fn request_counts(&self) -> BTreeMap<String, u64> {
        self.inner.faults().counts()
    }

    /// Every request answered since the last reset, in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.inner.faults().log().to_vec()
    }

    /// How many writes (create, update, patch, delete) were answered since the last reset.
    pub fn write_count(&self) -> usize {
        self.inner.faults().log().iter().filter(|r| r.verb.is_write()).count()
    }

    /// Forgets the request log.
    pub fn reset_requests(&self) {
        self.inner.faults().reset();
    }

    /// Serves the webhook configurations that reach `target` with
    /// `handler`: it gets each `AdmissionReview` and returns it with a
    /// `response` (allowed or not, a JSON patch for a mutating webhook).
    /// The handler runs inside the request and must not call this server.
    ///
    /// ```
    /// use kite_testkit::FakeApiServer;
    /// use kite_testkit::admission::call::WebhookTarget;
    /// use serde_json::json;
    /// use std::sync::Arc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = FakeApiServer::new()?;
    /// let target = WebhookTarget::Service { namespace: "longhorn-system".into(), name: "longhorn-admission-webhook".into() };
    /// server.serve_webhook(target, Arc::new(|review| {
    ///     json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    ///             "response": { "uid": review["request"]["uid"], "allowed": true } })
    /// }));
    /// # Ok(())
    /// # }
    /// ```
    pub fn serve_webhook(&self, target: WebhookTarget, handler: WebhookHandler) {
        self.inner.webhooks.write().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(target, handler);
    }

    /// Stops serving `target`: its webhooks cannot be called any more.
    pub fn stop_webhook(&self, target: &WebhookTarget) {
        self.inner.webhooks.write().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(target);
    }

    /// Answers on the running instances' serial consoles (KubeVirt's
    /// `console` subresource) with `backend`; see [`crate::console`].
    pub fn serve_consoles(&self, backend: crate::console_backend::ConsoleBackend) {
        *self.inner.consoles.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(backend);
    }

    /// Makes the next requests that match `fault` fail.
    pub fn inject(&self, fault: Fault) {
        self.inner.faults().add(fault);
    }

    /// Delays every resource request by `latency`.
    pub fn set_latency(&self, latency: Duration) {
        self.inner.faults().latency = latency;
    }

    /// Ends every open watch stream, as a restarting API server would.
    pub fn drop_watches(&self) {
        self.inner.drop_watches();
    }

    /// Forgets the event log, so a watch from any earlier resourceVersion gets `410 Gone`.
    pub fn compact(&self) {
        self.inner.store().compact();
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.inner.store().resource_version()
    }

    /// Creates an object as a client would, without HTTP; returns it as stored.
    pub fn create(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: Option<&str>,
        object: Value,
    ) -> Result<Value, Error> {
        let what = format!("{plural} {}", object["metadata"]["name"].as_str().unwrap_or("?"));
        crate::write::create_internal(&self.inner, group, version, plural, namespace, object)
            .map_err(|e: ApiError| Error::Refused { what, message: e.message })
    }

    /// Installs a CustomResourceDefinition; its kind is served at once.
    pub fn install_crd(
        &self,
        crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    ) -> Result<(), Error> {
        let object = serde_json::to_value(crd)
            .map_err(|e| Error::Serialize { what: "a CustomResourceDefinition".into(), message: e.to_string() })?;
        let mut object = object;
        object["apiVersion"] = json!("apiextensions.k8s.io/v1");
        object["kind"] = json!("CustomResourceDefinition");
        self.create("apiextensions.k8s.io", "v1", "customresourcedefinitions", None, object).map(|_| ())
    }
}
