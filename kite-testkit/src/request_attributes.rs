//! What a request asks to do, as the authorizer sees it: the verb, the
//! resource or path, the namespace and the name. It imports nothing of the crate.

/// What a request asks to do, as the authorizer sees it.
pub(crate) struct Attributes<'a> {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, `impersonate`.
    pub verb: &'a str,
    /// The API group (empty for the core group).
    pub group: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// The subresource, if any.
    pub subresource: Option<&'a str>,
    /// The object's name, if the request names one.
    pub name: Option<&'a str>,
    /// The namespace, if any.
    pub namespace: Option<&'a str>,
    /// For a non-resource request, its path.
    pub path: Option<&'a str>,
}
