//! The S3 store: audit events and recordings in a bucket of Amazon S3 or
//! of any service that speaks its API (MinIO, Ceph, Garage, R2, …), under
//! a prefix:
//!
//! - `<prefix>/audit/<YYYY-MM-DD>/<batch>.jsonl`: audit events as JSON
//!   lines. S3 cannot append to an object, so events wait in memory and go
//!   up as one object per day every [`FLUSH_EVERY`](layout::FLUSH_EVERY) (when there are any),
//!   when [`S3Store::flush`] or [`S3Store::close`] is called, and when the
//!   store is dropped. A batch's name starts with the time it was written
//!   (`20261205T080002.123456789Z-…`), so a day's objects in name order are
//!   its events in order.
//! - `<prefix>/recordings/<YYYY-MM-DD>/<connection>-<channel>.cast`: one
//!   asciicast per recorded channel, streamed as a multipart upload in
//!   parts of [`PART_SIZE`](layout::PART_SIZE) and completed when the recording ends, so a
//!   long session is never held in memory whole. An upload that never
//!   completes (the process killed mid-session) leaves no object.
//!
//! Nothing here blocks the router: events and recording lines go over
//! unbounded channels to a thread of the store's own, which runs a small
//! tokio runtime for the requests.

use super::archive::{ArchiveFuture, AuditArchive, is_connection_id, is_day, parse_events};
use super::recording::{CastWriter, RecordingAbout};
use super::retention::Retention;
use super::{AuditEvent, AuditSink};
use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

mod layout;
mod settings;
mod transport;
mod writer;

pub use settings::S3Settings;

use layout::{DROP_WAIT, Job, Layout};
use transport::Transport;
use writer::{S3Cast, upload_recording, write_jobs};

/// Audit events, and recordings when asked, in an S3 bucket. Dropping it
/// (or [`S3Store::close`]) writes what is queued, the events and the
/// recordings that have ended, before it returns.
///
/// Events and recording lines wait in unbounded queues: they are never
/// refused nor dropped, and if the service is slower than the gateway
/// produces them, or unreachable, they wait in memory (a batch that could
/// not be written is tried again at the next flush, after object_store's
/// own retries).
pub struct S3Store {
    objects: Arc<dyn ObjectStore>,
    layout: Layout,
    jobs: Option<UnboundedSender<Job>>,
    runtime: tokio::runtime::Handle,
    recordings: Option<bool>,
}

impl std::fmt::Debug for S3Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Store")
            .field("objects", &self.objects.to_string())
            .field("prefix", &self.layout.prefix)
            .field("recordings", &self.recordings)
            .finish()
    }
}

impl S3Store {
    /// A store in the bucket that `settings` name, which keeps audit events
    /// and records no session until [`S3Store::recording_sessions`] says.
    ///
    /// It starts a thread running a tokio runtime of the store's own, on
    /// which every request to the service runs: it may be called inside a
    /// tokio runtime (as the gateway does) or outside one, and what is
    /// queued is still written when the caller's runtime shuts down first.
    /// Nothing is sent yet: a wrong bucket or key shows in the log at the
    /// first write, and as an error from [`S3Store::flush`] and the reads.
    pub fn open(settings: S3Settings) -> Result<Self, crate::Error> {
        let layout = Layout { prefix: prefix(&settings.prefix)? };
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&settings.bucket)
            .with_region(&settings.region)
            .with_access_key_id(&settings.access_key_id)
            .with_secret_access_key(&settings.secret_access_key)
            .with_allow_http(settings.allow_http)
            .with_virtual_hosted_style_request(!settings.path_style)
            .with_http_connector(Transport { allow_http: settings.allow_http });
        if let Some(endpoint) = &settings.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let objects: Arc<dyn ObjectStore> = Arc::new(
            builder.build().map_err(|error| crate::Error::Store(format!("bucket {}: {error}", settings.bucket)))?,
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| crate::Error::Io { what: "starting the S3 audit writer's runtime".into(), source })?;
        let handle = runtime.handle().clone();
        let (jobs, received) = unbounded_channel();
        std::thread::Builder::new()
            .name("kite-audit-s3".into())
            .spawn({
                let objects = objects.clone();
                let layout = layout.clone();
                move || runtime.block_on(write_jobs(objects, layout, received))
            })
            .map_err(|source| crate::Error::Io { what: "starting the S3 audit writer".into(), source })?;
        tracing::info!(bucket = %settings.bucket, prefix = %layout.prefix, endpoint = ?settings.endpoint, "audit events go to S3");
        Ok(Self { objects, layout, jobs: Some(jobs), runtime: handle, recordings: None })
    }

    /// Records shell and command sessions too: their output, and their
    /// input when `input` is true.
    pub fn recording_sessions(mut self, input: bool) -> Self {
        self.recordings = Some(input);
        self
    }

    /// Keeps the store within `retention`: whole days go (their events and
    /// recordings), oldest first, now and every hour, never the current day.
    pub fn retention(self, retention: Retention) -> Self {
        self.send(Job::Retain(retention));
        self
    }

    /// Waits until everything queued before this call is written: the
    /// events recorded so far are in objects, recordings that have ended
    /// are complete, and pruning asked for is done. Recordings still
    /// running are not waited for (S3 keeps none of an upload until it is
    /// completed). An error says what could not be written; the events of
    /// a failed batch are tried again at the next flush.
    pub async fn flush(&self) -> Result<(), crate::Error> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let asked = self.jobs.as_ref().is_some_and(|jobs| {
            jobs.send(Job::Flush(Box::new(move |result| {
                let _ = reply.send(result);
            })))
            .is_ok()
        });
        if !asked {
            return Err(crate::Error::Store("the S3 audit writer has stopped".into()));
        }
        match answer.await {
            Ok(result) => result.map_err(crate::Error::Store),
            Err(_) => Err(crate::Error::Store("the S3 audit writer stopped before it flushed".into())),
        }
    }

    /// Writes what is queued, as [`S3Store::flush`] does, and closes the
    /// store. Recordings still running go on to the service until their
    /// writers are dropped, on the store's thread, which ends after them.
    pub async fn close(mut self) -> Result<(), crate::Error> {
        let flushed = self.flush().await;
        drop(self.jobs.take());
        flushed
    }

    fn send(&self, job: Job) {
        let sent = self.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
        if !sent {
            tracing::error!("the S3 audit writer has stopped; an event was not kept");
        }
    }

    /// Runs a read on the store's runtime, where its connections live.
    fn read<'a, T: Send + 'static>(
        &self,
        what: String,
        read: impl Future<Output = object_store::Result<T>> + Send + 'static,
    ) -> ArchiveFuture<'a, T> {
        let task = self.runtime.spawn(read);
        Box::pin(async move {
            match task.await {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(error)) => Err(crate::Error::Store(format!("{what}: {error}"))),
                Err(error) => Err(crate::Error::Store(format!("{what}: {error}"))),
            }
        })
    }
}

