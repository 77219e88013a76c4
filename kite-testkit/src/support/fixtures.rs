//! Test builders for Kite's objects that read like sentences, and a bounded
//! wait, shared by the tests of every crate.
//!
//! ```
//! use kite_testkit::fixtures::{a_user, a_vm};
//! let user = a_user("alice");
//! let vm = a_vm("web").stopped().in_namespace(&user.spec.namespace).build();
//! assert_eq!(vm.metadata.namespace.as_deref(), Some("kite-user-alice"));
//! assert_eq!(vm.spec.ssh_id, "web");
//! ```

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kite_core::api::{
    AccessLevel, GoldenImage, GoldenImageSource, HttpSource, KitePlatformSpec, KiteUser, KiteUserSpec,
    KiteVirtualMachine, KiteVirtualMachineSpec, PowerState,
};
use std::future::Future;
use std::time::Duration;

/// The golden image the test platform offers.
pub const IMAGE: &str = "ubuntu-22.04";

/// KubeVirt's aggregated API, as its release manifest registers it, backed
/// by the Service `kubevirt/virt-api`: while that Service is missing, the
/// APIService is not Available and no namespace can finish deleting.
pub const KUBEVIRT_SUBRESOURCES_APISERVICE: &str = "apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.subresources.kubevirt.io}
spec:
  group: subresources.kubevirt.io
  version: v1
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
  service: {namespace: kubevirt, name: virt-api, port: 443}
";

/// An argon2id hash (of nothing anyone types), where a hash is required.
pub const SOME_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA";

/// A `KiteUser` named `name` (also the username), of access level 1, whose
/// namespace is `kite-user-<name>`.
pub fn a_user(name: &str) -> KiteUser {
    KiteUser::new(
        name,
        KiteUserSpec {
            username: name.into(),
            email: format!("{name}@example.org"),
            password: SOME_HASH.into(),
            namespace: format!("kite-user-{name}"),
            profile_image: String::new(),
            access_level: AccessLevel::User,
            ssh_authorized_keys: vec![],
            session_generation: 0,
        },
    )
}

/// Builds a `KiteVirtualMachine`.
#[derive(Clone, Debug)]
pub struct VmBuilder(KiteVirtualMachine);

/// A machine `name` to run: 1 CPU, 1Gi, a 25Gi disk of [`IMAGE`], its
/// `sshId` the name with `-` as `_`, and its domain prefix the name.
pub fn a_vm(name: &str) -> VmBuilder {
    VmBuilder(KiteVirtualMachine::new(
        name,
        KiteVirtualMachineSpec {
            cpu: 1,
            memory: Quantity("1Gi".into()),
            disk: Quantity("25Gi".into()),
            image: IMAGE.into(),
            power_state: PowerState::On,
            domain_prefix: Some(name.into()),
            ssh_id: name.replace('-', "_"),
            ssh_password_hash: None,
            console_password_hash: None,
            delete: false,
        },
    ))
}

impl VmBuilder {
    /// Of another image.
    pub fn of_image(mut self, image: &str) -> Self {
        self.0.spec.image = image.into();
        self
    }
    /// Stopped.
    pub fn stopped(mut self) -> Self {
        self.0.spec.power_state = PowerState::Off;
        self
    }
    /// With this disk size.
    pub fn with_disk(mut self, size: &str) -> Self {
        self.0.spec.disk = Quantity(size.into());
        self
    }
    /// With this many CPUs and this much memory.
    pub fn sized(mut self, cpu: u32, memory: &str) -> Self {
        self.0.spec.cpu = cpu;
        self.0.spec.memory = Quantity(memory.into());
        self
    }
    /// With this `sshId`.
    pub fn with_ssh_id(mut self, ssh_id: &str) -> Self {
        self.0.spec.ssh_id = ssh_id.into();
        self
    }
    /// With this domain prefix.
    pub fn with_domain_prefix(mut self, prefix: &str) -> Self {
        self.0.spec.domain_prefix = Some(prefix.into());
        self
    }
    /// With no domain prefix.
    pub fn without_domain_prefix(mut self) -> Self {
        self.0.spec.domain_prefix = None;
        self
    }
    /// With this password hash.
    pub fn with_password_hash(mut self, hash: &str) -> Self {
        self.0.spec.ssh_password_hash = Some(hash.into());
        self
    }
    /// In `namespace`.
    pub fn in_namespace(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.into());
        self
    }
    /// As the API server returns it: with a uid (and a namespace, `default` if none).
    pub fn as_stored(mut self) -> Self {
        self.0.metadata.namespace.get_or_insert_with(|| "default".into());
        self.0.metadata.uid = Some("0b6f7c1e-0000-4000-8000-0000000000aa".into());
        self
    }
    /// The machine.
    pub fn build(self) -> KiteVirtualMachine {
        self.0
    }
}

/// A platform on `example.org` offering [`IMAGE`] (4Gi, over HTTP).
pub fn a_platform() -> KitePlatformSpec {
    KitePlatformSpec {
        base_domain: Some("example.org".into()),
        golden_images: vec![GoldenImage {
            name: IMAGE.into(),
            source: GoldenImageSource { http: HttpSource { url: "https://images.example.org/jammy.img".into() } },
            size: Quantity("4Gi".into()),
        }],
        ..KitePlatformSpec::default()
    }
}

/// Polls `check` every 20 ms until it gives `Some`, for at most `within`;
/// panics naming `what` when it does not.
pub async fn eventually<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {within:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A plain HTTP/1.1 GET on `address` (loopback), bounded to a few seconds:
/// the status code and the body, or `None` when nothing answers.
pub fn http_get(address: std::net::SocketAddr, path: &str) -> Option<(u16, String)> {
    http_get_with(address, path, &[])
}

/// The same, with more request headers (`("Authorization", "Bearer …")`).
pub fn http_get_with(address: std::net::SocketAddr, path: &str, headers: &[(&str, &str)]) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let headers: String = headers.iter().map(|(name, value)| format!("{name}: {value}\r\n")).collect();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{headers}\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()))
}
