//! Who is asking: the [`Caller`] extractor and the cross-site checks.
//!
//! A request is authenticated by its `Authorization: Bearer` token or, from
//! a browser, by the session cookie. The user's level is read from the
//! cache on every request, never from the token, so a change of level or
//! the deletion of the account applies at once. A write authenticated by
//! the cookie must repeat the session's CSRF token in `X-CSRF-Token`. A
//! session from before the user's last "sign out everywhere" or change of
//! password (an older `sessionGeneration`) is refused.

use super::error::ApiError;
use super::session::{CSRF_HEADER, session_cookie};
use super::state::AppState;
use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::Response;
use axum_extra::extract::CookieJar;
use kite_core::api::{AccessLevel, KiteUser};
use std::sync::Arc;

/// How a request proved who it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Credential {
    /// The session cookie (a browser).
    Cookie,
    /// An `Authorization: Bearer` token (a script).
    Bearer,
}

/// The signed-in user making a request.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The user, as the cache holds it now.
    pub user: Arc<KiteUser>,
    /// Which session this is: a digest of its token (never the token), so
    /// what is bound to one session (a console ticket) can be checked.
    pub session: String,
}

/// A sentence naming a level, for refusals.
pub fn level_name(level: AccessLevel) -> &'static str {
    match level {
        AccessLevel::ReadOnly => "read-only",
        AccessLevel::User => "user",
        AccessLevel::Manager => "manager",
        AccessLevel::Admin => "admin",
    }
}

impl Caller {
    /// The caller's object name.
    pub fn name(&self) -> &str {
        self.user.metadata.name.as_deref().unwrap_or_default()
    }

    /// The caller's current level.
    pub fn level(&self) -> AccessLevel {
        self.user.spec.access_level
    }

    /// The namespace of the caller's machines.
    pub fn namespace(&self) -> &str {
        &self.user.spec.namespace
    }

    /// `Ok` when the caller's level is at least `needed`; otherwise a 403 that says what is needed.
    pub fn require(&self, needed: AccessLevel) -> Result<(), ApiError> {
        if self.level() >= needed {
            return Ok(());
        }
        Err(ApiError::forbidden(format!(
            "this needs the {} access level or higher, and your account is {}; ask an admin",
            level_name(needed),
            level_name(self.level())
        )))
    }
}

fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim())
}

/// The id of the session `token` carries: the first 16 bytes of its SHA-256, in hex.
fn session_id(token: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(token.as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let jar = CookieJar::from_headers(&parts.headers);
        let (token, credential) = match bearer(parts) {
            Some(token) => (token.to_string(), Credential::Bearer),
            // Over HTTPS only the `__Host-` cookie is read: a plain one may have been set by a machine's domain.
            None => match jar.get(session_cookie(state.sessions.secure_for(&parts.headers))) {
                Some(cookie) if !cookie.value().is_empty() => (cookie.value().to_string(), Credential::Cookie),
                _ => return Err(ApiError::unauthorized("sign in first")),
            },
        };
        let claims = state
            .sessions
            .verify(&token)
            .ok_or_else(|| ApiError::unauthorized("your session has expired or is not valid; sign in again"))?;
        if credential == Credential::Cookie && is_write(&parts.method) {
            let sent = parts.headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
            if sent != Some(claims.csrf.as_str()) {
                return Err(ApiError::forbidden(
                    "this request is missing its CSRF token (the X-CSRF-Token header); reload the page and try again",
                ));
            }
        }
        let user = state
            .users
            .get(&claims.sub)
            .ok_or_else(|| ApiError::unauthorized("your account no longer exists; sign up again or ask an admin"))?;
        if claims.generation < user.spec.session_generation {
            return Err(ApiError::unauthorized(
                "this session was signed out (everywhere, or by a change of password); sign in again",
            ));
        }
        Ok(Caller { user, session: session_id(&token) })
    }
}

/// Refuses a write whose `Origin` is another site (a cross-site form or
/// script); requests without `Origin` (scripts, old browsers) pass, and the
/// CSRF token still protects cookie-authenticated ones.
pub async fn same_origin_writes(request: Request, next: Next) -> Result<Response, ApiError> {
    if is_write(request.method()) && !same_origin(request.headers()) {
        return Err(ApiError::forbidden("requests from other sites cannot change anything here"));
    }
    Ok(next.run(request).await)
}

/// Whether a request comes from this site: it has no `Origin` (a script, an
/// old browser), or its `Origin` names the host it was sent to.
pub fn same_origin(headers: &axum::http::HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else { return true };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    let same = origin != "null" && origin_host.eq_ignore_ascii_case(host);
    if !same {
        tracing::info!(origin, host, "refused a cross-site request");
    }
    same
}
