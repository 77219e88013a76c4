//! `console`: a machine's serial console in the browser. How tickets and
//! the relay work is in [`crate::api::console`].

use crate::api::auth::{Caller, same_origin};
use crate::api::console::relay::{self, Opened};
use crate::api::console::{redemption, ticket};
use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::machines::{any, own};
use crate::api::state::AppState;
use axum::Json;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use kite_core::api::{AccessLevel, KiteVirtualMachine};
use kite_core::key::key;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// A console ticket, and where to use it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleTicket {
    /// The ticket: single-use, for this session and this machine.
    pub ticket: String,
    /// When it expires (RFC 3339), 30 s after it was issued.
    pub expires_at: String,
    /// The WebSocket path to open with it (relative to this host).
    pub url: String,
}

/// The ticket a console WebSocket is opened with.
#[derive(Deserialize, IntoParams)]
pub struct TicketQuery {
    /// The ticket from `console-ticket`.
    pub ticket: String,
}

fn answer(state: &AppState, caller: &Caller, vm: &KiteVirtualMachine) -> ApiResult<(StatusCode, Json<ConsoleTicket>)> {
    let issued = ticket::issue(state, caller, vm)?;
    let expires_at = jiff::Timestamp::from_second(issued.claims.exp).map(|t| t.to_string()).unwrap_or_default();
    let url = format!("/api/v1/vms/{}/console?ticket={}", issued.claims.vm, issued.token);
    Ok((StatusCode::CREATED, Json(ConsoleTicket { ticket: issued.token, expires_at, url })))
}

/// A ticket to open one of your machines' serial console (level 1 and up;
/// the machine must be Running). Valid once, for 30 s, in this session.
#[utoipa::path(post, path = "/vms/{name}/console-ticket", tag = "vms", params(("name" = String, Path)),
    responses(
        (status = 201, body = ConsoleTicket),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The machine is not running", body = ErrorBody),
    ))]
pub async fn issue(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<(StatusCode, Json<ConsoleTicket>)> {
    caller.require(AccessLevel::User)?;
    let vm = own(&state, &caller, &name)?;
    answer(&state, &caller, &vm)
}

/// A ticket to open any machine's serial console (admins).
#[utoipa::path(post, path = "/admin/vms/{namespace}/{name}/console-ticket", tag = "admin",
    params(("namespace" = String, Path), ("name" = String, Path)),
    responses(
        (status = 201, body = ConsoleTicket),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The machine is not running", body = ErrorBody),
    ))]
pub async fn issue_any(
    State(state): State<AppState>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<ConsoleTicket>)> {
    caller.require(AccessLevel::Admin)?;
    let vm = any(&state, &namespace, &name)?;
    answer(&state, &caller, &vm)
}

/// The machine's serial console, as a WebSocket of raw bytes both ways
/// (binary frames). Needs a ticket from `console-ticket`, the session that
/// asked for it, and, from a browser, this site's `Origin`. Closes with code
/// 4000 and a sentence when the console should end (no input for
/// `consoleIdleSeconds`, a change of level, a deleted account, a stopped machine).
#[utoipa::path(get, path = "/vms/{name}/console", tag = "vms", params(("name" = String, Path), TicketQuery),
    responses(
        (status = 101, description = "Switched to the WebSocket"),
        (status = 400, description = "Not a WebSocket request", body = ErrorBody),
        (status = 401, description = "No session, or the ticket is not valid or has expired", body = ErrorBody),
        (status = 403, description = "Another site, session or machine", body = ErrorBody),
        (status = 409, description = "The ticket was used, or the machine is not running", body = ErrorBody),
    ))]
pub async fn open(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(query): Query<TicketQuery>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    if !same_origin(&headers) {
        return Err(ApiError::forbidden("a console opens only from this site's own pages"));
    }
    let claims = ticket::check(&state, &caller, &query.ticket, &name)?;
    let needed = if claims.ns == caller.namespace() { AccessLevel::User } else { AccessLevel::Admin };
    caller.require(needed)?;
    let vm = state
        .vms
        .get(&key(Some(&claims.ns), &claims.vm))
        .ok_or_else(|| ApiError::not_found(format!("there is no machine named '{name}' any more")))?;
    if !ticket::running(&vm) {
        return Err(ApiError::conflict("the machine is not running; start it, then open the console"));
    }
    let upgrade =
        upgrade.map_err(|r| ApiError::bad_request(format!("the console is a WebSocket: {}", r.body_text())))?;
    redemption::redeem(state.reservations.configmaps(), &claims).await?;
    let opened = Opened {
        user: caller.name().to_string(),
        level: caller.level(),
        generation: caller.user.spec.session_generation,
        namespace: claims.ns,
        name: claims.vm,
    };
    Ok(upgrade.on_upgrade(move |socket| relay::run(state, socket, opened)).into_response())
}
