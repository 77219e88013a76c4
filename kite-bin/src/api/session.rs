//! Sessions: a signed token (HS256) naming the user, carried in an
//! `HttpOnly`, `SameSite=Lax` cookie for the browser and accepted as
//! `Authorization: Bearer` for scripts.
//!
//! The token holds only the user's object name, its lifetime and a CSRF
//! secret; the user's level is read again on every request, so a demotion
//! applies at once. The signing key is a Secret in the platform namespace,
//! made once, so restarting the API (or running two replicas) keeps
//! everyone signed in.

use super::error::ApiError;
use axum::http::HeaderMap;
use axum_extra::extract::cookie::{Cookie, SameSite};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;
use rand::RngExt as _;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The cookie that carries the session token (over plain HTTP).
pub const SESSION_COOKIE: &str = "kite_session";
/// The cookie that carries the CSRF token, readable by the page's script (over plain HTTP).
pub const CSRF_COOKIE: &str = "kite_csrf";
/// [`SESSION_COOKIE`] over HTTPS: the `__Host-` prefix makes browsers refuse
/// it unless it is `Secure`, for `/` and for this host only, so a machine's
/// page at `<prefix>.<baseDomain>` cannot set one for the platform.
pub const SECURE_SESSION_COOKIE: &str = "__Host-kite_session";
/// [`CSRF_COOKIE`] over HTTPS.
pub const SECURE_CSRF_COOKIE: &str = "__Host-kite_csrf";

/// The session cookie's name for a request that is (or is not) over HTTPS.
pub fn session_cookie(secure: bool) -> &'static str {
    if secure { SECURE_SESSION_COOKIE } else { SESSION_COOKIE }
}

/// The CSRF cookie's name for a request that is (or is not) over HTTPS.
pub fn csrf_cookie(secure: bool) -> &'static str {
    if secure { SECURE_CSRF_COOKIE } else { CSRF_COOKIE }
}
/// The header a cookie-authenticated write must repeat the CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// The Secret (in the platform namespace) that holds the signing key.
pub const KEY_SECRET: &str = "kite-api-session-key";
const KEY_FIELD: &str = "signingKey";

/// What a session token says.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The `KiteUser` object name.
    pub sub: String,
    /// Issued at (seconds since the epoch).
    pub iat: i64,
    /// Expires at (seconds since the epoch).
    pub exp: i64,
    /// The CSRF secret of this session.
    pub csrf: String,
    /// The user's `sessionGeneration` when this session began: once the user
    /// signs out everywhere or changes the password, the generation grows
    /// and this session is refused.
    #[serde(default)]
    pub generation: u32,
}

/// Issues and checks session tokens.
#[derive(Clone)]
pub struct Sessions {
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// Whether cookies are marked `Secure` whatever the request says.
    pub always_secure: bool,
}

/// A newly issued session.
pub struct Issued {
    /// The signed token.
    pub token: String,
    /// Its claims.
    pub claims: Claims,
}

fn random_token(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    rand::rng().fill(buffer.as_mut_slice());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buffer)
}

impl Sessions {
    /// Sessions signed with `key`.
    pub fn new(key: &[u8], always_secure: bool) -> Result<Self, jsonwebtoken::errors::Error> {
        Ok(Self { encoding: EncodingKey::from_secret(key)?, decoding: DecodingKey::from_secret(key)?, always_secure })
    }

    /// Reads the signing key from its Secret, creating it (with 64 random
    /// bytes) when there is none. Two replicas starting at once agree: the
    /// one whose create loses reads the winner's key.
    pub async fn load_key(client: kube::Client, namespace: &str) -> Result<Vec<u8>, kube::Error> {
        let secrets: Api<Secret> = Api::namespaced(client, namespace);
        for _ in 0..3 {
            if let Some(secret) = secrets.get_opt(KEY_SECRET).await? {
                if let Some(key) = secret.data.as_ref().and_then(|d| d.get(KEY_FIELD)).filter(|k| k.0.len() >= 32) {
                    return Ok(key.0.clone());
                }
                tracing::warn!(secret = KEY_SECRET, "the session key Secret holds no usable key; replacing it");
                secrets.delete(KEY_SECRET, &Default::default()).await?;
            }
            let mut key = vec![0u8; 64];
            rand::rng().fill(key.as_mut_slice());
            let mut secret = Secret::default();
            secret.metadata.name = Some(KEY_SECRET.into());
            secret.metadata.labels = Some(kite_core::labels::owned_labels(kite_core::labels::COMPONENT, "kite-api"));
            secret.data = Some(BTreeMap::from([(KEY_FIELD.to_string(), ByteString(key.clone()))]));
            match secrets.create(&PostParams::default(), &secret).await {
                Ok(_) => return Ok(key),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(error) => return Err(error),
            }
        }
        Err(kube::Error::Api(
            kube::core::Status::failure("the session key Secret kept changing while it was read", "Conflict")
                .with_code(409)
                .boxed(),
        ))
    }

