//! The S3 store's writer: it batches events into objects, streams each
//! recording as a multipart upload, and prunes what retention no longer
//! allows, on the store's own thread.

use super::super::archive::is_day;
use super::super::recording::CastWriter;
use super::super::retention::{self, Retention};
use super::layout::*;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

/// The writer: batches events, follows recordings' uploads, prunes.
pub(super) async fn write_jobs(objects: Arc<dyn ObjectStore>, layout: Layout, mut jobs: UnboundedReceiver<Job>) {
    let mut writer = Writer { objects, layout, waiting: BTreeMap::new(), unsent: Vec::new(), ended: Vec::new() };
    let mut retention: Option<Retention> = None;
    let mut flush_tick = tokio::time::interval(FLUSH_EVERY);
    flush_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut prune_tick = tokio::time::interval(PRUNE_EVERY);
    prune_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    prune_tick.tick().await;
    loop {
        tokio::select! {
            job = jobs.recv() => match job {
                None => break,
                Some(Job::Event { day, line }) => writer.waiting.entry(day).or_default().push_str(&line),
                Some(Job::Ended(upload)) => writer.ended.push(upload),
                Some(Job::Retain(limits)) => {
                    retention = Some(limits);
                    writer.prune(limits).await;
                }
                Some(Job::Flush(reply)) => reply(writer.flush().await),
            },
            _ = flush_tick.tick() => {
                if let Err(error) = writer.write_events().await {
                    tracing::warn!(%error, "audit events wait for the next flush");
                }
                writer.ended.retain(|upload| !upload.is_finished());
            }
            _ = prune_tick.tick() => {
                if let Some(limits) = retention {
                    writer.prune(limits).await;
                }
            }
        }
    }
    // Every sender is gone (the store and every recording's writer): write the rest.
    if let Err(error) = writer.flush().await {
        tracing::error!(%error, "the S3 audit writer stopped with something unwritten");
    }
}

/// The writer's state.
pub(super) struct Writer {
    objects: Arc<dyn ObjectStore>,
    layout: Layout,
    /// Events not yet in a batch, by day.
    waiting: BTreeMap<String, String>,
    /// Batches whose write failed, tried again first.
    unsent: Vec<(Path, Bytes)>,
    /// Recordings that ended, whose uploads are being completed.
    ended: Vec<JoinHandle<Result<(), String>>>,
}

impl Writer {
    /// Writes the waiting events and the batches that failed before.
    async fn write_events(&mut self) -> Result<(), String> {
        let name = batch_name();
        for (day, lines) in std::mem::take(&mut self.waiting) {
            let key = self.layout.key(&format!("audit/{day}/{name}.jsonl"));
            self.unsent.push((key, Bytes::from(lines)));
        }
        let mut failed = Vec::new();
        let mut first_error = None;
        for (key, batch) in std::mem::take(&mut self.unsent) {
            let lines = batch.iter().filter(|&&b| b == b'\n').count();
            match self.objects.put(&key, PutPayload::from_bytes(batch.clone())).await {
                Ok(_) => tracing::debug!(key = %key, lines, "wrote a batch of audit events"),
                Err(error) => {
                    tracing::error!(key = %key, lines, %error, "a batch of audit events could not be written");
                    first_error.get_or_insert_with(|| format!("writing {key}: {error}"));
                    failed.push((key, batch));
                }
            }
        }
        self.unsent = failed;
        first_error.map_or(Ok(()), Err)
    }

    /// Writes the waiting events and completes the ended recordings.
    async fn flush(&mut self) -> Result<(), String> {
        let mut result = self.write_events().await;
        for upload in std::mem::take(&mut self.ended) {
            let completed = match upload.await {
                Ok(completed) => completed,
                Err(error) => Err(format!("a recording's upload failed: {error}")),
            };
            if let Err(error) = completed
                && result.is_ok()
            {
                result = Err(error);
            }
        }
        result
    }

    /// Removes the days that `limits` no longer allow.
    async fn prune(&self, limits: Retention) {
        let today = jiff::Timestamp::now().to_string();
        let today = today.get(..10).unwrap_or_default();
        match prune(self.objects.as_ref(), &self.layout, limits, today).await {
            Ok((days, bytes)) if !days.is_empty() => {
                tracing::info!(?days, bytes, "pruned audit events and recordings past their retention");
            }
            Ok(_) => {}
            Err(error) => {
                tracing::error!(prefix = %self.layout.prefix, %error, "pruning audit events and recordings failed")
            }
        }
    }
}

