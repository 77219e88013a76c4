//! A machine's web domain. Every machine gets `vps-web-<vm>` (port 80);
//! with `KitePlatform.spec.baseDomain` (a DNS name, not an address) and the
//! machine's `domainPrefix`, the Ingress `<vm>` serves
//! `<domainPrefix>.<baseDomain>` through the platform's ingress controller
//! (K3s' Traefik by default), with TLS as `spec.machineDomains` says: none,
//! a copy of the platform's certificate Secret (`<vm>-tls`, never written
//! over a Secret Kite did not make), or cert-manager's. The machine's URL
//! is reported only once the Ingress has an address.

use super::desired::{meta, parent, port_service};
use crate::api::{KiteVirtualMachine, MachineDomainsSpec, MachineTls};
use crate::reconcile::applier::Applier;
use crate::reconcile::apply::{self, Removal};
use crate::{Error, names};
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule, IngressServiceBackend, IngressSpec,
    IngressTLS, ServiceBackendPort,
};
use kube::Client;
use kube::core::ApiResource;
use serde_json::Value;
use std::collections::BTreeMap;

/// The Traefik annotation naming a router's entry points.
const ENTRYPOINTS: &str = "traefik.ingress.kubernetes.io/router.entrypoints";
/// The Traefik annotation turning TLS on for a router.
const ROUTER_TLS: &str = "traefik.ingress.kubernetes.io/router.tls";
/// cert-manager's annotation naming the ClusterIssuer of an Ingress's certificate.
const CLUSTER_ISSUER: &str = "cert-manager.io/cluster-issuer";

/// `vps-web-<vm>`: the machine's port 80, for its Ingress.
pub fn web_service(vm: &KiteVirtualMachine) -> Result<Service, Error> {
    port_service(vm, names::web_service, "http", 80)
}

/// `<domainPrefix>.<baseDomain>`, when both are set and the base domain is
/// a name (an address cannot have subdomains).
pub fn domain(vm: &KiteVirtualMachine, base_domain: Option<&str>) -> Option<String> {
    let prefix = vm.spec.domain_prefix.as_deref().filter(|p| !p.is_empty())?;
    let base = base_domain.filter(|b| !b.is_empty())?;
    if base.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    Some(format!("{prefix}.{base}"))
}

/// The Ingress `<vm>` for `domain`.
pub fn ingress(vm: &KiteVirtualMachine, domain: &str, domains: &MachineDomainsSpec) -> Result<Ingress, Error> {
    let parent = parent(vm)?;
    let mut metadata = meta(&parent, names::ingress(parent.name));
    let tls = domains.tls != MachineTls::None;
    let mut annotations =
        BTreeMap::from([(ENTRYPOINTS.to_string(), if tls { "websecure" } else { "web" }.to_string())]);
    if tls {
        annotations.insert(ROUTER_TLS.into(), "true".into());
    }
    if let (MachineTls::CertManager, Some(issuer)) = (domains.tls, &domains.cluster_issuer) {
        annotations.insert(CLUSTER_ISSUER.into(), issuer.clone());
    }
    metadata.annotations = Some(annotations);
    let backend = IngressBackend {
        service: Some(IngressServiceBackend {
            name: names::web_service(parent.name),
            port: Some(ServiceBackendPort { number: Some(80), ..ServiceBackendPort::default() }),
        }),
        ..IngressBackend::default()
    };
    Ok(Ingress {
        metadata,
        spec: Some(IngressSpec {
            ingress_class_name: Some(domains.ingress_class.clone()),
            rules: Some(vec![IngressRule {
                host: Some(domain.to_string()),
                http: Some(HTTPIngressRuleValue {
                    paths: vec![HTTPIngressPath { path: Some("/".into()), path_type: "Prefix".into(), backend }],
                }),
            }]),
            tls: tls.then(|| {
                vec![IngressTLS {
                    hosts: Some(vec![domain.to_string()]),
                    secret_name: Some(names::tls_secret(parent.name)),
                }]
            }),
            ..IngressSpec::default()
        }),
        ..Ingress::default()
    })
}

