//! # kite-core
//!
//! The Kite API and the pieces every Kite reconciler shares.
//!
//! Kite keeps all of its state in four custom resources of the group
//! [`hy3ons.github.io/v1`](api::GROUP):
//!
//! | kind | scope | what it says |
//! |---|---|---|
//! | [`KiteUser`](api::KiteUser) | cluster | a person who may sign in, and the namespace their machines live in |
//! | [`KiteVirtualMachine`](api::KiteVirtualMachine) | namespaced | a virtual machine a user asked for |
//! | [`KiteVirtualMachineOffer`](api::KiteVirtualMachineOffer) | namespaced | a VM voucher an admin gave a user |
//! | [`KitePlatform`](api::KitePlatform) | cluster, singleton `kite` | the platform's configuration, as desired state |
//!
//! The API writes intent into these objects, the controller converges the
//! cluster to it, and each object's `status` says what was observed. The
//! validation of every field lives in the CRD schema, where the API server
//! enforces it: see [`api::crds`] for the generated definitions.
//!
//! ```
//! use kite_core::api::{KiteVirtualMachine, KiteVirtualMachineSpec, PowerState};
//! use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
//!
//! let vm = KiteVirtualMachine::new(
//!     "web",
//!     KiteVirtualMachineSpec {
//!         cpu: 2,
//!         memory: Quantity("4Gi".into()),
//!         disk: Quantity("25Gi".into()),
//!         image: "ubuntu-22.04".into(),
//!         power_state: PowerState::On,
//!         domain_prefix: Some("web".into()),
//!         ssh_id: "alice_web".into(),
//!         ssh_password_hash: None,
//!         console_password_hash: None,
//!         delete: false,
//!     },
//! );
//! use kite_core::required::Required;
//! assert_eq!(kite_core::names::ssh_key_secret(vm.required_name().unwrap()), "web-ssh-key");
//! ```
//!
//! The reconcilers that converge a cluster to these objects are public, so
//! another platform can run them on its own `kube::Client`:
//!
//! | module | reconciles | creates |
//! |---|---|---|
//! | `tenant` | `KiteUser` | the user's namespace, its NetworkPolicies, a quota per access level |
//! | `vm` | `KiteVirtualMachine` | SSH and cloud-init Secrets, a DataVolume cloned from a golden image, a KubeVirt VirtualMachine, the SSH Service |
//! | `gateway` | `KitePlatform` | the `LoadBalancer` Service that exposes the SSH gateway, when asked |
//! | `offer` | `KiteVirtualMachineOffer` | nothing: an offer nobody claimed is deleted when it expires |
//!
//! Each has a `Config`, `reconcile`, `error_policy` and `run`, and computes
//! its children with pure functions in its `desired` module. What they
//! share (the `reconcile::Context`, server-side apply that skips needless
//! writes, metrics) is in `reconcile`; `runner::Reconcilers` runs them
//! all in one's own process, with other crates' reconcilers beside them.
//! The storage reconcilers are in the `kite-storage` crate.
//!
//! ## Features
//!
//! - `runtime` (default): the reconcilers, the runner, the watch-fed
//!   `cache` and what they run on (kube's client and runtime, tokio,
//!   prometheus-client, SSH key generation, cloud-init).
//!
//! With `default-features = false`, kite-core is the API types alone:
//! [`api`] (the four kinds, their specs and statuses, [`api::crds`]),
//! [`names`], [`labels`], [`key`], [`ssh_id`], [`ssh_secret`],
//! [`quantity`], [`required`] and [`Error`], on kube's `derive` feature,
//! k8s-openapi, schemars and serde only.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
mod error;
pub mod key;
pub mod labels;
pub mod names;
pub mod quantity;
pub mod required;
pub mod ssh_id;
pub mod ssh_secret;

#[cfg(feature = "runtime")]
pub mod cache;
#[cfg(feature = "runtime")]
pub mod gateway;
#[cfg(feature = "runtime")]
pub mod offer;
#[cfg(feature = "runtime")]
pub mod reconcile;
#[cfg(feature = "runtime")]
pub mod runner;
#[cfg(feature = "runtime")]
pub mod tenant;
#[cfg(feature = "runtime")]
pub mod vm;

pub use error::Error;
