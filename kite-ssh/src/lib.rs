//! # kite-ssh
//!
//! An embeddable SSH router: one entry point for many machines. A user runs
//! `ssh <login>@<host>`; the router terminates that connection,
//! authenticates the user (password, public key or keyboard-interactive),
//! picks the backend by the login name, connects to the machine lazily as
//! an SSH client with credentials the platform holds and a pinned host key,
//! and proxies every channel.
//!
//! - [`backend::Backend`] is the small trait a route source implements.
//! - [`Router`], made with [`Router::builder`], runs on a `TcpListener`
//!   ([`Router::serve`]) or on any accepted stream ([`Router::serve_stream`]).
//! - [`RouterOptions`] and [`Messages`] are what an embedder tunes: limits
//!   and timeouts, and the sentences users see (with the embedder's
//!   product name in place of Kite's).
//! - [`StaticBackend`] is a table of routes; with the feature `kube`,
//!   `kube::KubeBackend` routes from `KiteVirtualMachine` objects.
//! - `audit::FileStore` keeps audit events and recordings on disk; with the
//!   feature `s3`, `audit::S3Store` keeps them in an S3 bucket.
//!
//! The option, error and event types are `#[non_exhaustive]`: they will
//! grow without a breaking release, so they are built from `Default` and
//! `with_*` methods (or constructors), and matched with a `_` arm.
//!
//! See the book's chapter "Embedding kite-ssh".
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod audit;
pub mod backend;
mod budget;
mod builder;
#[cfg(feature = "control")]
pub mod control;
mod error;
mod handler;
pub mod host_key;
#[cfg(feature = "kube")]
pub mod kube;
pub mod limiter;
pub mod live;
mod login_digest;
pub mod messages;
mod options;
pub mod password;
mod proxy_protocol;
mod pump;
mod router;
mod session;
mod slot;
mod static_backend;
#[cfg(test)]
mod tests;
mod unauthenticated;
mod upstream;
mod user_side;

pub use builder::RouterBuilder;
pub use error::Error;
pub use messages::Messages;
pub use options::{Fallback, RateLimit, RouterOptions};
pub use router::Router;
pub use static_backend::{StaticBackend, StaticRoute};

/// The SSH library kite-ssh is built on: Kite's fork of russh (the crate
/// `kite-russh`, russh 0.65.4 with Kite's flow-control and memory patches),
/// under its usual name. Use it through this re-export, for the keys a
/// [`backend::Backend`] or a [`StaticRoute`] holds (`kite_ssh::russh::keys`)
/// and the SSH errors in [`Error::Ssh`]: an embedder who adds `russh` from
/// crates.io as well gets a second, unpatched copy whose types are not
/// kite-ssh's.
pub use russh;
