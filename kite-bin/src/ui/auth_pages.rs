//! The sign-in and sign-up pages.

use super::layout::{alert, page};
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;

/// `/login`.
pub async fn login(viewer: Result<Caller, ApiError>) -> Response {
    if viewer.is_ok() {
        return Redirect::to("/").into_response();
    }
    page(
        "Sign in",
        None,
        html! {
            section.card.narrow {
                h1 { "Sign in" }
                form data-api="POST /api/v1/auth/login" data-then="/" {
                    label for="email" { "Email" }
                    input #email name="email" type="email" autocomplete="username" required;
                    label for="password" { "Password" }
                    input #password name="password" type="password" autocomplete="current-password" required;
                    (alert())
                    button type="submit" { "Sign in" }
                }
                p { "No account yet? " a href="/signup" { "Sign up" } }
            }
        },
    )
    .into_response()
}

/// `/signup`.
pub async fn signup(viewer: Result<Caller, ApiError>) -> Response {
    if viewer.is_ok() {
        return Redirect::to("/").into_response();
    }
    page(
        "Sign up",
        None,
        html! {
            section.card.narrow {
                h1 { "Create your account" }
                p.hint { "The first account of a platform is its admin; later accounts start read-only until an admin raises them." }
                form data-api="POST /api/v1/auth/signup" data-then="/" {
                    label for="username" { "Name" }
                    input #username name="username" autocomplete="nickname" required maxlength="63";
                    label for="email" { "Email" }
                    input #email name="email" type="email" autocomplete="email" required;
                    label for="password" { "Password (at least 8 characters)" }
                    input #password name="password" type="password" autocomplete="new-password" required minlength="8";
                    (alert())
                    button type="submit" { "Sign up" }
                }
                p { "Have an account? " a href="/login" { "Sign in" } }
            }
        },
    )
    .into_response()
}