/// Removes whole days that `limits` no longer allow from both folders;
/// the days removed and the bytes they held.
pub(super) async fn prune(
    objects: &dyn ObjectStore,
    layout: &Layout,
    limits: Retention,
    today: &str,
) -> object_store::Result<(Vec<String>, u64)> {
    let mut days: HashMap<String, (u64, Vec<Path>)> = HashMap::new();
    for folder in [layout.audit(), layout.recordings()] {
        let listed: Vec<_> = objects.list(Some(&folder)).try_collect().await?;
        for meta in listed {
            let day = meta.location.prefix_match(&folder).and_then(|mut rest| rest.next());
            let Some(day) = day.map(|part| part.as_ref().to_string()).filter(|day| is_day(day)) else { continue };
            let entry = days.entry(day).or_default();
            entry.0 += meta.size;
            entry.1.push(meta.location);
        }
    }
    let sizes: Vec<(String, u64)> = days.iter().map(|(day, (bytes, _))| (day.clone(), *bytes)).collect();
    let doomed = retention::doomed(&sizes, limits, today);
    let mut removed = 0;
    for day in &doomed {
        let Some((bytes, keys)) = days.remove(day) else { continue };
        let keys = futures::stream::iter(keys.into_iter().map(Ok)).boxed();
        let _: Vec<Path> = objects.delete_stream(keys).try_collect().await?;
        removed += bytes;
    }
    Ok((doomed, removed))
}

/// A batch's name: the time, then a count and a random part, so that names
/// sort in the order written and never meet another writer's.
pub(super) fn batch_name() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let now = jiff::Timestamp::now();
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "{}.{:09}Z-{count:08}-{}",
        now.strftime("%Y%m%dT%H%M%S"),
        now.subsec_nanosecond(),
        random.get(..8).unwrap_or_default()
    )
}

/// One recording's upload: its lines as they come, in parts of
/// [`PART_SIZE`], completed when its writer is dropped.
pub(super) async fn upload_recording(
    objects: Arc<dyn ObjectStore>,
    key: Path,
    mut lines: UnboundedReceiver<String>,
) -> Result<(), String> {
    let fail = |what: &str, error: object_store::Error| {
        tracing::error!(key = %key, %error, "{what}");
        format!("{what} ({key}): {error}")
    };
    let upload = match objects.put_multipart(&key).await {
        Ok(upload) => upload,
        Err(error) => return Err(fail("a recording could not be started", error)),
    };
    let mut upload = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
    let mut bytes: u64 = 0;
    while let Some(line) = lines.recv().await {
        if let Err(error) = upload.wait_for_capacity(PARTS_IN_FLIGHT).await {
            let _ = upload.abort().await;
            return Err(fail("a recording's part could not be written; the rest of it is lost", error));
        }
        upload.write(line.as_bytes());
        upload.write(b"\n");
        bytes += line.len() as u64 + 1;
    }
    if bytes == 0 {
        // Nothing to keep (the router always writes a header, but S3 refuses
        // to complete an upload without parts).
        return upload.abort().await.map_err(|error| fail("an empty recording could not be abandoned", error));
    }
    match upload.finish().await {
        Ok(_) => {
            tracing::debug!(key = %key, bytes, "wrote a recording");
            Ok(())
        }
        Err(error) => Err(fail("a recording could not be completed", error)),
    }
}

/// One recording, as the router writes it.
pub(super) struct S3Cast {
    pub(super) lines: Option<UnboundedSender<String>>,
    pub(super) upload: Option<JoinHandle<Result<(), String>>>,
    pub(super) jobs: UnboundedSender<Job>,
    pub(super) input: bool,
}

impl CastWriter for S3Cast {
    fn line(&mut self, line: &str) {
        if let Some(lines) = &self.lines {
            // An upload that failed has stopped listening (and said so).
            let _ = lines.send(line.to_string());
        }
    }

    fn wants_input(&self) -> bool {
        self.input
    }
}

impl Drop for S3Cast {
    fn drop(&mut self) {
        // Closing the lines completes the upload; the writer waits for it
        // at the next flush, so a flush after this returns once it is complete.
        drop(self.lines.take());
        if let Some(upload) = self.upload.take() {
            let _ = self.jobs.send(Job::Ended(upload));
        }
    }
}
