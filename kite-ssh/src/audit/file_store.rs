//! The filesystem store: audit events as JSON lines, one file per day
//! (UTC), `<dir>/audit/<YYYY-MM-DD>.jsonl`, and, when asked, recordings,
//! one asciicast file per recorded channel,
//! `<dir>/recordings/<YYYY-MM-DD>/<connection>-<channel>.cast`. A thread of
//! its own writes, so the router never waits on the disk.

use super::archive::{ArchiveFuture, AuditArchive, is_connection_id, is_day, parse_events};
use super::recording::{CastWriter, RecordingAbout};
use super::retention::{self, Retention};
use super::{AuditEvent, AuditSink};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the store prunes what its retention no longer allows.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// What the writer thread is asked to do.
enum Job {
    /// Append a line to a file, opened (and kept open) when first written.
    Line(PathBuf, String),
    /// A recording ended: close its file.
    Close(PathBuf),
    /// Keep within these limits from now on (pruning at once, then hourly).
    Retain(Retention),
}

/// Audit events, and recordings when asked, under a directory. Dropping it
/// writes what is still queued before it returns.
#[derive(Debug)]
pub struct FileStore {
    jobs: Option<Sender<Job>>,
    writer: Option<JoinHandle<()>>,
    dir: PathBuf,
    recordings: Option<bool>,
}

impl FileStore {
    /// A store under `dir` (made when missing) that keeps audit events and
    /// records no session until [`FileStore::recording_sessions`] says.
    pub fn open(dir: &Path) -> Result<Self, crate::Error> {
        let audit = dir.join("audit");
        std::fs::create_dir_all(&audit)
            .map_err(|source| crate::Error::Io { what: format!("creating {}", audit.display()), source })?;
        let (jobs, received) = mpsc::channel::<Job>();
        let writer = std::thread::Builder::new()
            .name("kite-audit".into())
            .spawn({
                let dir = dir.to_path_buf();
                move || write_jobs(&dir, received)
            })
            .map_err(|source| crate::Error::Io { what: "starting the audit writer".into(), source })?;
        Ok(Self { jobs: Some(jobs), writer: Some(writer), dir: dir.to_path_buf(), recordings: None })
    }

    /// Records shell and command sessions too: their output, and their
    /// input when `input` is true.
    pub fn recording_sessions(mut self, input: bool) -> Self {
        self.recordings = Some(input);
        self
    }

