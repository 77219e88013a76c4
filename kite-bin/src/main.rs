//! `kite`: the one binary of the Kite platform.
//!
//! Each component is a subcommand: `kite crds`, `kite gateway` and
//! `kite hash-password` today; the controller, API and demo come in later
//! steps (see the book).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod crds;
mod gateway;
mod hash_password;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
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
    /// Run the SSH gateway with the routes of a TOML file.
    Gateway {
        /// The configuration file (see the book's chapter on kite-ssh).
        #[arg(long)]
        config: PathBuf,
    },
    /// Read a password on standard input and print its argon2id hash.
    HashPassword,
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
        Command::Gateway { config } => match tokio::runtime::Runtime::new() {
            Ok(runtime) => runtime.block_on(gateway::run(&config)),
            Err(error) => Err(anyhow::anyhow!("cannot start the async runtime: {error}")),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kite: {error:#}");
            ExitCode::FAILURE
        }
    }
}
