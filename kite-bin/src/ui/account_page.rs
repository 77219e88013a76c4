//! `/account`: the signed-in user's account: changing the password, and
//! signing out every session.

use super::layout::{alert, page};
use super::session::{Anyone, Viewer};
use crate::api::auth::level_name;
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
