//! The HTTP application and `kite api`: the API's routes under `/api/v1`
//! and the web UI's pages under one router, with what cuts across both
//! (the body limit, HTTPS, same-origin writes, errors as JSON). It stands
//! above [`crate::api`] and [`crate::ui`], which know nothing of each other's
//! routes.

use crate::api::error::ApiError;
use crate::api::state::AppState;
use crate::api::{Options, auth, document, gateway_control, https, routes, state};
use anyhow::Context as _;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use clap::Args;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The options of `kite api`.
#[derive(Args, Debug, Clone)]
pub struct ApiArgs {
    /// The kubeconfig to use; without it, `KUBECONFIG`, `~/.kube/config`, or the in-cluster account.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The platform namespace: where the session key and the name reservations are kept.
    #[arg(long, default_value = "kite")]
    pub namespace: String,
    /// Where to serve the API and the web UI.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub listen: SocketAddr,
    /// Mark cookies `Secure` always (set it when users reach the API over HTTPS
    /// through a proxy that does not send `X-Forwarded-Proto`).
    #[arg(long)]
    pub secure_cookies: bool,
    /// A proxy in front of the API (an ingress controller), as an address or
    /// CIDR, whose `X-Forwarded-For` names the client for the sign-in limits.
    /// Repeat it for several. Without it, the peer's address counts.
    #[arg(long = "trusted-proxy", value_name = "CIDR", value_parser = crate::net_arg::parse_net)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// For trials on loopback only: on a platform without an admin, the first
    /// account to sign up becomes its admin (`kite demo` does this). Without
    /// it, the first admin is the account of `KitePlatform.spec.signup.adminEmail`,
    /// and nobody else may sign up until it exists.
    #[arg(long)]
    pub first_signup_is_admin: bool,
    /// Print the OpenAPI document and exit (no cluster needed).
    #[arg(long)]
    pub openapi: bool,
    /// The gateways' control API (`host:port`; a headless Service name reaches every replica),
    /// for the sessions pages; its token is read from `--gateway-control-secret`.
    #[arg(long, value_name = "HOST:PORT")]
    pub gateway_control: Option<String>,
    /// The Secret (in `--namespace`) holding the gateway's control token.
    #[arg(long, default_value = crate::names::CONTROL_TOKEN_SECRET)]
    pub gateway_control_secret: String,
}

/// The largest request body the API reads.
const BODY_LIMIT: usize = 64 * 1024;

/// The whole HTTP application: `/api/v1`, the web UI, `/healthz`.
pub fn app(state: AppState) -> anyhow::Result<Router> {
    let (api, document) = routes::api();
    let document = Arc::new(document.to_json().context("rendering the OpenAPI document")?);
    let api = api
        .route(
            "/openapi.json",
            get(move || {
                let document = document.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], document.as_ref().clone()) }
            }),
        )
        .fallback(|| async { ApiError::not_found("there is no such API endpoint; see /api/v1/openapi.json") })
        .layer(middleware::from_fn_with_state(state.clone(), wait_for_caches))
        .layer(middleware::from_fn(auth::same_origin_writes))
        .layer(middleware::map_response(json_errors));
    Ok(Router::new()
        .nest("/api/v1", api)
        .merge(crate::ui::router().layer(middleware::from_fn(auth::same_origin_writes)))
        .route("/healthz", get(|| async { "ok\n" }))
        .layer(middleware::from_fn_with_state(state.clone(), https::force_https))
        .with_state(state)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(crate::api::error_log::log_errors)))
}

/// Answers 503 until the caches hold the cluster's objects (health still answers).
async fn wait_for_caches(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if state.synced() || request.uri().path().ends_with("/health") {
        return next.run(request).await;
    }
    ApiError::unavailable("the API is starting; try again in a moment").into_response()
}

/// Gives the errors axum answers itself (405, 413...) the API's `{"message"}` body.
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let message = match status {
        StatusCode::METHOD_NOT_ALLOWED => "this endpoint does not take that method".to_string(),
        StatusCode::PAYLOAD_TOO_LARGE => format!("the request body is larger than {} KiB", BODY_LIMIT / 1024),
        StatusCode::NOT_FOUND => "there is nothing here".to_string(),
        other => other.canonical_reason().unwrap_or("the request failed").to_lowercase(),
    };
    ApiError::new(status, message).into_response()
}

/// Serves `app` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown)
        .await
        .context("serving the API")
}

/// Runs `kite api` until Ctrl-C or SIGTERM (or prints the OpenAPI document with `--openapi`).
pub async fn run(args: ApiArgs) -> anyhow::Result<()> {
    if args.openapi {
        println!("{}", document()?);
        return Ok(());
    }
    let client = crate::cluster::connect(args.kubeconfig.as_ref()).await?;
    let options = Options {
        secure_cookies: args.secure_cookies,
        trusted_proxies: args.trusted_proxies.clone(),
        first_signup_is_admin: args.first_signup_is_admin,
        gateway: args.gateway_control.as_deref().map(|address| {
            gateway_control::GatewayControl::with_secret(
                address,
                client.clone(),
                &args.namespace,
                &args.gateway_control_secret,
            )
        }),
    };
    let state = state(client, &args.namespace, options).await?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {} for the API", args.listen))?;
    let bound = listener.local_addr().context("reading the API's address")?;
    tracing::info!(address = %bound, "kite api is serving");
    eprintln!("kite api: serving http://{bound}/api/v1 (OpenAPI at /api/v1/openapi.json)");
    serve(listener, app(state)?, crate::signal::shutdown()).await
}
