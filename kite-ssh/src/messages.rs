//! What users are told: the sentences the router writes to a user's
//! stderr, the password prompt, and the reasons it gives when it ends a
//! connection. Internal names, addresses and raw errors go to the log,
//! never here.
//!
//! [`Messages::default`] is Kite's wording, every stderr line starting
//! with `kite: `; an embedder names its own product with
//! [`Messages::with_prefix`] and may replace any sentence (for another
//! wording, or another language) with the other `with_*` methods, then
//! hands the result to [`crate::RouterBuilder::messages`].
//!
//! ```
//! use kite_ssh::messages::Messages;
//!
//! let messages = Messages::default()
//!     .with_prefix("acme: ")
//!     .with_host_key_mismatch("This machine's identity changed; call the Acme helpdesk.");
//! assert_eq!(messages.gave_up("The machine is stopped."), "acme: The machine is stopped.\r\n");
//! ```
//!
//! The sentences a backend returns in [`crate::backend::Readiness`] are
//! its own; they get the prefix too.

/// Kite's prefix, the default one of every line the router writes to a
/// user's stderr.
pub const KITE_PREFIX: &str = "kite: ";

/// The sentences the router says to users; see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Messages {
    /// The start of every line written to a user's stderr, such as `kite: `.
    pub prefix: String,
    /// The line shown while a machine is starting and the router retries:
    /// `{message}` is replaced by the backend's sentence, `{seconds}` by
    /// the seconds waited so far.
    pub retrying: String,
    /// When the machine answers but is not yet accepting SSH connections.
    pub not_accepting: String,
    /// When the machine's host key is not the pinned one.
    pub host_key_mismatch: String,
    /// When the machine refused the router's own login.
    pub upstream_login_refused: String,
    /// When the machine refused to start the command, shell or subsystem.
    pub start_refused: String,
    /// When a channel held more than its budget before its session started
    /// or its machine was connected.
    pub too_much_before_start: String,
    /// When a channel did not ask for a shell, a command or a subsystem in time.
    pub not_started_in_time: String,
    /// The keyboard-interactive prompt for the password.
    pub password_prompt: String,
    /// The reason given when a client did not authenticate in time.
    pub auth_timed_out: String,
    /// The reason given to every session still open when the router stops.
    pub shutting_down: String,
}

impl Default for Messages {
    /// Kite's wording.
    fn default() -> Self {
        Self {
            prefix: KITE_PREFIX.into(),
            retrying: "{message} (waited {seconds}s, still trying)".into(),
            not_accepting: "The machine is not accepting SSH connections yet; retry in a moment.".into(),
            host_key_mismatch: "The machine's host key does not match the one on record, so the connection was refused for your safety. Ask your administrator.".into(),
            upstream_login_refused: "The machine refused the gateway's login; ask your administrator.".into(),
            start_refused: "The machine refused to start the session.".into(),
            too_much_before_start: "This session sent more requests or input before it started than the gateway holds, so it was closed.".into(),
            not_started_in_time: "This session did not ask for a shell or a command in time, so it was closed.".into(),
            password_prompt: "Password: ".into(),
            auth_timed_out: "authentication timed out".into(),
            shutting_down: "The gateway is restarting; connect again in a moment.".into(),
        }
    }
}

/// `with_<field>` for each sentence: the same messages with that one replaced.
macro_rules! setters {
    ($($setter:ident => $field:ident),* $(,)?) => {
        impl Messages {
            $(
                #[doc = concat!("These messages with [`Messages::", stringify!($field), "`] replaced.")]
                #[must_use]
                pub fn $setter(mut self, text: impl Into<String>) -> Self {
                    self.$field = text.into();
                    self
                }
            )*
        }
    };
}

setters! {
    with_prefix => prefix,
    with_retrying => retrying,
    with_not_accepting => not_accepting,
    with_host_key_mismatch => host_key_mismatch,
    with_upstream_login_refused => upstream_login_refused,
    with_start_refused => start_refused,
    with_too_much_before_start => too_much_before_start,
    with_not_started_in_time => not_started_in_time,
    with_password_prompt => password_prompt,
    with_auth_timed_out => auth_timed_out,
    with_shutting_down => shutting_down,
}

impl Messages {
    /// The stderr line while a backend is starting and the router retries.
    pub fn retrying(&self, message: &str, waited_seconds: u64) -> String {
        let text = self.retrying.replace("{seconds}", &waited_seconds.to_string()).replace("{message}", message);
        format!("{}{text}\r\n", self.prefix)
    }

    /// The last stderr line of a session that could not start or reach its machine.
    pub fn gave_up(&self, message: &str) -> String {
        format!("{}{message}\r\n", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::Messages;

    #[test]
    fn kite_wording_is_the_default() {
        let messages = Messages::default();
        assert_eq!(
            messages.retrying("VirtualMachine is starting.", 4),
            "kite: VirtualMachine is starting. (waited 4s, still trying)\r\n"
        );
        assert_eq!(messages.gave_up("Stopped."), "kite: Stopped.\r\n");
    }

    #[test]
    fn an_embedder_replaces_the_prefix_and_the_sentences() {
        let messages = Messages::default().with_prefix("acme: ").with_retrying("{message} ({seconds} s)");
        assert_eq!(messages.retrying("Booting {seconds}.", 2), "acme: Booting {seconds}. (2 s)\r\n");
    }
}
