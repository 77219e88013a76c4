//! `kite`: the one binary of the Kite platform.
//!
//! Each component is a subcommand. Today there is `kite crds`; the gateway,
//! controller, API and demo come in later steps (see the book).

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod crds;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crds => crds::print(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kite: {error:#}");
            ExitCode::FAILURE
        }
    }
}
