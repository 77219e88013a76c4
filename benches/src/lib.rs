//! # kite-benches
//!
//! Benchmarks of the Kite crates. **No benchmark exists yet.**
//!
//! Planned: the SSH router's data path against direct sshd and an OpenSSH
//! jump host, its memory per session, and the controller's time and API
//! requests to converge 1,000 virtual machines. Their figures will go in
//! the book, as measured.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
