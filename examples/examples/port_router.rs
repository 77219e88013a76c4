//! Embeds kite-ssh with a resolver of its own: the login is a port number,
//! and `ssh -p 2222 22022@127.0.0.1` reaches the sshd on 127.0.0.1:22022.
//!
//! ```text
//! KITE_PASSWORD_HASH="$(printf 'secret\n' | kite hash-password)" \
//!   cargo run -p kite-examples --example port_router -- upstream_key upstream_host_key.pub
//! ```
// ANCHOR: all
use kite_ssh::audit::{AuditEvent, AuditSink, AuthResult, Event};
use kite_ssh::backend::{Backend, HostKeyCheck, Readiness, Route, Upstream, UpstreamAuth};
use kite_ssh::russh::keys::{PrivateKey, PublicKey};
use kite_ssh::{Messages, Router, password};
use std::sync::Arc;

/// Routes the login `<port>` to `127.0.0.1:<port>`, for one shared password.
struct PortRouter {
    password_hash: Arc<str>,
    upstream_key: Arc<PrivateKey>,
    upstream_host_key: PublicKey,
}

impl Backend for PortRouter {
    async fn resolve(&self, login: &str) -> Option<Route> {
        login.parse::<u16>().ok().map(|port| Route::new(port.to_string()))
    }

    async fn check_password(&self, _route: &Route, typed: &str) -> bool {
        // argon2 is slow on purpose: verify on a blocking thread, never on the
        // async runtime, where it would hold up every other connection.
        // (`password::verify_off_runtime` does this, bounded to one per core.)
        let (typed, hash) = (typed.to_string(), self.password_hash.clone());
        tokio::task::spawn_blocking(move || password::verify(&typed, &hash)).await.unwrap_or(false)
    }

    // check_public_key is left out: by default no key may log in.

    async fn upstream(&self, route: &Route) -> Readiness {
        let address = format!("127.0.0.1:{}", route.id);
        let auth = UpstreamAuth::Key(self.upstream_key.clone());
        Readiness::Ready(Upstream::new(address, "root", auth, HostKeyCheck::Pinned(self.upstream_host_key.clone())))
    }
}

/// An audit store of its own: prints each sign-in. (`kite_ssh::audit::FileStore`
/// keeps every event, and recordings, on disk.)
struct PrintSignIns;

impl AuditSink for PrintSignIns {
    fn record(&self, event: &AuditEvent) {
        if let Event::Auth { result: AuthResult::Accepted, ssh_id: Some(login), .. } = &event.event {
            println!("{login} signed in from {}", event.source);
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(key), Some(host_key)) = (args.next(), args.next()) else {
        return Err("usage: port_router <upstream private key> <upstream host public key>".into());
    };
    let backend = PortRouter {
        password_hash: std::env::var("KITE_PASSWORD_HASH").map_err(|_| "set KITE_PASSWORD_HASH")?.into(),
        upstream_key: Arc::new(kite_ssh::russh::keys::load_secret_key(key, None)?),
        upstream_host_key: kite_ssh::russh::keys::load_public_key(host_key)?,
    };
    let host_key = kite_ssh::host_key::load_or_generate("port_router_host_key".as_ref())?;
    let router = Router::builder()
        .backend(backend)
        .host_key(host_key)
        .audit(PrintSignIns)
        // What users read on their stderr, under this router's own name.
        .messages(Messages::default().with_prefix("port-router: "))
        .build()?;
    // PORT_ROUTER_LISTEN chooses another address (tests/embedder does).
    let listen = std::env::var("PORT_ROUTER_LISTEN").unwrap_or_else(|_| "127.0.0.1:2222".into());
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!("listening on {listen}; try: ssh -p 2222 22@127.0.0.1");
    router.serve(listener, async { tokio::signal::ctrl_c().await.unwrap_or(()) }).await?;
    Ok(())
}
// ANCHOR_END: all
