//! The names of the objects Kite's deployment makes for itself, which more
//! than one component (the gateway, the API, the RBAC table, the operator's
//! checks) must agree on.

/// The default name of the Secret holding the gateway's control token.
pub const CONTROL_TOKEN_SECRET: &str = "kite-gateway-control";

/// The default name of the Secret holding the gateway's host key.
pub const HOST_KEY_SECRET: &str = "kite-gateway-host-key";

/// The field of the control token's Secret that holds the token.
pub const CONTROL_TOKEN_FIELD: &str = "token";
