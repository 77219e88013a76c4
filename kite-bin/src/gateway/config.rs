//! The `kite gateway --config` file: TOML, read strictly. A mistake is an
//! error that names the file, the line and the key, and nothing starts.

use anyhow::{Context, bail};
use kite_ssh::backend::HostKeyCheck;
use kite_ssh::{Fallback, RouterOptions, StaticRoute};
use russh::keys::PublicKey;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use toml::Spanned;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Spanned<String>,
    host_key: Spanned<String>,
    #[serde(default)]
    route: Vec<RouteEntry>,
    fallback: Option<FallbackEntry>,
    #[serde(default)]
    options: OptionsEntry,
    recording: Option<RecordingEntry>,
    control: Option<ControlEntry>,
}

/// `[control]`: the control API for `kite api` (sessions, recordings, ending a session).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ControlEntry {
    /// Where it listens (ip:port).
    listen: Spanned<String>,
    /// The file holding its token (relative to the file; made when missing).
    token_file: Spanned<String>,
}

/// Where a configured gateway keeps its audit events and recordings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordingStore {
    /// A folder.
    Dir(PathBuf),
    /// An S3-compatible bucket.
    S3(kite_ssh::audit::S3Settings),
}

/// Where the control API listens, and its token's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// Where it listens.
    pub listen: SocketAddr,
    /// The token's file.
    pub token_file: PathBuf,
}

/// `[recording]`: where the gateway keeps its audit events.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RecordingEntry {
    /// The store's folder (relative to the file); audit events go to `audit/<day>.jsonl` under it.
    dir: Option<Spanned<String>>,
    /// An S3-compatible bucket instead of a folder.
    s3: Option<S3Entry>,
    /// Whether shell and command sessions are recorded (asciicast, under `recordings/`).
    #[serde(default = "yes")]
    sessions: bool,
    /// Whether the user's input is recorded too (typed passwords land in it).
    #[serde(default)]
    input: bool,
    /// Days after which audit events and recordings go.
    max_age_days: Option<Spanned<u32>>,
    /// The most the store may hold, in MiB; past it the oldest days go.
    max_size_mib: Option<u64>,
}

/// `[recording.s3]`: the bucket, and its keys.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct S3Entry {
    endpoint: Option<String>,
    bucket: Spanned<String>,
    #[serde(default = "us_east_1")]
    region: String,
    #[serde(default)]
    prefix: String,
    #[serde(default = "yes")]
    path_style: bool,
    access_key_id: String,
    /// A file holding the secret key (relative to the file), so the key is not in the configuration.
    secret_access_key_file: Spanned<String>,
}

fn yes() -> bool {
    true
}

fn us_east_1() -> String {
    "us-east-1".into()
}

/// Where the gateway keeps audit events, and what it records and keeps, as
/// `KitePlatform.spec.sessionRecording` says it for `--kube`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// The store: a folder, or a bucket.
    pub store: RecordingStore,
    /// What is recorded and for how long.
    pub spec: kite_core::api::SessionRecordingSpec,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RouteEntry {
    user: Spanned<String>,
    password_hash: Option<Spanned<String>>,
    #[serde(default)]
    authorized_keys: Vec<Spanned<String>>,
    upstream: Spanned<String>,
    upstream_user: Spanned<String>,
    upstream_key: Spanned<String>,
    upstream_host_key: Option<Spanned<String>>,
    #[serde(default)]
    upstream_insecure_ignore_host_key: bool,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct FallbackEntry {
    upstream: Spanned<String>,
    host_key: Option<Spanned<String>>,
    #[serde(default)]
    insecure_ignore_host_key: bool,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct OptionsEntry {
    max_connections: Option<usize>,
    max_unauthenticated_per_source: Option<usize>,
    max_auth_attempts: Option<usize>,
    max_channels_per_connection: Option<usize>,
    handshake_timeout_seconds: Option<u64>,
    session_start_timeout_seconds: Option<u64>,
    idle_timeout_seconds: Option<u64>,
    starting_timeout_seconds: Option<u64>,
    #[serde(default)]
    proxy_protocol_from: Vec<Spanned<String>>,
    banner: Option<String>,
}

/// A gateway configuration, checked and loaded.
pub struct GatewayConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The host key file (created if missing).
    pub host_key: PathBuf,
    /// The routes.
    pub routes: Vec<StaticRoute>,
    /// The router's options, the fallback included.
    pub options: RouterOptions,
    /// Where audit events are kept, and what is recorded, when `[recording]` says.
    pub recording: Option<Recording>,
    /// The control API, when `[control]` says.
    pub control: Option<Control>,
}

/// Reads the line of a byte offset, for error messages.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn at<T>(&self, value: &Spanned<T>, key: &str) -> String {
        let line = self.text[..value.span().start.min(self.text.len())].matches('\n').count() + 1;
        format!("{}:{line}: {key}", self.path.display())
    }

    fn relative(&self, file: &str) -> PathBuf {
        let path = Path::new(file);
        if path.is_absolute() { path.to_path_buf() } else { self.path.parent().unwrap_or(Path::new(".")).join(path) }
    }
}

