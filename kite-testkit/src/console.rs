//! KubeVirt's serial console, as its aggregated API serves it:
//! `GET /apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachineinstances/{name}/console`,
//! a WebSocket upgrade with the subprotocol `plain.kubevirt.io` whose binary
//! frames carry the serial port's raw bytes both ways.
//!
//! The request is authorized as `get` on `virtualmachineinstances/console` in
//! `subresources.kubevirt.io`, as virt-api's is. An instance that does not
//! exist answers 404, one that is not `Running` 409 with virt-api's sentence
//! (`VMI is not running`), and a request that is not a WebSocket upgrade 400.
//! What sits behind the serial port is a [`ConsoleBackend`] the test (or the
//! simulated guests of `kite demo`) installs with
//! [`FakeApiServer::serve_consoles`](crate::FakeApiServer::serve_consoles);
//! without one the subresource answers 503, as virt-api does while it cannot
//! reach the instance's handler. An accepted request is logged (as
//! `get virtualmachineinstances/console`) and injected faults apply to it.

pub use crate::console_backend::{ConsoleBackend, ConsoleConnection, PLAIN_PROTOCOL};

use crate::faults::{RequestRecord, Verb};
use crate::read::find;
use crate::state::Inner;
use crate::status::ApiError;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The path the console subresource is served at, in axum's syntax.
pub(crate) const ROUTE: &str =
    "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachineinstances/{name}/console";

/// `409 Conflict` as virt-api words it for an instance that is not running.
fn not_running(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "Conflict",
        format!("Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io \"{name}\": VMI is not running"),
    )
}

/// The console subresource's handler.
pub(crate) async fn serve(
    State(inner): State<Arc<Inner>>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
    peer: Option<axum::Extension<crate::tls::PeerUser>>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    let checked = match check(&inner, &namespace, &name, &headers, peer) {
        Ok((instance, backend, user)) => {
            let record = RequestRecord {
                verb: Verb::Get,
                resource: "virtualmachineinstances/console".into(),
                namespace: Some(namespace.clone()),
                name: Some(name.clone()),
                field_manager: None,
                user,
            };
            crate::fault_injection::inject_faults(&inner, record).await.map(|()| (instance, backend))
        }
        Err(error) => Err(error),
    };
    match checked {
        Err(error) => error.into_response(),
        Ok((instance, backend)) => match upgrade {
            Err(rejection) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                format!("the console is a WebSocket: {}", rejection.body_text()),
            )
            .into_response(),
            Ok(upgrade) => upgrade.protocols([PLAIN_PROTOCOL]).on_upgrade(move |socket| async move {
                let (input_sender, input) = mpsc::channel(64);
                let (output, output_receiver) = mpsc::channel(64);
                backend(ConsoleConnection { namespace, name, instance, input, output });
                pump(socket, input_sender, output_receiver).await;
            }),
        },
    }
}

/// Authenticates and authorizes the request and finds the running instance and the backend.
fn check(
    inner: &Arc<Inner>,
    namespace: &str,
    name: &str,
    headers: &HeaderMap,
    peer: Option<axum::Extension<crate::tls::PeerUser>>,
) -> Result<(Value, ConsoleBackend, Option<String>), ApiError> {
    let peer = peer.and_then(|axum::Extension(crate::tls::PeerUser(user))| user);
    let user = crate::rbac::requester(inner, headers, peer)?;
    let request = crate::request_attributes::Attributes {
        verb: "get",
        group: "subresources.kubevirt.io",
        resource: "virtualmachineinstances",
        subresource: Some("console"),
        name: Some(name),
        namespace: Some(namespace),
        path: None,
    };
    crate::rbac::authorize(inner, user.as_ref(), &request)?;
    let instance = find(inner, "kubevirt.io", "virtualmachineinstances", namespace, name).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("virtualmachineinstance.kubevirt.io \"{name}\" not found"),
        )
    })?;
    if instance["status"]["phase"] != "Running" {
        return Err(not_running(name));
    }
    let backend = inner.consoles().clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            format!("the serial console of {namespace}/{name} cannot be reached: no console backend runs"),
        )
    })?;
    Ok((instance, backend, user.map(|u| u.name)))
}

/// Carries frames between the client and the backend until either ends.
async fn pump(mut socket: WebSocket, input: mpsc::Sender<Bytes>, mut output: mpsc::Receiver<Bytes>) {
    loop {
        tokio::select! {
            received = socket.recv() => match received {
                Some(Ok(Message::Binary(bytes))) => {
                    if input.send(bytes).await.is_err() { break }
                }
                Some(Ok(Message::Text(text))) => {
                    if input.send(Bytes::copy_from_slice(text.as_bytes())).await.is_err() { break }
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            },
            shown = output.recv() => match shown {
                Some(bytes) => {
                    if socket.send(Message::Binary(bytes)).await.is_err() { break }
                }
                None => {
                    let _ = socket.send(Message::Close(None)).await;
                    break;
                }
            },
        }
    }
}
