//! How a command reports: lines for people, or one JSON object per event
//! for machines (`--output json`).

use super::plan::{ChangeKind, Check, Outcome, Plan, Step};
use serde_json::json;
use std::io::Write;
use std::time::Duration;

/// The form of a command's output.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Output {
    /// Lines for people.
    #[default]
    Text,
    /// One JSON object per line, one per event.
    Json,
}

impl Output {
    fn emit(self, text: &str, event: serde_json::Value) {
        let mut out = std::io::stdout().lock();
        // A closed standard output (`| head`) must not stop an operation half-way.
        let _ = match self {
            Output::Text => writeln!(out, "{text}"),
            Output::Json => writeln!(out, "{event}"),
        };
        let _ = out.flush();
    }

    /// The checks, for people: one line each, with the fix under it.
    pub fn checks_text(checks: &[Check]) -> String {
        let mut text = String::new();
        for check in checks {
            let mark = match check.outcome {
                Outcome::Ok => "ok  ",
                Outcome::Warn => "WARN",
                Outcome::Fail => "FAIL",
            };
            text.push_str(&format!("  {mark} {}: {}\n", check.name, check.observed));
            if let Some(fix) = &check.fix {
                text.push_str(&format!("       fix: {fix}\n"));
            }
        }
        text
    }

    /// The plan: checks, then numbered steps with their changes and waits.
    pub fn plan(self, plan: &Plan) {
        let mut text = format!("kite {}: checks\n{}", plan.operation, Self::checks_text(&plan.checks));
        if plan.blocked() {
            text.push_str("A check failed: nothing will be changed.\n");
        } else {
            text.push_str(&format!("kite {}: plan\n", plan.operation));
            for (index, step) in plan.steps.iter().enumerate() {
                text.push_str(&format!("  {}. {}\n", index + 1, step.title));
                text.push_str(&changes_text(step));
                if let Some(wait) = &step.wait {
                    text.push_str(&format!("     then wait for {}\n", wait.describe()));
                }
            }
        }
        let steps: Vec<_> =
            plan.steps.iter().map(|s| json!({ "title": s.title, "changes": s.changes, "waitFor": s.wait })).collect();
        let event = json!({ "event": "plan", "operation": plan.operation, "blocked": plan.blocked(),
            "checks": plan.checks, "steps": steps });
        self.emit(text.trim_end(), event);
    }

    /// A step begins.
    pub fn step(self, index: usize, step: &Step) {
        self.emit(
            &format!("[{}] {}", index + 1, step.title),
            json!({ "event": "step", "step": index + 1, "title": step.title }),
        );
    }

    /// What a wait observes now.
    pub fn waiting(self, index: usize, what: &str, now: &str, waited: Duration) {
        self.emit(
            &format!("[{}]   waiting for {what}: {now} ({}s)", index + 1, waited.as_secs()),
            json!({ "event": "waiting", "step": index + 1, "for": what, "observed": now, "seconds": waited.as_secs() }),
        );
    }

    /// Something a step found on its way.
    pub fn note(self, index: usize, note: &str) {
        self.emit(&format!("[{}]   {note}", index + 1), json!({ "event": "note", "step": index + 1, "note": note }));
    }

    /// A step is over, with what it last observed.
    pub fn done(self, index: usize, now: &str, took: Duration) {
        self.emit(
            &format!("[{}]   done: {now} ({}s)", index + 1, took.as_secs()),
            json!({ "event": "done", "step": index + 1, "observed": now, "seconds": took.as_secs() }),
        );
    }

    /// The command completed.
    pub fn finished(self, operation: &str, summary: &str) {
        self.emit(
            &format!("kite {operation}: {summary}"),
            json!({ "event": "finished", "operation": operation, "summary": summary }),
        );
    }
}

fn changes_text(step: &Step) -> String {
    let count = |kind| step.changes.iter().filter(|c| c.change == kind).count();
    let mut text = String::new();
    for change in step.changes.iter().filter(|c| c.change != ChangeKind::Unchanged) {
        let verb = match change.change {
            ChangeKind::Create => "create",
            ChangeKind::Update => "update",
            ChangeKind::Delete => "delete",
            ChangeKind::Keep | ChangeKind::Unchanged => "keep",
        };
        text.push_str(&format!("     {verb} {}\n", change.object));
    }
    let unchanged = count(ChangeKind::Unchanged);
    if unchanged > 0 {
        text.push_str(&format!("     {unchanged} unchanged\n"));
    }
    text
}
