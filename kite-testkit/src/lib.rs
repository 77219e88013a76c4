//! # kite-testkit
//!
//! Test support for Kite, never a production runtime. **Nothing is
//! implemented here yet.**
//!
//! Planned (see the book's chapter on kite-testkit): a stateful in-memory
//! Kubernetes API server that a `kube::Client` can use in-process and
//! `kubectl` over loopback, with watch, server-side apply, finalizers,
//! garbage collection and schema validation; and a simulated KubeVirt/CDI
//! runtime that moves VirtualMachines and DataVolumes through their real
//! phases.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
