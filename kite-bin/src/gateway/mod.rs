//! `kite gateway`: the SSH router, with the static routes of a config file
//! (`--config`) or with the Kubernetes backend (`--kube`), which routes
//! each login to the `KiteVirtualMachine` whose `sshId` it is.

mod args;
mod config;
pub mod control;
mod kube;
pub mod store;

pub use crate::names::{CONTROL_TOKEN_SECRET, HOST_KEY_SECRET};
pub use args::GatewayArgs;

pub use kube::{control_token_from_secret, host_key_from_secret, random_token};

use anyhow::Context;
use kite_ssh::{Router, StaticBackend};

use std::path::Path;

/// `kite gateway`.
pub async fn run(args: GatewayArgs) -> anyhow::Result<()> {
    match &args.config {
        Some(path) => run_with_config(path).await,
        None => kube::run(args).await,
    }
}

/// Runs the gateway with the routes of `config_path` until Ctrl-C or SIGTERM.
async fn run_with_config(config_path: &Path) -> anyhow::Result<()> {
    let config = config::load(config_path)?;
    let backend = StaticBackend::new(config.routes).context("the routes are not usable")?;
    let host_key = kite_ssh::host_key::load_or_generate(&config.host_key)?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let address = listener.local_addr().context("cannot read the listening address")?;
    let store = match &config.recording {
        Some(config::Recording { store: config::RecordingStore::Dir(dir), spec }) => store::Store::files(dir, spec)
            .with_context(|| format!("cannot keep audit events under {}", dir.display()))?,
        Some(config::Recording { store: config::RecordingStore::S3(settings), spec }) => {
            let bucket = settings.bucket.clone();
            store::Store::s3(settings.clone(), spec)
                .with_context(|| format!("cannot keep audit events in the bucket {bucket}"))?
        }
        None => store::Store::log_only(),
    };
    let store = store::SwitchStore::new(store);
    let router = Router::builder()
        .backend(backend)
        .host_key(host_key)
        .options(config.options)
        .audit(store.clone())
        .build()
        .context("assembling the SSH router")?;
    if let Some(control) = &config.control {
        let token = control_token_from_file(&control.token_file)?;
        let bound = control::Control::new(router.sessions(), store, &token).serve(control.listen).await?;
        tracing::info!(%bound, "the control API listening");
    }
    tracing::info!(%address, "kite gateway listening");
    eprintln!("kite gateway listening on {address}");
    router.serve(listener, crate::signal::shutdown()).await?;
    Ok(())
}

/// The control token in `path`, made (32 random bytes, hexadecimal, readable
/// by the owner only) when the file is missing.
fn control_token_from_file(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(token) if token.trim().len() >= 32 => return Ok(token.trim().to_string()),
        Ok(_) => anyhow::bail!("{} holds no usable control token (32 characters or more)", path.display()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error).with_context(|| format!("cannot read the control token {}", path.display())),
    }
    let token = random_token();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).with_context(|| format!("cannot create the control token {}", path.display()))?;
    std::io::Write::write_all(&mut file, format!("{token}\n").as_bytes())
        .with_context(|| format!("cannot write the control token {}", path.display()))?;
    Ok(token)
}
