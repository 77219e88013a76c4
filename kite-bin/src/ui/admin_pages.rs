//! The admin pages: users and levels, every machine, offers, and the
//! platform settings with the SSH gateway's live status.

use super::layout::{alert, page};
use super::machines::{Actions, buttons, phase};
use super::session::{Admin, Manager, Viewer};
use crate::api::auth::level_name;
use crate::api::models::{GatewayView, OfferView, PublicUser, VmView};
use crate::api::state::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use kite_core::api::{AccessLevel, PLATFORM_NAME, SignupMode};
use maud::{Markup, html};

/// `/admin/users`.
pub async fn users(State(state): State<AppState>, Viewer(viewer): Manager) -> Response {
    let mut users: Vec<PublicUser> = state.users.all().iter().map(|u| PublicUser::from(u.as_ref())).collect();
    users.sort_by_key(|u| u.username.to_lowercase());
    let levels = [AccessLevel::ReadOnly, AccessLevel::User, AccessLevel::Manager, AccessLevel::Admin];
    page(
        "Users",
        Some(&viewer),
        html! {
            h1 { "Users" }
            section.card {
                div.scroll {
                    table {
                        thead { tr { th { "Name" } th { "Email" } th { "Level" } th { "Actions" } } }
                        tbody {
                            @for user in &users {
                                @let own = user.name == viewer.name();
                                @let managed = viewer.level() >= AccessLevel::Admin || user.access_level <= 1;
                                tr {
                                    td { (user.username) }
                                    td { (user.email) }
                                    td {
                                        label.visually-hidden for=(format!("level-{}", user.name)) { "Level of " (user.username) }
                                        select id=(format!("level-{}", user.name)) data-level-of=(user.name) disabled[own || !managed] {
                                            @for level in levels {
                                                @let allowed = viewer.level() >= AccessLevel::Admin || level <= AccessLevel::User;
                                                option value=(level.as_u8()) selected[level.as_u8() == user.access_level] disabled[!allowed] { (level.as_u8()) " · " (level_name(level)) }
                                            }
                                        }
                                    }
                                    td.actions {
                                        @if viewer.level() >= AccessLevel::Admin && !own {
                                            button.danger type="button" data-action=(format!("DELETE /api/v1/admin/users/{}", user.name))
                                                data-confirm=(format!("Delete {} and all of their machines?", user.username))
                                                aria-label=(format!("Delete {}", user.username)) { "Delete" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                (alert())
            }
        },
    )
    .into_response()
}

fn vm_rows(vms: &[VmView]) -> Markup {
    html! {
        @if vms.is_empty() { tr { td colspan="5" { "No machines." } } }
        @for vm in vms {
            tr {
                td { (vm.name) }
                td { (vm.namespace) }
                td { (phase(vm)) }
                td { code { (vm.ssh_id) } }
                td.actions {
                    (buttons(vm, &Actions::admin(&vm.namespace, &vm.name)))
                    @if vm.phase == "Running" { a.button href=(format!("/admin/vms/{}/{}/console", vm.namespace, vm.name)) { "Console" } }
                }
            }
        }
    }
}

fn all_vms(state: &AppState) -> Vec<VmView> {
    state.vms.all().iter().map(|v| VmView::from(v.as_ref())).collect()
}

/// `/admin/vms`.
pub async fn vms(State(state): State<AppState>, Viewer(viewer): Admin) -> Response {
    page(
        "All machines",
        Some(&viewer),
        html! {
            h1 { "All machines" }
            section.card {
                div.scroll {
                    table {
                        thead { tr { th { "Name" } th { "Namespace" } th { "Phase" } th { "SSH login" } th { "Actions" } } }
                        tbody data-live="/fragments/admin/vms" { (vm_rows(&all_vms(&state))) }
                    }
                }
                (alert())
            }
        },
    )
    .into_response()
}

/// `/fragments/admin/vms`.
pub async fn vm_rows_fragment(State(state): State<AppState>, _: Admin) -> Response {
    vm_rows(&all_vms(&state)).into_response()
}

/// `/admin/offers`.
pub async fn offers(State(state): State<AppState>, Viewer(viewer): Admin) -> Response {
    let offers: Vec<OfferView> = state.offers.all().iter().map(|o| OfferView::from(o.as_ref())).collect();
    let images = state.platform_spec().golden_images;
    let mut users: Vec<PublicUser> = state.users.all().iter().map(|u| PublicUser::from(u.as_ref())).collect();
    users.sort_by_key(|u| u.username.to_lowercase());
    page(
        "Offers",
        Some(&viewer),
        html! {
            h1 { "Offers" }
            section.card {
                h2 { "Offer a machine" }
                form data-api="POST /api/v1/admin/vm-offers" data-then="reload" {
                    div.grid {
                        div {
                            label for="offer-user" { "For" }
                            select #offer-user name="targetUser" required {
                                @for user in &users { option value=(user.name) { (user.username) " <" (user.email) ">" } }
                            }
                        }
                        div { label for="offer-cpu" { "CPUs" } input #offer-cpu name="cpu" type="number" min="1" max="64" value="2" data-type="number"; }
                        div { label for="offer-memory" { "Memory" } input #offer-memory name="memory" value="4Gi" required; }
                        div { label for="offer-disk" { "Disk" } input #offer-disk name="disk" value="25Gi" required; }
                        div {
                            label for="offer-image" { "Image" }
                            select #offer-image name="image" { @for image in &images { option value=(image.name) { (image.name) } } }
                        }
                        div { label for="offer-hours" { "Valid for (hours)" } input #offer-hours name="validHours" type="number" min="1" max="8760" value="24" data-type="number"; }
                    }
                    (alert())
                    button type="submit" { "Offer" }
                }
            }
            section.card {
                div.scroll {
                    table {
                        thead { tr { th { "Offer" } th { "For" } th { "Size" } th { "Phase" } th { "Expires" } th { "Actions" } } }
                        tbody {
                            @if offers.is_empty() { tr { td colspan="6" { "No offers." } } }
                            @for offer in &offers {
                                tr {
                                    td { (offer.name) }
                                    td { (offer.namespace) }
                                    td { (offer.cpu) " CPU · " (offer.memory) " · " (offer.disk) }
                                    td { (offer.phase) }
                                    td { (offer.expires_at) }
                                    td.actions {
                                        button.danger type="button" data-action=(format!("DELETE /api/v1/admin/vm-offers/{}/{}", offer.namespace, offer.name))
                                            data-confirm="Withdraw this offer?" aria-label=(format!("Withdraw {}", offer.name)) { "Withdraw" }
                                    }
                                }
                            }
                        }
                    }
                }
                (alert())
            }
        },
    )
    .into_response()
}

fn gateway_status(gateway: &GatewayView) -> Markup {
    html! {
        dl.facts {
            dt { "Phase" } dd { span.phase data-phase=(gateway.phase) { (gateway.phase) } }
            @if let Some(reason) = &gateway.reason { dt { "Reason" } dd { (reason) } }
            @if let Some(message) = &gateway.message { dt { "Observed" } dd { (message) } }
            @if let Some(port) = gateway.observed_external_port { dt { "Service port" } dd { (port) } }
            @if let Some(since) = &gateway.last_transition_time { dt { "Since" } dd { (since) } }
        }
    }
}

fn current_gateway(state: &AppState) -> GatewayView {
    GatewayView::of(&state.platform_spec(), state.platform.get(PLATFORM_NAME).as_deref())
}

/// `/admin/settings`.
pub async fn settings(State(state): State<AppState>, Viewer(viewer): Admin) -> Response {
    let spec = state.platform_spec();
    let gateway = current_gateway(&state);
    page(
        "Settings",
        Some(&viewer),
        html! {
            h1 { "Settings" }
            section.card {
                h2 { "Platform" }
                form data-api="PATCH /api/v1/admin/settings" data-then="reload" {
                    label for="base-domain" { "Base domain (users connect to it)" }
                    input #base-domain name="baseDomain" value=(spec.base_domain.clone().unwrap_or_default()) placeholder="vms.example.org";
                    label for="ttl" { "Sign-in lasts (minutes)" }
                    input #ttl name="accessTokenTtlMinutes" type="number" min="1" value=(spec.access_token_ttl_minutes) data-type="number";
                    label for="console-idle" { "A console without input closes after (seconds)" }
                    input #console-idle name="consoleIdleSeconds" type="number" min="5" max="86400" value=(spec.console_idle_seconds) data-type="number";
                    (alert())
                    button type="submit" { "Save" }
                }
            }
            section.card {
                h2 { "Sign-up" }
                p.hint { "Who may create an account on the sign-up page, and how many sign-ups an hour the platform takes." }
                form data-api="PATCH /api/v1/admin/settings" data-then="reload" data-nest="signup" {
                    label for="signup-mode" { "Who may sign up" }
                    select #signup-mode name="mode" {
                        @for (mode, text) in [(SignupMode::Open, "Anyone"), (SignupMode::Invited, "Only invited emails"), (SignupMode::Closed, "Nobody")] {
                            option value=(format!("{mode:?}")) selected[spec.signup.mode == mode] { (text) }
                        }
                    }
                    label for="invited-emails" { "Invited emails (one a line)" }
                    textarea #invited-emails name="invitedEmails" rows="4" data-type="lines" { (spec.signup.invited_emails.join("\n")) }
                    label for="per-address" { "Sign-ups an hour from one address" }
                    input #per-address name="perAddressPerHour" type="number" min="1" max="10000" value=(spec.signup.per_address_per_hour) data-type="number";
                    label for="per-hour" { "Sign-ups an hour in all" }
                    input #per-hour name="perHour" type="number" min="1" max="100000" value=(spec.signup.per_hour) data-type="number";
                    (alert())
                    button type="submit" { "Save" }
                }
            }
            section.card {
                h2 { "SSH gateway" }
                p.hint { "Kite never touches this host's sshd or port 22. Exposing the gateway creates a LoadBalancer Service on the port you choose." }
                form data-api="PATCH /api/v1/admin/settings" data-then="reload" data-nest="sshGateway" {
                    label.inline { input name="externalEnabled" type="checkbox" checked[spec.ssh_gateway.external_enabled] data-type="boolean"; " Expose the gateway outside the cluster" }
                    label for="external-port" { "Service port" }
                    input #external-port name="externalPort" type="number" min="1" max="65535" value=[spec.ssh_gateway.external_port] data-type="number";
                    label for="public-port" { "Port users connect to (if a router forwards another)" }
                    input #public-port name="publicPort" type="number" min="1" max="65535" value=[spec.ssh_gateway.public_port] data-type="number";
                    (alert())
                    button type="submit" { "Save" }
                }
                h3 { "Observed" }
                div data-live="/fragments/admin/gateway" { (gateway_status(&gateway)) }
            }
        },
    )
    .into_response()
}

/// `/fragments/admin/gateway`.
pub async fn gateway_fragment(State(state): State<AppState>, _: Admin) -> Response {
    gateway_status(&current_gateway(&state)).into_response()
}