fn address(source: &Source<'_>, value: &Spanned<String>, key: &str) -> anyhow::Result<String> {
    let text = value.get_ref();
    match text.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => Ok(text.clone()),
        _ => bail!("{}: {text:?} is not host:port", source.at(value, key)),
    }
}

fn public_key(source: &Source<'_>, value: &Spanned<String>, key: &str) -> anyhow::Result<PublicKey> {
    PublicKey::from_openssh(value.get_ref().trim())
        .map_err(|e| anyhow::anyhow!("{}: not an OpenSSH public key ({e})", source.at(value, key)))
}

fn host_key_check(
    source: &Source<'_>,
    pinned: &Option<Spanned<String>>,
    insecure: bool,
    keys: (&str, &str),
    owner: &str,
) -> anyhow::Result<HostKeyCheck> {
    match (pinned, insecure) {
        (Some(pinned), false) => Ok(HostKeyCheck::Pinned(public_key(source, pinned, keys.0)?)),
        (None, true) => Ok(HostKeyCheck::InsecureAcceptAny),
        (Some(pinned), true) => bail!("{}: set {} or {} = true, not both", source.at(pinned, keys.0), keys.0, keys.1),
        (None, false) => bail!(
            "{}: {owner} needs {} (the upstream's public host key), or {} = true to skip the check",
            source.path.display(),
            keys.0,
            keys.1
        ),
    }
}

