//! # kite-benches
//!
//! Benchmarks of the Kite crates, each a `harness = false` program:
//!
//! - `ssh_data_path`: straight to sshd, through an OpenSSH jump host, and
//!   through the kite-ssh router; bulk throughput, round trip, setup.
//! - `ssh_load`: many concurrent sessions through the router; its memory per
//!   session and the setup time.
//!
//! `cargo bench -p kite-benches --bench <name>` runs one in full; under
//! `cargo test` each makes a small smoke pass. The figures are in the book.
