//! How `kite api` reaches the gateways' control API (the protocol is
//! [`kite_ssh::control`]): the address is a name that resolves to
//! every gateway replica (a headless Service), so lists are gathered from
//! all of them and a session is looked for on each. The token is the
//! gateway's control Secret, read when first needed.

use k8s_openapi::api::core::v1::Secret;
use kite_ssh::control::{SessionAnswer, SessionsAnswer, Terminate};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long one request to a gateway may take (a live stream excepted).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the gateways could not answer; the API turns it into a sentence.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// No gateway answered, or none could be found.
    #[error("no gateway answered at {address}: {reason}")]
    Unreachable {
        /// The control address.
        address: String,
        /// What went wrong.
        reason: String,
    },
    /// The token could not be read.
    #[error("the gateway's control token: {0}")]
    Token(String),
    /// A gateway answered with something unexpected.
    #[error("a gateway answered {0}")]
    Answer(String),
}

/// Where the control token comes from.
#[derive(Clone)]
enum Token {
    Fixed(String),
    Secret { client: kube::Client, namespace: String, name: String, cached: Arc<Mutex<Option<String>>> },
}

/// The gateways' control API.
#[derive(Clone)]
pub struct GatewayControl {
    http: reqwest::Client,
    address: String,
    token: Token,
}

impl std::fmt::Debug for GatewayControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayControl").field("address", &self.address).finish_non_exhaustive()
    }
}

impl GatewayControl {
    fn with_token(address: &str, token: Token) -> Self {
        Self { http: reqwest::Client::new(), address: address.to_string(), token }
    }

    /// The control API at `address` (`host:port`), with a known token.
    pub fn new(address: &str, token: &str) -> Self {
        Self::with_token(address, Token::Fixed(token.to_string()))
    }

    /// The control API at `address`, its token in the Secret `namespace/name`.
    pub fn with_secret(address: &str, client: kube::Client, namespace: &str, name: &str) -> Self {
        let token =
            Token::Secret { client, namespace: namespace.to_string(), name: name.to_string(), cached: Arc::default() };
        Self::with_token(address, token)
    }

    async fn token(&self) -> Result<String, ControlError> {
        match &self.token {
            Token::Fixed(token) => Ok(token.clone()),
            Token::Secret { client, namespace, name, cached } => {
                if let Some(token) = cached.lock().unwrap_or_else(|p| p.into_inner()).clone() {
                    return Ok(token);
                }
                let secrets: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
                let secret = secrets
                    .get_opt(name)
                    .await
                    .map_err(|error| ControlError::Token(format!("reading {namespace}/{name}: {error}")))?
                    .ok_or_else(|| ControlError::Token(format!("{namespace}/{name} does not exist yet")))?;
                let token = crate::secret_once::field(&secret, crate::names::CONTROL_TOKEN_FIELD)
                    .map(|value| String::from_utf8_lossy(value).into_owned())
                    .ok_or_else(|| ControlError::Token(format!("{namespace}/{name} holds no token")))?;
                *cached.lock().unwrap_or_else(|p| p.into_inner()) = Some(token.clone());
                Ok(token)
            }
        }
    }

    /// Every gateway replica's address.
    async fn replicas(&self) -> Result<Vec<SocketAddr>, ControlError> {
        let unreachable = |reason: String| ControlError::Unreachable { address: self.address.clone(), reason };
        let mut addresses: Vec<SocketAddr> =
            tokio::net::lookup_host(&self.address).await.map_err(|error| unreachable(error.to_string()))?.collect();
        addresses.sort();
        addresses.dedup();
        if addresses.is_empty() {
            return Err(unreachable("the name resolves to no address".into()));
        }
        Ok(addresses)
    }

