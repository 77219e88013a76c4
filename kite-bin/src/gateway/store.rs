//! Where `kite gateway --kube` keeps audit events and recordings: built
//! from `KitePlatform.spec.sessionRecording` (and the gateway's volume,
//! `--audit-dir`), and rebuilt when that changes, so a changed setting
//! applies to the next session without a restart. Sessions already running
//! finish in the store they began in.

use kite_core::api::{KitePlatform, PLATFORM_NAME, SessionRecordingSpec};
use kite_ssh::audit::{
    ArchiveFuture, AuditArchive, AuditEvent, AuditSink, CastWriter, FileStore, LogOnly, RecordingAbout, Retention,
};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// One store, as both the router writes to it and the control API reads it.
#[derive(Clone)]
pub struct Store {
    sink: Arc<dyn AuditSink>,
    archive: Option<Arc<dyn AuditArchive>>,
    recording: bool,
}

impl Store {
    /// A store that keeps nothing (events are logged only).
    pub fn log_only() -> Self {
        Self { sink: Arc::new(LogOnly), archive: None, recording: false }
    }

    /// The filesystem store under `dir`, keeping what `spec` says.
    pub fn files(dir: &Path, spec: &SessionRecordingSpec) -> Result<Self, kite_ssh::Error> {
        let store = FileStore::open(dir)?;
        let store = if spec.record.records() { store.recording_sessions(spec.record.records_input()) } else { store };
        let store = Arc::new(store.retention(retention(spec)));
        Ok(Self { sink: store.clone(), archive: Some(store), recording: spec.record.records() })
    }

    /// Whether sessions are recorded.
    pub fn records(&self) -> bool {
        self.recording
    }
}

/// What `spec` keeps, as a store's limits.
pub fn retention(spec: &SessionRecordingSpec) -> Retention {
    Retention {
        max_age: spec.max_age_days.map(|days| Duration::from_secs(u64::from(days) * 86_400)),
        max_bytes: spec.max_size_mib.map(|mib| mib.saturating_mul(1024 * 1024)),
    }
}

/// The store in use now, replaced when the platform's settings change.
#[derive(Clone)]
pub struct SwitchStore {
    current: Arc<RwLock<Store>>,
}

impl SwitchStore {
    /// Starts with `store`.
    pub fn new(store: Store) -> Self {
        Self { current: Arc::new(RwLock::new(store)) }
    }

    /// The store in use now.
    pub fn current(&self) -> Store {
        self.current.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Uses `store` from now on.
    pub fn replace(&self, store: Store) {
        *self.current.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = store;
    }
}

impl AuditSink for SwitchStore {
    fn record(&self, event: &AuditEvent) {
        self.current().sink.record(event);
    }

    fn recording(&self, about: &RecordingAbout) -> Option<Box<dyn CastWriter>> {
        self.current().sink.recording(about)
    }
}

impl AuditArchive for SwitchStore {
    fn days(&self) -> ArchiveFuture<'_, Vec<String>> {
        let archive = self.current().archive;
        Box::pin(async move {
            match archive {
                Some(archive) => archive.days().await,
                None => Ok(Vec::new()),
            }
        })
    }

    fn events<'a>(&'a self, day: &'a str) -> ArchiveFuture<'a, Vec<AuditEvent>> {
        let archive = self.current().archive;
        Box::pin(async move {
            match archive {
                Some(archive) => archive.events(day).await,
                None => Ok(Vec::new()),
            }
        })
    }

    fn recording<'a>(&'a self, connection: &'a str, channel: u32) -> ArchiveFuture<'a, Option<Vec<u8>>> {
        let archive = self.current().archive;
        Box::pin(async move {
            match archive {
                Some(archive) => archive.recording(connection, channel).await,
                None => Ok(None),
            }
        })
    }
}

/// Builds the store `spec` asks for. Without a volume (`--audit-dir`) and
/// without S3, events are logged only, and the log says so.
pub async fn build(spec: &SessionRecordingSpec, audit_dir: Option<&PathBuf>) -> Store {
    if spec.s3.is_some() {
        tracing::error!(
            "sessionRecording.s3 is set, but this gateway has no S3 store yet; keeping audit events in the log only"
        );
        return Store::log_only();
    }
    let Some(dir) = audit_dir else {
        tracing::warn!(
            "the gateway has no --audit-dir volume: audit events go to the log only and sessions are not recorded"
        );
        return Store::log_only();
    };
    match Store::files(dir, spec) {
        Ok(store) => {
            tracing::info!(dir = %dir.display(), record = ?spec.record, "keeping audit events and recordings");
            store
        }
        Err(error) => {
            tracing::error!(dir = %dir.display(), %error, "the audit volume is not usable; audit events go to the log only");
            Store::log_only()
        }
    }
}

/// The platform's `sessionRecording` now (the defaults without a `KitePlatform`).
pub async fn platform_setting(client: &kube::Client) -> Result<SessionRecordingSpec, kube::Error> {
    let platform = kube::Api::<KitePlatform>::all(client.clone()).get_opt(PLATFORM_NAME).await?;
    Ok(platform.map(|platform| platform.spec.session_recording).unwrap_or_default())
}

/// Follows the platform's `sessionRecording` and switches the store when it
/// changes, until the gateway stops.
pub fn follow(client: kube::Client, switch: SwitchStore, audit_dir: Option<PathBuf>, initial: SessionRecordingSpec) {
    use futures::StreamExt as _;
    use kube::runtime::WatchStreamExt as _;
    use kube::runtime::watcher;
    tokio::spawn(async move {
        let platforms: kube::Api<KitePlatform> = kube::Api::all(client);
        let config = watcher::Config::default().fields(&format!("metadata.name={PLATFORM_NAME}"));
        let mut applied = initial;
        let mut objects = watcher::watcher(platforms, config).default_backoff().applied_objects().boxed();
        while let Some(object) = objects.next().await {
            let Ok(platform) = object else { continue };
            let wanted = platform.spec.session_recording;
            if wanted != applied {
                tracing::info!(record = ?wanted.record, "the platform's session recording changed; new sessions use it");
                switch.replace(build(&wanted, audit_dir.as_ref()).await);
                applied = wanted;
            }
        }
    });
}
