//! A JSON body extractor whose refusals are `{"message"}` answers that name
//! the problem: 400 for a body that is not JSON, 422 for a field of the
//! wrong type or a missing one, 415 for a body that is not sent as JSON.

use super::error::ApiError;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;

/// A request body read as JSON into `T`.
pub struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    axum::Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(Body(value)),
            Err(rejection) => Err(refusal(&rejection)),
        }
    }
}

/// The answer for a body that could not be read.
fn refusal(rejection: &JsonRejection) -> ApiError {
    let detail = rejection.body_text();
    let detail = detail
        .strip_prefix("Failed to deserialize the JSON body into the target type: ")
        .or_else(|| detail.strip_prefix("Failed to parse the request body as JSON: "))
        .unwrap_or(&detail)
        .to_string();
    match rejection {
        JsonRejection::JsonDataError(_) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, detail),
        JsonRejection::JsonSyntaxError(_) => ApiError::bad_request(format!("the body is not valid JSON: {detail}")),
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the body as JSON, with the header Content-Type: application/json",
        ),
        _ => ApiError::bad_request("the request body could not be read"),
    }
}
