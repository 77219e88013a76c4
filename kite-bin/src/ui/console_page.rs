//! `/vms/{name}/console` (and `/admin/vms/{namespace}/{name}/console`): a
//! machine's serial console in a terminal (xterm.js, vendored) that fits the
//! window. `console.js` asks for a ticket, opens the WebSocket, reconnects
//! after a lost connection and says why a console closed.

use super::layout::page;
use super::session::{Admin, Anyone, Viewer};
use crate::api::auth::Caller;
use crate::api::console::ticket::running;
use crate::api::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kite_core::api::KiteVirtualMachine;
use kite_core::key::key;
use maud::html;

/// The console page's policy: the terminal's renderer adds `<style>`
/// elements, so inline styles are allowed; scripts and connections stay this origin's.
const CONSOLE_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                           connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

fn console(viewer: &Caller, vm: &KiteVirtualMachine, back: (&str, &str), ticket_url: String) -> Response {
    let name = vm.metadata.name.as_deref().unwrap_or_default();
    let title = format!("{name}: console");
    let body = html! {
        link rel="stylesheet" href="/assets/xterm.css";
        script src="/assets/xterm.js" defer {}
        script src="/assets/addon-fit.js" defer {}
        script src="/assets/console.js" defer {}
        p { a href=(back.0) { "← " (back.1) } }
        h1 { (title) }
        p.hint {
            "The machine's serial console: it works even when SSH does not. Log in as "
            code { (vm.spec.ssh_id) } " with the machine's password."
        }
        @if !running(vm) {
            p.notice #console-not-running { "The machine is not running, so its console shows nothing. Start it from its page, then come back." }
        }
        p #console-status role="status" data-state="idle" {}
        button #console-reconnect type="button" hidden { "Reconnect" }
        div #terminal data-ticket-url=(ticket_url) data-start=(running(vm)) {}
    };
    let mut response = page(&title, Some(viewer), body).into_response();
    response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONSOLE_CSP));
    response
}

fn not_found(viewer: &Caller, what: &str) -> Response {
    let body = html! { section.card { h1 { "No such machine" } p { "There is no machine " (what) "." } a href="/" { "Back to your machines" } } };
    (StatusCode::NOT_FOUND, page("Not found", Some(viewer), body)).into_response()
}

/// `/vms/{name}/console`: one of the viewer's machines.
pub async fn own(State(state): State<AppState>, Viewer(viewer): Anyone, Path(name): Path<String>) -> Response {
    match state.vms.get(&key(Some(viewer.namespace()), &name)) {
        Some(vm) => {
            let back = format!("/vms/{name}");
            console(&viewer, &vm, (&back, &name), format!("/api/v1/vms/{name}/console-ticket"))
        }
        None => not_found(&viewer, &format!("named {name} among yours")),
    }
}

/// `/admin/vms/{namespace}/{name}/console`: any machine (admins).
pub async fn any(
    State(state): State<AppState>,
    Viewer(viewer): Admin,
    Path((namespace, name)): Path<(String, String)>,
) -> Response {
    match state.vms.get(&key(Some(&namespace), &name)) {
        Some(vm) => console(
            &viewer,
            &vm,
            ("/admin/vms", "All machines"),
            format!("/api/v1/admin/vms/{namespace}/{name}/console-ticket"),
        ),
        None => not_found(&viewer, &format!("{namespace}/{name}")),
    }
}
