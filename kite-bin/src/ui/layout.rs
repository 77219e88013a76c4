//! The frame of every page: head, navigation, main content.

use crate::api::auth::{Caller, level_name};
use kite_core::api::AccessLevel;
use maud::{DOCTYPE, Markup, html};

/// A whole page titled `title`, for `viewer` (signed in or not), around `content`.
pub fn page(title: &str, viewer: Option<&Caller>, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Kite" }
                link rel="icon" href="data:,";
                link rel="stylesheet" href="/assets/kite.css";
                script src="/assets/kite.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "Kite" }
                    @if let Some(viewer) = viewer {
                        nav aria-label="Main" {
                            a href="/" { "Machines" }
                            a href="/sessions" { "Sessions" }
                            @if viewer.level() >= AccessLevel::Manager {
                                a href="/admin/users" { "Users" }
                            }
                            @if viewer.level() >= AccessLevel::Admin {
                                a href="/admin/vms" { "All machines" }
                                a href="/admin/offers" { "Offers" }
                                a href="/admin/settings" { "Settings" }
                            }
                        }
                        div.who {
                            a href="/account" { (viewer.user.spec.username) " (" (level_name(viewer.level())) ")" }
                            button.link type="button" data-action="POST /api/v1/auth/logout" data-then="/login" { "Sign out" }
                        }
                    }
                }
                main { (content) }
            }
        }
    }
}

/// The alert area a form or button shows its refusals in.
pub fn alert() -> Markup {
    html! { p.alert role="alert" hidden {} }
}
