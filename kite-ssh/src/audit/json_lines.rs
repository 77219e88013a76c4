//! The filesystem audit store: one file of JSON lines per day (UTC),
//! `<dir>/audit/<YYYY-MM-DD>.jsonl`, written by a thread of its own so the
//! router never waits on the disk.

use super::{AuditEvent, AuditSink};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

/// Audit events as JSON lines under a directory. Dropping it writes what
/// is still queued before it returns.
#[derive(Debug)]
pub struct JsonLines {
    lines: Option<Sender<(String, String)>>,
    writer: Option<JoinHandle<()>>,
    dir: PathBuf,
}

impl JsonLines {
    /// A store under `dir` (its `audit/` folder is made when missing).
    pub fn open(dir: &Path) -> Result<Self, crate::Error> {
        let dir = dir.join("audit");
        std::fs::create_dir_all(&dir)
            .map_err(|source| crate::Error::Io { what: format!("creating {}", dir.display()), source })?;
        let (lines, received) = mpsc::channel::<(String, String)>();
        let folder = dir.clone();
        let writer = std::thread::Builder::new()
            .name("kite-audit".into())
            .spawn(move || {
                for (day, line) in received {
                    let path = folder.join(format!("{day}.jsonl"));
                    let written = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&path)
                        .and_then(|mut file| file.write_all(line.as_bytes()));
                    if let Err(error) = written {
                        tracing::error!(path = %path.display(), %error, "an audit event could not be written");
                    }
                }
            })
            .map_err(|source| crate::Error::Io { what: "starting the audit writer".into(), source })?;
        Ok(Self { lines: Some(lines), writer: Some(writer), dir })
    }

    /// The folder the files are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl AuditSink for JsonLines {
    fn record(&self, event: &AuditEvent) {
        let Ok(mut line) = serde_json::to_string(event) else { return };
        line.push('\n');
        let day = event.time.get(..10).unwrap_or("unknown").to_string();
        let sent = self.lines.as_ref().is_some_and(|lines| lines.send((day, line)).is_ok());
        if !sent {
            tracing::error!("the audit writer has stopped; an event was not kept");
        }
    }
}

impl Drop for JsonLines {
    fn drop(&mut self) {
        // Closing the queue ends the writer once it has written the rest.
        drop(self.lines.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}