    /// A token for the user named `subject`, of session generation
    /// `generation`, valid for `ttl_minutes`.
    pub fn issue(&self, subject: &str, generation: u32, ttl_minutes: u32) -> Result<Issued, ApiError> {
        let now = jiff::Timestamp::now().as_second();
        let claims = Claims {
            sub: subject.to_string(),
            iat: now,
            exp: now + i64::from(ttl_minutes) * 60,
            csrf: random_token(24),
            generation,
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|error| ApiError::internal("signing a session token", error))?;
        Ok(Issued { token, claims })
    }

    /// The claims of `token`, when its signature holds and it has not expired.
    pub fn verify(&self, token: &str) -> Option<Claims> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "sub"]);
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation).ok().map(|data| data.claims)
    }

    /// Signs `claims` with the session key: for short-lived tokens of another
    /// kind (console tickets), told apart from sessions by their `aud`.
    pub fn sign<T: Serialize>(&self, claims: &T) -> Result<String, ApiError> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .map_err(|error| ApiError::internal("signing a token", error))
    }

    /// The claims of a token [`sign`](Self::sign) made for `audience`, when
    /// its signature holds and it has not expired.
    pub fn verify_for<T: serde::de::DeserializeOwned>(&self, token: &str, audience: &str) -> Option<T> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "sub", "aud"]);
        jsonwebtoken::decode::<T>(token, &self.decoding, &validation).ok().map(|data| data.claims)
    }

    /// Whether cookies for this request are marked `Secure`: always when so
    /// configured, else when a proxy says the client used HTTPS.
    pub fn secure_for(&self, headers: &HeaderMap) -> bool {
        self.always_secure
            || headers
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
    }

    /// The two cookies of a session: the token (`HttpOnly`) and the CSRF token (readable by the page).
    pub fn cookies(&self, issued: &Issued, ttl_minutes: u32, secure: bool) -> [Cookie<'static>; 2] {
        let max_age = time::Duration::minutes(i64::from(ttl_minutes));
        let session = Cookie::build((session_cookie(secure), issued.token.clone()))
            .path("/")
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(secure)
            .max_age(max_age)
            .build();
        let csrf = Cookie::build((csrf_cookie(secure), issued.claims.csrf.clone()))
            .path("/")
            .same_site(SameSite::Strict)
            .secure(secure)
            .max_age(max_age)
            .build();
        [session, csrf]
    }

    /// Cookies that clear the session in the browser.
    pub fn cleared(&self, secure: bool) -> [Cookie<'static>; 2] {
        let clear = |name: &'static str, session: bool| {
            Cookie::build((name, ""))
                .path("/")
                .http_only(session)
                .same_site(if session { SameSite::Lax } else { SameSite::Strict })
                .secure(secure)
                .max_age(time::Duration::ZERO)
                .build()
        };
        [clear(session_cookie(secure), true), clear(csrf_cookie(secure), false)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_verifies_only_with_its_key_and_only_until_it_expires() {
        let sessions = Sessions::new(&[7u8; 64], false).unwrap();
        let issued = sessions.issue("ku-1", 0, 5).unwrap();
        assert_eq!(sessions.verify(&issued.token), Some(issued.claims.clone()));
        assert_eq!(Sessions::new(&[8u8; 64], false).unwrap().verify(&issued.token), None);
        let mut tampered = issued.token.clone();
        tampered.push('x');
        assert_eq!(sessions.verify(&tampered), None);
        let expired = Claims { exp: jiff::Timestamp::now().as_second() - 1, ..issued.claims };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &expired, &sessions.encoding).unwrap();
        assert_eq!(sessions.verify(&token), None);
    }

    #[test]
    fn a_console_ticket_verifies_only_for_its_audience_and_only_until_it_expires() {
        use crate::api::console::ticket::{AUDIENCE, TicketClaims};
        let sessions = Sessions::new(&[7u8; 64], false).unwrap();
        let claims = TicketClaims {
            aud: AUDIENCE.into(),
            sub: "ku-1".into(),
            ns: "kite-user-1".into(),
            vm: "web".into(),
            sid: "00".into(),
            exp: jiff::Timestamp::now().as_second() + 30,
            jti: "j".into(),
        };
        let ticket = sessions.sign(&claims).unwrap();
        assert_eq!(sessions.verify_for::<TicketClaims>(&ticket, AUDIENCE), Some(claims.clone()));
        assert_eq!(sessions.verify(&ticket), None, "a ticket is not a session");
        let session = sessions.issue("ku-1", 0, 5).unwrap();
        assert_eq!(sessions.verify_for::<TicketClaims>(&session.token, AUDIENCE), None, "a session is not a ticket");
        let other = sessions.sign(&TicketClaims { aud: "elsewhere".into(), ..claims.clone() }).unwrap();
        assert_eq!(sessions.verify_for::<TicketClaims>(&other, AUDIENCE), None);
        let expired = sessions.sign(&TicketClaims { exp: jiff::Timestamp::now().as_second() - 1, ..claims }).unwrap();
        assert_eq!(sessions.verify_for::<TicketClaims>(&expired, AUDIENCE), None, "an expired ticket");
    }
}
