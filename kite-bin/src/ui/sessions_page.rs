//! `/sessions`: the SSH sessions a viewer may see (every one for admins,
//! those of their machines for users), open ones updating live, each
//! recorded channel replayable, each open one watchable and endable; and
//! `/sessions/{id}/{channel}`, the player.

use super::layout::{alert, page};
use super::session::{Anyone, Viewer};
use crate::api::auth::Caller;
use crate::api::ssh_sessions::{self, SshSessionView, SshSessionsEnvelope};
use crate::api::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kite_core::api::AccessLevel;
use maud::{Markup, html};

/// The replay page's policy: the player's terminal is WebAssembly, so
/// `wasm-unsafe-eval` (WebAssembly only, not JavaScript `eval`), and it
/// sets its element styles.
pub const PLAYER_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; \
                              img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// `1.5 KiB`, `3.2 MiB`.
fn bytes(count: u64) -> String {
    match count {
        0..1024 => format!("{count} B"),
        1024..1_048_576 => format!("{:.1} KiB", count as f64 / 1024.0),
        _ => format!("{:.1} MiB", count as f64 / 1_048_576.0),
    }
}

/// `2026-12-05 08:00:01 UTC` from an RFC 3339 time.
pub fn when(time: &str) -> String {
    time.parse::<jiff::Timestamp>()
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| time.to_string())
}

fn duration(seconds: f64) -> String {
    let seconds = seconds.max(0.0).round() as u64;
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} min {} s", seconds / 60, seconds % 60),
        _ => format!("{} h {} min", seconds / 3600, (seconds % 3600) / 60),
    }
}

/// What the platform records, in a sentence for the people it concerns.
pub fn recording_notice(recording: bool, input: bool) -> Markup {
    html! {
        @if recording && input {
            p.notice.recording-notice { "Sessions through the SSH gateway are recorded: what the machine shows and what is typed (passwords typed at a prompt included). Recordings are visible to the machine's owner and to admins." }
        } @else if recording {
            p.notice.recording-notice { "Sessions through the SSH gateway are recorded: what the machine shows, not what is typed. Recordings are visible to the machine's owner and to admins." }
        } @else {
            p.hint.recording-notice { "Sessions through the SSH gateway are audited (who signed in, when, from where), not recorded." }
        }
    }
}

fn channels(session: &SshSessionView) -> Markup {
    html! {
        @for channel in &session.channels {
            span.channel {
                (channel.kind)
                @if let Some(detail) = &channel.detail { " " code { (detail) } }
                @if channel.recording_now {
                    " " a href=(format!("/sessions/{}/{}", session.id, channel.channel)) { "Watch" }
                } @else if channel.recorded {
                    " " a href=(format!("/sessions/{}/{}", session.id, channel.channel)) { "Replay" }
                }
            }
        }
    }
}

fn rows(viewer: &Caller, envelope: &SshSessionsEnvelope) -> Markup {
    let admin = viewer.level() >= AccessLevel::Admin;
    html! {
        @if envelope.sessions.is_empty() { tr { td colspan="7" { "No sessions yet." } } }
        @for session in &envelope.sessions {
            tr data-session=(session.id) {
                td { (session.machine) @if admin { br; span.hint { (session.owner) } } }
                td { code { (session.ssh_id) } br; span.hint { (session.source) } }
                td { (when(&session.started)) }
                td {
                    @if session.live { strong.live { "open now" } }
                    @else if let Some(seconds) = session.seconds { (duration(seconds)) }
                    @if let Some(reason) = &session.end_reason { br; span.hint { (reason) } }
                }
                td { "↑ " (bytes(session.bytes_to_machine)) br; "↓ " (bytes(session.bytes_to_user)) }
                td { (channels(session)) }
                td.actions {
                    @if session.can_end {
                        button.danger type="button" data-action=(format!("POST /api/v1/ssh-sessions/{}/terminate", session.id))
                            data-confirm=(format!("End this session on {}? Its user is told it was ended.", session.machine)) { "End" }
                    }
                }
            }
        }
    }
}

