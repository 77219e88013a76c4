//! The API's one error type: a status code and a sentence for people.
//!
//! Every error leaves the server as `{"message": "..."}`. Internal details
//! (object names, raw API server errors) go to the log, never to the user:
//! an error keeps them as its [`Cause`], which travels in the response's
//! extensions to [`crate::api::error_log`]'s middleware, and that writes
//! the log line, with the request's method and path, once per answer.

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
    cause: Option<Cause>,
}

/// What the log gets of an error and the user does not: what the server
/// was doing, the underlying error, and how loud the line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// What the server was doing (`"creating a machine"`).
    pub doing: String,
    /// The underlying error, as text.
    pub error: String,
    /// The log level: an answer the server expected (a refusal by the
    /// schema, a lost race) is [`Severity::Expected`], a fault [`Severity::Fault`].
    pub severity: Severity,
}

/// How loud an error's log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The cluster answered as it may (a refusal, a conflict): `info`.
    Expected,
    /// Something is wrong on the server's side: `error`.
    Fault,
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
        Self { status, message: message.into(), retry_after: None, cause: None }
    }

    /// The same answer, with `cause` for the log.
    pub fn because(self, doing: &str, error: impl std::fmt::Display, severity: Severity) -> Self {
        Self { cause: Some(Cause { doing: doing.to_string(), error: error.to_string(), severity }), ..self }
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

    /// 500; what happened is logged when the answer leaves (`doing` says what the server was doing).
    pub fn internal(doing: &str, error: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "something went wrong on our side; try again, or ask an admin")
            .because(doing, error, Severity::Fault)
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The sentence.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What the log gets, when there is more than the sentence.
    pub fn cause(&self) -> Option<&Cause> {
        self.cause.as_ref()
    }

    /// `response` carrying this error's [`Cause`] to the log middleware: for
    /// pages that show the error's sentence in HTML of their own.
    pub fn carried_by(&self, mut response: Response) -> Response {
        if let Some(cause) = &self.cause {
            response.extensions_mut().insert(cause.clone());
        }
        response
    }

    /// Maps an error of the Kubernetes API: a refusal by the CRD schema is a
    /// 422 with the schema's sentence, a lost optimistic-lock race a 409, an
    /// unreachable cluster a 503; anything else is a 500. The API server's
    /// own words go to the log, as the [`Cause`].
    pub fn from_kube(doing: &str, error: kube::Error) -> Self {
        let answer =
            match &error {
                kube::Error::Api(status) if status.code == 422 || status.code == 400 => {
                    Self::new(StatusCode::UNPROCESSABLE_ENTITY, schema_sentence(&status.message))
                }
                kube::Error::Api(status) if status.code == 409 => {
                    Self::conflict("it was changed at the same time by another request; reload and try again")
                }
                kube::Error::Api(status) if status.code == 404 => Self::not_found("it no longer exists"),
                kube::Error::HyperError(_) | kube::Error::Service(_) => {
                    return Self::unavailable("the cluster cannot be reached right now; try again in a moment")
                        .because(doing, error, Severity::Fault);
                }
                _ => return Self::internal(doing, error),
            };
        answer.because(doing, error, Severity::Expected)
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
        if let Some(cause) = self.cause {
            response.extensions_mut().insert(cause);
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
