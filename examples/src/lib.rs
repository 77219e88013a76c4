//! # kite-examples
//!
//! Example programs that use the Kite crates; run one with
//! `cargo run -p kite-examples --example <name>`.
//!
//! - `new_vm`: builds a `KiteVirtualMachine` with kite-core's types and prints
//!   it as YAML for `kubectl apply -f -`.
//! - `port_router`: embeds kite-ssh with its own resolver (the login is a
//!   port number), in under 100 lines.
//! - `embedded_operator`: runs Kite's reconcilers (`kite_core::runner`) in
//!   its own binary beside a `kube::runtime::Controller` of its own, on one
//!   client, one metrics registry and one shutdown.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
