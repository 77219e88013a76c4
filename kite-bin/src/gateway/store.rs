//! Where `kite gateway --kube` keeps audit events and recordings: built
//! from `KitePlatform.spec.sessionRecording` (and the gateway's volume,
//! `--audit-dir`), and rebuilt when that changes, so a changed setting
//! applies to the next session without a restart. Sessions already running
//! finish in the store they began in.

use k8s_openapi::api::core::v1::Secret;
use kite_core::api::{KitePlatform, PLATFORM_NAME, S3StoreSpec, SessionRecordingSpec, s3_credentials};
use kite_ssh::audit::{
    ArchiveFuture, AuditArchive, AuditEvent, AuditSink, CastWriter, FileStore, LogOnly, RecordingAbout, Retention,
    S3Settings, S3Store,
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

    /// The S3 store `settings` name, keeping what `spec` says.
    pub fn s3(settings: S3Settings, spec: &SessionRecordingSpec) -> Result<Self, kite_ssh::Error> {
        let store = S3Store::open(settings)?;
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
    Retention::default()
        .with_max_age(spec.max_age_days.map(|days| Duration::from_secs(u64::from(days) * 86_400)))
        .with_max_bytes(spec.max_size_mib.map(|mib| mib.saturating_mul(1024 * 1024)))
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

/// The settings of the bucket `bucket` names, with `access_key_id` and `secret_access_key`.
pub fn s3_settings(bucket: &S3StoreSpec, access_key_id: String, secret_access_key: String) -> S3Settings {
    S3Settings::new(bucket.bucket.clone(), bucket.region.clone(), access_key_id, secret_access_key)
        .with_endpoint(bucket.endpoint.clone())
        .with_prefix(bucket.prefix.trim_matches('/'))
        .with_allow_http(bucket.endpoint.as_deref().is_some_and(|endpoint| endpoint.starts_with("http://")))
        .with_path_style(bucket.path_style)
}

/// The keys in the Secret [`s3_credentials::SECRET`] of `namespace`.
async fn s3_keys(client: &kube::Client, namespace: &str) -> Result<(String, String), String> {
    let name = s3_credentials::SECRET;
    let secret = kube::Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|error| format!("reading the Secret {namespace}/{name}: {error}"))?
        .ok_or_else(|| format!("the Secret {namespace}/{name} does not exist"))?;
    let field = |key: &str| {
        crate::secret_once::field(&secret, key)
            .map(|value| String::from_utf8_lossy(value).trim().to_string())
            .filter(|value| !value.is_empty())
            .ok_or_else(|| format!("the Secret {namespace}/{name} has no {key}"))
    };
    Ok((field(s3_credentials::ACCESS_KEY_ID)?, field(s3_credentials::SECRET_ACCESS_KEY)?))
}

/// Where the S3 store's keys come from: the cluster's Secret, for `--kube`.
pub struct Cluster<'a> {
    /// The client.
    pub client: &'a kube::Client,
    /// The platform namespace, where the Secret is.
    pub namespace: &'a str,
}

/// Builds the store `spec` asks for. Without a volume (`--audit-dir`) and
/// without S3, events are logged only, and the log says so; a store that
/// cannot be opened is logged as an error, and events are logged only.
pub async fn build(spec: &SessionRecordingSpec, audit_dir: Option<&PathBuf>, cluster: &Cluster<'_>) -> Store {
    if let Some(bucket) = &spec.s3 {
        let opened = match s3_keys(cluster.client, cluster.namespace).await {
            Ok((id, secret)) => Store::s3(s3_settings(bucket, id, secret), spec).map_err(|error| error.to_string()),
            Err(problem) => Err(problem),
        };
        return match opened {
            Ok(store) => {
                tracing::info!(bucket = %bucket.bucket, record = ?spec.record, "keeping audit events and recordings in S3");
                store
            }
            Err(problem) => {
                tracing::error!(bucket = %bucket.bucket, %problem, "the S3 store cannot be used; audit events go to the log only");
                Store::log_only()
            }
        };
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
pub fn follow(
    client: kube::Client,
    namespace: String,
    switch: SwitchStore,
    audit_dir: Option<PathBuf>,
    initial: SessionRecordingSpec,
) {
    use futures::StreamExt as _;
    use kube::runtime::WatchStreamExt as _;
    use kube::runtime::watcher;
    tokio::spawn(async move {
        let platforms: kube::Api<KitePlatform> = kube::Api::all(client.clone());
        let config = watcher::Config::default().fields(&format!("metadata.name={PLATFORM_NAME}"));
        let mut applied = initial;
        let mut objects = watcher::watcher(platforms, config).default_backoff().applied_objects().boxed();
        while let Some(object) = objects.next().await {
            let Ok(platform) = object else { continue };
            let wanted = platform.spec.session_recording;
            if wanted != applied {
                tracing::info!(record = ?wanted.record, "the platform's session recording changed; new sessions use it");
                let cluster = Cluster { client: &client, namespace: &namespace };
                switch.replace(build(&wanted, audit_dir.as_ref(), &cluster).await);
                applied = wanted;
            }
        }
    });
}
