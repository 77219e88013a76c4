//! `admin/settings`: the platform's configuration (`KitePlatform`), with
//! what was observed of it.

use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::json::Body;
use crate::api::models::GatewayView;
use crate::api::state::AppState;
use axum::Json;
use axum::extract::State;
use kite_core::api::{AccessLevel, KitePlatform, PLATFORM_NAME, SignupSpec};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The settings admins change, with the gateway's observed state.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// The domain machines are reached under, and the SSH host users are shown.
    pub base_domain: Option<String>,
    /// How long a sign-in lasts, in minutes.
    pub access_token_ttl_minutes: u32,
    /// How long a serial console stays open without input, in seconds.
    pub console_idle_seconds: u32,
    /// The SSH gateway's exposure: desired and observed.
    pub ssh_gateway: GatewayView,
    /// Who may sign up, and how fast: `KitePlatform.spec.signup` (`mode`
    /// `Open`, `Invited` or `Closed`; `invitedEmails`; `perAddressPerHour`; `perHour`).
    #[schema(value_type = Object)]
    pub signup: SignupSpec,
}

/// `{"config": ...}`.
#[derive(Serialize, ToSchema)]
pub struct SettingsEnvelope {
    /// The settings.
    pub config: Settings,
}

/// The SSH gateway's exposure, as admins set it.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GatewayChange {
    /// Whether to expose the gateway outside the cluster (a `LoadBalancer` Service).
    pub external_enabled: Option<bool>,
    /// The Service's port.
    pub external_port: Option<u16>,
    /// The port users connect to, when a router in front forwards another one.
    pub public_port: Option<u16>,
}

/// A change of settings; absent fields are left as they are.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SettingsChange {
    /// A new base domain; `""` clears it.
    pub base_domain: Option<String>,
    /// A new sign-in lifetime, in minutes.
    pub access_token_ttl_minutes: Option<u32>,
    /// A new idle limit of serial consoles, in seconds (5 to 86400).
    pub console_idle_seconds: Option<u32>,
    /// The gateway's exposure.
    pub ssh_gateway: Option<GatewayChange>,
    /// New sign-up rules, replacing the old ones whole (fields left out take their defaults).
    #[schema(value_type = Option<Object>)]
    pub signup: Option<SignupSpec>,
}

fn current(state: &AppState) -> Settings {
    let platform = state.platform.get(PLATFORM_NAME);
    let spec = state.platform_spec();
    Settings {
        base_domain: spec.base_domain.clone(),
        access_token_ttl_minutes: spec.access_token_ttl_minutes,
        console_idle_seconds: spec.console_idle_seconds,
        ssh_gateway: GatewayView::of(&spec, platform.as_deref()),
        signup: spec.signup.clone(),
    }
}

/// The platform's settings (admins).
#[utoipa::path(get, path = "/admin/settings", tag = "admin",
    responses((status = 200, body = SettingsEnvelope), (status = 403, body = ErrorBody)))]
pub async fn get(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<SettingsEnvelope>> {
    caller.require(AccessLevel::Admin)?;
    Ok(Json(SettingsEnvelope { config: current(&state) }))
}

/// Changes the platform's settings (admins): writes `KitePlatform`, which
/// the controller then carries out; its status says what it observed.
#[utoipa::path(patch, path = "/admin/settings", tag = "admin", request_body = SettingsChange,
    responses((status = 200, body = SettingsEnvelope), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Body(change): Body<SettingsChange>,
) -> ApiResult<Json<SettingsEnvelope>> {
    caller.require(AccessLevel::Admin)?;
    let mut spec = serde_json::Map::new();
    if let Some(domain) = &change.base_domain {
        let domain = domain.trim().trim_end_matches('.').to_lowercase();
        spec.insert("baseDomain".into(), if domain.is_empty() { serde_json::Value::Null } else { domain.into() });
    }
    if let Some(ttl) = change.access_token_ttl_minutes {
        spec.insert("accessTokenTtlMinutes".into(), ttl.into());
    }
    if let Some(minutes) = change.console_idle_seconds {
        spec.insert("consoleIdleSeconds".into(), minutes.into());
    }
    if let Some(gateway) = &change.ssh_gateway {
        for (field, port) in [("externalPort", gateway.external_port), ("publicPort", gateway.public_port)] {
            if port == Some(0) {
                return Err(ApiError::invalid(&format!("sshGateway.{field}"), "use a port from 1 to 65535"));
            }
        }
        let mut fields = serde_json::Map::new();
        if let Some(enabled) = gateway.external_enabled {
            fields.insert("externalEnabled".into(), enabled.into());
        }
        if let Some(port) = gateway.external_port {
            fields.insert("externalPort".into(), port.into());
        }
        if let Some(port) = gateway.public_port {
            fields.insert("publicPort".into(), port.into());
        }
        spec.insert("sshGateway".into(), fields.into());
    }
    if let Some(signup) = &change.signup {
        let rules = serde_json::to_value(signup).map_err(|error| ApiError::invalid("signup", error))?;
        spec.insert("signup".into(), rules);
    }
    let platforms = state.platform_write();
    if state.platform.get(PLATFORM_NAME).is_some() {
        let patch = serde_json::json!({ "spec": spec });
        platforms.merge_patch(PLATFORM_NAME, &patch).await
    } else {
        let mut object = serde_json::json!({ "apiVersion": "hy3ons.github.io/v1", "kind": "KitePlatform", "metadata": { "name": PLATFORM_NAME }, "spec": spec });
        if let Some(map) = object["spec"].as_object_mut() {
            map.retain(|_, v| !v.is_null());
        }
        let platform: KitePlatform = serde_json::from_value(object).map_err(|error| ApiError::invalid("settings", error))?;
        platforms.create(&platform).await
    }
    .map_err(|error| ApiError::from_kube("changing the settings", error))?;
    tracing::info!(by = caller.name(), "settings changed");
    Ok(Json(SettingsEnvelope { config: current(&state) }))
}
