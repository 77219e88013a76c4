//! SSH sessions as the API and the web UI show them: from the gateways'
//! control API, named by machine and owner (never by the gateway's route),
//! and only to whom may see them: admins see every session, a user the
//! sessions of their own machines.

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::gateway_control::{ControlError, GatewayControl};
use super::state::{AppState, by};
use kite_core::api::{AccessLevel, PLATFORM_NAME};
use kite_ssh::audit::SessionSummary;
use kite_ssh::control::{SessionAnswer, SessionsAnswer};
use kite_ssh::live::LiveSession;
use serde::Serialize;
use utoipa::ToSchema;

/// The most sessions one list shows.
pub const LIST_LIMIT: usize = 200;

/// One SSH session through the gateway.
#[derive(Serialize, ToSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SshSessionView {
    /// The session's id.
    pub id: String,
    /// The machine it went to.
    pub machine: String,
    /// The username of the machine's owner.
    pub owner: String,
    /// The login it signed in with (the machine's sshId).
    pub ssh_id: String,
    /// The client's address.
    pub source: String,
    /// When it signed in (RFC 3339, UTC).
    pub started: String,
    /// When it ended; none while it is open.
    pub ended: Option<String>,
    /// How long it lasted, in seconds, once ended.
    pub seconds: Option<f64>,
    /// Whether it is open now.
    pub live: bool,
    /// Why the gateway ended it, when it did.
    pub end_reason: Option<String>,
    /// Bytes from the user to the machine (closed channels).
    pub bytes_to_machine: u64,
    /// Bytes from the machine to the user (closed channels).
    pub bytes_to_user: u64,
    /// Its channels.
    pub channels: Vec<SshChannelView>,
    /// Whether you may end it: it is open, and you are an admin or the machine's owner.
    pub can_end: bool,
}

/// One channel of a session.
#[derive(Serialize, ToSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SshChannelView {
    /// The channel's number, for its recording.
    pub channel: u32,
    /// `shell`, `exec`, `subsystem`, `session`, `direct-tcpip`, `forwarded-tcpip` or `agent`.
    pub kind: String,
    /// The command, the subsystem or the forwarded address.
    pub detail: Option<String>,
    /// Whether it was recorded (replayable).
    pub recorded: bool,
    /// Whether its recording is being written now (watchable).
    pub recording_now: bool,
}

/// The sessions a caller may see, and what the platform records.
#[derive(Serialize, ToSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SshSessionsEnvelope {
    /// Whether shell and command sessions are recorded.
    pub recording: bool,
    /// Whether what users type is recorded too.
    pub recording_input: bool,
    /// The sessions, open ones first, then newest first.
    pub sessions: Vec<SshSessionView>,
}

/// The gateways' control API, or a 503 that says why there is none.
fn gateway(state: &AppState) -> ApiResult<&GatewayControl> {
    state.gateway.get().ok_or_else(|| {
        ApiError::unavailable("SSH sessions cannot be shown: this API was started without the gateway's address")
    })
}

/// The sentence for a gateway that did not answer (the detail goes to the log).
fn unreachable(error: ControlError) -> ApiError {
    tracing::error!(%error, "the gateways' control API did not answer");
    ApiError::unavailable("the SSH gateway did not answer; try again in a moment")
}

/// `namespace/name` of a route, if it is one.
fn split(route: &str) -> Option<(&str, &str)> {
    route.split_once('/')
}

/// Whether `caller` may see sessions of `route`.
pub fn may_see(caller: &Caller, route: &str) -> bool {
    caller.level() >= AccessLevel::Admin || split(route).is_some_and(|(namespace, _)| namespace == caller.namespace())
}

/// Whether `caller` may end sessions of `route`: admins, and the machine's
/// owner when their level lets them act on it.
pub fn may_end(caller: &Caller, route: &str) -> bool {
    caller.level() >= AccessLevel::Admin || (may_see(caller, route) && caller.level() >= AccessLevel::User)
}

/// What the platform records, from its settings.
fn recording(state: &AppState) -> (bool, bool) {
    let spec = state.platform.get(PLATFORM_NAME).map(|p| p.spec.session_recording.clone()).unwrap_or_default();
    (spec.record.records(), spec.record.records_input())
}

fn owner(state: &AppState, namespace: &str) -> String {
    state.users.find(by::NAMESPACE, namespace).first().map(|user| user.spec.username.clone()).unwrap_or_default()
}

