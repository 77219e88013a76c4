//! The sign-in and sign-up pages. Their forms post to `/login` and
//! `/signup`, so they work without the script (and a password never goes
//! into a URL); with the script they call the API and stay on the page.

use super::layout::page;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::json::Body;
use crate::api::routes::auth::{LoginRequest, SignupRequest};
use crate::api::state::AppState;
use axum::Form;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use std::net::SocketAddr;

/// What the page shows again after a refused form: the sentence, and the fields to keep.
#[derive(Default)]
struct Refused<'a> {
    message: Option<&'a str>,
    email: &'a str,
    username: &'a str,
}

/// The alert of a form: the refusal when there is one, else hidden for the script to fill.
fn alert(message: Option<&str>) -> Markup {
    match message {
        Some(message) => html! { p.alert role="alert" { (message) } },
        None => html! { p.alert role="alert" hidden {} },
    }
}

fn login_page(refused: &Refused<'_>) -> Markup {
    page(
        "Sign in",
        None,
        html! {
            section.card.narrow {
                h1 { "Sign in" }
                form method="post" action="/login" data-api="POST /api/v1/auth/login" data-then="/" {
                    label for="email" { "Email" }
                    input #email name="email" type="email" autocomplete="username" required value=(refused.email);
                    label for="password" { "Password" }
                    input #password name="password" type="password" autocomplete="current-password" required;
                    (alert(refused.message))
                    button type="submit" { "Sign in" }
                }
                p { "No account yet? " a href="/signup" { "Sign up" } }
            }
        },
    )
}

fn signup_page(refused: &Refused<'_>) -> Markup {
    page(
        "Sign up",
        None,
        html! {
            section.card.narrow {
                h1 { "Create your account" }
                p.hint { "The first account of a platform is its admin; later accounts start read-only until an admin raises them." }
                form method="post" action="/signup" data-api="POST /api/v1/auth/signup" data-then="/" {
                    label for="username" { "Name" }
                    input #username name="username" autocomplete="nickname" required maxlength="63" value=(refused.username);
                    label for="email" { "Email" }
                    input #email name="email" type="email" autocomplete="email" required value=(refused.email);
                    label for="password" { "Password (at least 8 characters)" }
                    input #password name="password" type="password" autocomplete="new-password" required minlength="8";
                    (alert(refused.message))
                    button type="submit" { "Sign up" }
                }
                p { "Have an account? " a href="/login" { "Sign in" } }
            }
        },
    )
}

/// `GET /login`.
pub async fn login(viewer: Result<Caller, ApiError>) -> Response {
    if viewer.is_ok() {
        return Redirect::to("/").into_response();
    }
    login_page(&Refused::default()).into_response()
}

/// `GET /signup`.
pub async fn signup(viewer: Result<Caller, ApiError>) -> Response {
    if viewer.is_ok() {
        return Redirect::to("/").into_response();
    }
    signup_page(&Refused::default()).into_response()
}

/// `POST /login`, the form without the script: the API's sign-in, then home
/// with the session cookie, or the page again with the sentence.
pub async fn login_form(
    state: State<AppState>,
    peer: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(request): Form<LoginRequest>,
) -> Response {
    let email = request.email.clone();
    match crate::api::routes::auth::login(state, peer, headers, Body(request)).await {
        Ok((cookies, _)) => (cookies, Redirect::to("/")).into_response(),
        Err(error) => {
            let refused = Refused { message: Some(error.message()), email: &email, ..Refused::default() };
            error.carried_by((error.status(), login_page(&refused)).into_response())
        }
    }
}

/// `POST /signup`, the form without the script: the API's sign-up, then home
/// with the session cookie, or the page again with the sentence.
pub async fn signup_form(
    state: State<AppState>,
    peer: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(request): Form<SignupRequest>,
) -> Response {
    let (email, username) = (request.email.clone(), request.username.clone());
    match crate::api::routes::auth::signup(state, peer, headers, Body(request)).await {
        Ok((_, cookies, _)) => (cookies, Redirect::to("/")).into_response(),
        Err(error) => {
            let refused = Refused { message: Some(error.message()), email: &email, username: &username };
            error.carried_by((error.status(), signup_page(&refused)).into_response())
        }
    }
}
