//! The HTTP side of the long-running commands (`kite controller`, `kite
//! gateway --kube`): `/healthz` (the process answers), `/readyz` (it is
//! ready to do its job) and `/metrics` (Prometheus text format).

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The probe state and the metrics registry, shared with the server.
#[derive(Clone)]
pub struct Probes {
    ready: Arc<AtomicBool>,
    registry: Arc<Mutex<Registry>>,
}

impl Probes {
    /// Probes that serve `registry` on `/metrics`; not ready until [`set_ready`](Self::set_ready).
    pub fn new(registry: Registry) -> Self {
        Self { ready: Arc::new(AtomicBool::new(false)), registry: Arc::new(Mutex::new(registry)) }
    }

    /// Says whether `/readyz` answers 200.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Serves the probes on `address` in a background task; returns the bound address.
    pub async fn serve(&self, address: SocketAddr) -> anyhow::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("listening on {address} for /healthz, /readyz and /metrics"))?;
        let bound = listener.local_addr().context("reading the probe address")?;
        let app = Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(readyz))
            .route("/metrics", get(metrics))
            .with_state(self.clone());
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "the probe server stopped");
            }
        });
        Ok(bound)
    }
}

async fn readyz(State(probes): State<Probes>) -> impl IntoResponse {
    match probes.ready.load(Ordering::Relaxed) {
        true => (StatusCode::OK, "ready\n"),
        false => (StatusCode::SERVICE_UNAVAILABLE, "starting\n"),
    }
}

async fn metrics(State(probes): State<Probes>) -> impl IntoResponse {
    let mut text = String::new();
    let encoded = {
        let registry = probes.registry.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        prometheus_client::encoding::text::encode(&mut text, &registry)
    };
    match encoded {
        Ok(()) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
            text,
        )
            .into_response(),
        Err(error) => {
            tracing::error!(%error, "encoding metrics");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}
