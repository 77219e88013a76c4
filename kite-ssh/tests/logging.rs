//! What the router logs of a rejected login: never the name as typed (it is
//! sometimes a password typed into the wrong field), only a short digest that
//! tells repeated attempts apart.

mod common;

use common::*;
use russh::client::{self, AuthResult};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Everything logged in this process, at every level.
fn captured() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || Sink(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        log
    })
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_login_name_is_never_logged_as_typed() {
    let log = captured();
    let router = RunningRouter::start(static_backend(vec![]), test_options()).await;
    let typed = "Tr0ub4dor&3-typed-as-login";
    for _ in 0..2 {
        let mut handle =
            client::connect(Arc::new(client::Config::default()), router.address(), AnyHostKey).await.unwrap();
        let answer = handle.authenticate_password(typed, "whatever").await.unwrap();
        assert!(matches!(answer, AuthResult::Failure { .. }));
    }
    router.stop().await;
    let text = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    assert!(text.contains("authentication rejected"), "the rejection is logged: {text}");
    assert!(!text.contains("Tr0ub4dor"), "the name as typed is not logged, at any level:\n{text}");
    let digests: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("authentication rejected"))
        .filter_map(|l| l.split("login_digest=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    assert_eq!(digests.len(), 2, "{text}");
    assert_eq!(digests[0], digests[1], "the same name gives the same digest, to tell repeated attempts apart");
}
