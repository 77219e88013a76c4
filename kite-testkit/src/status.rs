//! Errors as the API server sends them: a `metav1.Status` with the real
//! reason and code.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

/// One cause of an `Invalid` error: the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// The machine-readable reason, for example `FieldValueInvalid`.
    pub reason: String,
    /// A sentence about the problem.
    pub message: String,
    /// The field path, for example `spec.cpu`.
    pub field: String,
}

impl Cause {
    /// A `FieldValueInvalid` cause.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { reason: "FieldValueInvalid".into(), message: message.into(), field: field.into() }
    }
}

/// An error answered as a `metav1.Status`.
#[derive(Clone, Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub code: StatusCode,
    /// The Status reason, for example `NotFound`.
    pub reason: String,
    /// The Status message.
    pub message: String,
    /// `details`, when there are any.
    pub details: Option<Value>,
}

impl ApiError {
    /// An error with no details.
    pub fn new(code: StatusCode, reason: &str, message: impl Into<String>) -> Self {
        Self { code, reason: reason.into(), message: message.into(), details: None }
    }

    /// `404 NotFound`: `<resource> "<name>" not found`.
    pub fn not_found(qualified_plural: &str, name: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NotFound", format!("{qualified_plural} \"{name}\" not found"))
            .with_details(json!({"name": name, "kind": kind_of(qualified_plural), "group": group_of(qualified_plural)}))
    }

    /// `409 AlreadyExists`.
    pub fn already_exists(qualified_plural: &str, name: &str) -> Self {
        Self::new(StatusCode::CONFLICT, "AlreadyExists", format!("{qualified_plural} \"{name}\" already exists"))
            .with_details(json!({"name": name, "kind": kind_of(qualified_plural), "group": group_of(qualified_plural)}))
    }

    /// `409 Conflict` for a stale `resourceVersion`.
    pub fn conflict(qualified_plural: &str, name: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {qualified_plural} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again"
            ),
        )
        .with_details(json!({"name": name, "kind": kind_of(qualified_plural), "group": group_of(qualified_plural)}))
    }

    /// `422 Invalid`, with a cause per field.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: Vec<Cause>) -> Self {
        let qualified = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        let summary: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        let message = format!("{qualified} \"{name}\" is invalid: {}", summary.join(", "));
        let causes: Vec<Value> =
            causes.iter().map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field})).collect();
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", message)
            .with_details(json!({"name": name, "group": group, "kind": kind, "causes": causes}))
    }

    /// `400 BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    /// `403 Forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "Forbidden", message)
    }

    /// `405 MethodNotAllowed`.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", message)
    }

    /// `410 Expired`: a watch or list from a resourceVersion that is gone.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, "Expired", message)
    }

    /// `415 UnsupportedMediaType`.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type:?})"
            ),
        )
    }

    /// Adds `details`.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code.as_u16()
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

fn kind_of(qualified_plural: &str) -> &str {
    qualified_plural.split('.').next().unwrap_or(qualified_plural)
}

fn group_of(qualified_plural: &str) -> &str {
    qualified_plural.split_once('.').map(|(_, g)| g).unwrap_or("")
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.code, [(http::header::CONTENT_TYPE, "application/json")], self.to_status().to_string()).into_response()
    }
}
