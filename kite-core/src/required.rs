//! What a computation needs of an object read from the API server: its
//! name, namespace and uid. An object built in memory may lack them; asking
//! through [`Required`] turns that into one [`Error::Incomplete`] naming the
//! kind and the field, instead of a literal at every use.

use crate::Error;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;

/// The metadata of an object read from the API server, or [`Error::Incomplete`].
///
/// ```
/// use k8s_openapi::api::core::v1::Service;
/// use kite_core::required::Required;
/// use kube::api::ObjectMeta;
///
/// let service = Service { metadata: ObjectMeta { name: Some("web".into()), ..Default::default() }, ..Default::default() };
/// assert_eq!(service.required_name().unwrap(), "web");
/// let missing = service.required_namespace().unwrap_err();
/// assert_eq!(missing.to_string(), "the Service has no namespace; it must come from the API server");
/// ```
pub trait Required {
    /// `metadata.name`.
    fn required_name(&self) -> Result<&str, Error>;
    /// `metadata.namespace`.
    fn required_namespace(&self) -> Result<&str, Error>;
    /// A controller owner reference to the object, which needs its `metadata.uid`.
    fn required_owner(&self) -> Result<OwnerReference, Error>;
}

impl<K: Resource<DynamicType = ()>> Required for K {
    fn required_name(&self) -> Result<&str, Error> {
        self.meta().name.as_deref().ok_or_else(|| Error::incomplete(kind::<K>(), "name"))
    }

    fn required_namespace(&self) -> Result<&str, Error> {
        self.meta().namespace.as_deref().ok_or_else(|| Error::incomplete(kind::<K>(), "namespace"))
    }

    fn required_owner(&self) -> Result<OwnerReference, Error> {
        self.controller_owner_ref(&()).ok_or_else(|| Error::incomplete(kind::<K>(), "uid"))
    }
}

/// The kind of `K` as a static string, as every statically typed resource
/// (k8s-openapi's, and kube's derived ones) gives it.
fn kind<K: Resource<DynamicType = ()>>() -> &'static str {
    match K::kind(&()) {
        std::borrow::Cow::Borrowed(kind) => kind,
        std::borrow::Cow::Owned(_) => "object",
    }
}
