//! Carries out a [`Plan`]: shows it, asks (unless `--yes`), then applies
//! each step and waits on what it observes, reporting as it goes.

use super::objects::{self, Kinds};
use super::plan::{Action, Owner, Plan, Wait};
use super::provenance;
use super::report::Output;
use super::stack::act;
use anyhow::{Context, bail};
use kube::Client;
use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, Instant};

/// How a plan is carried out.
#[derive(clap::Args, Debug, Clone)]
pub struct RunOptions {
    /// Show the plan and stop: change nothing.
    #[arg(long)]
    pub plan: bool,
    /// Act without asking for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// `text` for people, `json` for machines (one object per line).
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// How long each wait may take, in seconds, before the command gives up and says what it observed.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
}

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(500);
/// How often a wait that sees no change reports anyway.
const HEARTBEAT: Duration = Duration::from_secs(10);

/// Shows `plan`, then, unless it is blocked or only planned, confirms and carries it out.
pub async fn execute(client: &Client, plan: &Plan, options: &RunOptions) -> anyhow::Result<()> {
    let output = options.output;
    output.plan(plan);
    if plan.blocked() {
        bail!("a check failed, so nothing was changed; the fixes are listed above");
    }
    if options.plan {
        return Ok(());
    }
    if !options.yes {
        confirm(&plan.operation)?;
    }
    let mut kinds = Kinds::default();
    for (index, step) in plan.steps.iter().enumerate() {
        output.step(index, step);
        let started = Instant::now();
        match &step.action {
            Action::Nothing => {}
            Action::Apply(objects) => objects::apply(client, &mut kinds, objects).await?,
            Action::Delete { objects, orphan, owner } => {
                for theirs in objects::delete(client, &mut kinds, objects, *orphan, *owner).await? {
                    output.note(index, &format!("{theirs} is not {}: left alone", owner.possessive()));
                }
            }
            Action::DeleteAll { api_version, kind } => {
                let all = objects::all_of(client, &mut kinds, api_version, kind).await?;
                objects::delete(client, &mut kinds, &all, false, Owner::Kite).await?;
            }
            Action::Release(release) => {
                for note in act::release_finalizer(client, &mut kinds, release).await? {
                    output.note(index, &note);
                }
            }
            Action::RemoveHooks { namespaces, stale_only } => {
                for note in act::remove_hooks(client, namespaces, *stale_only).await? {
                    output.note(index, &note);
                }
            }
            Action::Record { installation, longhorn_namespace } => {
                provenance::record(client, installation, longhorn_namespace).await?
            }
        }
        let now = match &step.wait {
            Some(wait) => wait_for(client, wait, index, options).await?,
            None => "applied".into(),
        };
        output.done(index, &now, started.elapsed());
    }
    Ok(())
}

fn confirm(operation: &str) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        bail!(
            "kite {operation} asks before it changes the cluster: pass --yes to go on without asking, or --plan to only see the plan"
        );
    }
    print!("Carry out this plan? [y/N] ");
    std::io::stdout().flush().context("writing the question")?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer).context("reading the answer")?;
    if !matches!(answer.trim(), "y" | "Y" | "yes") {
        bail!("nothing was changed");
    }
    Ok(())
}

/// Waits until `wait` observes what it waits for, reporting what it sees; gives up after `--timeout` with the last observation.
async fn wait_for(client: &Client, wait: &Wait, index: usize, options: &RunOptions) -> anyhow::Result<String> {
    let what = wait.describe();
    let started = Instant::now();
    let timeout = Duration::from_secs(options.timeout);
    let mut reported: Option<(String, Instant)> = None;
    loop {
        // A read that hangs must not hold the wait past its timeout.
        let left = timeout.saturating_sub(started.elapsed()).max(POLL);
        let now = match tokio::time::timeout(left, wait.observe(client)).await {
            Ok(Ok(observation)) if observation.done => return Ok(observation.now),
            Ok(Ok(observation)) if observation.failed => {
                options.output.waiting(index, &what, &observation.now, started.elapsed());
                bail!(
                    "stopped waiting for {what}: it cannot come. Observed: {}. What to do: {}",
                    observation.now,
                    wait.hint()
                );
            }
            Ok(Ok(observation)) => observation.now,
            // A read that fails is an observation too; the wait goes on until the timeout.
            Ok(Err(error)) => format!("cannot read it: {error:#}"),
            Err(_) => format!("the API server did not answer within {}s", left.as_secs()),
        };
        let due = reported.as_ref().is_none_or(|(last, at)| *last != now || at.elapsed() >= HEARTBEAT);
        if due {
            options.output.waiting(index, &what, &now, started.elapsed());
            reported = Some((now.clone(), Instant::now()));
        }
        if started.elapsed() >= timeout {
            bail!(
                "gave up after {}s waiting for {what}. Last observed: {now}. What to do: {}",
                timeout.as_secs(),
                wait.hint()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}
