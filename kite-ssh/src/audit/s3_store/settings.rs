//! Where an S3 store keeps its objects, and with which credentials.

/// Where an [`super::S3Store`] keeps its objects, and with which credentials.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct S3Settings {
    /// The service's URL (`https://minio.example:9000`); `None` for Amazon
    /// S3 itself, whose endpoint follows from the region.
    pub endpoint: Option<String>,
    /// The bucket, which must exist.
    pub bucket: String,
    /// The region (`us-east-1`; most other services accept any).
    pub region: String,
    /// The folder inside the bucket that holds `audit/` and `recordings/`
    /// (`kite/gateway`); empty for the bucket's root.
    pub prefix: String,
    /// The access key's id.
    pub access_key_id: String,
    /// The access key's secret (never printed by `Debug`).
    pub secret_access_key: String,
    /// Whether plain `http://` endpoints are allowed (off: HTTPS only).
    pub allow_http: bool,
    /// Whether the bucket goes in the path (`https://endpoint/bucket/key`,
    /// what most self-hosted services want) rather than in the host name
    /// (`https://bucket.s3.region.amazonaws.com/key`; with an `endpoint`,
    /// the endpoint must then name the bucket itself).
    pub path_style: bool,
}

impl S3Settings {
    /// The bucket `bucket` of Amazon S3 in `region`, with this access key;
    /// HTTPS only, the bucket in the host name, at the bucket's root. The
    /// `with_*` methods change the rest.
    pub fn new(
        bucket: impl Into<String>,
        region: impl Into<String>,
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
    ) -> Self {
        Self {
            endpoint: None,
            bucket: bucket.into(),
            region: region.into(),
            prefix: String::new(),
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            allow_http: false,
            path_style: false,
        }
    }

    /// These settings with [`S3Settings::endpoint`] replaced.
    #[must_use]
    pub fn with_endpoint(mut self, endpoint: Option<String>) -> Self {
        self.endpoint = endpoint;
        self
    }

    /// These settings with [`S3Settings::prefix`] replaced.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// These settings with [`S3Settings::allow_http`] replaced.
    #[must_use]
    pub fn with_allow_http(mut self, allow_http: bool) -> Self {
        self.allow_http = allow_http;
        self
    }

    /// These settings with [`S3Settings::path_style`] replaced.
    #[must_use]
    pub fn with_path_style(mut self, path_style: bool) -> Self {
        self.path_style = path_style;
        self
    }
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("prefix", &self.prefix)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field("allow_http", &self.allow_http)
            .field("path_style", &self.path_style)
            .finish()
    }
}
