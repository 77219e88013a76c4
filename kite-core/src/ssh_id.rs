//! The SSH login name that routes to one virtual machine.

/// The pattern every `sshId` matches: a POSIX-style user name of 1 to 32
/// characters that starts with a lower-case letter or `_`.
pub const SSH_ID_PATTERN: &str = "^[a-z_][a-z0-9_-]{0,31}$";

/// The accounts a machine's system already has (Debian's and Ubuntu's base
/// accounts and daemons): cloud-init cannot make one of them the user's
/// login (it locks `root`), so none may be an `sshId`.
pub const RESERVED_SSH_IDS: &[&str] = &[
    "root",
    "daemon",
    "bin",
    "sys",
    "sync",
    "games",
    "man",
    "lp",
    "mail",
    "news",
    "uucp",
    "proxy",
    "www-data",
    "backup",
    "list",
    "irc",
    "gnats",
    "nobody",
    "_apt",
    "messagebus",
    "sshd",
    "syslog",
    "systemd-network",
    "systemd-resolve",
    "systemd-timesync",
];

/// The CRD's CEL rule refusing [`RESERVED_SSH_IDS`] (a test keeps the two the same).
pub const RESERVED_RULE: &str = "!(self in ['root', 'daemon', 'bin', 'sys', 'sync', 'games', 'man', 'lp', 'mail', 'news', 'uucp', 'proxy', 'www-data', 'backup', 'list', 'irc', 'gnats', 'nobody', '_apt', 'messagebus', 'sshd', 'syslog', 'systemd-network', 'systemd-resolve', 'systemd-timesync'])";

/// The message of [`RESERVED_RULE`].
pub const RESERVED_MESSAGE: &str =
    "sshId is an account the machine's system reserves (root, daemon, nobody...); choose another";

/// Whether `candidate` matches [`SSH_ID_PATTERN`] and is not one of [`RESERVED_SSH_IDS`].
///
/// The CRD schema enforces the same on the API server; this check lets the
/// API and the SSH router refuse a bad name before any request.
///
/// ```
/// use kite_core::ssh_id::is_valid_ssh_id;
/// assert!(is_valid_ssh_id("alice_web-2"));
/// assert!(!is_valid_ssh_id("Alice"));
/// assert!(!is_valid_ssh_id("2fast"));
/// assert!(!is_valid_ssh_id(""));
/// assert!(!is_valid_ssh_id("root"));
/// ```
pub fn is_valid_ssh_id(candidate: &str) -> bool {
    !is_reserved(candidate) && matches_pattern(candidate)
}

/// Whether `candidate` is one of [`RESERVED_SSH_IDS`].
pub fn is_reserved(candidate: &str) -> bool {
    RESERVED_SSH_IDS.contains(&candidate)
}

fn matches_pattern(candidate: &str) -> bool {
    let mut chars = candidate.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    candidate.len() <= 32
        && (first.is_ascii_lowercase() || first == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crd_rule_lists_exactly_the_reserved_names() {
        let listed: Vec<String> = RESERVED_SSH_IDS.iter().map(|name| format!("'{name}'")).collect();
        assert_eq!(RESERVED_RULE, format!("!(self in [{}])", listed.join(", ")));
        assert!(RESERVED_SSH_IDS.iter().all(|name| matches_pattern(name)), "each would pass the pattern alone");
    }
}
