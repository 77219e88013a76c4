//! Audit events: who signed in (or failed to) from where, which machine
//! each connection was routed to, each channel it opened, what it asked the
//! machine to run, how it ended and how many bytes went each way.
//!
//! Every event is logged with `tracing` (target `kite_ssh::audit`) and
//! handed to the router's [`AuditSink`]; an embedder may plug in its own.
//! A password or a rejected login name (sometimes a password typed in the
//! wrong field) never appears in an event: a rejected name is a keyed
//! digest.
//!
//! Two stores come with the crate, both sinks that also record sessions
//! when asked (`recording_sessions`), both read back as an
//! [`AuditArchive`], both pruned by whole days under a [`Retention`], and
//! neither blocks the router: each writes from a thread of its own.
//! [`FileStore`] keeps a directory: one file of JSON lines per day,
//! appended to as events come, and one asciicast file per recorded
//! channel. `S3Store` (cargo feature `s3`, off by default) keeps a bucket
//! of Amazon S3 or of any S3-compatible service (`S3Settings`): since an
//! object cannot be appended to, events go up in batches, one object per
//! day every two seconds and whenever `S3Store::flush` is called or the
//! store is closed or dropped, and each recording is a multipart upload,
//! completed when the recording ends. Killing the process loses at most
//! the last two seconds of events and the recordings still running.
//!
//! The schema, one JSON object per line:
//!
//! ```json
//! {"time":"2026-12-05T08:00:00.1Z","connection":"5d0c…","source":"203.0.113.7:40000","event":"auth","method":"password","result":"rejected","loginDigest":"9f2c…"}
//! {"time":"…","connection":"5d0c…","source":"…","event":"auth","method":"publickey","result":"accepted","sshId":"alice","route":"kite-user-alice/web"}
//! {"time":"…","connection":"5d0c…","source":"…","event":"channel-open","channel":0,"kind":"session"}
//! {"time":"…","connection":"5d0c…","source":"…","event":"session-start","channel":0,"request":"exec","command":"uptime","pty":null,"recorded":true}
//! {"time":"…","connection":"5d0c…","source":"…","event":"channel-close","channel":0,"exitStatus":0,"exitSignal":null,"bytesToMachine":0,"bytesToUser":61,"seconds":0.4,"reason":null}
//! {"time":"…","connection":"5d0c…","source":"…","event":"disconnect","seconds":0.5,"reason":null}
//! ```
//!
//! A channel's `channel-close` comes however it ends, also when the
//! gateway stops; a connection's `disconnect` comes last, once its
//! channels and its connection to the machine have ended too. Only
//! connections that tried to sign in are audited: port scans and load
//! balancers' probes are not events.
//!
//! An embedder's own store is an [`AuditSink`]:
//!
//! ```
//! use kite_ssh::audit::{AuditEvent, AuditSink, AuthResult, Event};
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! /// Counts sign-ins.
//! #[derive(Default)]
//! struct SignIns(AtomicUsize);
//!
//! impl AuditSink for SignIns {
//!     fn record(&self, event: &AuditEvent) {
//!         if let Event::Auth { result: AuthResult::Accepted, .. } = event.event {
//!             self.0.fetch_add(1, Ordering::Relaxed);
//!         }
//!     }
//! }
//! # fn build(backend: kite_ssh::StaticBackend, host_key: russh::keys::PrivateKey) -> Result<(), kite_ssh::Error> {
//! let router = kite_ssh::Router::builder().backend(backend).host_key(host_key).audit(SignIns::default()).build()?;
//! # Ok(()) }
//! ```

mod archive;
mod cast;
mod connection;
mod event;
mod file_store;
mod recording;
mod retention;
#[cfg(feature = "s3")]
mod s3_store;
mod summary;

pub use archive::{ArchiveFuture, AuditArchive, is_connection_id, parse_events};
pub use cast::{CastEncoder, CastHeader};
pub(crate) use connection::{ChannelTally, ConnectionAudit};
pub use event::{AuditEvent, AuthMethod, AuthResult, ChannelKind, Event, Pty, SessionRequest};
pub use file_store::FileStore;
pub(crate) use recording::Recording;
pub use recording::{CastWriter, RecordingAbout};
pub use retention::Retention;
#[cfg(feature = "s3")]
pub use s3_store::{S3Settings, S3Store};
pub use summary::{ChannelSummary, SessionSummary, recent_sessions, summarize};

/// Where audit events go. Implementations must not block: the router calls
/// [`AuditSink::record`] on its async runtime, so a sink that writes
/// somewhere slow hands the event to a thread or a task of its own.
pub trait AuditSink: Send + Sync + 'static {
    /// Keeps one event.
    fn record(&self, event: &AuditEvent);

    /// Where to record a shell or command session, if this store records
    /// it (asciicast v2; see [`CastEncoder`]). None by default: SFTP,
    /// forwards and agent channels are audited, never recorded.
    fn recording(&self, about: &RecordingAbout) -> Option<Box<dyn CastWriter>> {
        let _ = about;
        None
    }
}

impl<T: AuditSink + ?Sized> AuditSink for std::sync::Arc<T> {
    fn record(&self, event: &AuditEvent) {
        (**self).record(event);
    }

    fn recording(&self, about: &RecordingAbout) -> Option<Box<dyn CastWriter>> {
        (**self).recording(about)
    }
}

/// The sink that keeps nothing (the events are still logged).
#[derive(Debug, Default, Clone, Copy)]
pub struct LogOnly;

impl AuditSink for LogOnly {
    fn record(&self, _event: &AuditEvent) {}
}
