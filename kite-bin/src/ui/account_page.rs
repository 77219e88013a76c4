//! `/account`: the signed-in user's account: the SSH keys it signs in to
//! the gateway with, changing the password, and signing out every session.

use super::layout::{alert, page};
use super::session::{Anyone, Viewer};
use crate::api::auth::level_name;
use crate::api::ssh_keys;
use axum::response::{IntoResponse, Response};
use maud::html;

/// `/account`.
pub async fn page_handler(Viewer(viewer): Anyone) -> Response {
    let spec = &viewer.user.spec;
    page(
        "Account",
        Some(&viewer),
        html! {
            h1 { "Account" }
            section.card {
                dl.facts {
                    dt { "Username" } dd { (spec.username) }
                    dt { "Email" } dd { (spec.email) }
                    dt { "Access level" } dd { (level_name(viewer.level())) }
                }
            }
            section.card {
                h2 { "SSH keys" }
                p.hint { "Sign in to your machines with a key: " code { "ssh <sshId>@<gateway>" } " then uses it instead of the machine's password." }
                @let keys: Vec<_> = spec.ssh_authorized_keys.iter().filter_map(|line| ssh_keys::shown(line)).collect();
                @if keys.is_empty() {
                    p.empty { "No key yet." }
                } @else {
                    table.keys {
                        thead { tr { th { "Fingerprint" } th { "Type" } th { "Comment" } th {} } }
                        tbody {
                            @for key in &keys {
                                @let query: String = form_urlencoded::Serializer::new(String::new()).append_pair("fingerprint", &key.fingerprint).finish();
                                tr {
                                    td { code { (key.fingerprint) } }
                                    td { (key.kind) }
                                    td { (key.comment) }
                                    td {
                                        button.danger type="button" data-action=(format!("DELETE /api/v1/me/ssh-keys?{query}")) data-then="reload" { "Remove" }
                                        (alert())
                                    }
                                }
                            }
                        }
                    }
                }
                form data-api="POST /api/v1/me/ssh-keys" data-then="reload" {
                    label for="new-key" { "Public key (one line, such as the contents of ~/.ssh/id_ed25519.pub)" }
                    textarea #new-key name="key" rows="3" required placeholder="ssh-ed25519 AAAA… you@laptop" {}
                    (alert())
                    button type="submit" { "Add the key" }
                }
            }
            section.card {
                h2 { "Change the password" }
                p.hint { "Your other sessions are signed out; this one goes on." }
                form data-api="POST /api/v1/me/password" data-then="reload" {
                    label for="current-password" { "Current password" }
                    input #current-password name="currentPassword" type="password" autocomplete="current-password" required;
                    label for="new-password" { "New password (at least 8 characters)" }
                    input #new-password name="newPassword" type="password" autocomplete="new-password" minlength="8" required;
                    (alert())
                    button type="submit" { "Change the password" }
                }
            }
            section.card {
                h2 { "Sessions" }
                p.hint { "Signs out every browser and script signed in to this account, this one too." }
                button type="button" data-action="POST /api/v1/auth/logout-everywhere" data-then="/login" { "Sign out everywhere" }
                (alert())
            }
        },
    )
    .into_response()
}
