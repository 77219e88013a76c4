//! `/vms/{name}`: one machine, updating live, with how to connect to it.

use super::layout::{alert, page};
use super::machines::{Actions, buttons, phase};
use super::session::{Anyone, Viewer};
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::machines::envelope;
use crate::api::models::{Connection, VmView};
use crate::api::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kite_core::key::key;
use maud::{Markup, html};

fn status(vm: &VmView) -> Markup {
    html! {
        dl.facts {
            dt { "Phase" } dd { (phase(vm)) }
            @if let Some(message) = &vm.message { dt { "State" } dd { (message) } }
            dt { "Size" } dd { (vm.cpu) " CPU · " (vm.memory) " memory · " (vm.disk) " disk" }
            dt { "Image" } dd { (vm.image) }
            dt { "SSH login" } dd { code { (vm.ssh_id) } }
            @if let Some(domain) = &vm.domain {
                dt { "Web" }
                dd {
                    @if let Some(url) = &vm.url { a #vm-url href=(url) rel="noopener" { (url) } }
                    @else { (domain) span.hint { " (not served yet)" } }
                }
            }
            @if let Some(message) = &vm.data_volume_message {
                @if vm.phase != "Running" { dt { "Disk" } dd { (message) } }
            }
        }
        div.actions { (buttons(vm, &Actions::own(&vm.name))) }
    }
}

fn connection(connection: &Connection) -> Markup {
    html! {
        section.card #connect {
            h2 { "Connect" }
            @if let (Some(command), Some(config)) = (&connection.command, &connection.ssh_config) {
                p { (connection.explanation) }
                label for="ssh-command" { "Command" }
                div.copyable {
                    pre #ssh-command { (command) }
                    button type="button" data-copy="#ssh-command" { "Copy" }
                }
                label for="ssh-config" { "Or add this to ~/.ssh/config" }
                div.copyable {
                    pre #ssh-config { (config) }
                    button type="button" data-copy="#ssh-config" { "Copy" }
                }
                p.hint { "It asks for the machine's password, unless you add your public key on your " a href="/account" { "account page" } "; the gateway then signs you in with the key." }
            } @else {
                p.notice #ssh-unavailable { (connection.explanation) }
            }
        }
    }
}

/// The machine's last login through the gateway, and what is recorded;
/// with the refusal, when the logins could not be read, for the log.
async fn logins(state: &AppState, viewer: &Caller, name: &str) -> (Markup, Option<ApiError>) {
    match crate::api::ssh_sessions::list(state, viewer, Some(name), 1).await {
        Ok(envelope) => (
            html! {
                section.card #logins {
                    h2 { "Logins" }
                    @match envelope.sessions.first() {
                        Some(last) => p #last-login {
                            "Last login: " (super::sessions_page::when(&last.started)) " as " code { (last.ssh_id) } " from " (last.source)
                            @if last.live { " (open now)" }
                            ". " a href="/sessions" { "All sessions" }
                        },
                        None => p #last-login { "Nobody has signed in through the SSH gateway yet." },
                    }
                    (super::sessions_page::recording_notice(envelope.recording, envelope.recording_input))
                }
            },
            None,
        ),
        Err(refusal) => {
            (html! { section.card #logins { h2 { "Logins" } p.hint { (refusal.message()) } } }, Some(refusal))
        }
    }
}

fn not_found(viewer: &Caller, name: &str) -> Response {
    let body = html! { section.card { h1 { "No such machine" } p { "You have no machine named " (name) "." } a href="/" { "Back to your machines" } } };
    (StatusCode::NOT_FOUND, page("Not found", Some(viewer), body)).into_response()
}

/// `/vms/{name}`.
pub async fn page_handler(State(state): State<AppState>, Viewer(viewer): Anyone, Path(name): Path<String>) -> Response {
    let Some(vm) = state.vms.get(&key(Some(viewer.namespace()), &name)) else { return not_found(&viewer, &name) };
    let envelope = envelope(&state, &vm);
    let (logins, refusal) = logins(&state, &viewer, &name).await;
    let response = page(
        &name,
        Some(&viewer),
        html! {
            p { a href="/" { "← Your machines" } }
            h1 { (name) }
            section.card {
                div #vm-status data-live=(format!("/fragments/vms/{name}")) { (status(&envelope.vm)) }
                (alert())
            }
            (connection(&envelope.connection))
            section.card #console {
                h2 { "Serial console" }
                p { "The machine's console in your browser, for when SSH does not work (a lost key, a broken sshd): log in as "
                    code { (envelope.vm.ssh_id) } " with the machine's password." }
                a.button #open-console href=(format!("/vms/{name}/console")) { "Open the console" }
            }
            (logins)
        },
    )
    .into_response();
    match refusal {
        Some(refusal) => refusal.carried_by(response),
        None => response,
    }
}

/// `/fragments/vms/{name}`: the status, for live updates.
pub async fn status_fragment(
    State(state): State<AppState>,
    Viewer(viewer): Anyone,
    Path(name): Path<String>,
) -> Response {
    match state.vms.get(&key(Some(viewer.namespace()), &name)) {
        Some(vm) => status(&VmView::from(vm.as_ref())).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            html! { p.notice { "This machine no longer exists. " a href="/" { "Back to your machines" } } },
        )
            .into_response(),
    }
}
