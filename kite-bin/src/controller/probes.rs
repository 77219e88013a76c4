//! The controller's HTTP side: `/healthz` (the process answers), `/readyz`
//! (it passed its checks and is leading or standing by), `/metrics`
//! (Prometheus text format, with whether this replica leads).

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The probe state and the metrics registry, shared with the server.
#[derive(Clone)]
pub struct Probes {
    ready: Arc<AtomicBool>,
    leading: Gauge,
    registry: Arc<Mutex<Registry>>,
}

impl Probes {
    /// Probes over `registry`, which also gets `kite_controller_leading`.
    pub fn new(mut registry: Registry) -> Self {
        let leading = Gauge::default();
        registry.register(
            "kite_controller_leading",
            "1 while this replica holds the Lease and reconciles",
            leading.clone(),
        );
        Self { ready: Arc::new(AtomicBool::new(false)), leading, registry: Arc::new(Mutex::new(registry)) }
    }

    /// Says whether `/readyz` answers 200.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Says whether this replica leads.
    pub fn set_leading(&self, leading: bool) {
        self.leading.set(i64::from(leading));
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
