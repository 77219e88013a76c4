//! `health` and `config`: what anyone may ask without signing in.

use crate::api::machines::rules::{USER_LEVEL_CPU, USER_LEVEL_DISK, USER_LEVEL_MAX_MACHINES, USER_LEVEL_MEMORY};
use crate::api::models::{ConfigEnvelope, FixedSize, GatewayView, ImageView, PublicConfig};
use crate::api::state::AppState;
use crate::api::validate::{MIN_DISK, RESERVED_PREFIXES};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use kite_core::api::{KitePlatform, KiteUser, KiteVirtualMachine, KiteVirtualMachineOffer, PLATFORM_NAME};
use kube::api::ListParams;
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::time::Duration;
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

async fn read_check<K>(client: &kube::Client, name: &str) -> Check
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let api = Api::<K>::all(client.clone());
    let read = tokio::time::timeout(Duration::from_secs(3), api.list_metadata(&ListParams::default().limit(1))).await;
    let (status, message) = match read {
        Ok(Ok(_)) => ("ok", "readable".to_string()),
        Ok(Err(error)) => {
            tracing::warn!(%error, check = name, "health check failed");
            ("failed", "the cluster refused the read; see the API's log".to_string())
        }
        Err(_) => ("failed", "no answer within 3 seconds".to_string()),
    };
    Check { name: name.into(), status: status.into(), message }
}

/// Whether the API can do its job: it answers, its caches are filled, and
/// each Kite custom resource can be read from the cluster.
#[utoipa::path(get, path = "/health", tag = "status",
    responses(
        (status = 200, description = "Every check passed", body = Health),
        (status = 503, description = "A check failed", body = Health),
    ))]
pub async fn health(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let client = &state.client;
    let mut checks = vec![
        Check { name: "api".into(), status: "ok".into(), message: "answering".into() },
        Check {
            name: "caches".into(),
            status: if state.synced() { "ok" } else { "failed" }.into(),
            message: if state.synced() { "filled" } else { "still reading the cluster" }.into(),
        },
    ];
    checks.push(read_check::<KiteUser>(client, "kiteusers").await);
    checks.push(read_check::<KiteVirtualMachine>(client, "kitevirtualmachines").await);
    checks.push(read_check::<KiteVirtualMachineOffer>(client, "kitevirtualmachineoffers").await);
    checks.push(read_check::<KitePlatform>(client, "kiteplatforms").await);
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
