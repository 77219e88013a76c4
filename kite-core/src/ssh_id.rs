//! The SSH login name that routes to one virtual machine.

/// The pattern every `sshId` matches: a POSIX-style user name of 1 to 32
/// characters that starts with a lower-case letter or `_`.
pub const SSH_ID_PATTERN: &str = "^[a-z_][a-z0-9_-]{0,31}$";

/// Whether `candidate` matches [`SSH_ID_PATTERN`].
///
/// The CRD schema enforces the same pattern on the API server; this check
/// lets the API and the SSH router refuse a bad name before any request.
///
/// ```
/// use kite_core::ssh_id::is_valid_ssh_id;
/// assert!(is_valid_ssh_id("alice_web-2"));
/// assert!(!is_valid_ssh_id("Alice"));
/// assert!(!is_valid_ssh_id("2fast"));
/// assert!(!is_valid_ssh_id(""));
/// ```
pub fn is_valid_ssh_id(candidate: &str) -> bool {
    let mut chars = candidate.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    candidate.len() <= 32
        && (first.is_ascii_lowercase() || first == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}
