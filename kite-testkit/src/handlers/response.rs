//! The two answers every handler gives: a JSON body with a status, and the
//! `404` for a path or resource the server does not serve.

use crate::status::ApiError;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::Value;

/// A JSON body with `status`.
pub(super) fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, [(http::header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The answer for a path or resource the server does not serve.
pub(super) fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "NotFound", "the server could not find the requested resource")
}
