//! The test controls under `/testkit/`, for clients that hold no
//! `FakeApiServer`: the request counts and log, fault injection, latency,
//! dropping watches and compacting the event log.

use super::response::json_response;
use crate::faults::Fault;
use crate::state::Inner;
use crate::status::ApiError;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Value, json};

/// Answers `method /testkit/<what>`.
pub(super) fn answer(inner: &Inner, method: &Method, what: &str, body: &Bytes) -> Response {
    let ok = || json_response(StatusCode::OK, &json!({"status": "ok"}));
    match (method.as_str(), what) {
        ("GET", "requests") => json_response(StatusCode::OK, &json!(inner.faults().counts())),
        ("GET", "denials") => json_response(StatusCode::OK, &json!(inner.faults().denials().to_vec())),
        ("GET", "requests/log") => json_response(StatusCode::OK, &json!(inner.faults().log().to_vec())),
        ("DELETE", "requests") => {
            inner.faults().reset();
            ok()
        }
        ("POST", "faults") => match serde_json::from_slice::<Fault>(body) {
            Ok(fault) => {
                inner.faults().add(fault);
                ok()
            }
            Err(error) => {
                ApiError::bad_request(format!("a fault is {{verb?, resource?, count, code, message?}}: {error}"))
                    .into_response()
            }
        },
        ("POST", "latency") => match serde_json::from_slice::<Value>(body).ok().and_then(|v| v["millis"].as_u64()) {
            Some(millis) => {
                inner.faults().latency = std::time::Duration::from_millis(millis);
                ok()
            }
            None => ApiError::bad_request("latency is {\"millis\": N}").into_response(),
        },
        ("POST", "drop-watches") => {
            inner.drop_watches();
            ok()
        }
        ("POST", "compact") => {
            inner.store().compact();
            ok()
        }
        _ => ApiError::new(StatusCode::NOT_FOUND, "NotFound", format!("no test control {method} /testkit/{what}"))
            .into_response(),
    }
}
