//! The gateway's control API, for `kite api` only: the sessions the
//! gateway serves now and those its store kept, a recording (whole, or
//! line by line while it is written), and ending a session. Every request
//! carries the control token (`Authorization: Bearer …`); anything else is
//! a 401. It speaks plain HTTP on the cluster's network, so the deployment
//! lets only the API's pods reach its port. The paths and the wire types
//! are kite-ssh's [`kite_ssh::control`], which the API's client shares.

use super::store::SwitchStore;
use anyhow::Context as _;
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt as _;
use kite_ssh::audit::{AuditArchive, SessionSummary, recent_sessions};
use kite_ssh::control::{MAX_LIMIT, SessionAnswer, SessionsAnswer, Terminate};
use kite_ssh::live::Sessions;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;

/// What the control API serves from.
#[derive(Clone)]
pub struct Control {
    /// The router's live sessions.
    sessions: Sessions,
    /// The store in use.
    store: SwitchStore,
    /// The SHA-256 of the token callers must present.
    token_digest: [u8; 32],
}

impl Control {
    /// A control API over `sessions` and `store` that accepts `token`.
    pub fn new(sessions: Sessions, store: SwitchStore, token: &str) -> Self {
        Self { sessions, store, token_digest: Sha256::digest(token.as_bytes()).into() }
    }

    /// `kept` with the ends of sessions that ended a moment ago, which the
    /// store may still be writing.
    fn with_recent_ends(&self, mut kept: Vec<SessionSummary>) -> Vec<SessionSummary> {
        let ended = self.sessions.recently_ended();
        for session in kept.iter_mut().filter(|session| session.ended.is_none()) {
            if let Some(end) = ended.iter().find(|end| end.connection == session.connection) {
                session.ended = Some(end.ended.clone());
                session.seconds = Some(end.seconds);
                session.end_reason = end.reason.clone();
            }
        }
        kept
    }

    /// The routes, for tests and embedding.
    pub fn router(self) -> Router {
        Router::new()
            .route("/control/v1/sessions", get(list))
            .route("/control/v1/sessions/{connection}", get(one))
            .route("/control/v1/sessions/{connection}/recordings/{channel}", get(recording))
            .route("/control/v1/sessions/{connection}/recordings/{channel}/live", get(live))
            .route("/control/v1/sessions/{connection}/terminate", post(terminate))
            .layer(middleware::from_fn_with_state(self.clone(), authorize))
            .with_state(self)
    }

    /// Serves the control API on `address` in a background task; returns the bound address.
    pub async fn serve(self, address: SocketAddr) -> anyhow::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("listening on {address} for the gateway's control API"))?;
        let bound = listener.local_addr().context("reading the control API's address")?;
        let app = self.router();
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "the gateway's control API stopped");
            }
        });
        Ok(bound)
    }
}

/// Refuses a request without the token.
async fn authorize(State(control): State<Control>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|token| <[u8; 32]>::from(Sha256::digest(token.as_bytes())));
    // Digests compared, so the time taken says nothing of the token.
    if presented != Some(control.token_digest) {
        return (StatusCode::UNAUTHORIZED, "the control token is missing or wrong\n").into_response();
    }
    next.run(request).await
}

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<usize>,
}

async fn list(State(control): State<Control>, query: Query<ListQuery>, uri: axum::http::Uri) -> Response {
    // `route` repeats, which a struct extractor cannot take: read it from the query string.
    let routes: Vec<String> = form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .filter(|(key, _)| key == "route")
        .map(|(_, value)| value.into_owned())
        .collect();
    let wanted = |route: &str| routes.is_empty() || routes.iter().any(|r| r == route);
    let limit = query.limit.unwrap_or(100).min(MAX_LIMIT);
    let live = control.sessions.list().into_iter().filter(|session| wanted(&session.route)).collect();
    let recent = match recent_sessions(&control.store, limit, |session| wanted(&session.route)).await {
        Ok(recent) => control.with_recent_ends(recent),
        Err(error) => return unreadable(error),
    };
    Json(SessionsAnswer { live, recent, recording: control.store.current().records() }).into_response()
}

async fn one(State(control): State<Control>, Path(connection): Path<String>) -> Response {
    if !kite_ssh::audit::is_connection_id(&connection) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let live = control.sessions.list().into_iter().find(|session| session.connection == connection);
    let kept = match recent_sessions(&control.store, 1, |session| session.connection == connection).await {
        Ok(kept) => control.with_recent_ends(kept).pop(),
        Err(error) => return unreadable(error),
    };
    if live.is_none() && kept.is_none() {
        return StatusCode::NOT_FOUND.into_response();
    }
    Json(SessionAnswer { live, kept }).into_response()
}

async fn recording(State(control): State<Control>, Path((connection, channel)): Path<(String, u32)>) -> Response {
    match control.store.recording(&connection, channel).await {
        Ok(Some(cast)) => ([(header::CONTENT_TYPE, "application/x-asciicast")], cast).into_response(),
        Ok(None) => StatusCode::NOT_FOUND.into_response(),
        Err(error) => unreadable(error),
    }
}

/// A 503 for a store that could not be read (the error goes to the log).
fn unreadable(error: kite_ssh::Error) -> Response {
    tracing::error!(%error, "reading the audit store failed");
    (StatusCode::SERVICE_UNAVAILABLE, "the gateway could not read its store\n").into_response()
}

async fn live(State(control): State<Control>, Path((connection, channel)): Path<(String, u32)>) -> Response {
    let Some(mut watch) = control.sessions.watch(&connection, channel) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let backlog = std::mem::take(&mut watch.backlog);
    let lines = futures::stream::iter(backlog.into_iter().map(Ok::<_, std::convert::Infallible>)).chain(
        futures::stream::unfold(watch, |mut watch| async move { watch.next().await.map(|line| (Ok(line), watch)) }),
    );
    let body = Body::from_stream(lines.map(|line| line.map(|line| format!("{line}\n"))));
    ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response()
}

async fn terminate(
    State(control): State<Control>,
    Path(connection): Path<String>,
    Json(request): Json<Terminate>,
) -> StatusCode {
    if control.sessions.terminate(&connection, &request.message, &request.reason).await {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    }
}