fn table(viewer: &Caller, envelope: &SshSessionsEnvelope) -> Markup {
    html! {
        div.scroll {
            table #sessions {
                thead { tr { th { "Machine" } th { "Login" } th { "Started" } th { "Duration" } th { "Bytes" } th { "Channels" } th { "" } } }
                tbody data-live="/fragments/sessions" { (rows(viewer, envelope)) }
            }
        }
    }
}

/// `/sessions`.
pub async fn page_handler(State(state): State<AppState>, Viewer(viewer): Anyone) -> Response {
    match ssh_sessions::list(&state, &viewer, None, ssh_sessions::LIST_LIMIT).await {
        Ok(envelope) => {
            let body = html! {
                h1 { "SSH sessions" }
                (recording_notice(envelope.recording, envelope.recording_input))
                section.card { (table(&viewer, &envelope)) (alert()) }
            };
            page("SSH sessions", Some(&viewer), body).into_response()
        }
        Err(refusal) => {
            let body = html! {
                h1 { "SSH sessions" }
                section.card { p.notice #sessions-unavailable { (refusal.message()) } }
            };
            refusal.carried_by(page("SSH sessions", Some(&viewer), body).into_response())
        }
    }
}

/// `/fragments/sessions`: the rows, for live updates.
pub async fn rows_fragment(State(state): State<AppState>, Viewer(viewer): Anyone) -> Response {
    match ssh_sessions::list(&state, &viewer, None, ssh_sessions::LIST_LIMIT).await {
        Ok(envelope) => rows(&viewer, &envelope).into_response(),
        Err(refusal) => refusal.carried_by(html! { tr { td colspan="7" { (refusal.message()) } } }.into_response()),
    }
}

/// `/sessions/{id}/{channel}`: the recording in asciinema-player, kept or
/// live.
pub async fn player(
    State(state): State<AppState>,
    Viewer(viewer): Anyone,
    Path((id, channel)): Path<(String, u32)>,
) -> Response {
    let session = match ssh_sessions::one(&state, &viewer, &id).await {
        Ok((session, _)) => session,
        Err(refusal) => {
            let body = html! { section.card { h1 { "No such session" } p { (refusal.message()) } a href="/sessions" { "Back to the sessions" } } };
            return refusal
                .carried_by((refusal.status(), page("No such session", Some(&viewer), body)).into_response());
        }
    };
    let Some(recorded) = session.channels.iter().find(|c| c.channel == channel && (c.recorded || c.recording_now))
    else {
        let body = html! { section.card { h1 { "Not recorded" } p { "This channel of the session was not recorded." } a href="/sessions" { "Back to the sessions" } } };
        return (StatusCode::NOT_FOUND, page("Not recorded", Some(&viewer), body)).into_response();
    };
    let (source, live) = match recorded.recording_now {
        true => (format!("/api/v1/ssh-sessions/{id}/recordings/{channel}/live"), true),
        false => (format!("/api/v1/ssh-sessions/{id}/recordings/{channel}"), false),
    };
    let title = format!("{} on {}", recorded.kind, session.machine);
    let body = html! {
        link rel="stylesheet" href="/assets/asciinema-player.css";
        script src="/assets/asciinema-player.min.js" defer {}
        script src="/assets/replay.js" defer {}
        p { a href="/sessions" { "← SSH sessions" } }
        h1 { (title) }
        dl.facts {
            dt { "Login" } dd { code { (session.ssh_id) } " from " (session.source) }
            dt { "Started" } dd { (when(&session.started)) }
            @if let Some(detail) = &recorded.detail { dt { "Command" } dd { code { (detail) } } }
        }
        section.card {
            @if live { p.hint { "Live: what the machine shows now, as it happens." } }
            div #player data-cast=(source) data-cast-live=(live) {}
            p.alert #player-error role="alert" hidden {}
            @if live && session.can_end {
                button.danger type="button" data-action=(format!("POST /api/v1/ssh-sessions/{id}/terminate", id = session.id))
                    data-confirm=(format!("End this session on {}? Its user is told it was ended.", session.machine)) data-then="/sessions" { "End session" }
                (alert())
            }
        }
    };
    let mut response = page(&title, Some(&viewer), body).into_response();
    response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PLAYER_CSP));
    response
}
