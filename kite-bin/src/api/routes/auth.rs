//! `auth/signup`, `auth/login`, `auth/logout`.

use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::json::Body;
use crate::api::models::{PublicUser, UserEnvelope};
use crate::api::state::{AppState, by};
use crate::api::validate;
use crate::api::{rate_limit, users};
use axum::Json;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum_extra::extract::CookieJar;
use kite_core::api::KiteUser;
use kube::ResourceExt;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use utoipa::ToSchema;

/// What signing up takes.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignupRequest {
    /// The name to show.
    pub username: String,
    /// The address to sign in with; unique.
    pub email: String,
    /// At least 8 characters.
    pub password: String,
}

/// What signing in takes.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    /// The address signed up with (any case).
    pub email: String,
    /// The password.
    pub password: String,
}

/// A new session.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionResponse {
    /// A sentence.
    pub message: String,
    /// The session token, for `Authorization: Bearer` (browsers use the cookie instead).
    pub token: String,
    /// The CSRF token a cookie-authenticated write repeats in `X-CSRF-Token`.
    pub csrf_token: String,
    /// Seconds until the session ends.
    pub expires_in: i64,
    /// When the session ends (RFC 3339).
    pub expires_at: String,
    /// The signed-in user.
    pub user: PublicUser,
}

/// Issues a session for `user` and answers with its cookies.
pub(crate) fn start_session(
    state: &AppState,
    headers: &HeaderMap,
    user: &KiteUser,
    message: &str,
) -> ApiResult<(CookieJar, Json<SessionResponse>)> {
    let ttl = state.platform_spec().access_token_ttl_minutes;
    let name = user.metadata.name.as_deref().unwrap_or_default();
    let issued = state.sessions.issue(name, user.spec.session_generation, ttl)?;
    let secure = state.sessions.secure_for(headers);
    let jar = state.sessions.cookies(&issued, ttl, secure).into_iter().fold(CookieJar::new(), CookieJar::add);
    let expires_at = jiff::Timestamp::from_second(issued.claims.exp).map(|t| t.to_string()).unwrap_or_default();
    Ok((
        jar,
        Json(SessionResponse {
            message: message.to_string(),
            token: issued.token,
            csrf_token: issued.claims.csrf,
            expires_in: issued.claims.exp - issued.claims.iat,
            expires_at,
            user: PublicUser::from(user),
        }),
    ))
}

/// Creates an account and signs it in. While the platform has no admin,
/// the account of `KitePlatform.spec.signup.adminEmail` becomes its admin
/// and nobody else may sign up; every other account starts read-only until
/// a manager raises it. (With `--first-signup-is-admin`, as in `kite demo`,
/// the platform's first account is its admin.)
#[utoipa::path(post, path = "/auth/signup", tag = "auth", request_body = SignupRequest,
    responses(
        (status = 201, description = "Created and signed in", body = SessionResponse),
        (status = 403, description = "Sign-up is by invitation or closed and this email is not invited, or the platform's admin has not signed up yet", body = ErrorBody),
        (status = 409, description = "The email or username is taken", body = ErrorBody),
        (status = 422, description = "A field is not valid", body = ErrorBody),
        (status = 429, description = "Too many sign-ups from this address, or from everyone, this hour", body = ErrorBody),
        (status = 503, description = "The server is busy hashing passwords; try again shortly", body = ErrorBody),
    ))]
pub async fn signup(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Body(request): Body<SignupRequest>,
) -> ApiResult<(StatusCode, CookieJar, Json<SessionResponse>)> {
    let username = validate::username(&request.username)?;
    let email = validate::email(&request.email)?;
    validate::password("password", &request.password)?;
    let rules = state.platform_spec().signup;
    let becomes_admin = users::may_sign_up(&rules, state.has_admin(), state.first_signup_is_admin, &email)?;
    let client = crate::api::client_address::client_address(peer.ip(), &headers, &state.trusted_proxies);
    if let Some(wait) = state.signups.refused_for(&rules, client) {
        tracing::warn!(%client, "sign-ups limited");
        let minutes = rate_limit::seconds(wait).div_ceil(60);
        return Err(ApiError::too_many(
            format!("too many sign-ups right now; try again in {minutes} minutes"),
            rate_limit::seconds(wait),
        ));
    }
    let (email_key, username_key) = (email.to_lowercase(), username.to_lowercase());
    if !state.users.find(by::EMAIL, &email_key).is_empty() {
        return Err(ApiError::conflict("an account with this email already exists; sign in instead"));
    }
    if !state.users.find(by::USERNAME, &username_key).is_empty() {
        return Err(ApiError::conflict("this username is taken; choose another"));
    }
    state.signups.count(&rules, client);
    let account = users::Account { username, email, password: request.password, becomes_admin };
    let user = users::create(&state, account).await?;
    tracing::info!(user = %user.name_any(), level = user.spec.access_level.as_u8(), "signed up");
    let (jar, body) = start_session(&state, &headers, &user, "your account is ready")?;
    Ok((StatusCode::CREATED, jar, body))
}

