//! The form a read is answered in, as the client's `Accept` header asks:
//! the objects themselves, a `Table` (as `kubectl get` asks), or their
//! metadata only (`as=PartialObjectMetadata`, as metadata-only informers
//! ask: kube-rs' `metadata_watcher`, client-go's metadata informers).

use crate::registry::ResourceType;
use crate::status::ApiError;
use crate::table;
use http::StatusCode;
use serde_json::{Value, json};

/// The form of a GET, LIST or WATCH answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// The objects, as stored.
    Objects,
    /// A `meta.k8s.io/v1` Table of them.
    Table,
    /// `meta.k8s.io/v1` `PartialObjectMetadata`: each object's metadata only.
    Metadata,
}

/// Whether a request reads one object, a list or a watch's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// `GET` of one object, and the objects of a watch's events.
    One,
    /// `GET` of a collection.
    List,
}

const META_GROUP: &str = "meta.k8s.io";

impl Shape {
    /// The shape `accept` asks for, taking the first of its alternatives
    /// this server can give. A metadata-only alternative must name the
    /// kind the request answers with (`PartialObjectMetadataList` for a
    /// list, `PartialObjectMetadata` otherwise), as the API server insists:
    /// when none can be given, 406 Not Acceptable.
    pub fn of(accept: &str, read: Read) -> Result<Self, ApiError> {
        let mut refused = None;
        for alternative in accept.split(',') {
            let parameters: Vec<(&str, &str)> = alternative
                .split(';')
                .skip(1)
                .filter_map(|parameter| parameter.split_once('='))
                .map(|(key, value)| (key.trim(), value.trim()))
                .collect();
            let Some(as_kind) = parameters.iter().find(|(key, _)| *key == "as").map(|(_, value)| *value) else {
                return Ok(Shape::Objects);
            };
            let group_ok = parameters.iter().any(|(key, value)| *key == "g" && *value == META_GROUP);
            let wanted = match read {
                Read::One => "PartialObjectMetadata",
                Read::List => "PartialObjectMetadataList",
            };
            match as_kind {
                "Table" => return Ok(Shape::Table),
                kind if group_ok && kind == wanted => return Ok(Shape::Metadata),
                kind => refused = Some(kind.to_string()),
            }
        }
        match refused {
            Some(kind) => Err(ApiError::new(
                StatusCode::NOT_ACCEPTABLE,
                "NotAcceptable",
                format!(
                    "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf (as={kind} cannot be served for this request)"
                ),
            )),
            None => Ok(Shape::Objects),
        }
    }

    /// One object (of a GET or a watch event) in this shape.
    pub fn one(self, resource: &ResourceType, object: &Value) -> Value {
        match self {
            Shape::Objects => object.clone(),
            Shape::Table => table::table(
                resource,
                std::slice::from_ref(object),
                json!({"resourceVersion": object["metadata"]["resourceVersion"]}),
            ),
            Shape::Metadata => metadata_of(object),
        }
    }

    /// A list of `items` in this shape; `kind` and `api_version` name the
    /// list of whole objects (`SecretList`, `v1`).
    pub fn list(
        self,
        resource: &ResourceType,
        items: &[Value],
        metadata: Value,
        kind: &str,
        api_version: &str,
    ) -> Value {
        match self {
            Shape::Objects => json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "items": items}),
            Shape::Table => table::table(resource, items, metadata),
            Shape::Metadata => json!({
                "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": metadata,
                "items": items.iter().map(metadata_of).collect::<Vec<_>>(),
            }),
        }
    }
}

/// An object's metadata as a `PartialObjectMetadata`.
fn metadata_of(object: &Value) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": object["metadata"]})
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBE_RS_WATCH: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    const KUBE_RS_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    const KUBECTL_GET: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    #[test]
    fn the_accept_header_picks_the_shape() {
        assert_eq!(Shape::of("application/json", Read::List).unwrap(), Shape::Objects);
        assert_eq!(Shape::of("", Read::One).unwrap(), Shape::Objects);
        assert_eq!(Shape::of(KUBECTL_GET, Read::List).unwrap(), Shape::Table);
        assert_eq!(Shape::of(KUBE_RS_LIST, Read::List).unwrap(), Shape::Metadata);
        assert_eq!(Shape::of(KUBE_RS_WATCH, Read::One).unwrap(), Shape::Metadata);
    }

    #[test]
    fn metadata_of_the_wrong_kind_is_not_acceptable_unless_another_alternative_is() {
        let error = Shape::of(KUBE_RS_WATCH, Read::List).unwrap_err();
        assert_eq!(error.code, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(Shape::of(&format!("{KUBE_RS_LIST},application/json"), Read::One).unwrap(), Shape::Objects);
        assert!(Shape::of("application/json;as=PartialObjectMetadata;g=example.com;v=v1", Read::One).is_err());
    }

    #[test]
    fn metadata_only_keeps_the_metadata_and_drops_the_rest() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "labels": {"a": "b"}}, "data": {"k": "dg=="}});
        let resource = crate::builtins::all().into_iter().find(|r| r.kind == "Secret").unwrap();
        let one = Shape::Metadata.one(&resource, &secret);
        assert_eq!(
            one,
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {"name": "s", "labels": {"a": "b"}}})
        );
        let list = Shape::Metadata.list(&resource, &[secret], json!({"resourceVersion": "9"}), "SecretList", "v1");
        assert_eq!(list["kind"], "PartialObjectMetadataList");
        assert_eq!(list["items"][0], one);
        assert_eq!(list["metadata"]["resourceVersion"], "9");
    }
}
