//! `kite`: the one binary of the Kite platform.
//!
//! Each component is a subcommand: `kite crds`, `kite controller`,
//! `kite gateway`, `kite api`, `kite demo` and `kite hash-password`.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod api;
mod cluster;
mod controller;
mod crds;
mod demo;
mod gateway;
mod hash_password;
mod probes;
mod signal;
mod ui;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Kite: self-service virtual machines on Kubernetes, reached over SSH.
#[derive(Parser, Debug)]
#[command(name = "kite", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the four Kite CustomResourceDefinitions as one multi-document YAML stream.
    ///
    /// Apply them with `kite crds | kubectl apply -f -`.
    Crds,
    /// Run the whole platform on this machine, in memory, on loopback: the way to try Kite.
    Demo(demo::DemoArgs),
    /// Serve the HTTP API (`/api/v1`) and the web UI.
    Api(api::ApiArgs),
    /// Run the reconcilers: tenants, machines, storage and the gateway's exposure.
    Controller(controller::ControllerArgs),
    /// Run the SSH gateway: with the routes of a TOML file (`--config`), or routing to the cluster's machines (`--kube`).
    Gateway(gateway::GatewayArgs),
    /// Read a password on standard input and print its argon2id hash.
    HashPassword,
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Runtime::new().map_err(|error| anyhow::anyhow!("cannot start the async runtime: {error}"))
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crds => crds::print(),
        Command::HashPassword => hash_password::run(),
        Command::Gateway(args) => runtime().and_then(|r| r.block_on(gateway::run(args))),
        Command::Demo(args) => runtime().and_then(|r| r.block_on(demo::run(args))),
        Command::Api(args) => runtime().and_then(|r| r.block_on(api::run(args))),
        Command::Controller(args) => runtime().and_then(|r| r.block_on(controller::run(args))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kite: {error:#}");
            ExitCode::FAILURE
        }
    }
}