/// Signs in. An unknown email and a wrong password get the same answer,
/// after the same work; attempts are limited per address and per account.
#[utoipa::path(post, path = "/auth/login", tag = "auth", request_body = LoginRequest,
    responses(
        (status = 200, description = "Signed in; the session cookie is set", body = SessionResponse),
        (status = 401, description = "The email or password is not right", body = ErrorBody),
        (status = 429, description = "Too many failed attempts", body = ErrorBody),
        (status = 503, description = "The server is busy checking passwords; try again shortly", body = ErrorBody),
    ))]
pub async fn login(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Body(request): Body<LoginRequest>,
) -> ApiResult<(CookieJar, Json<SessionResponse>)> {
    const NOT_RIGHT: &str = "the email or password is not right";
    // Validated first: a body that cannot name an account is refused before anything is looked up or counted.
    let email_key = validate::email(&request.email).map_err(|_| ApiError::unauthorized(NOT_RIGHT))?.to_lowercase();
    let client = crate::api::client_address::client_address(peer.ip(), &headers, &state.trusted_proxies);
    rate_limit::refuse_while_banned(&state.limits, client, &email_key, "sign-in attempts")?;
    let user = state.users.find(by::EMAIL, &email_key).into_iter().next();
    let stored = user.as_ref().map(|u| u.spec.password.clone());
    let password = request.password.clone();
    let verified = state
        .hashing
        .run(move || match stored {
            Some(hash) => kite_ssh::password::verify(&password, &hash),
            None => {
                kite_ssh::password::verify_dummy(&password);
                false
            }
        })
        .await?;
    let Some(user) = user.filter(|_| verified) else {
        state.limits.record_failure(client, &email_key);
        return Err(ApiError::unauthorized(NOT_RIGHT));
    };
    state.limits.record_success(client, &email_key);
    if user.spec.password.starts_with("$2") {
        upgrade_hash(&state, &user, request.password).await;
    }
    start_session(&state, &headers, &user, "signed in")
}

/// Replaces a bcrypt hash from the existing platform with argon2id, now that the password is known.
async fn upgrade_hash(state: &AppState, user: &KiteUser, password: String) {
    let Some(name) = user.metadata.name.clone() else { return };
    let hash = match state.hashing.hash(password).await {
        Ok(hash) => hash,
        Err(error) => {
            tracing::warn!(cause = ?error.cause(), user = %name, "could not hash a password to upgrade a bcrypt hash");
            return;
        }
    };
    let patch = serde_json::json!({ "spec": { "password": hash } });
    match state.users_write().merge_patch(&name, &patch).await {
        Ok(_) => tracing::info!(user = %name, "upgraded a bcrypt password hash to argon2id"),
        Err(error) => tracing::warn!(%error, user = %name, "could not upgrade a bcrypt password hash"),
    }
}

/// Signs out: clears the session cookies.
#[utoipa::path(post, path = "/auth/logout", tag = "auth",
    responses((status = 200, description = "Signed out", body = crate::api::models::Message)))]
pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> (CookieJar, Json<crate::api::models::Message>) {
    let secure = state.sessions.secure_for(&headers);
    let jar = state.sessions.cleared(secure).into_iter().fold(CookieJar::new(), CookieJar::add);
    (jar, Json(crate::api::models::Message { message: "signed out".into() }))
}

/// The signed-in user.
#[utoipa::path(get, path = "/me", tag = "auth",
    responses(
        (status = 200, body = UserEnvelope),
        (status = 401, description = "Not signed in", body = ErrorBody),
    ))]
pub async fn me(caller: crate::api::auth::Caller) -> Json<UserEnvelope> {
    Json(UserEnvelope { user: PublicUser::from(caller.user.as_ref()) })
}
