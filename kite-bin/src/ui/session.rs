//! Who views a page: the [`Viewer`] extractor, which answers with the
//! sign-in page when nobody is signed in and with a page saying so when
//! the viewer's level is too low.

use super::layout::page;
use crate::api::auth::Caller;
use crate::api::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use kite_core::api::AccessLevel;
use maud::html;

/// The signed-in viewer of a page that needs level `LEVEL` (0 to 3).
pub struct Viewer<const LEVEL: u8>(pub Caller);

/// Any signed-in user.
pub type Anyone = Viewer<0>;
/// A manager or an admin.
pub type Manager = Viewer<2>;
/// An admin.
pub type Admin = Viewer<3>;

impl<const LEVEL: u8> FromRequestParts<AppState> for Viewer<LEVEL> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let Ok(viewer) = Caller::from_request_parts(parts, state).await else {
            return Err(Redirect::to("/login").into_response());
        };
        let needed = AccessLevel::from_u8(LEVEL).unwrap_or(AccessLevel::Admin);
        if let Err(refusal) = viewer.require(needed) {
            let body = html! { section.card { h1 { "Not for your account" } p { (refusal.message()) } a href="/" { "Back to your machines" } } };
            return Err((StatusCode::FORBIDDEN, page("Not allowed", Some(&viewer), body)).into_response());
        }
        Ok(Self(viewer))
    }
}
