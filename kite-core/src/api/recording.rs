//! `KitePlatform.spec.sessionRecording`: what the SSH gateway keeps of the
//! sessions it carries (audit events always; recordings as this says),
//! for how long, and where.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the gateway records, how long it keeps it, and where.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRecordingSpec {
    /// What of shell and command sessions is recorded. Audit events (who
    /// signed in to which machine from where, each channel, bytes, how it
    /// ended) are kept whatever this says; SFTP and forwarded ports are
    /// audited, never recorded.
    #[serde(default)]
    pub record: RecordMode,
    /// Days after which audit events and recordings are deleted (whole
    /// days, oldest first). Unset: kept until `maxSizeMiB` needs the room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3650))]
    pub max_age_days: Option<u32>,
    /// The most the store may hold, in MiB; past it, the oldest days are
    /// deleted (never the current one). Unset: no limit but the volume's.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "maxSizeMiB")]
    #[schemars(range(min = 1, max = 104857600))]
    pub max_size_mib: Option<u64>,
    /// An S3-compatible bucket to keep them in, shared by the gateway's
    /// replicas. Unset: the gateway's own volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3StoreSpec>,
}

/// What is recorded of shell and command sessions.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RecordMode {
    /// Nothing: sessions are audited only.
    Off,
    /// What the machine writes to the terminal, and its size changes.
    #[default]
    Output,
    /// The output and what the user types. Typed passwords land in it, so
    /// the machines' owners are told in the web UI.
    OutputAndInput,
}

impl RecordMode {
    /// Whether sessions are recorded at all.
    pub fn records(self) -> bool {
        self != Self::Off
    }

    /// Whether input is recorded.
    pub fn records_input(self) -> bool {
        self == Self::OutputAndInput
    }
}

/// An S3-compatible bucket (AWS S3, MinIO, Ceph RGW, Garage…). The
/// requests are signed with the keys in the Secret
/// [`s3_credentials::SECRET`] of the platform's namespace (a fixed name, so
/// the gateway's role can name the one Secret it may read).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct S3StoreSpec {
    /// The service's URL, such as `http://minio.minio.svc:9000`; unset for AWS S3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 8, max = 2048), regex(pattern = r"^https?://[^\s/]+(/.*)?$"))]
    pub endpoint: Option<String>,
    /// The bucket (it must exist).
    #[schemars(length(min = 3, max = 63), regex(pattern = r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$"))]
    pub bucket: String,
    /// The bucket's region.
    #[serde(default = "default_region")]
    #[schemars(length(min = 1, max = 64))]
    pub region: String,
    /// A prefix for every key, such as `kite/`, to share a bucket.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 512))]
    pub prefix: String,
    /// Path-style addresses (`endpoint/bucket/key`), as MinIO and most
    /// self-hosted services want; virtual-hosted (`bucket.endpoint/key`) when false.
    #[serde(default = "yes")]
    pub path_style: bool,
}

/// The credentials Secret of the S3 store.
pub mod s3_credentials {
    /// Its name, in the platform's namespace.
    pub const SECRET: &str = "kite-gateway-s3";
    /// The access key id.
    pub const ACCESS_KEY_ID: &str = "accessKeyId";
    /// The secret access key.
    pub const SECRET_ACCESS_KEY: &str = "secretAccessKey";
}

fn default_region() -> String {
    "us-east-1".to_string()
}

fn yes() -> bool {
    true
}
