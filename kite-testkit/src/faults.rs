//! Fault injection and the request log: what tests use to make the server
//! fail on purpose, and to count what a client asked for.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// The verbs the request counters use, as Kubernetes' audit log names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// Read one object.
    Get,
    /// Read a collection.
    List,
    /// Stream changes.
    Watch,
    /// Create an object.
    Create,
    /// Replace an object (PUT).
    Update,
    /// Patch an object, server-side apply included.
    Patch,
    /// Delete an object or a collection.
    Delete,
}

impl Verb {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }

    /// Whether the verb writes.
    pub fn is_write(self) -> bool {
        matches!(self, Verb::Create | Verb::Update | Verb::Patch | Verb::Delete)
    }
}

/// Makes the next `count` requests that match fail with `code`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// Only requests with this verb; any verb when absent.
    #[serde(default)]
    pub verb: Option<Verb>,
    /// Only requests for this resource (`configmaps`, or `kitevirtualmachines/status`); any when absent.
    #[serde(default)]
    pub resource: Option<String>,
    /// How many requests fail.
    pub count: u32,
    /// The HTTP status they get, for example 500 or 409.
    pub code: u16,
    /// The Status message.
    #[serde(default = "default_fault_message")]
    pub message: String,
}

fn default_fault_message() -> String {
    "injected by kite-testkit".to_string()
}

/// One request the server answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// The verb.
    pub verb: Verb,
    /// The resource, with `/subresource` when there is one.
    pub resource: String,
    /// The namespace, if any.
    pub namespace: Option<String>,
    /// The object's name, if any.
    pub name: Option<String>,
    /// The field manager of a write, if one was given.
    pub field_manager: Option<String>,
    /// Who made it, when the server authenticates (RBAC mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// The fault rules, the latency and the request log.
#[derive(Debug, Default)]
pub struct Faults {
    /// Requests RBAC refused: who was refused what.
    denials: Vec<serde_json::Value>,
    rules: Vec<Fault>,
    /// Added before every resource request is answered.
    pub latency: Duration,
    log: Vec<RequestRecord>,
}

impl Faults {
    /// Adds a rule.
    pub fn add(&mut self, fault: Fault) {
        if fault.count > 0 {
            self.rules.push(fault);
        }
    }

    /// Logs `record`, and returns the fault it triggers, if any.
    pub fn on_request(&mut self, record: RequestRecord) -> Option<Fault> {
        let triggered = self.rules.iter_mut().find(|rule| {
            rule.verb.is_none_or(|v| v == record.verb) && rule.resource.as_ref().is_none_or(|r| *r == record.resource)
        });
        let fault = triggered.map(|rule| {
            rule.count -= 1;
            rule.clone()
        });
        self.rules.retain(|rule| rule.count > 0);
        self.log.push(record);
        fault
    }

    /// The log of every request since the last reset.
    pub fn log(&self) -> &[RequestRecord] {
        &self.log
    }

    /// `"<verb> <resource>"` → count of answered requests, and `"denied
    /// <verb> <resource or path>"` → count of refused ones, since the last reset.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let mut counts = BTreeMap::new();
        for record in &self.log {
            *counts.entry(format!("{} {}", record.verb.as_str(), record.resource)).or_insert(0) += 1;
        }
        for denial in &self.denials {
            let what = denial["path"].as_str().or(denial["resource"].as_str()).unwrap_or_default();
            let what = match denial["subresource"].as_str() {
                Some(sub) => format!("{what}/{sub}"),
                None => what.to_string(),
            };
            let verb = denial["verb"].as_str().unwrap_or_default();
            *counts.entry(format!("denied {verb} {what}")).or_insert(0) += 1;
        }
        counts
    }

    /// Forgets the log (not the rules).
    pub fn reset(&mut self) {
        self.log.clear();
        self.denials.clear();
    }

    /// Records a request RBAC refused.
    pub fn deny(&mut self, denial: serde_json::Value) {
        self.denials.push(denial);
    }

    /// The requests RBAC refused, oldest first: user, verb, group, resource, namespace, name or path.
    pub fn denials(&self) -> &[serde_json::Value] {
        &self.denials
    }
}
