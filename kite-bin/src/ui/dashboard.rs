//! `/`: your machines (updating live), creating one, and your offers.

use super::layout::{alert, page};
use super::machines::{Actions, buttons, phase};
use super::session::{Anyone, Viewer};
use crate::api::auth::Caller;
use crate::api::machines::rules::{USER_LEVEL_CPU, USER_LEVEL_DISK, USER_LEVEL_MAX_MACHINES, USER_LEVEL_MEMORY};
use crate::api::models::{OfferView, VmView};
use crate::api::offers::is_open;
use crate::api::state::{AppState, by};
use crate::api::validate::MIN_DISK;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use kite_core::api::{AccessLevel, PLATFORM_NAME};
use maud::{Markup, html};

fn my_vms(state: &AppState, viewer: &Caller) -> Vec<VmView> {
    let mut vms: Vec<VmView> =
        state.vms.find(by::NAMESPACE, viewer.namespace()).iter().map(|v| VmView::from(v.as_ref())).collect();
    vms.sort_by(|a, b| a.name.cmp(&b.name));
    vms
}

/// The rows of the machine table.
fn rows(vms: &[VmView]) -> Markup {
    html! {
        @if vms.is_empty() {
            tr { td colspan="5" { "No machines yet. Create one below." } }
        }
        @for vm in vms {
            tr data-vm=(vm.name) {
                td { a href=(format!("/vms/{}", vm.name)) { (vm.name) } }
                td { (phase(vm)) }
                td { (vm.cpu) " CPU · " (vm.memory) " · " (vm.disk) }
                td { code { (vm.ssh_id) } }
                td.actions { (buttons(vm, &Actions::own(&vm.name))) }
            }
        }
    }
}

/// "2 machines, 1 running."
fn summary(vms: &[VmView]) -> Markup {
    let active = vms.iter().filter(|v| !v.delete).count();
    let running = vms.iter().filter(|v| v.phase == "Running").count();
    let noun = if active == 1 { "machine" } else { "machines" };
    html! { (active) " " (noun) ", " (running) " running." }
}

/// `/fragments/summary`: the summary line, for the page's live updates.
pub async fn summary_fragment(State(state): State<AppState>, Viewer(viewer): Anyone) -> Response {
    summary(&my_vms(&state, &viewer)).into_response()
}

/// `/fragments/vms`: the rows, for the page's live updates.
pub async fn rows_fragment(State(state): State<AppState>, Viewer(viewer): Anyone) -> Response {
    rows(&my_vms(&state, &viewer)).into_response()
}

fn create_form(state: &AppState, viewer: &Caller, active: usize) -> Markup {
    let platform = state.platform.get(PLATFORM_NAME);
    let statuses =
        platform.as_ref().and_then(|p| p.status.as_ref()).map(|s| s.golden_images.clone()).unwrap_or_default();
    let images = state.platform_spec().golden_images;
    html! {
        section.card {
            h2 { "Create a machine" }
            @if viewer.level() < AccessLevel::User {
                p.notice { "Your account is read-only: you can look at your machines and claim offers. Ask an admin for the user level to create machines." }
            } @else if viewer.level() == AccessLevel::User && active >= USER_LEVEL_MAX_MACHINES as usize {
                p.notice { "You have " (USER_LEVEL_MAX_MACHINES) " machines, the most your level allows. Delete one to create another." }
            } @else {
                form #create data-api="POST /api/v1/vms" data-then="reload" {
                    div.grid {
                        div { label for="vm-name" { "Name" } input #vm-name name="name" required pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?" maxlength="52" placeholder="web"; }
                        div { label for="vm-ssh-id" { "SSH login (sshId)" } input #vm-ssh-id name="sshId" required pattern="[a-z_][a-z0-9_\\-]{0,31}" placeholder="ada_web"; }
                        div { label for="vm-password" { "SSH password" } input #vm-password name="sshPassword" type="password" required minlength="8" autocomplete="new-password"; }
                        div { label for="vm-domain" { "Domain prefix (optional)" } input #vm-domain name="domainPrefix" pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?"; }
                        div {
                            label for="vm-image" { "Image" }
                            select #vm-image name="image" {
                                @for image in &images {
                                    @let status = statuses.iter().find(|s| s.name == image.name);
                                    @let ready = status.is_some_and(|s| s.ready);
                                    option value=(image.name) disabled[!ready] {
                                        (image.name)
                                        @if !ready { " (importing " (status.and_then(|s| s.progress.clone()).unwrap_or_else(|| "0%".into())) ")" }
                                    }
                                }
                            }
                        }
                        @if viewer.level() >= AccessLevel::Manager {
                            div { label for="vm-cpu" { "CPUs" } input #vm-cpu name="cpu" type="number" min="1" max="64" value="2" data-type="number"; }
                            div { label for="vm-memory" { "Memory" } input #vm-memory name="memory" value="4Gi"; }
                            div { label for="vm-disk" { "Disk (Gi, at least " (MIN_DISK) ")" } input #vm-disk name="disk" type="number" min="20" value="25" data-type="number"; }
                        }
                    }
                    @if viewer.level() == AccessLevel::User {
                        p.hint { "Machines at your level have " (USER_LEVEL_CPU) " CPUs, " (USER_LEVEL_MEMORY) " of memory and a " (USER_LEVEL_DISK) " disk; you may have " (USER_LEVEL_MAX_MACHINES) "." }
                    }
                    (alert())
                    button type="submit" { "Create" }
                }
            }
        }
    }
}

fn offers(offers: &[OfferView]) -> Markup {
    html! {
        @if !offers.is_empty() {
            section.card {
                h2 { "Offers for you" }
                @for offer in offers {
                    details {
                        summary { (offer.cpu) " CPU · " (offer.memory) " · " (offer.disk) " · " (offer.image) " — until " (offer.expires_at) }
                        form data-api=(format!("POST /api/v1/vm-offers/{}/claim", offer.name)) data-then="reload" {
                            label for=(format!("{}-name", offer.name)) { "Machine name" }
                            input id=(format!("{}-name", offer.name)) name="vmName" required;
                            label for=(format!("{}-ssh", offer.name)) { "SSH login (sshId)" }
                            input id=(format!("{}-ssh", offer.name)) name="sshId" required;
                            label for=(format!("{}-password", offer.name)) { "SSH password" }
                            input id=(format!("{}-password", offer.name)) name="sshPassword" type="password" required minlength="8";
                            (alert())
                            button type="submit" { "Claim" }
                        }
                    }
                }
            }
        }
    }
}

/// `/`.
pub async fn page_handler(State(state): State<AppState>, Viewer(viewer): Anyone) -> Response {
    let vms = my_vms(&state, &viewer);
    let active = vms.iter().filter(|v| !v.delete).count();
    let my_offers: Vec<OfferView> = state
        .offers
        .find(by::NAMESPACE, viewer.namespace())
        .iter()
        .filter(|o| is_open(o))
        .map(|o| OfferView::from(o.as_ref()))
        .collect();
    page(
        "Your machines",
        Some(&viewer),
        html! {
            h1 { "Your machines" }
            p.summary data-live="/fragments/summary" { (summary(&vms)) }
            section.card {
                div.scroll {
                    table {
                        thead { tr { th { "Name" } th { "Phase" } th { "Size" } th { "SSH login" } th { "Actions" } } }
                        tbody #vm-rows data-live="/fragments/vms" { (rows(&vms)) }
                    }
                }
                (alert())
            }
            (create_form(&state, &viewer, active))
            (offers(&my_offers))
        },
    )
    .into_response()
}
