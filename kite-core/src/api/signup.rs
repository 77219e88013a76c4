//! `KitePlatform.spec.signup`: who may create an account on the web page,
//! and how fast.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who may sign up, and how many sign-ups the API takes per hour.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignupSpec {
    /// Who may sign up.
    #[serde(default)]
    pub mode: SignupMode,
    /// In `Invited` mode, the emails that may sign up (any case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 10000), inner(length(min = 3, max = 254)))]
    pub invited_emails: Vec<String>,
    /// Sign-ups from one client address (an IPv6 client is its /64) per hour.
    #[serde(default = "default_per_address_per_hour")]
    #[schemars(range(min = 1, max = 10000))]
    pub per_address_per_hour: u32,
    /// Sign-ups per hour from everyone together. Reaching it closes sign-up for an hour.
    #[serde(default = "default_per_hour")]
    #[schemars(range(min = 1, max = 100000))]
    pub per_hour: u32,
}

fn default_per_address_per_hour() -> u32 {
    20
}

fn default_per_hour() -> u32 {
    100
}

impl Default for SignupSpec {
    fn default() -> Self {
        Self {
            mode: SignupMode::default(),
            invited_emails: Vec::new(),
            per_address_per_hour: default_per_address_per_hour(),
            per_hour: default_per_hour(),
        }
    }
}

impl SignupSpec {
    /// Whether `email` may sign up in this mode.
    ///
    /// ```
    /// use kite_core::api::{SignupMode, SignupSpec};
    /// let spec = SignupSpec {
    ///     mode: SignupMode::Invited,
    ///     invited_emails: vec!["Ada@Example.org".into()],
    ///     ..SignupSpec::default()
    /// };
    /// assert!(spec.admits("ada@example.org"));
    /// assert!(!spec.admits("eve@example.org"));
    /// ```
    pub fn admits(&self, email: &str) -> bool {
        match self.mode {
            SignupMode::Open => true,
            SignupMode::Invited => self.invited_emails.iter().any(|invited| invited.trim().eq_ignore_ascii_case(email)),
            SignupMode::Closed => false,
        }
    }
}

/// Who may sign up.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SignupMode {
    /// Anyone who reaches the web page.
    #[default]
    Open,
    /// Only the emails in `invitedEmails`.
    Invited,
    /// Nobody.
    Closed,
}
