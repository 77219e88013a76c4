//! `kite-fake-apiserver`: serves kite-testkit's API server on loopback and
//! writes a kubeconfig for it, for `kubectl` and for manual testing.

use clap::Parser;
use kite_testkit::rbac::AuthorizationMode;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// An in-memory Kubernetes API server for tests, with simulated workloads (Deployments run pods that run nothing). Plain HTTP, or HTTPS with RBAC; state in memory only.
#[derive(Parser, Debug)]
#[command(name = "kite-fake-apiserver", version, about)]
struct Args {
    /// Where to listen. Keep it on loopback: it is a test server.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where to write a kubeconfig that points at the server.
    #[arg(long)]
    kubeconfig_out: PathBuf,
    /// Also install the KubeVirt, CDI and Longhorn CRDs and run the simulated KubeVirt/CDI runtime.
    #[arg(long)]
    simulate: bool,
    /// How requests are authorized: `AlwaysAllow` (plain HTTP, no credentials
    /// needed), or `RBAC` (HTTPS with a CA made at start; client certificates
    /// and bearer tokens authenticate, the cluster's roles authorize; the
    /// kubeconfig written is the admin's, with a client certificate).
    #[arg(long, value_enum, default_value = "always-allow")]
    authorization_mode: AuthorizationMode,
    /// An image that cannot be pulled: pods of it stay `ImagePullBackOff` (repeatable).
    #[arg(long = "missing-image", value_name = "IMAGE")]
    missing_images: Vec<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kite-fake-apiserver: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), kite_testkit::Error> {
    let server = kite_testkit::FakeApiServer::builder().authorization(args.authorization_mode).build()?;
    let _simulation = if args.simulate { Some(kite_testkit::sim::start(&server, Default::default())?) } else { None };
    // Workloads always run, as on a cluster: Deployments get pods, Services endpoints.
    let workloads =
        kite_testkit::sim::workloads::WorkloadConfig { missing_images: args.missing_images, ..Default::default() };
    let _workloads = kite_testkit::sim::workloads::start(&server, workloads)?;
    // With RBAC, HTTPS and an admin kubeconfig with a client certificate, as
    // kubeadm writes it: client-go sends no credentials over plain HTTP.
    let (address, scheme) = match args.authorization_mode {
        AuthorizationMode::Rbac => {
            let address = server.listen_tls(args.listen).await?;
            let kubeconfig = server.admin_kubeconfig(address)?;
            kite_testkit::kubeconfig::write_text(&args.kubeconfig_out, &kubeconfig)?;
            (address, "https")
        }
        AuthorizationMode::AlwaysAllow => {
            let address = server.listen(args.listen).await?;
            kite_testkit::kubeconfig::write(&args.kubeconfig_out, address)?;
            (address, "http")
        }
    };
    println!("kite-fake-apiserver listening on {scheme}://{address}");
    println!("kubeconfig written to {}", args.kubeconfig_out.display());
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
    Ok(())
}
