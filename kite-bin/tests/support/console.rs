//! A WebSocket client of the serial console: tickets, the upgrade as a
//! session, what the console shows and why the platform closed it.

use super::Session;
use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Message, http};

pub type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The WebSocket request for `path` (from a ticket answer's `url`), as `session`, from `origin` if given.
pub fn request(session: &Session, path: &str, origin: Option<&str>) -> http::Request<()> {
    let url = format!("{}{path}", session.base.replace("http://", "ws://"));
    let mut request = url.into_client_request().unwrap();
    let token = session.token.as_deref().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    if let Some(origin) = origin {
        request.headers_mut().insert("origin", origin.parse().unwrap());
    }
    request
}

/// The status and message of a refused console.
pub async fn refused(request: http::Request<()>) -> (u16, String) {
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            let body: Value = serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
            (response.status().as_u16(), body["message"].as_str().unwrap_or_default().to_string())
        }
        Err(other) => panic!("expected an HTTP refusal, got {other}"),
        Ok(_) => panic!("the console was expected to be refused"),
    }
}

/// A ticket's WebSocket path for `session`, asked at `path`.
pub async fn ticket(session: &Session, path: &str) -> String {
    let (status, body) = session.post(path, json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let url = body["url"].as_str().unwrap();
    assert!(url.ends_with(&format!("/console?ticket={}", body["ticket"].as_str().unwrap())), "{body}");
    body["url"].as_str().unwrap().to_string()
}

pub async fn open(session: &Session, path: &str) -> Socket {
    tokio_tungstenite::connect_async(request(session, path, None)).await.unwrap().0
}

/// Reads until the text shown contains `wanted` (20 s at most).
pub async fn until_shown(socket: &mut Socket, shown: &mut String, wanted: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !shown.contains(wanted) {
        let frame = tokio::time::timeout_at(deadline, socket.next())
            .await
            .unwrap_or_else(|_| panic!("waited 20 s for {wanted:?}; the console showed {shown:?}"));
        match frame {
            Some(Ok(Message::Binary(bytes))) => shown.push_str(&String::from_utf8_lossy(&bytes)),
            Some(Ok(_)) => {}
            other => panic!("the console closed ({other:?}) before showing {wanted:?}; it showed {shown:?}"),
        }
    }
}

/// Waits (20 s at most) for the platform to close the console; its reason.
pub async fn closed_because(socket: &mut Socket) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let frame = tokio::time::timeout_at(deadline, socket.next()).await.expect("the console stays open");
        match frame {
            Some(Ok(Message::Close(Some(frame)))) => {
                assert_eq!(frame.code, CloseCode::Library(4000));
                return frame.reason.to_string();
            }
            Some(Ok(_)) => {}
            other => panic!("the console ended without a close frame: {other:?}"),
        }
    }
}

pub async fn send(socket: &mut Socket, text: &str) {
    socket.send(Message::Binary(text.as_bytes().to_vec().into())).await.unwrap();
}
