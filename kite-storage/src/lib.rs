//! # kite-storage
//!
//! Kite's storage reconcilers. **Nothing is implemented here yet.**
//!
//! Planned (see the book's chapter on kite-storage):
//! - the single-replica Longhorn StorageClass `kite-vm-storage`, with drift
//!   detection for its immutable parameters;
//! - Longhorn readiness: a Ready, schedulable disk tagged `kite`;
//! - golden images: one CDI `DataVolume` import per entry of
//!   `KitePlatform.spec.goldenImages`, and the clone-source RBAC.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
