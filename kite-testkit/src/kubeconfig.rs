//! A kubeconfig that points `kubectl` and `kube::Client` at the fake server.

use crate::Error;
use std::net::SocketAddr;
use std::path::Path;

/// The kubeconfig text for a server at `address` (plain HTTP, no credentials).
pub fn render(address: SocketAddr) -> String {
    render_with_token(address, None)
}

/// The kubeconfig text for a server at `address`, with a bearer token when one is given.
pub fn render_with_token(address: SocketAddr, token: Option<&str>) -> String {
    let user = match token {
        Some(token) => format!("{{token: {token}}}"),
        None => "{}".to_string(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kite-testkit\n  cluster:\n    server: http://{address}\n\
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
    std::fs::write(path, render_with_token(address, token))
        .map_err(|source| Error::Io { what: format!("writing the kubeconfig {}", path.display()), source })
}
