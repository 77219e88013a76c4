//! What one session channel may hold before its machine is connected: its
//! requests and input are kept to replay them upstream, so they are counted,
//! in bytes and in messages, and bounded.

use russh::ChannelMsg;

/// The count of what a channel holds, against its limits.
#[derive(Debug)]
pub(crate) struct Budget {
    bytes: usize,
    messages: usize,
    max_bytes: usize,
    max_messages: usize,
}

/// Which limit a message went past.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Exceeded {
    /// More bytes than the channel may hold.
    Bytes,
    /// More messages than the channel may hold.
    Messages,
}

impl Budget {
    /// An empty budget with these limits.
    pub(crate) fn new(max_bytes: usize, max_messages: usize) -> Self {
        Self { bytes: 0, messages: 0, max_bytes, max_messages }
    }

    /// Counts `message`; an error when it goes past a limit (it is counted
    /// anyway: the channel is to be closed).
    pub(crate) fn hold(&mut self, message: &ChannelMsg) -> Result<(), Exceeded> {
        self.bytes = self.bytes.saturating_add(weight(message));
        self.messages = self.messages.saturating_add(1);
        if self.messages > self.max_messages {
            Err(Exceeded::Messages)
        } else if self.bytes > self.max_bytes {
            Err(Exceeded::Bytes)
        } else {
            Ok(())
        }
    }

    /// Whether the held bytes are at or past the limit: input beyond it is
    /// left unread (the client's window closes) rather than held. Requests
    /// are not held back this way: past their limit the channel is closed.
    pub(crate) fn full(&self) -> bool {
        self.bytes >= self.max_bytes
    }
}

/// The bytes a held message keeps in memory (its variable-length parts; a
/// fixed-size request weighs nothing but counts as a message).
fn weight(message: &ChannelMsg) -> usize {
    match message {
        ChannelMsg::Data { data } | ChannelMsg::ExtendedData { data, .. } => data.len(),
        ChannelMsg::SetEnv { variable_name, variable_value, .. } => variable_name.len() + variable_value.len(),
        ChannelMsg::RequestPty { term, terminal_modes, .. } => term.len() + terminal_modes.len() * 5,
        ChannelMsg::Exec { command, .. } => command.len(),
        ChannelMsg::RequestSubsystem { name, .. } => name.len(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(value: &str) -> ChannelMsg {
        ChannelMsg::SetEnv { want_reply: false, variable_name: "A".into(), variable_value: value.into() }
    }

    #[test]
    fn requests_count_by_their_bytes_and_by_their_number() {
        let mut budget = Budget::new(10, 3);
        assert_eq!(budget.hold(&env("123")), Ok(()));
        assert_eq!(
            budget.hold(&ChannelMsg::WindowChange { col_width: 1, row_height: 1, pix_width: 0, pix_height: 0 }),
            Ok(())
        );
        assert!(!budget.full());
        assert_eq!(budget.hold(&env("123456789")), Err(Exceeded::Bytes), "4 + 10 bytes are past 10");
        let mut budget = Budget::new(1 << 20, 2);
        assert_eq!(budget.hold(&ChannelMsg::Eof), Ok(()));
        assert_eq!(budget.hold(&ChannelMsg::Eof), Ok(()));
        assert!(!budget.full(), "requests at their limit are still read, so that the next one is refused");
        assert_eq!(budget.hold(&ChannelMsg::Eof), Err(Exceeded::Messages));
    }

    #[test]
    fn input_fills_the_budget() {
        let mut budget = Budget::new(4, 100);
        assert_eq!(budget.hold(&ChannelMsg::Data { data: bytes::Bytes::from_static(b"abcd") }), Ok(()));
        assert!(budget.full(), "input up to the limit fills it");
    }
}