fn route(source: &Source<'_>, entry: &RouteEntry) -> anyhow::Result<StaticRoute> {
    let user = entry.user.get_ref();
    if user.is_empty() || user.chars().any(|c| c.is_whitespace() || c == '@' || c == ':') {
        bail!("{}: {user:?} is not a login name", source.at(&entry.user, "route.user"));
    }
    if let Some(hash) = &entry.password_hash {
        let text = hash.get_ref();
        let known =
            ["$argon2id$", "$argon2i$", "$argon2d$", "$2a$", "$2b$", "$2y$"].iter().any(|p| text.starts_with(p));
        if !known {
            bail!(
                "{}: not an argon2 or bcrypt hash; make one with `kite hash-password`",
                source.at(hash, "route.password_hash")
            );
        }
    }
    if entry.password_hash.is_none() && entry.authorized_keys.is_empty() {
        bail!(
            "{}: route {user:?} has neither password_hash nor authorized_keys, so nobody could log in",
            source.at(&entry.user, "route.user")
        );
    }
    let authorized_keys = entry
        .authorized_keys
        .iter()
        .map(|k| public_key(source, k, "route.authorized_keys"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let key_path = source.relative(entry.upstream_key.get_ref());
    let upstream_key = russh::keys::load_secret_key(&key_path, None).map_err(|e| {
        anyhow::anyhow!(
            "{}: cannot read the private key {}: {e}",
            source.at(&entry.upstream_key, "route.upstream_key"),
            key_path.display()
        )
    })?;
    Ok(StaticRoute {
        user: user.clone(),
        password_hash: entry.password_hash.as_ref().map(|h| h.get_ref().clone()),
        authorized_keys,
        upstream: address(source, &entry.upstream, "route.upstream")?,
        upstream_user: entry.upstream_user.get_ref().clone(),
        upstream_key: Arc::new(upstream_key),
        upstream_host_key: host_key_check(
            source,
            &entry.upstream_host_key,
            entry.upstream_insecure_ignore_host_key,
            ("route.upstream_host_key", "route.upstream_insecure_ignore_host_key"),
            &format!("route {user:?}"),
        )?,
    })
}

/// Reads and checks the configuration at `path`.
pub fn load(path: &Path) -> anyhow::Result<GatewayConfig> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let file: File = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let source = Source { path, text: &text };
    let listen = file.listen.get_ref().parse::<SocketAddr>().map_err(|e| {
        anyhow::anyhow!("{}: {:?} is not ip:port ({e})", source.at(&file.listen, "listen"), file.listen.get_ref())
    })?;
    let mut routes = Vec::new();
    for entry in &file.route {
        if routes.iter().any(|r: &StaticRoute| r.user == *entry.user.get_ref()) {
            bail!("{}: a second route for {:?}", source.at(&entry.user, "route.user"), entry.user.get_ref());
        }
        routes.push(route(&source, entry)?);
    }
    let fallback = match &file.fallback {
        Some(f) => Some(Fallback::new(
            address(&source, &f.upstream, "fallback.upstream")?,
            host_key_check(
                &source,
                &f.host_key,
                f.insecure_ignore_host_key,
                ("fallback.host_key", "fallback.insecure_ignore_host_key"),
                "the fallback",
            )?,
        )),
        None => None,
    };
    let defaults = RouterOptions::default();
    let o = &file.options;
    let proxy_protocol_from = o
        .proxy_protocol_from
        .iter()
        .map(|text| {
            crate::net_arg::parse_net(text.get_ref())
                .map_err(|message| anyhow::anyhow!("{}: {message}", source.at(text, "options.proxy_protocol_from")))
        })
        .collect::<anyhow::Result<_>>()?;
    let options = defaults
        .clone()
        .with_max_connections(o.max_connections.unwrap_or(defaults.max_connections))
        .with_max_unauthenticated_per_source(
            o.max_unauthenticated_per_source.unwrap_or(defaults.max_unauthenticated_per_source),
        )
        .with_max_auth_attempts(o.max_auth_attempts.unwrap_or(defaults.max_auth_attempts))
        .with_max_channels_per_connection(o.max_channels_per_connection.unwrap_or(defaults.max_channels_per_connection))
        .with_session_start_timeout(
            o.session_start_timeout_seconds.map(Duration::from_secs).unwrap_or(defaults.session_start_timeout),
        )
        .with_handshake_timeout(
            o.handshake_timeout_seconds.map(Duration::from_secs).unwrap_or(defaults.handshake_timeout),
        )
        .with_idle_timeout(o.idle_timeout_seconds.map(Duration::from_secs).or(defaults.idle_timeout))
        .with_starting_timeout(o.starting_timeout_seconds.map(Duration::from_secs).unwrap_or(defaults.starting_timeout))
        .with_banner(o.banner.clone())
        .with_proxy_protocol_from(proxy_protocol_from)
        .with_fallback(fallback);
    let recording = file.recording.as_ref().map(|entry| recording(&source, entry)).transpose()?;
    let control = match &file.control {
        Some(entry) => Some(Control {
            listen: entry.listen.get_ref().parse::<SocketAddr>().map_err(|e| {
                anyhow::anyhow!(
                    "{}: {:?} is not ip:port ({e})",
                    source.at(&entry.listen, "control.listen"),
                    entry.listen.get_ref()
                )
            })?,
            token_file: source.relative(entry.token_file.get_ref()),
        }),
        None => None,
    };
    Ok(GatewayConfig {
        listen,
        host_key: source.relative(file.host_key.get_ref()),
        routes,
        options,
        recording,
        control,
    })
}

fn recording(source: &Source<'_>, entry: &RecordingEntry) -> anyhow::Result<Recording> {
    use kite_core::api::{RecordMode, SessionRecordingSpec};
    let record = match (entry.sessions, entry.input) {
        (false, _) => RecordMode::Off,
        (true, false) => RecordMode::Output,
        (true, true) => RecordMode::OutputAndInput,
    };
    if let Some(days) = &entry.max_age_days
        && !(1..=3650).contains(days.get_ref())
    {
        bail!("{}: {} is not between 1 and 3650 days", source.at(days, "recording.max_age_days"), days.get_ref());
    }
    let store = match (&entry.dir, &entry.s3) {
        (Some(dir), None) => RecordingStore::Dir(source.relative(dir.get_ref())),
        (None, Some(s3)) => {
            let key_file = source.relative(s3.secret_access_key_file.get_ref());
            let secret = std::fs::read_to_string(&key_file).map_err(|e| {
                anyhow::anyhow!(
                    "{}: cannot read {}: {e}",
                    source.at(&s3.secret_access_key_file, "recording.s3.secret_access_key_file"),
                    key_file.display()
                )
            })?;
            let bucket = kite_core::api::S3StoreSpec {
                endpoint: s3.endpoint.clone(),
                bucket: s3.bucket.get_ref().clone(),
                region: s3.region.clone(),
                prefix: s3.prefix.clone(),
                path_style: s3.path_style,
            };
            let settings = super::store::s3_settings(&bucket, s3.access_key_id.clone(), secret.trim().to_string());
            RecordingStore::S3(settings)
        }
        (Some(dir), Some(_)) => bail!("{}: set dir or [recording.s3], not both", source.at(dir, "recording.dir")),
        (None, None) => bail!("{}: [recording] needs dir = \"PATH\" or a [recording.s3] table", source.path.display()),
    };
    Ok(Recording {
        store,
        spec: SessionRecordingSpec {
            record,
            max_age_days: entry.max_age_days.as_ref().map(|days| *days.get_ref()),
            max_size_mib: entry.max_size_mib,
            s3: None,
        },
    })
}
