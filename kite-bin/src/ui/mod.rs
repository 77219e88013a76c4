//! The web UI `kite api` serves at `/`: server-rendered pages (maud), one
//! small hand-written script and one stylesheet, embedded in the binary, so
//! building Kite needs no JavaScript tool chain.
//!
//! Pages read the same caches as the API. The script sends forms and
//! buttons to the JSON API (with the CSRF token) and refreshes the parts of
//! a page marked `data-live` from `/fragments/...`, which the server renders
//! with the same code as the page, so there is one renderer.

mod account_page;
mod admin_pages;
mod auth_pages;
mod console_page;
mod dashboard;
mod layout;
mod machines;
mod session;
mod sessions_page;
mod vm_page;

use crate::api::state::AppState;
use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

const SCRIPT: &str = include_str!("assets/kite.js");
const STYLE: &str = include_str!("assets/kite.css");
const REPLAY: &str = include_str!("assets/replay.js");
/// asciinema-player, vendored: see `assets/vendor/asciinema-player/README.md`.
const PLAYER_SCRIPT: &str = include_str!("assets/vendor/asciinema-player/asciinema-player.min.js");
const PLAYER_STYLE: &str = include_str!("assets/vendor/asciinema-player/asciinema-player.css");
const CONSOLE: &str = include_str!("assets/console.js");
/// xterm.js and its fit addon, vendored: see `assets/vendor/xterm/README.md`.
const XTERM_SCRIPT: &str = include_str!("assets/vendor/xterm/xterm.js");
const XTERM_STYLE: &str = include_str!("assets/vendor/xterm/xterm.css");
const XTERM_FIT: &str = include_str!("assets/vendor/xterm/addon-fit.js");

/// What the pages may load: only this origin's script and style.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    // A page that needs a policy of its own (the player) sets it; every other gets the strict one.
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    }
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

async fn not_found() -> Response {
    let body = maud::html! { section.card { h1 { "Nothing here" } p { "This page does not exist. " a href="/" { "Go to your machines" } } } };
    (axum::http::StatusCode::NOT_FOUND, layout::page("Not found", None, body)).into_response()
}

/// The pages, their live fragments and the assets.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(dashboard::page_handler))
        .route("/login", get(auth_pages::login).post(auth_pages::login_form))
        .route("/signup", get(auth_pages::signup).post(auth_pages::signup_form))
        .route("/vms/{name}", get(vm_page::page_handler))
        .route("/vms/{name}/console", get(console_page::own))
        .route("/admin/vms/{namespace}/{name}/console", get(console_page::any))
        .route("/account", get(account_page::page_handler))
        .route("/sessions", get(sessions_page::page_handler))
        .route("/sessions/{id}/{channel}", get(sessions_page::player))
        .route("/fragments/sessions", get(sessions_page::rows_fragment))
        .route("/admin", get(|| async { Redirect::to("/admin/users") }))
        .route("/admin/users", get(admin_pages::users))
        .route("/admin/vms", get(admin_pages::vms))
        .route("/admin/offers", get(admin_pages::offers))
        .route("/admin/settings", get(admin_pages::settings))
        .route("/fragments/vms", get(dashboard::rows_fragment))
        .route("/fragments/summary", get(dashboard::summary_fragment))
        .route("/fragments/vms/{name}", get(vm_page::status_fragment))
        .route("/fragments/admin/vms", get(admin_pages::vm_rows_fragment))
        .route("/fragments/admin/gateway", get(admin_pages::gateway_fragment))
        .route("/assets/kite.js", get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }))
        .route("/assets/kite.css", get(|| async { asset("text/css; charset=utf-8", STYLE) }))
        .route("/assets/replay.js", get(|| async { asset("text/javascript; charset=utf-8", REPLAY) }))
        .route(
            "/assets/asciinema-player.min.js",
            get(|| async { asset("text/javascript; charset=utf-8", PLAYER_SCRIPT) }),
        )
        .route("/assets/asciinema-player.css", get(|| async { asset("text/css; charset=utf-8", PLAYER_STYLE) }))
        .route("/assets/console.js", get(|| async { asset("text/javascript; charset=utf-8", CONSOLE) }))
        .route("/assets/xterm.js", get(|| async { asset("text/javascript; charset=utf-8", XTERM_SCRIPT) }))
        .route("/assets/xterm.css", get(|| async { asset("text/css; charset=utf-8", XTERM_STYLE) }))
        .route("/assets/addon-fit.js", get(|| async { asset("text/javascript; charset=utf-8", XTERM_FIT) }))
        .fallback(not_found)
        .layer(axum::middleware::map_response(security_headers))
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    #[test]
    fn vendored_files_are_what_the_readmes_pin() {
        let vendor = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ui/assets/vendor");
        let packages: [(&str, &[&str]); 2] = [
            ("asciinema-player", &["asciinema-player.min.js", "asciinema-player.css", "LICENSE"]),
            ("xterm", &["xterm.js", "xterm.css", "addon-fit.js", "LICENSE", "LICENSE-addon-fit"]),
        ];
        for (package, files) in packages {
            let dir = vendor.join(package);
            let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
            for file in files {
                let digest: String =
                    Sha256::digest(std::fs::read(dir.join(file)).unwrap()).iter().map(|b| format!("{b:02x}")).collect();
                let row = format!("| `{file}` | `{digest}` |");
                assert!(
                    readme.contains(&row),
                    "{package}/{file} is not the file README.md pins (its SHA-256 is {digest})"
                );
            }
        }
    }
}
