//! The operator's commands, `kite install`, `kite upgrade`, `kite uninstall`
//! and `kite doctor`, written as a
//! controller is: each command is data first (a [`Plan`]: checks, then
//! steps, each with the changes it makes and the state it waits for), then
//! the plan is shown, confirmed, applied and observed.
//!
//! - [`plan`] holds the shapes: [`Check`], [`Step`], [`Change`], [`Wait`].
//! - [`objects`] plans and applies Kite's own objects, server-side, under
//!   one field manager, refusing any object of the same name that is not Kite's.
//! - [`preflight`] holds the checks made before acting.
//! - [`observe`] reads what a wait waits for: a namespace gone, a CRD
//!   `Established`, a Deployment `Available`, the platform's images Ready.
//! - [`run`] shows a plan, asks, applies each step and waits on what it
//!   observes, saying what it waits for, what it sees now and for how long.
//! - [`stack`] installs, upgrades and removes KubeVirt, CDI and Longhorn from their release files.
//! - [`install`], [`upgrade`], [`uninstall`] and [`doctor`] are the commands.
//!
//! Every step is idempotent: a command cut off half-way (Ctrl-C, a crash)
//! plans again from what the cluster holds and goes on from there.

pub mod consistency;
pub mod doctor;
pub mod install;
pub mod objects;
pub mod observe;
mod outside;
pub mod plan;
pub mod preflight;
mod probe;
mod provenance;
mod report;
pub mod run;
pub mod stack;
pub mod uninstall;
pub mod upgrade;

pub use plan::{Change, ChangeKind, Check, Outcome, Plan, Step, Wait};
pub use report::Output;

/// The field manager of everything `kite install` applies.
pub const FIELD_MANAGER: &str = "kite-install";
