//! A kubeconfig that points `kubectl` and `kube::Client` at the fake server.

use crate::Error;
use std::net::SocketAddr;
use std::path::Path;

/// The kubeconfig text for a server at `address` (plain HTTP, no credentials).
pub fn render(address: SocketAddr) -> String {
    render_with_token(address, None)
}

/// How a kubeconfig's user proves who it is.
#[derive(Clone, Debug)]
pub enum Credentials {
    /// Nothing: `system:anonymous` where the server authorizes.
    None,
    /// A bearer token (the admin's, or a ServiceAccount's from the TokenRequest API).
    Token(String),
    /// A client certificate signed by the server's CA (HTTPS only).
    ClientCertificate(crate::tls::ClientCertificate),
}

/// The kubeconfig text for a server at `address`, with a bearer token when one is given.
pub fn render_with_token(address: SocketAddr, token: Option<&str>) -> String {
    let credentials = token.map_or(Credentials::None, |token| Credentials::Token(token.to_string()));
    render_config(&format!("http://{address}"), None, &credentials)
}

/// The kubeconfig text for a server serving HTTPS at `address`
/// ([`FakeApiServer::listen_tls`](crate::FakeApiServer::listen_tls)), trusting `ca_pem`.
pub fn render_https(address: SocketAddr, ca_pem: &str, credentials: &Credentials) -> String {
    render_config(&format!("https://{address}"), Some(ca_pem), credentials)
}

fn render_config(server: &str, ca_pem: Option<&str>, credentials: &Credentials) -> String {
    use base64::Engine as _;
    let data = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let user = match credentials {
        Credentials::None => "{}".to_string(),
        Credentials::Token(token) => format!("{{token: {token}}}"),
        Credentials::ClientCertificate(issued) => format!(
            "{{client-certificate-data: {}, client-key-data: {}}}",
            data(&issued.certificate_pem),
            data(&issued.key_pem)
        ),
    };
    let authority = ca_pem.map(|pem| format!("\n    certificate-authority-data: {}", data(pem))).unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kite-testkit\n  cluster:\n    server: {server}{authority}\n\
         contexts:\n- name: kite-testkit\n  context:\n    cluster: kite-testkit\n    user: kite-testkit\n    namespace: default\n\
         current-context: kite-testkit\nusers:\n- name: kite-testkit\n  user: {user}\npreferences: {{}}\n"
    )
}

/// Writes [`render`] to `path`.
pub fn write(path: &Path, address: SocketAddr) -> Result<(), Error> {
    write_with_token(path, address, None)
}

/// Writes [`render_with_token`] to `path`.
pub fn write_with_token(path: &Path, address: SocketAddr, token: Option<&str>) -> Result<(), Error> {
    write_text(path, &render_with_token(address, token))
}

/// Writes a kubeconfig's `text` to `path`, readable by its owner only (it may hold credentials).
pub fn write_text(path: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let what = || format!("writing the kubeconfig {}", path.display());
    // Written beside it and renamed, so that whoever waits for the file reads it whole.
    let partial = path.with_extension("partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .map_err(|source| Error::Io { what: what(), source })?;
    file.write_all(text.as_bytes()).map_err(|source| Error::Io { what: what(), source })?;
    std::fs::rename(&partial, path).map_err(|source| Error::Io { what: what(), source })
}
