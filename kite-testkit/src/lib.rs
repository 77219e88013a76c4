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

pub mod admission;
mod apiservice;
mod apply;
mod builtins;
mod config;
pub mod console;
mod console_backend;
mod crd;
mod crd_names;
mod discovery;
mod error;
mod fault_injection;
mod faults;
mod field_validation;
pub mod fixtures;
mod handlers;
mod identity;
pub mod kubeconfig;
mod lifecycle;
mod list_kind;
mod meta;
pub mod moto;
pub mod netns;
mod openapi;
pub mod openssh;
mod patch;
pub mod process_group;
mod quantities;

mod path;
mod protobuf;
pub mod rbac;
mod read;
mod registry;
mod request_attributes;
mod scale;
mod selector;
mod server;
mod service_routes;
mod shape;
pub mod sim;
pub mod stack_release;
mod state;
mod status;
mod store;
mod table;
pub mod tls;
pub mod upstream;
mod validation;
mod watch;
mod workload_defaults;
mod write;
mod write_context;

pub use config::Config;
pub use error::Error;
pub use faults::{Fault, RequestRecord, Verb};
pub use server::{Builder, FakeApiServer};
