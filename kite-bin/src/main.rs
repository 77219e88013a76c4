//! `kite`: the one binary of the Kite platform. The work is in the
//! `kite_bin` library; this sets up logging, parses the command line and
//! turns an error into a sentence and an exit status.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match kite_bin::run(kite_bin::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kite: {error:#}");
            ExitCode::FAILURE
        }
    }
}
