//! The one place an error answer is logged: a middleware that reads the
//! [`Cause`] an [`ApiError`](super::error::ApiError) left in the response's
//! extensions and writes it with the request's method, path and status.
//! Errors are built in many places and sometimes replaced before they are
//! answered; logging here means one line per answer, never one for an
//! error that was dropped, and the line says which request it was.

use super::error::{Cause, Severity};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// Logs the error a response carries (see the module's doc). A 5xx without
/// a cause is logged too, so no failure leaves the server unseen.
pub async fn log_errors(request: Request, next: Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let mut response = next.run(request).await;
    let status = response.status().as_u16();
    match response.extensions_mut().remove::<Cause>() {
        Some(Cause { doing, error, severity: Severity::Fault }) => {
            tracing::error!(%method, %path, status, doing, %error, "request failed");
        }
        Some(Cause { doing, error, severity: Severity::Expected }) => {
            tracing::info!(%method, %path, status, doing, %error, "request refused");
        }
        None if response.status().is_server_error() => {
            tracing::warn!(%method, %path, status, "request answered with a server error");
        }
        None => {}
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::error::ApiError;
    use axum::Router;
    use axum::body::Body;
    use axum::response::IntoResponse;
    use axum::routing::get;
    use std::sync::{Arc, Mutex};
    use tower::ServiceExt as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    /// A writer that keeps what the log printed.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    async fn answer(path: &str) -> (u16, String) {
        let app = Router::new()
            .route("/fault", get(|| async { ApiError::internal("counting sheep", "the fence fell").into_response() }))
            .route("/refused", get(|| async { ApiError::conflict("taken").into_response() }))
            .route(
                "/page",
                get(|| async {
                    let refusal = ApiError::internal("drawing a page", "no ink");
                    refusal.carried_by("<p>something went wrong</p>".into_response())
                }),
            )
            .layer(axum::middleware::from_fn(log_errors));
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::fmt::layer().with_ansi(false).with_writer(move || writer.clone()));
        let _guard = tracing::subscriber::set_default(subscriber);
        let response = app.oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        (response.status().as_u16(), log)
    }

    #[tokio::test]
    async fn a_fault_is_logged_once_with_the_request_and_its_cause() {
        let (status, log) = answer("/fault").await;
        assert_eq!(status, 500);
        assert_eq!(log.matches("request failed").count(), 1, "{log}");
        for part in ["ERROR", "GET", "/fault", "counting sheep", "the fence fell"] {
            assert!(log.contains(part), "the log line lacks {part}: {log}");
        }
    }

    #[tokio::test]
    async fn a_refusal_without_a_cause_is_not_logged() {
        let (status, log) = answer("/refused").await;
        assert_eq!(status, 409);
        assert!(log.is_empty(), "{log}");
    }

    #[tokio::test]
    async fn a_page_that_shows_the_sentence_still_logs_the_cause() {
        let (status, log) = answer("/page").await;
        assert_eq!(status, 200);
        assert!(log.contains("no ink") && log.contains("/page"), "{log}");
    }
}
