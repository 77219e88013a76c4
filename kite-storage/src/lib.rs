//! # kite-storage
//!
//! Kite's storage reconcilers, run on a `KitePlatform`:
//!
//! - [`storage_class`]: the single-replica Longhorn StorageClass
//!   `kite-vm-storage`, with drift detection for its immutable parameters
//!   (reported as `StorageClassDrifted`, recreated only when allowed);
//! - [`longhorn`]: whether a Ready, schedulable Longhorn disk carries the
//!   class's tag (`LonghornReady`);
//! - [`golden_images`]: one CDI `DataVolume` import per entry of
//!   `KitePlatform.spec.goldenImages`, its progress in the platform's
//!   status, and the RBAC that lets the controller clone exactly those images.
//!
//! [`reconciler`] runs them, in kite-core's reconcile framework (its
//! [`Context`](kite_core::reconcile::Context) and its
//! [`Error`](kite_core::Error), which this crate reports).
//!
//! ```
//! use kite_core::api::KitePlatformSpec;
//! use kite_storage::storage_class;
//!
//! let class = storage_class::desired(&KitePlatformSpec::default(), None).unwrap();
//! let mut live = class.clone();
//! live.parameters.as_mut().unwrap().insert("numberOfReplicas".into(), "3".into());
//! assert_eq!(storage_class::drift(&live, &class), ["parameters.numberOfReplicas"]);
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod golden_images;
pub mod longhorn;
pub mod reconciler;
pub mod storage_class;

pub use kite_core::Error;