fn view(
    state: &AppState,
    caller: &Caller,
    kept: Option<&SessionSummary>,
    live: Option<&LiveSession>,
) -> Option<SshSessionView> {
    let route = live.map(|l| l.route.as_str()).or(kept.map(|k| k.route.as_str()))?;
    if !may_see(caller, route) {
        return None;
    }
    let (namespace, machine) = split(route)?;
    let recording_now: &[u32] = live.map(|l| l.recording.as_slice()).unwrap_or_default();
    let mut channels: Vec<SshChannelView> = kept
        .map(|k| k.channels.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|c| SshChannelView {
            channel: c.channel,
            kind: c.kind.clone(),
            detail: c.detail.clone(),
            recorded: c.recorded,
            recording_now: recording_now.contains(&c.channel),
        })
        .collect();
    for channel in recording_now {
        if !channels.iter().any(|c| c.channel == *channel) {
            channels.push(SshChannelView {
                channel: *channel,
                kind: "session".into(),
                detail: None,
                recorded: true,
                recording_now: true,
            });
        }
    }
    let (id, ssh_id, source, started) = match (live, kept) {
        (Some(l), _) => (l.connection.clone(), l.ssh_id.clone(), l.source.to_string(), l.started.clone()),
        (None, Some(k)) => (k.connection.clone(), k.ssh_id.clone(), k.source.to_string(), k.started.clone()),
        (None, None) => return None,
    };
    Some(SshSessionView {
        id,
        machine: machine.to_string(),
        owner: owner(state, namespace),
        ssh_id,
        source,
        started,
        ended: if live.is_some() { None } else { kept.and_then(|k| k.ended.clone()) },
        seconds: if live.is_some() { None } else { kept.and_then(|k| k.seconds) },
        live: live.is_some(),
        end_reason: kept.and_then(|k| k.end_reason.clone()),
        bytes_to_machine: kept.map_or(0, |k| k.bytes_to_machine),
        bytes_to_user: kept.map_or(0, |k| k.bytes_to_user),
        channels,
        can_end: live.is_some() && may_end(caller, route),
    })
}

/// The sessions `caller` may see; of one machine of theirs when `machine` is given.
pub async fn list(
    state: &AppState,
    caller: &Caller,
    machine: Option<&str>,
    limit: usize,
) -> ApiResult<SshSessionsEnvelope> {
    let (recording, recording_input) = recording(state);
    let routes: Option<Vec<String>> = match machine {
        Some(machine) => Some(vec![format!("{}/{machine}", caller.namespace())]),
        None if caller.level() >= AccessLevel::Admin => None,
        None => Some(
            state
                .vms
                .find(by::NAMESPACE, caller.namespace())
                .iter()
                .filter_map(|vm| vm.metadata.name.as_ref().map(|name| format!("{}/{name}", caller.namespace())))
                .collect(),
        ),
    };
    if routes.as_ref().is_some_and(|routes| routes.is_empty()) {
        return Ok(SshSessionsEnvelope { recording, recording_input, sessions: Vec::new() });
    }
    let answer: SessionsAnswer =
        gateway(state)?.sessions(routes.as_deref(), limit.min(LIST_LIMIT)).await.map_err(unreachable)?;
    let mut sessions: Vec<SshSessionView> = Vec::new();
    for live in &answer.live {
        let kept = answer.recent.iter().find(|k| k.connection == live.connection);
        sessions.extend(view(state, caller, kept, Some(live)));
    }
    for kept in &answer.recent {
        if answer.live.iter().any(|l| l.connection == kept.connection) {
            continue;
        }
        // A session the store saw begin but never end, and no gateway carries now: its gateway stopped without telling.
        let mut shown = view(state, caller, Some(kept), None);
        if let Some(shown) = shown.as_mut()
            && kept.ended.is_none()
        {
            shown.end_reason = Some("its gateway stopped before the session ended".into());
        }
        sessions.extend(shown);
    }
    Ok(SshSessionsEnvelope { recording, recording_input, sessions })
}

/// One session `caller` may see, with its route; 404 otherwise (the same
/// answer whether it does not exist or is not theirs).
pub async fn one(state: &AppState, caller: &Caller, id: &str) -> ApiResult<(SshSessionView, String)> {
    let not_found = || ApiError::not_found("there is no such SSH session among those you may see");
    if !kite_ssh::audit::is_connection_id(id) {
        return Err(not_found());
    }
    let answer: SessionAnswer = gateway(state)?.session(id).await.map_err(unreachable)?.ok_or_else(not_found)?;
    let route = answer.route().map(str::to_string).ok_or_else(not_found)?;
    let view = view(state, caller, answer.kept.as_ref(), answer.live.as_ref()).ok_or_else(not_found)?;
    Ok((view, route))
}

/// A session's kept recording, for `caller`.
pub async fn recording_of(state: &AppState, caller: &Caller, id: &str, channel: u32) -> ApiResult<Vec<u8>> {
    let (session, _) = one(state, caller, id).await?;
    if !session.channels.iter().any(|c| c.channel == channel && c.recorded) {
        return Err(ApiError::not_found("this channel of the session was not recorded"));
    }
    gateway(state)?
        .recording(id, channel)
        .await
        .map_err(unreachable)?
        .ok_or_else(|| ApiError::not_found("this recording is not kept any more, or is still being written elsewhere"))
}

/// Ends a session `caller` may end.
pub async fn end(state: &AppState, caller: &Caller, id: &str) -> ApiResult<()> {
    let (session, route) = one(state, caller, id).await?;
    if !may_end(caller, &route) {
        return Err(ApiError::forbidden("only an admin or the machine's owner may end its sessions"));
    }
    if !session.live {
        return Err(ApiError::conflict("this session has already ended"));
    }
    let who = if caller.level() >= AccessLevel::Admin { "an admin" } else { "the machine's owner" };
    let request = kite_ssh::control::Terminate {
        message: format!("This session was ended by {who} from Kite's web page."),
        reason: format!("ended by {} ({who}) through the web UI", caller.user.spec.username),
    };
    tracing::info!(session = id, by = caller.name(), "ending an SSH session");
    match gateway(state)?.terminate(id, &request).await.map_err(unreachable)? {
        true => Ok(()),
        false => Err(ApiError::conflict("this session has already ended")),
    }
}
