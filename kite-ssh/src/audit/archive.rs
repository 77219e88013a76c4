//! Reading a store back: the days it holds, their audit events and the
//! recordings it kept, for whoever shows sessions (the gateway's control
//! API, an embedder's own pages). [`super::sessions`] turns the events into
//! one summary per connection.

use super::AuditEvent;
use std::future::Future;
use std::pin::Pin;

/// What an [`AuditArchive`] read returns.
pub type ArchiveFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, crate::Error>> + Send + 'a>>;

/// A store whose audit events and recordings can be read back.
pub trait AuditArchive: Send + Sync + 'static {
    /// The days (`YYYY-MM-DD`, UTC) that hold audit events, oldest first.
    fn days(&self) -> ArchiveFuture<'_, Vec<String>>;

    /// The audit events kept for `day`, in the order they were kept; empty
    /// for a day the store does not hold. A line the store cannot read back
    /// is skipped and logged, never an error for the whole day.
    fn events<'a>(&'a self, day: &'a str) -> ArchiveFuture<'a, Vec<AuditEvent>>;

    /// The asciicast text of a channel's recording, `None` when the store
    /// holds none (it was not recorded, or retention removed it).
    fn recording<'a>(&'a self, connection: &'a str, channel: u32) -> ArchiveFuture<'a, Option<Vec<u8>>>;
}

/// Reads a day's JSON lines, skipping (and logging) the ones that are not
/// audit events.
pub fn parse_events(text: &str, whence: &str) -> Vec<AuditEvent> {
    let mut events = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(event) => events.push(event),
            Err(error) => {
                tracing::warn!(whence, line = number + 1, %error, "skipped an audit line that is not an event")
            }
        }
    }
    events
}

/// Whether `connection` could be a connection id (the router's are 32
/// lowercase hexadecimal digits): ids reach stores from requests, and must
/// never name a path or a key of their own choosing.
pub fn is_connection_id(connection: &str) -> bool {
    connection.len() == 32 && connection.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether `name` is a day (`YYYY-MM-DD`), as stores name their folders.
pub(crate) fn is_day(name: &str) -> bool {
    name.parse::<jiff::civil::Date>().is_ok() && name.len() == 10
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_router_made_ids_are_connection_ids() {
        assert!(is_connection_id(&uuid::Uuid::new_v4().simple().to_string()));
        for bad in
            ["", "../../etc/passwd", "5D0C0000000000000000000000000000", "5d0c", "5d0c000000000000000000000000000/"]
        {
            assert!(!is_connection_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn lines_that_are_not_events_are_skipped() {
        let text = "{\"time\":\"t\",\"connection\":\"c\",\"source\":\"192.0.2.1:1\",\"event\":\"disconnect\",\"seconds\":1.0}\nnot json\n\n";
        assert_eq!(parse_events(text, "test").len(), 1);
    }
}
