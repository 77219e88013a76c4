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
    /// The email of the platform's first admin: while the platform has no
    /// admin, the account that signs up with it becomes one (whatever the
    /// mode), and nobody else may sign up until it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 3, max = 254))]
    pub admin_email: Option<String>,
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
            admin_email: None,
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
        if self.names_admin(email) {
            return true;
        }
        match self.mode {
            SignupMode::Open => true,
            SignupMode::Invited => self.invited_emails.iter().any(|invited| invited.trim().eq_ignore_ascii_case(email)),
            SignupMode::Closed => false,
        }
    }
}

impl SignupSpec {
    /// Whether `email` is the one `adminEmail` names (any case).
    pub fn names_admin(&self, email: &str) -> bool {
        self.admin_email.as_deref().is_some_and(|admin| admin.trim().eq_ignore_ascii_case(email.trim()))
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