    /// Keeps the store within `retention`: whole days go, oldest first,
    /// now and every hour, by the thread that writes (never the current day).
    pub fn retention(self, retention: Retention) -> Self {
        self.send(Job::Retain(retention));
        self
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn send(&self, job: Job) {
        let sent = self.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
        if !sent {
            tracing::error!("the audit writer has stopped; a line was not kept");
        }
    }
}

fn write_jobs(dir: &Path, received: mpsc::Receiver<Job>) {
    let mut open: HashMap<PathBuf, File> = HashMap::new();
    let mut retention: Option<Retention> = None;
    loop {
        let job = match received.recv_timeout(PRUNE_EVERY) {
            Ok(job) => job,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some(limits) = retention {
                    prune(dir, limits);
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        match job {
            Job::Retain(limits) => {
                retention = Some(limits);
                prune(dir, limits);
            }
            Job::Line(path, line) => {
                if !open.contains_key(&path) {
                    let opened = path
                        .parent()
                        .map_or(Ok(()), std::fs::create_dir_all)
                        .and_then(|()| std::fs::OpenOptions::new().create(true).append(true).open(&path));
                    match opened {
                        Ok(file) => {
                            open.insert(path.clone(), file);
                        }
                        Err(error) => {
                            tracing::error!(path = %path.display(), %error, "an audit file could not be opened");
                            continue;
                        }
                    }
                }
                if let Some(file) = open.get_mut(&path)
                    && let Err(error) = file.write_all(line.as_bytes())
                {
                    tracing::error!(path = %path.display(), %error, "an audit line could not be written");
                }
            }
            Job::Close(path) => {
                open.remove(&path);
            }
        }
    }
}

fn prune(dir: &Path, limits: Retention) {
    let today = jiff::Timestamp::now().to_string();
    match retention::prune(dir, limits, today.get(..10).unwrap_or_default()) {
        Ok(pruned) if !pruned.days.is_empty() => {
            tracing::info!(days = ?pruned.days, bytes = pruned.bytes, "pruned audit events and recordings past their retention");
        }
        Ok(_) => {}
        Err(error) => tracing::error!(dir = %dir.display(), %error, "pruning audit events and recordings failed"),
    }
}

impl AuditSink for FileStore {
    fn record(&self, event: &AuditEvent) {
        let Ok(mut line) = serde_json::to_string(event) else { return };
        line.push('\n');
        let day = event.time.get(..10).unwrap_or("unknown");
        let path = self.dir.join("audit").join(format!("{day}.jsonl"));
        // The day's file is closed after each event: events are few, and a
        // file left open would outlive its day.
        self.send(Job::Line(path.clone(), line));
        self.send(Job::Close(path));
    }

    fn recording(&self, about: &RecordingAbout) -> Option<Box<dyn CastWriter>> {
        let input = self.recordings?;
        let jobs = self.jobs.clone()?;
        let day = jiff::Timestamp::now().to_string();
        let day = day.get(..10).unwrap_or("unknown");
        let path = self.dir.join("recordings").join(day).join(format!("{}-{}.cast", about.connection, about.channel));
        Some(Box::new(FileCast { jobs, path, input }))
    }
}

/// Runs a blocking read of the store on tokio's blocking threads.
fn blocking<'a, T: Send + 'static>(
    read: impl FnOnce() -> std::io::Result<T> + Send + 'static,
    what: String,
) -> ArchiveFuture<'a, T> {
    Box::pin(async move {
        match tokio::task::spawn_blocking(read).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(crate::Error::Store(format!("{what}: {error}"))),
            Err(error) => Err(crate::Error::Store(format!("{what}: {error}"))),
        }
    })
}

impl AuditArchive for FileStore {
    fn days(&self) -> ArchiveFuture<'_, Vec<String>> {
        let audit = self.dir.join("audit");
        let what = format!("reading {}", audit.display());
        blocking(
            move || {
                let mut days: Vec<String> = std::fs::read_dir(&audit)?
                    .filter_map(|entry| entry.ok()?.file_name().to_str()?.strip_suffix(".jsonl").map(str::to_string))
                    .filter(|name| is_day(name))
                    .collect();
                days.sort();
                Ok(days)
            },
            what,
        )
    }

    fn events<'a>(&'a self, day: &'a str) -> ArchiveFuture<'a, Vec<super::AuditEvent>> {
        if !is_day(day) {
            return Box::pin(async { Ok(Vec::new()) });
        }
        let path = self.dir.join("audit").join(format!("{day}.jsonl"));
        let what = format!("reading {}", path.display());
        blocking(
            move || match std::fs::read_to_string(&path) {
                Ok(text) => Ok(parse_events(&text, &path.display().to_string())),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                Err(error) => Err(error),
            },
            what,
        )
    }

    fn recording<'a>(&'a self, connection: &'a str, channel: u32) -> ArchiveFuture<'a, Option<Vec<u8>>> {
        if !is_connection_id(connection) {
            return Box::pin(async { Ok(None) });
        }
        let recordings = self.dir.join("recordings");
        let name = format!("{connection}-{channel}.cast");
        let what = format!("reading {}", recordings.display());
        blocking(
            move || {
                let Ok(entries) = std::fs::read_dir(&recordings) else { return Ok(None) };
                let mut days: Vec<String> = entries
                    .filter_map(|entry| entry.ok()?.file_name().to_str().map(str::to_string))
                    .filter(|name| is_day(name))
                    .collect();
                days.sort();
                for day in days.iter().rev() {
                    match std::fs::read(recordings.join(day).join(&name)) {
                        Ok(bytes) => return Ok(Some(bytes)),
                        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                        Err(error) => return Err(error),
                    }
                }
                Ok(None)
            },
            what,
        )
    }
}

impl Drop for FileStore {
    fn drop(&mut self) {
        // Closing the queue ends the writer once it has written the rest;
        // recordings still open hold their own senders, so it waits for them too.
        drop(self.jobs.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// One recording's file.
struct FileCast {
    jobs: Sender<Job>,
    path: PathBuf,
    input: bool,
}

impl CastWriter for FileCast {
    fn line(&mut self, line: &str) {
        let _ = self.jobs.send(Job::Line(self.path.clone(), format!("{line}\n")));
    }

    fn wants_input(&self) -> bool {
        self.input
    }
}

impl Drop for FileCast {
    fn drop(&mut self) {
        let _ = self.jobs.send(Job::Close(self.path.clone()));
    }
}