/// `<vm>-tls`: a copy of the platform's certificate Secret `source`.
pub fn certificate_copy(vm: &KiteVirtualMachine, source: &Secret) -> Result<Secret, Error> {
    let parent = parent(vm)?;
    Ok(Secret {
        metadata: meta(&parent, names::tls_secret(parent.name)),
        type_: Some("kubernetes.io/tls".into()),
        data: source.data.clone(),
        ..Secret::default()
    })
}

/// The machine's URL, once the Ingress `live` has an address.
pub fn url(domain: &str, domains: &MachineDomainsSpec, live: &Value) -> Option<String> {
    let addresses = live.pointer("/status/loadBalancer/ingress")?.as_array()?;
    let has_address = addresses.iter().any(|a| a.get("ip").is_some() || a.get("hostname").is_some());
    let scheme = if domains.tls == MachineTls::None { "http" } else { "https" };
    has_address.then(|| format!("{scheme}://{domain}"))
}

/// What the VM reconciler knows that the web domain needs.
pub(super) struct Web<'a> {
    /// The reconciler's caches, client and field manager.
    pub applier: Applier<'a>,
    pub base_domain: Option<&'a str>,
    pub domains: &'a MachineDomainsSpec,
    /// The platform namespace, where the certificate Secret is.
    pub platform_namespace: &'a str,
}

/// Makes the machine's web Service, and its Ingress when it has a domain
/// (removing one it no longer has); its URL once the Ingress has an address.
pub(super) async fn converge(vm: &KiteVirtualMachine, web: &Web<'_>) -> Result<Option<String>, Error> {
    let parent = parent(vm)?;
    let (name, namespace) = (parent.name, parent.namespace);
    web.applier.ensure_object(&web_service(vm)?, "the web Service").await?;
    let ingresses = ApiResource::erase::<Ingress>(&());
    let secrets = ApiResource::erase::<Secret>(&());
    let Some(domain) = domain(vm, web.base_domain) else {
        web.applier.remove(&ingresses, Some(namespace), &names::ingress(name)).await?;
        web.applier.remove(&secrets, Some(namespace), &names::tls_secret(name)).await?;
        return Ok(None);
    };
    if let (MachineTls::PlatformCertificate, Some(source)) = (web.domains.tls, &web.domains.certificate_secret) {
        copy_certificate(vm, web, source).await?;
    }
    let live = web.applier.ensure_object(&ingress(vm, &domain, web.domains)?, "the machine's Ingress").await?.live;
    Ok(url(&domain, web.domains, &live))
}

/// Copies the platform's certificate into `<vm>-tls`, unless a Secret of
/// that name that Kite did not make is there (it is then left alone).
async fn copy_certificate(vm: &KiteVirtualMachine, web: &Web<'_>, source: &str) -> Result<(), Error> {
    let secrets = ApiResource::erase::<Secret>(&());
    let Some(certificate) = apply::read(web.applier.client(), &secrets, Some(web.platform_namespace), source).await?
    else {
        tracing::warn!(secret = %format!("{}/{source}", web.platform_namespace), "the platform's certificate Secret does not exist; the machine's domain is served without it");
        return Ok(());
    };
    let certificate: Secret = serde_json::from_value(certificate)
        .map_err(|source| Error::Serde { what: "reading the platform's certificate Secret".into(), source })?;
    match web.applier.ensure_object(&certificate_copy(vm, &certificate)?, "the machine's certificate").await {
        Ok(_) => Ok(()),
        Err(Error::NotOurs { namespace, name, .. }) => {
            tracing::warn!(secret = %format!("{namespace}/{name}"), "a Secret Kite did not make holds the machine's certificate name; leaving it as it is");
            Ok(())
        }
        Err(error) => Err(error),
    }
}

