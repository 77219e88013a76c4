//! The handlers of `/api/v1`, one module per area, and the router that
//! serves them and documents them in OpenAPI.

pub mod account;
pub mod admin_machines;
pub mod admin_settings;
pub mod admin_users;
pub mod auth;
pub mod console;
pub mod offers;
pub mod ssh_keys;
pub mod ssh_sessions;
pub mod status;
pub mod vms;

use super::openapi::Document;
use super::state::AppState;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The `/api/v1` routes (relative to it) and their OpenAPI document.
pub fn api() -> (axum::Router<AppState>, utoipa::openapi::OpenApi) {
    let routes = OpenApiRouter::with_openapi(Document::openapi())
        .routes(routes!(status::health))
        .routes(routes!(status::config))
        .routes(routes!(auth::signup))
        .routes(routes!(auth::login))
        .routes(routes!(auth::logout))
        .routes(routes!(auth::me))
        .routes(routes!(account::logout_everywhere))
        .routes(routes!(account::change_password))
        .routes(routes!(ssh_keys::list, ssh_keys::add, ssh_keys::remove))
        .routes(routes!(vms::list, vms::create))
        .routes(routes!(vms::get, vms::patch, vms::delete))
        .routes(routes!(vms::start))
        .routes(routes!(vms::stop))
        .routes(routes!(console::issue))
        .routes(routes!(console::issue_any))
        .routes(routes!(console::open))
        .routes(routes!(ssh_sessions::list))
        .routes(routes!(ssh_sessions::recording))
        .routes(routes!(ssh_sessions::live))
        .routes(routes!(ssh_sessions::terminate))
        .routes(routes!(offers::list))
        .routes(routes!(offers::claim))
        .routes(routes!(admin_users::list))
        .routes(routes!(admin_users::set_level))
        .routes(routes!(admin_users::delete))
        .routes(routes!(admin_machines::list_vms))
        .routes(routes!(admin_machines::power))
        .routes(routes!(admin_machines::delete_vm))
        .routes(routes!(admin_machines::list_offers, admin_machines::create_offer))
        .routes(routes!(admin_machines::delete_offer))
        .routes(routes!(admin_settings::get, admin_settings::update))
        .split_for_parts();
    let (router, mut document) = routes;
    super::openapi::finish(&mut document);
    (router, document)
}
