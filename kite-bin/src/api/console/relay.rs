//! Relays a browser's WebSocket to a machine's serial console, and closes
//! it, with a sentence as the close reason, when it should no longer be open.

use super::dial::{ConsoleStream, dial};
use super::ticket::running;
use crate::api::state::AppState;
use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures::{SinkExt as _, StreamExt as _};
use kite_core::api::AccessLevel;
use kite_core::key::key;
use std::time::Duration;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message as Upstream;

/// The close code of every close Kite decides (an application code, 4000–4999).
pub const CLOSE_CODE: u16 = 4000;

/// How often the reasons to close are looked at.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// How often both sides are pinged while the console is quiet: the cluster
/// client's read timeout (kube's, 295 s by default) and proxies' idle
/// timeouts would otherwise end a console that shows nothing for a while.
const KEEPALIVE_EVERY: Duration = Duration::from_secs(30);

/// Who opened a console on which machine, as checked when it opened.
#[derive(Clone, Debug)]
pub struct Opened {
    /// The `KiteUser`'s name.
    pub user: String,
    /// Its level then.
    pub level: AccessLevel,
    /// Its session generation then.
    pub generation: u32,
    /// The machine's namespace.
    pub namespace: String,
    /// The machine's name.
    pub name: String,
}

/// Why the console must close now, if it must, read from the caches.
fn reason_to_close(state: &AppState, opened: &Opened) -> Option<&'static str> {
    let user = match state.users.get(&opened.user) {
        Some(user) if user.metadata.deletion_timestamp.is_none() => user,
        _ => return Some("your account was deleted"),
    };
    if user.spec.access_level != opened.level {
        return Some("your access level changed; open the console again");
    }
    if user.spec.session_generation > opened.generation {
        return Some("you were signed out; sign in and open the console again");
    }
    match state.vms.get(&key(Some(&opened.namespace), &opened.name)) {
        None => Some("the machine was deleted"),
        Some(vm) if !running(&vm) => Some("the machine is no longer running"),
        Some(_) => None,
    }
}

async fn close(browser: &mut WebSocket, reason: &str) {
    let frame = CloseFrame { code: CLOSE_CODE, reason: reason.into() };
    let _ = browser.send(Message::Close(Some(frame))).await;
}

/// Opens the console of `opened`'s machine and relays it to `browser` until either side ends or it must close.
pub async fn run(state: AppState, mut browser: WebSocket, opened: Opened) {
    let console = match dial(&state.client, &opened.namespace, &opened.name).await {
        Ok(console) => console,
        Err(error) => {
            tracing::warn!(user = %opened.user, namespace = %opened.namespace, vm = %opened.name, %error, "cannot open a serial console");
            close(&mut browser, error.sentence()).await;
            return;
        }
    };
    tracing::info!(user = %opened.user, namespace = %opened.namespace, vm = %opened.name, "serial console opened");
    let reason = relay(&state, &mut browser, console, &opened).await;
    tracing::info!(user = %opened.user, namespace = %opened.namespace, vm = %opened.name, reason, "serial console closed");
    close(&mut browser, reason).await;
}

/// Carries bytes both ways; returns why it stopped.
async fn relay(state: &AppState, browser: &mut WebSocket, mut console: ConsoleStream, opened: &Opened) -> &'static str {
    let mut last_input = Instant::now();
    let mut checks = tokio::time::interval(CHECK_EVERY);
    let mut keepalive = tokio::time::interval_at(Instant::now() + KEEPALIVE_EVERY, KEEPALIVE_EVERY);
    loop {
        tokio::select! {
            typed = browser.recv() => {
                let bytes = match typed {
                    Some(Ok(Message::Binary(bytes))) => bytes,
                    Some(Ok(Message::Text(text))) => bytes::Bytes::copy_from_slice(text.as_bytes()),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => {
                        let _ = console.close(None).await;
                        return "closed by the browser";
                    }
                };
                last_input = Instant::now();
                if console.send(Upstream::Binary(bytes)).await.is_err() {
                    return "the machine's console closed";
                }
            }
            shown = console.next() => {
                let bytes = match shown {
                    Some(Ok(Upstream::Binary(bytes))) => bytes,
                    Some(Ok(Upstream::Text(text))) => bytes::Bytes::copy_from_slice(text.as_bytes()),
                    Some(Ok(Upstream::Ping(_) | Upstream::Pong(_) | Upstream::Frame(_))) => continue,
                    Some(Ok(Upstream::Close(_)) | Err(_)) | None => return "the machine's console closed",
                };
                if browser.send(Message::Binary(bytes)).await.is_err() {
                    let _ = console.close(None).await;
                    return "closed by the browser";
                }
            }
            _ = keepalive.tick() => {
                if console.send(Upstream::Ping(bytes::Bytes::new())).await.is_err() {
                    return "the machine's console closed";
                }
                if browser.send(Message::Ping(bytes::Bytes::new())).await.is_err() {
                    let _ = console.close(None).await;
                    return "closed by the browser";
                }
            }
            _ = checks.tick() => {
                if let Some(reason) = reason_to_close(state, opened) {
                    let _ = console.close(None).await;
                    return reason;
                }
                let idle = Duration::from_secs(u64::from(state.platform_spec().console_idle_seconds));
                if last_input.elapsed() >= idle {
                    let _ = console.close(None).await;
                    return "closed after a while without input; open it again to go on";
                }
            }
        }
    }
}
