//! The gateway's control protocol: what a gateway that embeds the router
//! answers about its sessions, and what a platform's API sends it to end
//! one. These are the wire types only (JSON, camelCase), shared by the
//! server (`kite gateway`'s control API) and its client (`kite api`), so
//! neither imports the other; an embedder can serve or call the same
//! protocol. Built with the feature `control`.
//!
//! | Method and path | Answer |
//! |---|---|
//! | `GET /control/v1/sessions?route=NS/NAME&limit=N` | [`SessionsAnswer`]: live sessions and the newest kept ones, of those routes (all without `route`) |
//! | `GET /control/v1/sessions/{connection}` | [`SessionAnswer`], or 404 |
//! | `GET /control/v1/sessions/{connection}/recordings/{channel}` | the asciicast, or 404 |
//! | `GET /control/v1/sessions/{connection}/recordings/{channel}/live` | the asciicast's lines so far, then each as it is written (newline-delimited), until the recording ends; 404 when it is not live |
//! | `POST /control/v1/sessions/{connection}/terminate` | [`Terminate`] in, 204, or 404 when no such session is open |
//!
//! Every request carries the control token (`Authorization: Bearer …`).

use crate::audit::SessionSummary;
use crate::live::LiveSession;
use serde::{Deserialize, Serialize};

/// The most kept sessions one answer lists.
pub const MAX_LIMIT: usize = 500;

/// What `GET /control/v1/sessions` answers.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionsAnswer {
    /// The sessions open now.
    pub live: Vec<LiveSession>,
    /// The newest sessions the store kept, newest first (open ones included).
    pub recent: Vec<SessionSummary>,
    /// Whether shell and command sessions are recorded.
    pub recording: bool,
}

/// What `GET /control/v1/sessions/{connection}` answers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionAnswer {
    /// The session as it is now, when it is open on this gateway.
    pub live: Option<LiveSession>,
    /// The session as the store kept it.
    pub kept: Option<SessionSummary>,
}

impl SessionAnswer {
    /// The machine the session went to.
    pub fn route(&self) -> Option<&str> {
        self.live.as_ref().map(|live| live.route.as_str()).or(self.kept.as_ref().map(|kept| kept.route.as_str()))
    }
}

/// What `POST …/terminate` takes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Terminate {
    /// What the session's user is told.
    pub message: String,
    /// Why, for the audit (who asked).
    pub reason: String,
}
