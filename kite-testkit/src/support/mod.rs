//! Test helpers beside the fake API server, for the tests of every crate:
//! object builders ([`fixtures`]), moto's S3 server ([`moto`]), network
//! namespaces ([`netns`]), OpenSSH peers ([`openssh`]), process groups
//! ([`process_group`]) and the stack's release files ([`stack_release`]).
//! They import nothing of the server; the crate root re-exports each at its
//! old path (`kite_testkit::fixtures`, …).

pub mod fixtures;
pub mod moto;
pub mod netns;
pub mod openssh;
pub mod process_group;
pub mod stack_release;
