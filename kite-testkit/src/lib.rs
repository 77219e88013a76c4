//! # kite-testkit
//!
//! Test support for Kite, never a production runtime: a stateful, in-memory
//! Kubernetes API server, and a simulated KubeVirt/CDI runtime.
//!
//! No Kubernetes cluster runs on the machines where Kite is built and
//! tested, so the controller, the API and the gateway are tested against
//! this server, through the real `kube` client, the real `kube::runtime`
//! watchers and reflectors, and the real `kubectl`.
//!
//! - **In-process:** [`FakeApiServer::client`] gives a `kube::Client` with
//!   no socket.
//! - **Over TCP:** [`FakeApiServer::listen`] serves plain HTTP on loopback,
//!   and [`kubeconfig::write`] points `kubectl` at it; the
//!   `kite-fake-apiserver` binary does both.
//!
//! What it implements, and what it does not, is in the book's chapter on
//! kite-testkit.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//!
//! let server = kite_testkit::FakeApiServer::new()?;
//! let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
//! let mut settings = ConfigMap::default();
//! settings.metadata.name = Some("settings".into());
//! config_maps.create(&PostParams::default(), &settings).await?;
//! assert_eq!(server.request_counts()["create configmaps"], 1);
//! # Ok(())
//! # }
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

// The modules in the layers scripts/layers.toml lists, top first: each
// imports only from its own layer or those below.

// The simulation, which drives a server through its handle.
pub mod sim;

// The server's handle and its assembly.
mod server;

// The HTTP layer: the router, the resource handlers, the console subresource.
pub mod console;
mod handlers;

// Reading, writing and watching, and what a request goes through on the way:
// authorization, admission, field validation, the injected faults, the
// lifecycle of deletions, CRDs and APIServices.
pub mod admission;
mod apiservice;
mod commit;
mod crd;
mod fault_injection;
mod field_validation;
mod lifecycle;
pub mod rbac;
mod read;
mod scale;
mod watch;
mod write;

// The shared state of a server.
mod state;

// What the API speaks and serves: object metadata, patches and applies,
// the shapes, tables, protobuf and discovery documents, the built-in and
// upstream types, TLS and kubeconfigs.
mod apply;
mod builtins;
mod crd_names;
mod discovery;
pub mod kubeconfig;
mod meta;
mod openapi;
mod patch;
mod path;
mod protobuf;
mod quantities;
mod service_routes;
mod shape;
mod table;
pub mod tls;
pub mod upstream;
mod workload_defaults;

// The object store, the registry of served types, and schema validation.
mod list_kind;
mod registry;
mod store;
mod validation;

// The ground floor: the definitions everything above uses, importing
// nothing of the crate but each other.
mod config;
mod console_backend;
mod error;
mod faults;
mod identity;
mod request_attributes;
mod selector;
mod status;
mod webhook_target;
mod write_context;

// Test helpers beside the server (they import nothing of it).
mod support;

/// The support module's object builders and bounded wait (`support/fixtures.rs`).
pub use support::fixtures;
/// The support module's moto S3 server (`support/moto.rs`).
pub use support::moto;
/// The support module's network namespaces (`support/netns.rs`).
pub use support::netns;
/// The support module's OpenSSH peers (`support/openssh.rs`).
pub use support::openssh;
/// The support module's process-group signals (`support/process_group.rs`).
pub use support::process_group;
/// The support module's stack release files (`support/stack_release.rs`).
pub use support::stack_release;

pub use config::Config;
pub use error::Error;
pub use faults::{Fault, RequestRecord, Verb};
pub use server::{Builder, FakeApiServer};
