//! `kite doctor`: reads what an operator would check by hand and reports
//! each finding with its evidence and the command that fixes it. Exit
//! status 0 only when nothing failed.
//!
//! It checks the Kubernetes version; Kite's CRDs (present, `Established`,
//! the same as this binary's); Kite's Deployments (`Available`, running the
//! image the installation recorded, of this binary's version); the
//! `KitePlatform` (its recorded installation, its golden images, the
//! gateway's exposure); namespaces stuck Terminating and the conditions that
//! say why; APIServices that are not Available; webhook configurations whose
//! Service is gone; failed DataVolumes; and the default StorageClasses.
//! From outside the cluster, as a user meets Kite: `--public-url` answers
//! `/api/v1/health`, `--ssh-address` presents the gateway's host key, and
//! `--probe-machine` signs in to a machine through it with a key.

use super::checks::{self, outside, probe};
use super::plan::{Check, Outcome};
use super::report::Output;
use super::target::ClusterArgs;
use anyhow::bail;
use kube::Client;
use serde_json::json;
use std::path::PathBuf;

/// The options of `kite doctor`.
#[derive(clap::Args, Debug, Clone)]
pub struct DoctorArgs {
    /// Which cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The platform namespace.
    #[arg(long, default_value = "kite")]
    pub namespace: String,
    /// Check from outside that this URL (the UI and API's public address) answers `/api/v1/health`.
    #[arg(long)]
    pub public_url: Option<String>,
    /// Check from outside that this SSH address (`host:port`, as users connect) presents the gateway's host key.
    #[arg(long)]
    pub ssh_address: Option<String>,
    /// With --ssh-address: sign in to the machine with this `sshId`, as its user would, and run a command.
    #[arg(long, requires_all = ["ssh_address", "probe_key"])]
    pub probe_machine: Option<String>,
    /// With --probe-machine: the private key (OpenSSH, unencrypted) whose public half the machine's owner added.
    #[arg(long, requires = "probe_machine")]
    pub probe_key: Option<PathBuf>,
    /// `text` for people, `json` for machines.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// `kite doctor`: observes (every check), judges, and reports; fails when a check failed.
pub async fn run(args: DoctorArgs) -> anyhow::Result<()> {
    let client = args.cluster.connect().await?;
    let checks = observe(&client, &args).await?;
    let verdict = Verdict::of(&checks);
    match args.output {
        Output::Text => println!("{}{}", Output::checks_text(&checks), verdict.summary),
        Output::Json => {
            println!("{}", json!({ "healthy": verdict.failed == 0, "checks": checks, "summary": verdict.summary }))
        }
    }
    if verdict.failed > 0 {
        bail!("the cluster is not healthy: {} checks failed (each with its fix above)", verdict.failed);
    }
    Ok(())
}

/// Every check `args` asks for: inside the cluster, then from outside.
pub async fn observe(client: &Client, args: &DoctorArgs) -> anyhow::Result<Vec<Check>> {
    let mut checks = checks::doctor(client, &args.namespace).await?;
    if let Some(url) = &args.public_url {
        checks.push(outside::public_url(url).await);
    }
    if let Some(address) = &args.ssh_address {
        checks.push(outside::ssh_address(client, &args.namespace, address).await);
        if let (Some(ssh_id), Some(key)) = (&args.probe_machine, &args.probe_key) {
            checks.push(probe::machine_login(address, ssh_id, key).await);
        }
    }
    Ok(checks)
}

/// What the checks add up to.
pub struct Verdict {
    /// How many failed.
    pub failed: usize,
    /// `12 checks: 1 failed, 2 warnings`.
    pub summary: String,
}

impl Verdict {
    /// The verdict on `checks`.
    pub fn of(checks: &[Check]) -> Self {
        let failed = checks.iter().filter(|c| c.outcome == Outcome::Fail).count();
        let warned = checks.iter().filter(|c| c.outcome == Outcome::Warn).count();
        Self { failed, summary: format!("{} checks: {failed} failed, {warned} warnings", checks.len()) }
    }
}