/// The web domain's children, for the machine's deletion: each is
/// [`Removal::Deleting`] until it has gone.
pub(super) async fn remove(client: &Client, namespace: &str, name: &str) -> Result<Vec<String>, Error> {
    let mut remaining = Vec::new();
    let children = [
        (ApiResource::erase::<Ingress>(&()), names::ingress(name)),
        (ApiResource::erase::<Service>(&()), names::web_service(name)),
        (ApiResource::erase::<Secret>(&()), names::tls_secret(name)),
    ];
    for (resource, child) in children {
        if apply::remove(client, &resource, Some(namespace), &child).await? == Removal::Deleting {
            remaining.push(format!("{} {child}", resource.kind));
        }
    }
    Ok(remaining)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{KiteVirtualMachineSpec, PowerState};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn a_machine(prefix: Option<&str>) -> KiteVirtualMachine {
        let spec = KiteVirtualMachineSpec {
            cpu: 1,
            memory: Quantity("1Gi".into()),
            disk: Quantity("25Gi".into()),
            image: "ubuntu-22.04".into(),
            power_state: PowerState::On,
            domain_prefix: None,
            ssh_id: "ada_blog".into(),
            ssh_password_hash: None,
            console_password_hash: None,
            delete: false,
        };
        let mut vm = KiteVirtualMachine::new("blog", spec);
        vm.metadata.namespace = Some("kite-user-ada".into());
        vm.metadata.uid = Some("uid-1".into());
        vm.spec.domain_prefix = prefix.map(str::to_string);
        vm
    }

    #[test]
    fn a_domain_needs_a_prefix_and_a_base_domain_that_is_a_name() {
        assert_eq!(domain(&a_machine(Some("blog")), Some("vms.example.com")).as_deref(), Some("blog.vms.example.com"));
        assert_eq!(domain(&a_machine(None), Some("vms.example.com")), None);
        assert_eq!(domain(&a_machine(Some("blog")), None), None);
        assert_eq!(domain(&a_machine(Some("blog")), Some("127.0.0.1")), None, "an address has no subdomains");
    }

    #[test]
    fn the_ingress_routes_the_domain_to_port_80_with_the_tls_the_platform_says() {
        let vm = a_machine(Some("blog"));
        let plain = ingress(&vm, "blog.vms.example.com", &MachineDomainsSpec::default()).unwrap();
        let spec = plain.spec.as_ref().unwrap();
        assert_eq!(spec.ingress_class_name.as_deref(), Some("traefik"));
        let rule = &spec.rules.as_ref().unwrap()[0];
        assert_eq!(rule.host.as_deref(), Some("blog.vms.example.com"));
        let backend = rule.http.as_ref().unwrap().paths[0].backend.service.as_ref().unwrap();
        assert_eq!((backend.name.as_str(), backend.port.as_ref().unwrap().number), ("vps-web-blog", Some(80)));
        assert!(spec.tls.is_none());
        assert_eq!(plain.metadata.annotations.as_ref().unwrap()[ENTRYPOINTS], "web");

        let issued = MachineDomainsSpec {
            tls: MachineTls::CertManager,
            cluster_issuer: Some("letsencrypt".into()),
            ..MachineDomainsSpec::default()
        };
        let secure = ingress(&vm, "blog.vms.example.com", &issued).unwrap();
        let annotations = secure.metadata.annotations.as_ref().unwrap();
        assert_eq!(
            (annotations[ENTRYPOINTS].as_str(), annotations[CLUSTER_ISSUER].as_str()),
            ("websecure", "letsencrypt")
        );
        assert_eq!(secure.spec.unwrap().tls.unwrap()[0].secret_name.as_deref(), Some("blog-tls"));
    }

    #[test]
    fn the_url_waits_for_an_address() {
        let domains = MachineDomainsSpec::default();
        let pending = serde_json::json!({"status": {"loadBalancer": {}}});
        assert_eq!(url("blog.example.com", &domains, &pending), None);
        let ready = serde_json::json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}});
        assert_eq!(url("blog.example.com", &domains, &ready).as_deref(), Some("http://blog.example.com"));
        let tls = MachineDomainsSpec { tls: MachineTls::CertManager, ..domains };
        assert_eq!(url("blog.example.com", &tls, &ready).as_deref(), Some("https://blog.example.com"));
    }
}
