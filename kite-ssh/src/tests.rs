//! Unit tests of the router's use of the backend traits, with mockall:
//! what the router asks the backend, and what it never asks.

use crate::backend::{MockBackend, Readiness, Route};
use crate::{Router, RouterOptions};
use russh::client::{self, AuthResult};
use russh::keys::{Algorithm, PrivateKey, PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use std::sync::Arc;
use std::time::Duration;

struct AnyHostKey;

impl client::Handler for AnyHostKey {
    type Error = russh::Error;
    async fn check_server_key(&mut self, _key: &PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        Ok(true)
    }
}

fn options() -> RouterOptions {
    RouterOptions::default().with_rejection_delay(Duration::ZERO)
}

/// Serves `backend` on loopback; returns a connected, unauthenticated client.
async fn connect(backend: MockBackend) -> client::Handle<AnyHostKey> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let key = PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).unwrap();
    let router = Router::builder().backend(backend).host_key(key).options(options()).build().unwrap();
    tokio::spawn(async move { router.serve(listener, std::future::pending()).await });
    client::connect(Arc::new(client::Config::default()), address, AnyHostKey).await.unwrap()
}

#[tokio::test]
async fn an_unknown_login_is_never_checked_against_a_route() {
    let mut backend = MockBackend::new();
    backend.expect_resolve().returning(|_| Box::pin(async { None }));
    backend.expect_check_password().never();
    backend.expect_check_public_key().never();
    backend.expect_upstream().never();
    let mut client = connect(backend).await;
    let result = client.authenticate_password("nobody", "guess").await.unwrap();
    assert!(matches!(result, AuthResult::Failure { .. }));
}

#[tokio::test]
async fn the_password_is_checked_for_the_resolved_route() {
    let mut backend = MockBackend::new();
    backend
        .expect_resolve()
        .withf(|login| login == "alice")
        .returning(|_| Box::pin(async { Some(Route::new("ns/alice-vm")) }));
    backend
        .expect_check_password()
        .withf(|route, password| route.id == "ns/alice-vm" && password == "secret")
        .times(1)
        .returning(|_, _| Box::pin(async { true }));
    // Authenticating connects nothing: the upstream is asked for only at the first channel.
    backend.expect_upstream().never();
    let mut client = connect(backend).await;
    assert!(matches!(client.authenticate_password("alice", "secret").await.unwrap(), AuthResult::Success));
}

#[tokio::test]
async fn a_key_is_checked_for_the_route_and_a_refused_key_lets_the_client_try_a_password() {
    let mut backend = MockBackend::new();
    backend.expect_resolve().returning(|_| Box::pin(async { Some(Route::new("r")) }));
    backend.expect_check_public_key().returning(|_, _| Box::pin(async { false }));
    backend.expect_check_password().times(1).returning(|_, _| Box::pin(async { true }));
    let mut client = connect(backend).await;
    let key = PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).unwrap();
    let result = client.authenticate_publickey("alice", PrivateKeyWithHashAlg::new(Arc::new(key), None)).await.unwrap();
    match result {
        AuthResult::Failure { remaining_methods, .. } => {
            assert!(remaining_methods.contains(&russh::MethodKind::Password), "{remaining_methods:?}")
        }
        AuthResult::Success => panic!("a refused key logged in"),
    }
    assert!(matches!(client.authenticate_password("alice", "pw").await.unwrap(), AuthResult::Success));
}

#[tokio::test]
async fn an_unavailable_upstream_is_reported_on_the_channel() {
    let mut backend = MockBackend::new();
    backend.expect_resolve().returning(|_| Box::pin(async { Some(Route::new("r")) }));
    backend.expect_check_password().returning(|_, _| Box::pin(async { true }));
    backend
        .expect_upstream()
        .times(1)
        .returning(|_| Box::pin(async { Readiness::Unavailable { message: "The machine is stopped.".into() } }));
    let mut client = connect(backend).await;
    assert!(matches!(client.authenticate_password("alice", "pw").await.unwrap(), AuthResult::Success));
    let mut channel = client.channel_open_session().await.unwrap();
    channel.exec(true, "true").await.unwrap();
    let mut stderr = String::new();
    let mut status = None;
    while let Some(message) = channel.wait().await {
        match message {
            russh::ChannelMsg::ExtendedData { data, ext: 1 } => stderr.push_str(&String::from_utf8_lossy(&data)),
            russh::ChannelMsg::ExitStatus { exit_status } => status = Some(exit_status),
            russh::ChannelMsg::Close => break,
            _ => {}
        }
    }
    assert_eq!(stderr, "kite: The machine is stopped.\r\n");
    assert_eq!(status, Some(255));
}
