//! `kite gateway`: the SSH router with the static backend of a config file.

mod config;

use anyhow::Context;
use kite_ssh::{Router, StaticBackend};
use std::path::Path;

/// Runs the gateway until Ctrl-C.
pub async fn run(config_path: &Path) -> anyhow::Result<()> {
    let config = config::load(config_path)?;
    let backend = StaticBackend::new(config.routes).context("the routes are not usable")?;
    let host_key = kite_ssh::host_key::load_or_generate(&config.host_key)?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let address = listener.local_addr().context("cannot read the listening address")?;
    let router = Router::new(backend, host_key, config.options);
    tracing::info!(%address, "kite gateway listening");
    eprintln!("kite gateway listening on {address}");
    router
        .serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
