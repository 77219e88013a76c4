//! Who writes, and how: the [`WriteCtx`] every write carries (the field
//! manager, dry run, `fieldValidation`, the subresource, the warnings, the
//! user admission webhooks are told of). It imports only `identity`.

use crate::identity::{UserInfo, admin};

/// `fieldValidation`: what to do with unknown fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Refuse the request.
    Strict,
    /// Drop them and warn (the server's default).
    Warn,
    /// Drop them.
    Ignore,
}

/// Who writes, and how.
#[derive(Clone, Debug)]
pub struct WriteCtx {
    /// The field manager the write's ownership is recorded for.
    pub manager: String,
    /// Whether the write is only checked, not stored (`dryRun=All`).
    pub dry_run: bool,
    /// What to do with unknown fields.
    pub field_validation: FieldValidation,
    /// The `apiVersion` the object is written in.
    pub api_version: String,
    /// The subresource written (`status`, `scale`), if any.
    pub subresource: Option<String>,
    /// The warnings the answer carries, collected on the way.
    pub warnings: Vec<String>,
    /// Whether the write records its ownership as an Update; an apply has recorded its own.
    pub record_ownership: bool,
    /// Whether admission webhooks see the write: a client's do, the server's own do not.
    pub admit: bool,
    /// Who writes, as admission webhooks are told.
    pub user: UserInfo,
}

impl WriteCtx {
    /// The server's own write (bootstrap, controllers): as the admin, no admission, unknown fields ignored.
    pub fn internal(api_version: &str) -> Self {
        Self {
            manager: "kite-testkit".into(),
            dry_run: false,
            field_validation: FieldValidation::Ignore,
            api_version: api_version.into(),
            subresource: None,
            warnings: Vec::new(),
            record_ownership: true,
            admit: false,
            user: admin(),
        }
    }
}