    /// Sends `method path` to `replica` with the token.
    async fn send(
        &self,
        method: reqwest::Method,
        replica: SocketAddr,
        path: &str,
        body: Option<&Terminate>,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Response, ControlError> {
        let token = self.token().await?;
        let mut request = self.http.request(method, format!("http://{replica}{path}")).bearer_auth(token);
        if let Some(body) = body {
            request = request.json(body);
        }
        if let Some(timeout) = timeout {
            request = request.timeout(timeout);
        }
        request
            .send()
            .await
            .map_err(|error| ControlError::Unreachable { address: replica.to_string(), reason: error.to_string() })
    }

    async fn get(&self, replica: SocketAddr, path: &str) -> Result<reqwest::Response, ControlError> {
        self.send(reqwest::Method::GET, replica, path, None, Some(REQUEST_TIMEOUT)).await
    }

    /// Live and kept sessions of `routes` (every route when `None`), from
    /// every replica: the kept ones newest first, each once.
    pub async fn sessions(&self, routes: Option<&[String]>, limit: usize) -> Result<SessionsAnswer, ControlError> {
        let mut query: Vec<(String, String)> = vec![("limit".into(), limit.to_string())];
        for route in routes.unwrap_or_default() {
            query.push(("route".into(), route.clone()));
        }
        let query = form_urlencoded::Serializer::new(String::new()).extend_pairs(query).finish();
        let path = format!("/control/v1/sessions?{query}");
        let mut merged = SessionsAnswer::default();
        let mut kept = HashMap::new();
        let mut failures = Vec::new();
        for replica in self.replicas().await? {
            match self.json::<SessionsAnswer>(replica, &path).await {
                Ok(Some(answer)) => {
                    merged.live.extend(answer.live);
                    merged.recording |= answer.recording;
                    for session in answer.recent {
                        // The same store seen from two replicas: the one that saw the end wins.
                        let entry = kept.entry(session.connection.clone()).or_insert_with(|| session.clone());
                        if entry.ended.is_none() {
                            *entry = session;
                        }
                    }
                }
                Ok(None) => failures.push(format!("{replica}: not found")),
                Err(error) => failures.push(error.to_string()),
            }
        }
        if !failures.is_empty() {
            tracing::warn!(?failures, "some gateway replicas did not list their sessions");
            if merged.live.is_empty() && kept.is_empty() {
                return Err(ControlError::Unreachable { address: self.address.clone(), reason: failures.join("; ") });
            }
        }
        merged.recent = kept.into_values().collect();
        merged.recent.sort_by(|a, b| b.started.cmp(&a.started));
        merged.recent.truncate(limit);
        merged.live.sort_by(|a, b| b.started.cmp(&a.started));
        Ok(merged)
    }

    async fn json<T: serde::de::DeserializeOwned>(
        &self,
        replica: SocketAddr,
        path: &str,
    ) -> Result<Option<T>, ControlError> {
        let response = self.get(replica, path).await?;
        match response.status() {
            reqwest::StatusCode::NOT_FOUND => Ok(None),
            status if status.is_success() => {
                response.json::<T>().await.map(Some).map_err(|error| ControlError::Answer(format!("{path}: {error}")))
            }
            status => Err(ControlError::Answer(format!("{path}: {status}"))),
        }
    }

    /// One session, from whichever replica knows it.
    pub async fn session(&self, connection: &str) -> Result<Option<SessionAnswer>, ControlError> {
        let path = format!("/control/v1/sessions/{connection}");
        let mut found: Option<SessionAnswer> = None;
        for replica in self.replicas().await? {
            if let Some(answer) = self.json::<SessionAnswer>(replica, &path).await? {
                let merged = found.get_or_insert_with(|| answer.clone());
                merged.live = merged.live.take().or(answer.live);
                merged.kept = merged.kept.take().or(answer.kept);
            }
        }
        Ok(found)
    }

    /// A kept recording.
    pub async fn recording(&self, connection: &str, channel: u32) -> Result<Option<Vec<u8>>, ControlError> {
        let path = format!("/control/v1/sessions/{connection}/recordings/{channel}");
        for replica in self.replicas().await? {
            let response = self.get(replica, &path).await?;
            if response.status().is_success() {
                let bytes = response.bytes().await.map_err(|error| ControlError::Answer(error.to_string()))?;
                return Ok(Some(bytes.to_vec()));
            }
        }
        Ok(None)
    }

    /// A live recording's lines, from the replica that carries the session.
    pub async fn live(&self, connection: &str, channel: u32) -> Result<Option<reqwest::Response>, ControlError> {
        let path = format!("/control/v1/sessions/{connection}/recordings/{channel}/live");
        for replica in self.replicas().await? {
            // No timeout: the stream lasts as long as the session.
            let response = self.send(reqwest::Method::GET, replica, &path, None, None).await?;
            if response.status().is_success() {
                return Ok(Some(response));
            }
        }
        Ok(None)
    }

    /// Ends a session on whichever replica carries it; false when none does.
    pub async fn terminate(&self, connection: &str, request: &Terminate) -> Result<bool, ControlError> {
        let path = format!("/control/v1/sessions/{connection}/terminate");
        let mut ended = false;
        for replica in self.replicas().await? {
            let response =
                self.send(reqwest::Method::POST, replica, &path, Some(request), Some(REQUEST_TIMEOUT)).await?;
            ended |= response.status() == reqwest::StatusCode::NO_CONTENT;
        }
        Ok(ended)
    }
}
