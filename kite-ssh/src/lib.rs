//! # kite-ssh
//!
//! An embeddable SSH router. **Nothing is implemented here yet.**
//!
//! Planned (see the book's chapter on kite-ssh): a router on russh that
//! terminates a user's SSH connection, authenticates it, picks a backend by
//! the login name, connects to the backend lazily as an SSH client with a
//! pinned host key, and proxies every channel. Backends are pluggable
//! traits; a static table and a Kubernetes backend (`KiteVirtualMachine`
//! objects) come built in.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
