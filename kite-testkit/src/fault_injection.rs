//! Where a request meets the injected faults: it is logged, waits out the
//! injected latency, and fails with the fault that matches it, if any. The
//! resource handlers and the console subresource call it; the faults
//! themselves are in `faults`.

use crate::faults::{Fault, RequestRecord};
use crate::state::Inner;
use crate::status::ApiError;
use http::StatusCode;

/// Logs the request, waits out the injected latency, and fails it if an injected fault matches.
pub(crate) async fn inject_faults(inner: &Inner, record: RequestRecord) -> Result<(), ApiError> {
    let (fault, latency) = {
        let mut faults = inner.faults();
        (faults.on_request(record), faults.latency)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match fault {
        Some(fault) => Err(fault_error(&fault)),
        None => Ok(()),
    }
}

/// The error an injected fault answers with, its reason named as the API server names it.
fn fault_error(fault: &Fault) -> ApiError {
    let code = StatusCode::from_u16(fault.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let reason = match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    };
    ApiError::new(code, reason, fault.message.clone())
}
