//! `health` and `config`: what anyone may ask without signing in.

use crate::api::machines::rules::{USER_LEVEL_CPU, USER_LEVEL_DISK, USER_LEVEL_MAX_MACHINES, USER_LEVEL_MEMORY};
use crate::api::models::{ConfigEnvelope, FixedSize, GatewayView, ImageView, PublicConfig};
use crate::api::state::AppState;
use crate::api::validate::{MIN_DISK, RESERVED_PREFIXES};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use kite_core::api::PLATFORM_NAME;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use utoipa::ToSchema;

/// One check of `health`.
#[derive(Serialize, ToSchema)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// `ok` or `failed`.
    pub status: String,
    /// What was seen.
    pub message: String,
}

/// The answer of `health`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `ok` when every check passed, else `degraded`.
    pub status: String,
    /// Each check.
    pub checks: Vec<Check>,
}

/// One cache's state, as its watch left it: read without asking the cluster,
/// so an anonymous caller cannot turn health checks into load on the API server.
fn cache_check<K>(cache: &kite_core::cache::Cache<K>, name: &str) -> Check
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (status, message) = match (cache.is_synced(), cache.failure()) {
        (_, Some(_)) => ("failed", "the watch on the cluster is failing and retrying; see the API's log"),
        (false, None) => ("failed", "still reading the cluster"),
        (true, None) => ("ok", "following the cluster"),
    };
    Check { name: name.into(), status: status.into(), message: message.into() }
}

/// Whether the API can do its job: it answers, and the cache of each Kite
/// custom resource is filled and its watch on the cluster is working. It is
/// answered from the caches' state and asks the cluster nothing.
#[utoipa::path(get, path = "/health", tag = "status",
    responses(
        (status = 200, description = "Every check passed", body = Health),
        (status = 503, description = "A check failed", body = Health),
    ))]
pub async fn health(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let checks = vec![
        Check { name: "api".into(), status: "ok".into(), message: "answering".into() },
        cache_check(&state.users, "kiteusers"),
        cache_check(&state.vms, "kitevirtualmachines"),
        cache_check(&state.offers, "kitevirtualmachineoffers"),
        cache_check(&state.platform, "kiteplatforms"),
    ];
    let healthy = checks.iter().all(|c| c.status == "ok");
    let code = if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, Json(Health { status: if healthy { "ok" } else { "degraded" }.into(), checks }))
}

/// The platform's public settings: the base domain, the SSH gateway, the
/// golden images and the limits a new machine must keep.
#[utoipa::path(get, path = "/config", tag = "status", responses((status = 200, body = ConfigEnvelope)))]
pub async fn config(State(state): State<AppState>) -> Json<ConfigEnvelope> {
    let platform = state.platform.get(PLATFORM_NAME);
    let spec = state.platform_spec();
    let statuses = platform.as_ref().and_then(|p| p.status.clone()).map(|s| s.golden_images).unwrap_or_default();
    let images = spec
        .golden_images
        .iter()
        .map(|image| {
            let status = statuses.iter().find(|s| s.name == image.name);
            ImageView {
                name: image.name.clone(),
                ready: status.is_some_and(|s| s.ready),
                progress: status.and_then(|s| s.progress.clone()),
                size: image.size.0.clone(),
            }
        })
        .collect();
    Json(ConfigEnvelope {
        config: PublicConfig {
            base_domain: spec.base_domain.clone(),
            ssh_gateway: GatewayView::of(&spec, platform.as_deref()),
            images,
            min_disk: MIN_DISK.into(),
            user_level_machine: FixedSize {
                cpu: USER_LEVEL_CPU,
                memory: USER_LEVEL_MEMORY.into(),
                disk: USER_LEVEL_DISK.into(),
            },
            user_level_max_machines: USER_LEVEL_MAX_MACHINES,
            reserved_domain_prefixes: RESERVED_PREFIXES.iter().map(|s| s.to_string()).collect(),
        },
    })
}
