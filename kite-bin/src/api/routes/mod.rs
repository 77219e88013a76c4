//! The handlers of `/api/v1`, one module per area, and the router that
//! serves them and documents them in OpenAPI.

pub mod auth;
pub mod status;
pub mod vms;

use super::state::AppState;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The document's fixed parts; the paths come from the handlers.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Kite API",
        description = "Sign up, get a virtual machine, reach it over SSH. Errors are `{\"message\": ...}`. \
            Browsers authenticate with the session cookie and repeat the CSRF token in `X-CSRF-Token` on writes; \
            scripts send `Authorization: Bearer <token>` from the sign-in answer."
    ),
    servers((url = "/api/v1")),
    tags(
        (name = "status", description = "Health and public settings"),
        (name = "auth", description = "Accounts and sessions"),
        (name = "vms", description = "Your virtual machines"),
    ),
    modifiers(&SecuritySchemes)
)]
struct Document;

/// Adds the two ways of authenticating to the document.
struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
        components.add_security_scheme(
            "cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(super::session::SESSION_COOKIE))),
        );
        openapi.security = Some(vec![
            utoipa::openapi::security::SecurityRequirement::new("bearer", Vec::<String>::new()),
            utoipa::openapi::security::SecurityRequirement::new("cookie", Vec::<String>::new()),
        ]);
    }
}

/// The `/api/v1` routes (relative to it) and their OpenAPI document.
pub fn api() -> (axum::Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(Document::openapi())
        .routes(routes!(status::health))
        .routes(routes!(status::config))
        .routes(routes!(auth::signup))
        .routes(routes!(auth::login))
        .routes(routes!(auth::logout))
        .routes(routes!(auth::me))
        .routes(routes!(vms::list, vms::create))
        .routes(routes!(vms::get, vms::patch, vms::delete))
        .routes(routes!(vms::start))
        .routes(routes!(vms::stop))
        .split_for_parts()
}
