//! The library behind `kite`, the one binary of the Kite platform: the
//! HTTP API and web UI, the controller's and the gateway's wiring, and the
//! command line that picks one.
//!
//! Each component is a subcommand: `kite crds`, `kite manifests`,
//! `kite controller`, `kite gateway`, `kite api`, `kite demo`, and
//! `kite hash-password`; the operator's are `kite install`, `kite upgrade`,
//! `kite uninstall` and `kite doctor` (see [`operate`]).
//! `kite demo` exists only with the `demo` cargo feature (on by default),
//! because it runs the platform on kite-testkit's in-memory API server; a
//! production build (`--no-default-features`) links no kite-testkit.
//!
//! ```no_run
//! use clap::Parser;
//!
//! let cli = kite_bin::Cli::parse_from(["kite", "crds"]);
//! kite_bin::run(cli)?;
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! The HTTP application is public ([`api::state()`] and [`app::app`]), so it
//! can be driven in-process with `tower::ServiceExt::oneshot`, without a
//! listener (see `tests/api_in_process.rs`).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
pub mod app;
mod cluster;
mod controller;
mod crds;
#[cfg(feature = "demo")]
mod demo;
#[cfg(not(feature = "demo"))]
#[path = "demo_unavailable.rs"]
mod demo;
pub mod gateway;
mod hash_password;
pub mod manifests;
mod names;
mod net_arg;
pub mod operate;
mod probes;
mod secret_once;
mod signal;
mod ui;

use clap::{Parser, Subcommand};

/// Kite: self-service virtual machines on Kubernetes, reached over SSH.
#[derive(Parser, Debug)]
#[command(name = "kite", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the four Kite CustomResourceDefinitions as one multi-document YAML stream.
    ///
    /// Apply them with `kite crds | kubectl apply -f -`.
    Crds,
    /// Print Kite's deployment on K3s (CRDs, namespace, RBAC, Deployments, Services, NetworkPolicies) as YAML.
    ///
    /// Apply it with `kite manifests --image … | kubectl apply -f -`.
    Manifests(manifests::ManifestArgs),
    /// Run the whole platform on this machine, in memory, on loopback: the way to try Kite.
    Demo(demo::DemoArgs),
    /// Serve the HTTP API (`/api/v1`) and the web UI.
    Api(app::ApiArgs),
    /// Run the reconcilers: tenants, machines, storage and the gateway's exposure.
    Controller(controller::ControllerArgs),
    /// Run the SSH gateway: with the routes of a TOML file (`--config`), or routing to the cluster's machines (`--kube`).
    Gateway(gateway::GatewayArgs),
    /// Read a password on standard input and print its argon2id hash.
    HashPassword,
    /// Install Kite on a cluster: check it, show the plan, apply it and wait on what it observes.
    Install(operate::install::InstallArgs),
    /// Upgrade an installation to this version of Kite: refuse a downgrade, replace what cannot change in place, wait for each rollout.
    Upgrade(operate::upgrade::UpgradeArgs),
    /// Remove Kite from a cluster: plan, delete in order, wait until each thing is gone.
    Uninstall(operate::uninstall::UninstallArgs),
    /// Check an installation as an operator would by hand, each finding with its fix; non-zero when unhealthy.
    Doctor(operate::doctor::DoctorArgs),
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Runtime::new().map_err(|error| anyhow::anyhow!("cannot start the async runtime: {error}"))
}

/// Runs the subcommand `cli` names to its end.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Crds => crds::print(),
        Command::Manifests(args) => manifests::print(&args),
        Command::HashPassword => hash_password::run(),
        Command::Gateway(args) => runtime().and_then(|r| r.block_on(gateway::run(args))),
        Command::Demo(args) => runtime().and_then(|r| r.block_on(demo::run(args))),
        Command::Api(args) => runtime().and_then(|r| r.block_on(app::run(args))),
        Command::Controller(args) => runtime().and_then(|r| r.block_on(controller::run(args))),
        Command::Install(args) => runtime().and_then(|r| r.block_on(operate::install::run(args))),
        Command::Upgrade(args) => runtime().and_then(|r| r.block_on(operate::upgrade::run(args))),
        Command::Uninstall(args) => runtime().and_then(|r| r.block_on(operate::uninstall::run(args))),
        Command::Doctor(args) => runtime().and_then(|r| r.block_on(operate::doctor::run(args))),
    }
}