/// The prefix without its slashes, checked.
fn prefix(prefix: &str) -> Result<String, crate::Error> {
    let parsed = Path::parse(prefix.trim_matches('/'))
        .map_err(|error| crate::Error::Store(format!("prefix {prefix:?}: {error}")))?;
    Ok(parsed.as_ref().to_string())
}

impl Drop for S3Store {
    fn drop(&mut self) {
        let Some(jobs) = self.jobs.take() else { return };
        let (reply, answer) = std::sync::mpsc::channel();
        let asked = jobs
            .send(Job::Flush(Box::new(move |result| {
                let _ = reply.send(result);
            })))
            .is_ok();
        drop(jobs);
        if !asked {
            return;
        }
        match answer.recv_timeout(DROP_WAIT) {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::error!(%error, "the S3 audit store closed with something unwritten"),
            Err(_) => tracing::error!(
                waited = ?DROP_WAIT,
                "the S3 audit store closed before what was queued was written; the rest is lost if the process ends"
            ),
        }
    }
}

impl AuditSink for S3Store {
    fn record(&self, event: &AuditEvent) {
        let Ok(mut line) = serde_json::to_string(event) else { return };
        line.push('\n');
        let day = event.time.get(..10).filter(|day| is_day(day)).unwrap_or("unknown").to_string();
        self.send(Job::Event { day, line });
    }

    fn recording(&self, about: &RecordingAbout) -> Option<Box<dyn CastWriter>> {
        let input = self.recordings?;
        let jobs = self.jobs.clone()?;
        let now = jiff::Timestamp::now().to_string();
        let day = now.get(..10).unwrap_or("unknown");
        let key = self.layout.key(&format!("recordings/{day}/{}-{}.cast", about.connection, about.channel));
        let (lines, received) = unbounded_channel();
        let upload = self.runtime.spawn(upload_recording(self.objects.clone(), key, received));
        Some(Box::new(S3Cast { lines: Some(lines), upload: Some(upload), jobs, input }))
    }
}

impl AuditArchive for S3Store {
    fn days(&self) -> ArchiveFuture<'_, Vec<String>> {
        let objects = self.objects.clone();
        let audit = self.layout.audit();
        self.read(format!("listing {audit}"), async move { day_folders(objects.as_ref(), &audit).await })
    }

    fn events<'a>(&'a self, day: &'a str) -> ArchiveFuture<'a, Vec<AuditEvent>> {
        if !is_day(day) {
            return Box::pin(async { Ok(Vec::new()) });
        }
        let objects = self.objects.clone();
        let folder = self.layout.key(&format!("audit/{day}"));
        let what = format!("reading {folder}");
        let whence = folder.to_string();
        self.read(what, async move {
            let mut batches: Vec<Path> = objects.list(Some(&folder)).map_ok(|meta| meta.location).try_collect().await?;
            batches.sort();
            let mut text = String::new();
            for batch in batches {
                let bytes = objects.get(&batch).await?.bytes().await?;
                text.push_str(&String::from_utf8_lossy(&bytes));
                if !text.ends_with('\n') {
                    text.push('\n');
                }
            }
            Ok(parse_events(&text, &whence))
        })
    }

    fn recording<'a>(&'a self, connection: &'a str, channel: u32) -> ArchiveFuture<'a, Option<Vec<u8>>> {
        if !is_connection_id(connection) {
            return Box::pin(async { Ok(None) });
        }
        let objects = self.objects.clone();
        let recordings = self.layout.recordings();
        let name = format!("{connection}-{channel}.cast");
        self.read(format!("reading {recordings}"), async move {
            let days = day_folders(objects.as_ref(), &recordings).await?;
            for day in days.iter().rev() {
                match objects.get(&recordings.clone().join(day.as_str()).join(name.as_str())).await {
                    Ok(found) => return Ok(Some(found.bytes().await?.to_vec())),
                    Err(object_store::Error::NotFound { .. }) => {}
                    Err(error) => return Err(error),
                }
            }
            Ok(None)
        })
    }
}

/// The day folders (`YYYY-MM-DD`) directly under `folder`, oldest first.
async fn day_folders(objects: &dyn ObjectStore, folder: &Path) -> object_store::Result<Vec<String>> {
    let listed = objects.list_with_delimiter(Some(folder)).await?;
    let mut days: Vec<String> = listed
        .common_prefixes
        .iter()
        .filter_map(|prefix| prefix.filename())
        .filter(|name| is_day(name))
        .map(str::to_string)
        .collect();
    days.sort();
    Ok(days)
}
