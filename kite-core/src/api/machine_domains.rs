//! `KitePlatform.spec.machineDomains`: how each machine's web server is
//! reached at `<domainPrefix>.<baseDomain>`: through which ingress
//! controller, and with which TLS.

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// How machines' domains are served.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[x_kube(validation = Rule::new("self.tls != 'PlatformCertificate' || has(self.certificateSecret)").message("tls PlatformCertificate needs certificateSecret"))]
#[x_kube(validation = Rule::new("self.tls != 'CertManager' || has(self.clusterIssuer)").message("tls CertManager needs clusterIssuer"))]
pub struct MachineDomainsSpec {
    /// Where TLS certificates for the machines' domains come from.
    #[serde(default)]
    pub tls: MachineTls,
    /// With `PlatformCertificate`: a `kubernetes.io/tls` Secret in the
    /// platform namespace (a wildcard certificate for `*.<baseDomain>`),
    /// copied into each machine's namespace as `<vm>-tls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_dns_subdomain")]
    pub certificate_secret: Option<String>,
    /// With `CertManager`: the ClusterIssuer that issues each machine's certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_dns_subdomain")]
    pub cluster_issuer: Option<String>,
    /// The IngressClass of the machines' Ingresses (K3s: `traefik`).
    #[serde(default = "traefik")]
    #[schemars(length(min = 1, max = 253), regex(pattern = super::schema::DNS_SUBDOMAIN_PATTERN))]
    pub ingress_class: String,
    /// The namespace the ingress controller runs in: its pods, and no one
    /// else from outside the machine's namespace, reach the machines' port 80.
    #[serde(default = "kube_system")]
    #[schemars(length(min = 1, max = 63), regex(pattern = super::schema::DNS_LABEL_PATTERN))]
    pub ingress_namespace: String,
}

/// Where a machine domain's certificate comes from.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MachineTls {
    /// None: the domains are served over plain HTTP.
    #[default]
    None,
    /// A certificate Secret of the platform, copied into each machine's namespace.
    PlatformCertificate,
    /// cert-manager issues one per machine.
    CertManager,
}

fn traefik() -> String {
    "traefik".into()
}

fn kube_system() -> String {
    "kube-system".into()
}

impl Default for MachineDomainsSpec {
    fn default() -> Self {
        Self {
            tls: MachineTls::None,
            certificate_secret: None,
            cluster_issuer: None,
            ingress_class: traefik(),
            ingress_namespace: kube_system(),
        }
    }
}

/// The Ingress of the platform itself (the web UI and the API), which the
/// controller owns: `kite-platform`, and `kite-platform-http` beside it when
/// TLS is on, so plain HTTP still reaches the API (which redirects it when
/// `forceHttps`).
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[x_kube(validation = Rule::new("!self.forceHttps || has(self.tlsSecret)").message("forceHttps needs tlsSecret: HTTPS needs a certificate"))]
pub struct PlatformIngressSpec {
    /// Whether the controller keeps the platform's Ingress; off, it removes the one it made.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The host the UI and the API answer on; any host when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_dns_subdomain")]
    pub host: Option<String>,
    /// A `kubernetes.io/tls` Secret of the platform namespace for that host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_dns_subdomain")]
    pub tls_secret: Option<String>,
    /// Plain HTTP is redirected to HTTPS by the API, which then sends
    /// `Strict-Transport-Security` (its cookies are `Secure` over HTTPS).
    #[serde(default)]
    pub force_https: bool,
    /// The IngressClass (K3s: `traefik`).
    #[serde(default = "traefik")]
    #[schemars(length(min = 1, max = 253), regex(pattern = super::schema::DNS_SUBDOMAIN_PATTERN))]
    pub ingress_class: String,
}

fn yes() -> bool {
    true
}

impl Default for PlatformIngressSpec {
    fn default() -> Self {
        Self { enabled: true, host: None, tls_secret: None, force_https: false, ingress_class: traefik() }
    }
}
