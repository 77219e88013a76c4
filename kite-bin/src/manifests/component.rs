//! Kite's three components: their names, the ports they serve and the
//! labels that select their pods, which the workloads, the Services and the
//! RBAC table all name.

use std::collections::BTreeMap;

/// One of Kite's components, each with its own ServiceAccount.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Component {
    /// `kite controller`: the reconcilers.
    Controller,
    /// `kite api`: the HTTP API and the web UI.
    Api,
    /// `kite gateway --kube`: the SSH gateway.
    Gateway,
}

impl Component {
    /// Every component.
    pub const ALL: [Component; 3] = [Component::Controller, Component::Api, Component::Gateway];

    /// Its name: of the ServiceAccount, the Deployment, the roles.
    pub fn name(self) -> &'static str {
        match self {
            Component::Controller => "kite-controller",
            Component::Api => "kite-api",
            Component::Gateway => "kite-gateway",
        }
    }

    /// Its short name, as a subcommand and the `app.kubernetes.io/component` label.
    pub fn short(self) -> &'static str {
        match self {
            Component::Controller => "controller",
            Component::Api => "api",
            Component::Gateway => "gateway",
        }
    }
}

/// The gateway's control API port (for `kite api` only).
pub const CONTROL_PORT: i32 = 8083;

/// The headless Service whose name resolves to every gateway replica's control API.
pub const CONTROL_SERVICE: &str = "kite-gateway-control";

/// The ports a component serves: (name, port).
pub fn ports(component: Component) -> &'static [(&'static str, i32)] {
    match component {
        Component::Controller => &[("http", 8081)],
        Component::Api => &[("http", 8080)],
        Component::Gateway => &[("ssh", 2222), ("http", 8082), ("control", CONTROL_PORT)],
    }
}

/// The labels that select a component's pods (`app` is what `kite-gateway-external` selects).
pub fn selector(component: Component) -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_string(), component.name().to_string())])
}
