//! A kubeconfig that points `kubectl` and `kube::Client` at the fake server.

use crate::Error;
use std::net::SocketAddr;
use std::path::Path;

/// The kubeconfig text for a server at `address` (plain HTTP, no credentials).
pub fn render(address: SocketAddr) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kite-testkit\n  cluster:\n    server: http://{address}\n\
         contexts:\n- name: kite-testkit\n  context:\n    cluster: kite-testkit\n    user: kite-testkit\n    namespace: default\n\
         current-context: kite-testkit\nusers:\n- name: kite-testkit\n  user: {{}}\npreferences: {{}}\n"
    )
}

/// Writes [`render`] to `path`.
pub fn write(path: &Path, address: SocketAddr) -> Result<(), Error> {
    std::fs::write(path, render(address))
        .map_err(|source| Error::Io { what: format!("writing the kubeconfig {}", path.display()), source })
}
