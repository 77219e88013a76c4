//! The OpenAPI document's fixed parts. The paths, bodies and per-endpoint
//! answers come from the handlers' `#[utoipa::path]` attributes; the
//! answers every endpoint can give (a body that is not JSON, no session)
//! and the two ways of authenticating are added here, once.

use utoipa::OpenApi;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};

/// The paths anyone may call without signing in.
pub const PUBLIC_PATHS: &[&str] = &["/health", "/config", "/auth/signup", "/auth/login", "/auth/logout"];

/// The document's header.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Kite API",
        description = "Sign up, get a virtual machine, reach it over SSH. Every error is `{\"message\": ...}`. \
            Browsers authenticate with the session cookie and repeat the CSRF token in `X-CSRF-Token` on writes; \
            scripts send `Authorization: Bearer <token>` with the token of the sign-in answer."
    ),
    servers((url = "/api/v1")),
    tags(
        (name = "status", description = "Health and public settings"),
        (name = "auth", description = "Accounts and sessions"),
        (name = "vms", description = "Your virtual machines"),
        (name = "offers", description = "Machines an admin granted you"),
        (name = "ssh-sessions", description = "SSH sessions through the gateway: who, when, and their recordings (admins: all; users: their machines')"),
        (name = "admin", description = "Users, every machine, offers and settings (managers and admins)"),
    ),
    components(schemas(super::error::ErrorBody))
)]
pub struct Document;

/// `get_vms_name` for `GET /vms/{name}`.
fn operation_id(method: &str, path: &str) -> String {
    let words = path.split(['/', '-', '{', '}']).filter(|w| !w.is_empty());
    std::iter::once(method).chain(words).collect::<Vec<_>>().join("_")
}

/// Adds the security schemes and the answers every endpoint shares, once
/// the handlers' paths are in the document.
pub fn finish(openapi: &mut utoipa::openapi::OpenApi) {
    utoipa::Modify::modify(&CommonAnswers, openapi);
}

struct CommonAnswers;

fn error_answer(description: &str) -> RefOr<utoipa::openapi::Response> {
    ResponseBuilder::new()
        .description(description)
        .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build())
        .build()
        .into()
}

impl utoipa::Modify for CommonAnswers {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
        components.add_security_scheme(
            "cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(super::session::SESSION_COOKIE))),
        );
        let signed_in = vec![
            SecurityRequirement::new("bearer", Vec::<String>::new()),
            SecurityRequirement::new("cookie", Vec::<String>::new()),
        ];
        for (path, item) in openapi.paths.paths.iter_mut() {
            let public = PUBLIC_PATHS.contains(&path.as_str());
            let operations = [
                ("get", &mut item.get),
                ("post", &mut item.post),
                ("put", &mut item.put),
                ("patch", &mut item.patch),
                ("delete", &mut item.delete),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation.as_mut() else { continue };
                // Handlers of different areas share names (`list`); the method and path are unique.
                operation.operation_id = Some(operation_id(method, path));
                let answers = &mut operation.responses.responses;
                // OpenAPI requires a description on every answer.
                for (code, answer) in answers.iter_mut() {
                    if let RefOr::T(answer) = answer
                        && answer.description.is_empty()
                    {
                        let reason = code.parse().ok().and_then(|c| axum::http::StatusCode::from_u16(c).ok());
                        answer.description = reason.and_then(|r| r.canonical_reason()).unwrap_or("Answer").to_string();
                    }
                }
                if operation.request_body.is_some() {
                    answers.entry("400".into()).or_insert_with(|| error_answer("The body is not valid JSON"));
                    answers.entry("415".into()).or_insert_with(|| error_answer("The body is not sent as JSON"));
                    answers.entry("422".into()).or_insert_with(|| error_answer("A field is missing or not valid"));
                }
                if public {
                    operation.security = Some(vec![SecurityRequirement::default()]);
                } else {
                    operation.security = Some(signed_in.clone());
                    answers.entry("401".into()).or_insert_with(|| error_answer("Not signed in, or the session ended"));
                    if operation.request_body.is_some() || path.starts_with("/admin") || path.contains("{name}") {
                        answers.entry("403".into()).or_insert_with(|| {
                            error_answer("Your access level does not allow it, or the CSRF token is missing")
                        });
                    }
                }
            }
        }
    }
}
