//! Console tickets: what a browser trades for a console WebSocket.
//!
//! A ticket is a token signed with the session key, told apart from a
//! session token by its audience, that names the user, the machine
//! (namespace and name), the session that asked (a digest of its token) and
//! a random id, and expires [`TICKET_SECONDS`] after it is issued. It is
//! single-use: [`super::redemption`] records its id in the cluster when it is
//! redeemed, so a second use is refused on every replica.

use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::state::AppState;
use kite_core::api::{KiteVirtualMachine, VirtualMachinePhase};
use serde::{Deserialize, Serialize};

/// How long a ticket is valid, in seconds.
pub const TICKET_SECONDS: i64 = 30;

/// The audience of console tickets (session tokens have none).
pub const AUDIENCE: &str = "kite-console";

/// What a ticket says.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct TicketClaims {
    /// Always [`AUDIENCE`].
    pub aud: String,
    /// The `KiteUser` it was issued to.
    pub sub: String,
    /// The machine's namespace.
    pub ns: String,
    /// The machine's name.
    pub vm: String,
    /// The session it was issued in (see [`Caller::session`]).
    pub sid: String,
    /// Expires at (seconds since the epoch).
    pub exp: i64,
    /// Its random id, recorded when it is redeemed.
    pub jti: String,
}

/// A ticket, signed, and when it expires.
pub struct Issued {
    /// The signed ticket.
    pub token: String,
    /// Its claims.
    pub claims: TicketClaims,
}

/// Whether the machine's instance runs now, as its status says.
pub fn running(vm: &KiteVirtualMachine) -> bool {
    vm.status.as_ref().and_then(|s| s.phase) == Some(VirtualMachinePhase::Running)
}

/// Issues a ticket to `caller` for `vm`, which must be Running.
pub fn issue(state: &AppState, caller: &Caller, vm: &KiteVirtualMachine) -> ApiResult<Issued> {
    if !running(vm) {
        return Err(ApiError::conflict(
            "the machine is not running, so its console shows nothing; start it, then open the console",
        ));
    }
    let claims = TicketClaims {
        aud: AUDIENCE.into(),
        sub: caller.name().to_string(),
        ns: vm.metadata.namespace.clone().unwrap_or_default(),
        vm: vm.metadata.name.clone().unwrap_or_default(),
        sid: caller.session.clone(),
        exp: jiff::Timestamp::now().as_second() + TICKET_SECONDS,
        jti: uuid::Uuid::new_v4().simple().to_string(),
    };
    let token = state.sessions.sign(&claims)?;
    Ok(Issued { token, claims })
}

/// The claims of `ticket` when it is valid for `caller` and the machine
/// named `name` in the request's path; a refusal that says why otherwise.
pub fn check(state: &AppState, caller: &Caller, ticket: &str, name: &str) -> ApiResult<TicketClaims> {
    let claims: TicketClaims = state.sessions.verify_for(ticket, AUDIENCE).ok_or_else(|| {
        ApiError::unauthorized(
            "this console ticket is not valid or has expired (they last 30 s); open the console again",
        )
    })?;
    if claims.sub != caller.name() || claims.sid != caller.session {
        return Err(ApiError::forbidden(
            "this console ticket was issued to another session; open the console from this page again",
        ));
    }
    if claims.vm != name {
        return Err(ApiError::forbidden(format!(
            "this console ticket is for another machine, not '{name}'; open this machine's console from its page"
        )));
    }
    Ok(claims)
}
