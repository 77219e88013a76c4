//! The operator's commands, `kite install`, `kite upgrade`, `kite uninstall`
//! and `kite doctor`, written as a controller is: each command observes
//! the cluster first (`observe(client) -> Observed`), then makes its plan
//! from what it observed without reading anything more (a pure
//! `plan(&Observed, &args)`: checks, then steps, each with the changes it
//! makes and the state it waits for), then the plan is shown, confirmed,
//! applied and observed ([`run`]).
//!
//! From the top down (each only uses what is below it):
//!
//! - [`install`], [`upgrade`], [`uninstall`] and [`doctor`] are the
//!   commands; none uses another.
//! - [`run`] carries out a plan; [`observe`] is what its waits read.
//! - [`checks`] holds every check (preflight, the doctor's, from outside);
//!   [`deployment`] plans Kite's own objects for install and upgrade.
//! - [`stack`] installs, upgrades and removes KubeVirt, CDI and Longhorn from their release files.
//! - [`objects`] reads, deletes and applies objects (on
//!   [`kite_core::reconcile::apply`]); [`provenance`] records what was installed.
//! - [`plan`] is the ground: the plan's shapes, whose objects are whose,
//!   what a look at the cluster saw; [`report`] prints them; [`target`]
//!   is the cluster every command acts on.
//!
//! Every step is idempotent: a command cut off half-way (Ctrl-C, a crash)
//! plans again from what the cluster holds and goes on from there.

pub mod checks;
pub mod deployment;
pub mod doctor;
pub mod install;
pub mod objects;
pub mod observe;
pub mod plan;
mod provenance;
mod report;
pub mod run;
pub mod stack;
pub mod target;
pub mod uninstall;
pub mod upgrade;

pub use objects::FIELD_MANAGER;
pub use plan::{Change, ChangeKind, Check, Outcome, Plan, Step, Wait};
pub use report::Output;
