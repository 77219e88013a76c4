//! Dials KubeVirt's serial console subresource as Kite's ServiceAccount.
//!
//! kube-rs' `Client::connect` offers only the `v4/v5.channel.k8s.io`
//! subprotocols and refuses an answer without one, and virt-api speaks
//! `plain.kubevirt.io`. So the upgrade request is sent as kube's own
//! `connect` sends it (through the client's TLS, credentials and layers),
//! the answer is checked as RFC 6455 says, and the upgraded connection is
//! wrapped as a WebSocket client.

use http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

/// The subprotocol of KubeVirt's console: binary frames of raw serial bytes.
pub const PLAIN_PROTOCOL: &str = "plain.kubevirt.io";

/// An open serial console.
pub type ConsoleStream = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Why the console could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The cluster answered with an error status.
    #[error("the cluster answered {status}: {message}")]
    Refused {
        /// The HTTP status.
        status: StatusCode,
        /// The Status message, or the body.
        message: String,
    },
    /// The request did not reach the cluster.
    #[error("the request failed: {0}")]
    Transport(#[from] kube::Error),
    /// The answer was not a WebSocket upgrade as requested.
    #[error("the console's WebSocket handshake failed: {0}")]
    Handshake(String),
}

impl DialError {
    /// A sentence for the user; the details go to the log.
    pub fn sentence(&self) -> &'static str {
        match self {
            DialError::Refused { status, .. } if *status == StatusCode::CONFLICT => {
                "the machine is not running; start it, then open the console"
            }
            DialError::Refused { status, .. } if *status == StatusCode::NOT_FOUND => {
                "the machine is not running (it has no instance); start it, then open the console"
            }
            _ => "the machine's console cannot be reached right now; try again in a moment",
        }
    }
}

/// The path of the console subresource of the instance `namespace/name`.
pub fn path(namespace: &str, name: &str) -> String {
    format!("/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachineinstances/{name}/console")
}

/// Opens the serial console of the instance `namespace/name`.
pub async fn dial(client: &kube::Client, namespace: &str, name: &str) -> Result<ConsoleStream, DialError> {
    let key = generate_key();
    let request = Request::get(path(namespace, name))
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "websocket")
        .header(header::SEC_WEBSOCKET_VERSION, "13")
        .header(header::SEC_WEBSOCKET_KEY, &key)
        .header(header::SEC_WEBSOCKET_PROTOCOL, PLAIN_PROTOCOL)
        .body(kube::client::Body::empty())
        .map_err(|e| DialError::Handshake(e.to_string()))?;
    let response = client.send(request).await?;
    let status = response.status();
    if status != StatusCode::SWITCHING_PROTOCOLS {
        let body = response.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let message = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).trim().to_string());
        return Err(DialError::Refused { status, message });
    }
    let headers = response.headers();
    let accept = headers.get(header::SEC_WEBSOCKET_ACCEPT).and_then(|v| v.to_str().ok());
    if accept != Some(derive_accept_key(key.as_bytes()).as_str()) {
        return Err(DialError::Handshake("the answer's Sec-WebSocket-Accept does not match the key".into()));
    }
    let protocol = headers.get(header::SEC_WEBSOCKET_PROTOCOL).and_then(|v| v.to_str().ok());
    if protocol.is_some_and(|p| p != PLAIN_PROTOCOL) {
        return Err(DialError::Handshake(format!("the server chose the subprotocol {protocol:?}")));
    }
    let upgraded = hyper::upgrade::on(response)
        .await
        .map_err(|e| DialError::Handshake(format!("the connection was not upgraded: {e}")))?;
    Ok(WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Client, None).await)
}
