//! Who makes a request: [`UserInfo`], the admin every unauthorized request
//! is made as, and the [`AuthorizationMode`] that says whether requests are
//! authenticated at all. It imports nothing of the crate.

/// How requests are authorized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
pub enum AuthorizationMode {
    /// Everything is allowed, with or without credentials (the default).
    #[default]
    AlwaysAllow,
    /// Bearer tokens and RBAC, as a cluster authorizes.
    #[value(name = "RBAC")]
    Rbac,
}

/// Who makes a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name, such as `system:serviceaccount:kite:kite-api`.
    pub name: String,
    /// The groups, `system:authenticated` among them.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// A ServiceAccount's user and groups.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Self {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }

    pub(crate) fn anonymous() -> Self {
        Self { name: "system:anonymous".into(), groups: vec!["system:unauthenticated".into()] }
    }
}

/// The user of the admin kubeconfig and of [`FakeApiServer::client`](crate::FakeApiServer::client), in `system:masters`.
pub const ADMIN: &str = "kubernetes-admin";

/// The admin: [`ADMIN`] in `system:masters`. Without RBAC, every request is made as the admin.
pub(crate) fn admin() -> UserInfo {
    UserInfo { name: ADMIN.into(), groups: vec!["system:masters".into(), "system:authenticated".into()] }
}
