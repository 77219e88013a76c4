//! The platform's own Ingress, from `KitePlatform.spec.platformIngress`:
//! `kite-platform` routes the web UI and the API (the Service `kite-api`,
//! port 8080) on the platform's host; with a TLS Secret it is HTTPS only
//! (Traefik's `websecure`, `router.tls`), and `kite-platform-http` serves
//! the same host over plain HTTP, so the API can redirect it when
//! `forceHttps` says so. Disabled, both are removed (only if Kite made them).

use crate::Error;
use crate::api::{KitePlatform, PlatformIngressSpec};
use crate::labels::{self, COMPONENT};
use crate::reconcile::apply;
use crate::required::Required;
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule, IngressServiceBackend, IngressSpec,
    IngressTLS, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::core::ApiResource;
use serde_json::Value;
use std::collections::BTreeMap;

/// The platform's Ingress (HTTPS only, with TLS).
pub const INGRESS: &str = "kite-platform";
/// Its plain-HTTP companion, with TLS.
pub const HTTP_INGRESS: &str = "kite-platform-http";
/// The API's Service and port.
const API_SERVICE: (&str, i32) = ("kite-api", 8080);

/// The Ingresses `spec` asks for, in the platform namespace `namespace`.
pub fn ingresses(platform: &KitePlatform, namespace: &str) -> Result<Vec<Ingress>, Error> {
    let spec = &platform.spec.platform_ingress;
    if !spec.enabled {
        return Ok(Vec::new());
    }
    let owner = platform.required_owner()?;
    let one = |name: &str, tls: bool| {
        let entrypoints = if tls { "websecure" } else { "web" };
        let mut annotations =
            BTreeMap::from([("traefik.ingress.kubernetes.io/router.entrypoints".to_string(), entrypoints.to_string())]);
        if tls {
            annotations.insert("traefik.ingress.kubernetes.io/router.tls".into(), "true".into());
        }
        let backend = IngressBackend {
            service: Some(IngressServiceBackend {
                name: API_SERVICE.0.into(),
                port: Some(ServiceBackendPort { number: Some(API_SERVICE.1), ..ServiceBackendPort::default() }),
            }),
            ..IngressBackend::default()
        };
        Ingress {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                labels: Some(labels::owned_labels(COMPONENT, "platform-ingress")),
                annotations: Some(annotations),
                owner_references: Some(vec![owner.clone()]),
                ..ObjectMeta::default()
            },
            spec: Some(IngressSpec {
                ingress_class_name: Some(spec.ingress_class.clone()),
                rules: Some(vec![IngressRule {
                    host: spec.host.clone(),
                    http: Some(HTTPIngressRuleValue {
                        paths: vec![HTTPIngressPath { path: Some("/".into()), path_type: "Prefix".into(), backend }],
                    }),
                }]),
                tls: tls.then(|| {
                    vec![IngressTLS { hosts: spec.host.clone().map(|h| vec![h]), secret_name: spec.tls_secret.clone() }]
                }),
                ..IngressSpec::default()
            }),
            ..Ingress::default()
        }
    };
    Ok(match spec.tls_secret {
        Some(_) => vec![one(INGRESS, true), one(HTTP_INGRESS, false)],
        None => vec![one(INGRESS, false)],
    })
}

/// The web UI's address once `live` (the applied `kite-platform`) has one:
/// `https://` with TLS; the host, or the address itself without a host.
pub fn url(spec: &PlatformIngressSpec, live: &Value) -> Option<String> {
    let published = live.pointer("/status/loadBalancer/ingress")?.as_array()?.first()?;
    let address = published.get("hostname").or_else(|| published.get("ip")).and_then(Value::as_str)?;
    let scheme = if spec.tls_secret.is_some() { "https" } else { "http" };
    Some(format!("{scheme}://{}", spec.host.as_deref().unwrap_or(address)))
}

/// Applies the Ingresses `platform` asks for and removes the others Kite
/// made; the web UI's address once it has one.
pub async fn converge(
    client: &Client,
    manager: &str,
    platform: &KitePlatform,
    namespace: &str,
) -> Result<Option<String>, Error> {
    let resource = ApiResource::erase::<Ingress>(&());
    let wanted = ingresses(platform, namespace)?;
    let mut url_found = None;
    for ingress in &wanted {
        let object = apply::to_json(ingress, "the platform's Ingress")?;
        let live = apply::ensure(client, manager, &resource, &object).await?.live;
        if ingress.metadata.name.as_deref() == Some(INGRESS) {
            url_found = url(&platform.spec.platform_ingress, &live);
        }
    }
    for name in [INGRESS, HTTP_INGRESS] {
        if !wanted.iter().any(|ingress| ingress.metadata.name.as_deref() == Some(name)) {
            apply::remove(client, &resource, Some(namespace), name).await?;
        }
    }
    Ok(url_found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{KitePlatformSpec, PLATFORM_NAME};

    fn a_platform(spec: PlatformIngressSpec) -> KitePlatform {
        let mut platform = KitePlatform::new(
            PLATFORM_NAME,
            KitePlatformSpec { platform_ingress: spec, ..KitePlatformSpec::default() },
        );
        platform.metadata.uid = Some("uid-p".into());
        platform
    }

    #[test]
    fn without_tls_one_plain_ingress_routes_every_path_to_the_api() {
        let ingresses = ingresses(&a_platform(PlatformIngressSpec::default()), "kite").unwrap();
        assert_eq!(ingresses.len(), 1);
        let spec = ingresses[0].spec.as_ref().unwrap();
        let rule = &spec.rules.as_ref().unwrap()[0];
        assert_eq!(rule.host, None, "any host");
        assert_eq!(rule.http.as_ref().unwrap().paths[0].backend.service.as_ref().unwrap().name, "kite-api");
        assert!(spec.tls.is_none());
    }

    #[test]
    fn with_tls_the_https_ingress_has_a_plain_http_companion_for_the_redirect() {
        let spec = PlatformIngressSpec {
            host: Some("kite.example.org".into()),
            tls_secret: Some("kite-tls".into()),
            force_https: true,
            ..PlatformIngressSpec::default()
        };
        let ingresses = ingresses(&a_platform(spec.clone()), "kite").unwrap();
        let names: Vec<_> = ingresses.iter().map(|i| i.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, [INGRESS, HTTP_INGRESS]);
        let secure = &ingresses[0];
        assert_eq!(secure.spec.as_ref().unwrap().tls.as_ref().unwrap()[0].secret_name.as_deref(), Some("kite-tls"));
        let annotations = secure.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations["traefik.ingress.kubernetes.io/router.entrypoints"], "websecure");
        assert!(ingresses[1].spec.as_ref().unwrap().tls.is_none());
        let live = serde_json::json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}});
        assert_eq!(url(&spec, &live).as_deref(), Some("https://kite.example.org"));
        assert_eq!(url(&spec, &serde_json::json!({})), None);
    }

    #[test]
    fn disabled_means_none() {
        let spec = PlatformIngressSpec { enabled: false, ..PlatformIngressSpec::default() };
        assert!(ingresses(&a_platform(spec), "kite").unwrap().is_empty());
    }
}
