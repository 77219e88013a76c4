//! HTTPS as a cluster serves its API: a CA made when the server first
//! listens, a serving certificate for loopback signed by it, and client
//! certificates whose subject names the user (`CN`) and the groups (`O`),
//! which is what the API server's x509 authenticator reads
//! (`k8s.io/apiserver/pkg/authentication/request/x509`, `CommonNameUserConversion`).
//! A client without a certificate is let through the handshake and
//! authenticated by its bearer token, or is `system:anonymous`, as on a
//! real API server.

use crate::Error;
use crate::identity::UserInfo;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;

/// A client certificate and its private key, both PEM, as a kubeconfig carries them.
#[derive(Clone, Debug)]
pub struct ClientCertificate {
    /// The certificate, signed by the server's CA.
    pub certificate_pem: String,
    /// Its private key (PKCS#8).
    pub key_pem: String,
}

/// The user a client certificate authenticated as, put on each request of its connection.
#[derive(Clone, Debug)]
pub(crate) struct PeerUser(pub Option<UserInfo>);

/// The server's CA and its TLS configuration.
pub(crate) struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
    server: Arc<rustls::ServerConfig>,
}

fn tls_error(what: &str, error: impl std::fmt::Display) -> Error {
    Error::Tls { what: what.to_string(), message: error.to_string() }
}

impl Pki {
    /// A new CA, and a serving certificate for `localhost`, `127.0.0.1` and `::1`.
    pub fn new() -> Result<Self, Error> {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, "kite-testkit-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::generate().map_err(|e| tls_error("making the CA's key", e))?;
        let ca = CertifiedIssuer::self_signed(params, ca_key).map_err(|e| tls_error("making the CA", e))?;

        let names = ["localhost", "127.0.0.1", "::1", "kubernetes", "kubernetes.default.svc"];
        let mut params = CertificateParams::new(names.map(String::from).to_vec())
            .map_err(|e| tls_error("naming the serving certificate", e))?;
        params.distinguished_name.push(DnType::CommonName, "kube-apiserver");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().map_err(|e| tls_error("making the serving key", e))?;
        let certificate = params.signed_by(&key, &ca).map_err(|e| tls_error("signing the serving certificate", e))?;

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).map_err(|e| tls_error("trusting the CA", e))?;
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .allow_unauthenticated()
            .build()
            .map_err(|e| tls_error("building the client-certificate verifier", e))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error("choosing the TLS versions", e))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![certificate.der().clone()], key)
            .map_err(|e| tls_error("loading the serving certificate", e))?;
        // HTTP/1.1 only: client-go and kube-rs both fall back to it.
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self { ca, server: Arc::new(server) })
    }

    /// The CA's certificate, PEM: what a kubeconfig's `certificate-authority-data` holds.
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// A client certificate for `user`: `CN` is the name, one `O` per group
    /// (`system:authenticated` is added by the server, not written).
    pub fn client_certificate(&self, user: &UserInfo) -> Result<ClientCertificate, Error> {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, user.name.as_str());
        for group in user.groups.iter().filter(|g| *g != "system:authenticated") {
            params.distinguished_name.push(DnType::OrganizationName, group.as_str());
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate().map_err(|e| tls_error("making a client key", e))?;
        let certificate = params.signed_by(&key, &self.ca).map_err(|e| tls_error("signing a client certificate", e))?;
        Ok(ClientCertificate { certificate_pem: certificate.pem(), key_pem: key.serialize_pem() })
    }

    /// The acceptor for HTTPS connections.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(Arc::clone(&self.server))
    }
}

/// Serves one HTTPS connection with `router`: the TLS handshake, then
/// HTTP/1.1, with the user the client's certificate names on every request.
pub(crate) async fn serve_connection(
    acceptor: tokio_rustls::TlsAcceptor,
    stream: tokio::net::TcpStream,
    router: axum::Router,
) {
    let tls = match acceptor.accept(stream).await {
        Ok(tls) => tls,
        Err(error) => {
            tracing::debug!(%error, "an HTTPS handshake failed");
            return;
        }
    };
    let peer = tls.get_ref().1.peer_certificates().and_then(|chain| chain.first()).and_then(user_of);
    let service = hyper_util::service::TowerToHyperService::new(router.layer(axum::Extension(PeerUser(peer))));
    let connection = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
        .with_upgrades();
    if let Err(error) = connection.await {
        tracing::debug!(%error, "an HTTPS connection ended with an error");
    }
}

/// The user a verified client certificate names: `CN` the name, each `O` a
/// group, and `system:authenticated`; none for a certificate without a `CN`.
pub(crate) fn user_of(certificate: &CertificateDer<'_>) -> Option<UserInfo> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate.as_ref()).ok()?;
    let subject = parsed.subject();
    let name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    let mut groups: Vec<String> =
        subject.iter_organization().filter_map(|o| o.as_str().ok()).map(str::to_string).collect();
    groups.push("system:authenticated".into());
    Some(UserInfo { name, groups })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_certificate_names_its_user_and_groups() {
        let pki = Pki::new().unwrap();
        let admin = UserInfo {
            name: "kubernetes-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        };
        let issued = pki.client_certificate(&admin).unwrap();
        let der = rustls::pki_types::pem::PemObject::from_pem_slice(issued.certificate_pem.as_bytes()).unwrap();
        assert_eq!(user_of(&der), Some(admin));
    }
}
