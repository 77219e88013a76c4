//! The API's one error type: a status code and a sentence for people.
//!
//! Every error leaves the server as `{"message": "..."}`. Internal details
//! (object names, raw API server errors) go to the log, never to the user.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::borrow::Cow;

/// An error answer: the status and the sentence the user reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    status: StatusCode,
    message: Cow<'static, str>,
    retry_after: Option<u64>,
}

/// The body of every error answer.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong, in a sentence.
    pub message: String,
}

impl ApiError {
    /// An answer with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self { status, message: message.into(), retry_after: None }
    }

    /// 400: the request cannot be read.
    pub fn bad_request(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 422: a field is wrong; the message names it.
    pub fn invalid(field: &str, problem: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, format!("{field}: {problem}"))
    }

    /// 401: no valid session.
    pub fn unauthorized(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, message)
    }

    /// 403: signed in, but not allowed.
    pub fn forbidden(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }

    /// 404: no such thing (or not yours).
    pub fn not_found(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 409: the request conflicts with what exists.
    pub fn conflict(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    /// 429: too many attempts; try again after `seconds`.
    pub fn too_many(message: impl Into<Cow<'static, str>>, seconds: u64) -> Self {
        Self { retry_after: Some(seconds.max(1)), ..Self::new(StatusCode::TOO_MANY_REQUESTS, message) }
    }

    /// 503: the server is busy; try again after `seconds`.
    pub fn busy(message: impl Into<Cow<'static, str>>, seconds: u64) -> Self {
        Self { retry_after: Some(seconds.max(1)), ..Self::new(StatusCode::SERVICE_UNAVAILABLE, message) }
    }

    /// 503: the cluster could not be reached or is not ready.
    pub fn unavailable(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    /// 500, after logging what happened (`doing` says what the server was doing).
    pub fn internal(doing: &str, error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, doing, "request failed");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "something went wrong on our side; try again, or ask an admin")
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The sentence.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Maps an error of the Kubernetes API: a refusal by the CRD schema is a
    /// 422 with the schema's sentence, a lost optimistic-lock race a 409, an
    /// unreachable cluster a 503; anything else is logged and is a 500.
    pub fn from_kube(doing: &str, error: kube::Error) -> Self {
        match &error {
            kube::Error::Api(status) if status.code == 422 || status.code == 400 => {
                tracing::info!(%error, doing, "the API server refused the change");
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, schema_sentence(&status.message))
            }
            kube::Error::Api(status) if status.code == 409 => {
                tracing::info!(%error, doing, "conflict");
                Self::conflict("it was changed at the same time by another request; reload and try again")
            }
            kube::Error::Api(status) if status.code == 404 => {
                tracing::info!(%error, doing, "not found");
                Self::not_found("it no longer exists")
            }
            kube::Error::HyperError(_) | kube::Error::Service(_) => {
                tracing::error!(%error, doing, "the cluster is unreachable");
                Self::unavailable("the cluster cannot be reached right now; try again in a moment")
            }
            _ => Self::internal(doing, error),
        }
    }
}

/// An object the API read lacks what it must have (a name, a namespace): a 500, logged.
impl From<kite_core::Error> for ApiError {
    fn from(error: kite_core::Error) -> Self {
        Self::internal("reading an object", error)
    }
}

/// The part of an API server's validation message that a user can act on.
///
/// `KiteVirtualMachine.hy3ons.github.io "web" is invalid: spec.disk: Invalid
/// value: "string": disk can grow but cannot shrink` becomes `spec.disk: disk
/// can grow but cannot shrink`: the field and the rule's sentence, without
/// the object's internal name.
pub fn schema_sentence(raw: &str) -> String {
    let after_invalid = raw.split_once(" is invalid: ").map_or(raw, |(_, rest)| rest);
    let first = after_invalid.split(", ").next().unwrap_or(after_invalid);
    match first.split_once(": ") {
        Some((field, rest)) => {
            let sentence = rest.rsplit(": ").next().unwrap_or(rest);
            format!("{field}: {sentence}")
        }
        None => first.to_string(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(ErrorBody { message: self.message.into_owned() })).into_response();
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// What handlers return.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_refusal_keeps_the_field_and_the_rule_sentence_only() {
        let raw = r#"KiteVirtualMachine.hy3ons.github.io "web" is invalid: spec.disk: Invalid value: "string": disk can grow but cannot shrink"#;
        assert_eq!(schema_sentence(raw), "spec.disk: disk can grow but cannot shrink");
        assert_eq!(schema_sentence("plain words"), "plain words");
    }
}
