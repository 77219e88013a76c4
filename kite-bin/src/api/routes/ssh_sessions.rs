//! `ssh-sessions`: SSH sessions through the gateway, their recordings
//! (kept, or live as they are written) and ending one. Admins see every
//! session; a user sees the sessions of their own machines. The rules are
//! in [`crate::api::ssh_sessions`].

use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::ssh_sessions::{self, SshSessionsEnvelope};
use crate::api::state::AppState;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde::Deserialize;
use utoipa::IntoParams;

/// Which sessions to list.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SessionsQuery {
    /// Only the sessions of this machine of yours.
    pub machine: Option<String>,
}

/// The SSH sessions you may see: every session for admins, those of your
/// own machines for everyone else; open ones first, then newest first.
#[utoipa::path(get, path = "/ssh-sessions", tag = "ssh-sessions", params(SessionsQuery),
    responses(
        (status = 200, body = SshSessionsEnvelope),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 503, description = "The gateway did not answer", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<SessionsQuery>,
) -> ApiResult<Json<SshSessionsEnvelope>> {
    Ok(Json(ssh_sessions::list(&state, &caller, query.machine.as_deref(), ssh_sessions::LIST_LIMIT).await?))
}

/// A session's kept recording, as an asciicast v2 file.
#[utoipa::path(get, path = "/ssh-sessions/{id}/recordings/{channel}", tag = "ssh-sessions",
    params(("id" = String, Path, description = "The session's id"), ("channel" = u32, Path, description = "The channel")),
    responses(
        (status = 200, description = "The asciicast v2 file", content_type = "application/x-asciicast", body = String),
        (status = 404, description = "No such session among yours, or not recorded", body = ErrorBody),
        (status = 503, description = "The gateway did not answer", body = ErrorBody),
    ))]
pub async fn recording(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, channel)): Path<(String, u32)>,
) -> ApiResult<Response> {
    let cast = ssh_sessions::recording_of(&state, &caller, &id, channel).await?;
    Ok(([(header::CONTENT_TYPE, "application/x-asciicast"), (header::CACHE_CONTROL, "private, no-store")], cast)
        .into_response())
}

/// A recording while it is written, as server-sent events for
/// asciinema-player's `eventsource` driver: the header, the latest events,
/// then each event as it happens; a `done` event when it ends.
#[utoipa::path(get, path = "/ssh-sessions/{id}/recordings/{channel}/live", tag = "ssh-sessions",
    params(("id" = String, Path, description = "The session's id"), ("channel" = u32, Path, description = "The channel")),
    responses(
        (status = 200, description = "Server-sent events, each an asciicast line", content_type = "text/event-stream", body = String),
        (status = 404, description = "No such session among yours, or not being recorded now", body = ErrorBody),
        (status = 503, description = "The gateway did not answer", body = ErrorBody),
    ))]
pub async fn live(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, channel)): Path<(String, u32)>,
) -> ApiResult<Response> {
    let (session, _) = ssh_sessions::one(&state, &caller, &id).await?;
    let not_live = || ApiError::not_found("this channel is not being recorded now");
    if !session.channels.iter().any(|c| c.channel == channel && c.recording_now) {
        return Err(not_live());
    }
    let gateway = state.gateway.get().ok_or_else(not_live)?;
    let response = match gateway.live(&id, channel).await {
        Ok(Some(response)) => response,
        Ok(None) => return Err(not_live()),
        Err(error) => {
            tracing::error!(%error, "the gateway did not stream a live recording");
            return Err(ApiError::unavailable("the SSH gateway did not answer; try again in a moment"));
        }
    };
    let lines = lines(response.bytes_stream());
    let events = lines
        .map(|line| Ok::<_, std::convert::Infallible>(Event::default().data(line)))
        .chain(futures::stream::once(async { Ok(Event::default().event("done").data("")) }));
    Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
}

/// The lines of a newline-delimited byte stream (a line cut across chunks is whole).
fn lines(
    bytes: impl futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Send + 'static,
) -> impl futures::Stream<Item = String> + Send {
    futures::stream::unfold(
        (Box::pin(bytes), Vec::<u8>::new(), false),
        |(mut bytes, mut pending, mut ended)| async move {
            loop {
                if let Some(end) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    let line = String::from_utf8_lossy(&line[..end]).into_owned();
                    return Some((line, (bytes, pending, ended)));
                }
                if ended {
                    return None;
                }
                match bytes.next().await {
                    Some(Ok(chunk)) => pending.extend_from_slice(&chunk),
                    Some(Err(error)) => {
                        tracing::info!(%error, "a live recording's stream from the gateway broke off");
                        ended = true;
                    }
                    None => ended = true,
                }
            }
        },
    )
}

/// Ends an open session: the gateway closes it with a sentence to its user
/// (admins, and the machine's owner).
#[utoipa::path(post, path = "/ssh-sessions/{id}/terminate", tag = "ssh-sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 204, description = "Ended"),
        (status = 403, description = "You may see this session but not end it", body = ErrorBody),
        (status = 404, description = "No such session among yours", body = ErrorBody),
        (status = 409, description = "It has already ended", body = ErrorBody),
        (status = 503, description = "The gateway did not answer", body = ErrorBody),
    ))]
pub async fn terminate(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    ssh_sessions::end(&state, &caller, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
