//! What a user may do, as a closed set of levels.

use schemars::JsonSchema_repr;
use serde_repr::{Deserialize_repr, Serialize_repr};

/// What a [`KiteUser`](super::KiteUser) may do.
///
/// Stored as the integer the existing platform writes (`0` to `3`); the CRD
/// schema accepts only those four values, so a typo cannot grant a level
/// that does not exist.
#[derive(
    Serialize_repr, Deserialize_repr, JsonSchema_repr, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash,
)]
#[repr(u8)]
pub enum AccessLevel {
    /// `0`: may sign in and look at their own machines, and claim offers.
    #[default]
    ReadOnly = 0,
    /// `1`: may create, start, stop and delete their own machines, within fixed limits.
    User = 1,
    /// `2`: may also manage read-only users and ordinary users.
    Manager = 2,
    /// `3`: may do everything, including platform settings.
    Admin = 3,
}

impl AccessLevel {
    /// The integer stored in `spec.access_level`.
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// The level for a stored integer, or `None` when no level has that value.
    ///
    /// ```
    /// use kite_core::api::AccessLevel;
    /// assert_eq!(AccessLevel::from_u8(3), Some(AccessLevel::Admin));
    /// assert_eq!(AccessLevel::from_u8(4), None);
    /// ```
    pub fn from_u8(value: u8) -> Option<Self> {
        match value {
            0 => Some(Self::ReadOnly),
            1 => Some(Self::User),
            2 => Some(Self::Manager),
            3 => Some(Self::Admin),
            _ => None,
        }
    }
}
