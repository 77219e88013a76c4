//! `kite api`: the HTTP API under `/api/v1`, with its OpenAPI document at
//! `/api/v1/openapi.json`.
//!
//! The API keeps no state of its own: it writes intent into the Kite custom
//! resources and reads them back from watch-fed caches, so a restart loses
//! nothing. The pieces, one job each:
//!
//! | module | job |
//! |---|---|
//! | [`state`](mod@state) | what handlers share, with the watch-fed caches ([`kite_core::cache`]) |
//! | [`session`] | signed session tokens and their cookies |
//! | [`auth`] | the signed-in [`auth::Caller`], CSRF and same-origin checks |
//! | [`reservation`] | race-free unique names |
//! | [`rate_limit`], [`client_address`] | sign-in attempt limits, and whose address counts |
//! | [`machines`], [`offers`], [`users`] | the services: what creating, changing and claiming a machine means; who may sign up or change a level, and those writes |
//! | [`write_through`] | a write to the cluster whose answer goes into the cache at once |
//! | [`error`], [`error_log`] | the one error answer, and the middleware that logs its cause |
//! | [`validate`] | the rules a field must keep |
//! | [`hashing`] | password hashes, off the async runtime |
//! | [`routes`] | the HTTP handlers, thin: extract, call a service, answer |
//! | [`openapi`] | the document's shared parts |
//!
//! The router that serves it with the web UI, and `kite api` itself, are
//! [`crate::app`], one layer up.

pub mod auth;
pub mod client_address;
pub mod console;
pub mod error;
pub mod error_log;
pub mod gateway_control;
pub mod hashing;
pub mod https;
pub mod json;
pub mod machines;
pub mod models;
pub mod offers;
pub mod openapi;
pub mod rate_limit;
pub mod reservation;
pub mod routes;
pub mod session;
pub mod ssh_keys;
pub mod ssh_sessions;
pub mod state;
pub mod users;
pub mod validate;
pub mod write_through;

use anyhow::Context as _;
use session::Sessions;
use state::AppState;
use std::time::Duration;

/// How `kite api` treats the requests it gets.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Mark cookies `Secure` always.
    pub secure_cookies: bool,
    /// The proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// On a platform without an admin, the first sign-up becomes the admin (trials on loopback only).
    pub first_signup_is_admin: bool,
    /// The gateways' control API, for the sessions pages; without it they say that sessions cannot be shown.
    pub gateway: Option<gateway_control::GatewayControl>,
}

/// Builds the state: loads (or makes) the session key and starts the caches.
pub async fn state(client: kube::Client, namespace: &str, options: Options) -> anyhow::Result<AppState> {
    let key = Sessions::load_key(client.clone(), namespace)
        .await
        .with_context(|| format!("reading the session key Secret in the namespace {namespace}"))?;
    let sessions = Sessions::new(&key, options.secure_cookies).context("reading the session key")?;
    let first_signup_is_admin = options.first_signup_is_admin;
    let state = AppState::new(client, namespace, sessions, options.trusted_proxies, first_signup_is_admin);
    if let Some(gateway) = options.gateway {
        let _ = state.gateway.set(gateway);
    }
    if !state.users.wait_synced(Duration::from_secs(30)).await {
        tracing::warn!("the user cache is not filled after 30 s; the API answers 503 until it is");
    }
    Ok(state)
}

/// The OpenAPI document, as pretty JSON.
pub fn document() -> anyhow::Result<String> {
    routes::api().1.to_pretty_json().context("rendering the OpenAPI document")
}
