//! Simulated guests: every `Running` VirtualMachineInstance answers on its
//! serial console with a login (see `serial_login`) and boots an SSH server
//! on loopback, a real `sshd` ([`GuestSsh::OpenSsh`]) or one in this process
//! ([`GuestSsh::InProcess`], see `guest_ssh`), configured the way cloud-init
//! would configure the machine from the user data its `cloudInitNoCloud`
//! Secret holds: the host key from `ssh_keys`, and the `ssh_authorized_keys`
//! of the first user as the only keys it accepts. A login runs a real shell
//! on this machine, in a scratch directory of its own.
//!
//! The machine's Services route to it when their selector matches the
//! instance's labels, as a real Service's endpoints would; [`Guests::address`]
//! is the address a Service resolves to. With [`GuestNetwork::ServiceNames`]
//! each guest listens on port 22 of a loopback address of its own and the
//! Services' cluster DNS names are written to a hosts file, so a process
//! that dials `<service>.<namespace>.svc.<domain>:22`, as Kite's gateway
//! does, reaches the guest as it would on a cluster. The whole chain (the controller's
//! Secret, its cloud-init, its Service selector) is thereby checked by a
//! real SSH login.

use super::cloud_init::{UserData, guest_dir, user_data};
use super::guest_shell::ShellUser;
use super::guest_ssh::{self, GuestServer};
use crate::server::FakeApiServer;
use crate::sim::object_fields::{name_of, namespace_of};
use crate::sim::store_io::objects;
use crate::state::Inner;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// How guests are booted.
#[derive(Clone, Debug)]
pub struct GuestConfig {
    /// Where each guest's scratch directory (`<namespace>/<vm>`) and sshd files go.
    pub root: PathBuf,
    /// The account of this machine sessions log in to (sshd can log in no other user).
    pub login_user: String,
    /// How often running instances are looked for.
    pub poll: Duration,
    /// How guests are reached.
    pub network: GuestNetwork,
    /// Which SSH server a guest runs.
    pub ssh: GuestSsh,
}

/// Which SSH server a guest runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestSsh {
    /// OpenSSH's `sshd`, one process per guest: the real peer, which tests use.
    OpenSsh,
    /// An SSH server in this process (russh) with the same keys and a
    /// pseudo-terminal shell, for a machine where `sshd` is not installed.
    InProcess,
}

impl GuestSsh {
    /// OpenSSH's `sshd` when `sshd` (as [`sshd_path`] finds it) is installed, else the in-process server.
    pub fn detect(sshd: Option<&Path>) -> Self {
        match sshd {
            Some(_) => Self::OpenSsh,
            None => Self::InProcess,
        }
    }

    /// What a banner says of it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::OpenSsh => "OpenSSH's sshd on loopback, one per machine",
            Self::InProcess => "SSH servers inside the demo (russh), one per machine: OpenSSH's sshd is not installed",
        }
    }
}

/// How guests are reached.
#[derive(Clone, Debug, Default)]
pub enum GuestNetwork {
    /// Each guest's sshd on a port of its own on `127.0.0.1`; only
    /// [`Guests::address`] knows which.
    #[default]
    LoopbackPorts,
    /// Each guest's sshd on port 22 of a loopback address of its own
    /// (`127.77.0.1` and on), and every Service that selects a guest
    /// written to `hosts_file` in `/etc/hosts` form as
    /// `<address> <service>.<namespace>.svc.<domain>`, the name the cluster's
    /// DNS would answer. The file is rewritten in place (never replaced), so
    /// it can be bind-mounted over `/etc/hosts`. Port 22 needs root and a
    /// network namespace of its own, where the host's port 22 is not in
    /// the way: see [`crate::netns`].
    ServiceNames {
        /// The hosts file to keep.
        hosts_file: PathBuf,
        /// The cluster domain, `cluster.local` on most clusters.
        domain: String,
    },
}

impl GuestNetwork {
    /// Where the `index`th guest booted listens.
    fn address(&self, index: u32) -> Result<SocketAddr, String> {
        match self {
            Self::LoopbackPorts => std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| format!("no free port: {e}")),
            Self::ServiceNames { .. } => {
                let host = u16::try_from(index + 1).map_err(|_| "more than 65535 guests booted".to_string())?;
                let [high, low] = host.to_be_bytes();
                Ok(SocketAddr::from(([127, 77, high, low], 22)))
            }
        }
    }

    /// Writes the DNS names of `routes` when they differ from `written`.
    fn publish(&self, routes: &HashMap<(String, String), SocketAddr>, written: &mut String) {
        let Self::ServiceNames { hosts_file, domain } = self else { return };
        let mut lines: Vec<String> = routes
            .iter()
            .map(|((namespace, service), address)| format!("{} {service}.{namespace}.svc.{domain}", address.ip()))
            .collect();
        lines.sort();
        let text = format!(
            "127.0.0.1 localhost\n::1 localhost\n{}",
            lines.iter().map(|l| format!("{l}\n")).collect::<String>()
        );
        if text != *written {
            match std::fs::write(hosts_file, &text) {
                Ok(()) => *written = text,
                Err(error) => tracing::warn!(file = %hosts_file.display(), %error, "cannot write the Services' names"),
            }
        }
    }
}

/// A booted guest: its SSH server, stopped when dropped.
struct Guest {
    uid: String,
    address: SocketAddr,
    labels: serde_json::Map<String, Value>,
    /// Held for its Drop: the server stops with the guest.
    _server: Server,
}

/// A guest's SSH server.
enum Server {
    OpenSsh(Child),
    InProcess(GuestServer),
}

impl Drop for Server {
    fn drop(&mut self) {
        match self {
            Self::OpenSsh(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Self::InProcess(server) => server.stop(),
        }
    }
}

/// Where OpenSSH's sshd is on this machine, if it is installed: guests cannot boot without it.
pub fn sshd_path() -> Option<&'static Path> {
    ["/usr/sbin/sshd", "/usr/bin/sshd", "/sbin/sshd"].into_iter().map(Path::new).find(|p| p.exists())
}

/// The running guests; their sshds stop when this is dropped.
pub struct Guests {
    routes: Arc<RwLock<HashMap<(String, String), SocketAddr>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Guests {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Guests {
    /// The address the Service `namespace/service` reaches, when a running guest backs it.
    pub fn address(&self, namespace: &str, service: &str) -> Option<SocketAddr> {
        let routes = self.routes.read().unwrap_or_else(|p| p.into_inner());
        routes.get(&(namespace.to_string(), service.to_string())).copied()
    }

    /// How many Services route to a guest now.
    pub fn routed(&self) -> usize {
        self.routes.read().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Starts booting guests for the instances `server` runs.
pub fn start_guests(server: &FakeApiServer, config: GuestConfig) -> Guests {
    let routes = Arc::new(RwLock::new(HashMap::new()));
    let weak = Arc::downgrade(&server.inner);
    server.serve_consoles(super::serial_login::backend(weak.clone(), config.root.clone()));
    let task = server.inner.runtime.spawn(run(weak, config, routes.clone()));
    Guests { routes, task }
}

async fn run(weak: Weak<Inner>, config: GuestConfig, routes: Arc<RwLock<HashMap<(String, String), SocketAddr>>>) {
    let mut guests: HashMap<(String, String), Guest> = HashMap::new();
    let mut failed: HashSet<String> = HashSet::new();
    let mut booted = 0u32;
    let mut published = String::new();
    let mut ticker = tokio::time::interval(config.poll);
    loop {
        ticker.tick().await;
        let Some(inner) = weak.upgrade() else { return };
        let running: Vec<Value> = objects(&inner, "kubevirt.io", "virtualmachineinstances")
            .into_iter()
            .filter(|vmi| vmi["status"]["phase"] == "Running")
            .collect();
        let uids: HashSet<String> =
            running.iter().filter_map(|v| v["metadata"]["uid"].as_str().map(str::to_string)).collect();
        guests.retain(|_, guest| uids.contains(&guest.uid));
        for vmi in &running {
            let key = (namespace_of(vmi).to_string(), name_of(vmi).to_string());
            let uid = vmi["metadata"]["uid"].as_str().unwrap_or_default().to_string();
            if guests.contains_key(&key) || failed.contains(&uid) {
                continue;
            }
            let booting = config.network.address(booted).and_then(|address| boot(&inner, &config, vmi, address));
            booted += 1;
            match booting {
                Ok(guest) => {
                    tracing::info!(namespace = %key.0, vm = %key.1, address = %guest.address, ssh = ?config.ssh, "guest booted");
                    guests.insert(key, guest);
                }
                Err(error) => {
                    tracing::warn!(namespace = %key.0, vm = %key.1, %error, "the guest cannot boot");
                    failed.insert(uid);
                }
            }
        }
        let table = service_routes(&inner, &guests);
        drop(inner);
        config.network.publish(&table, &mut published);
        *routes.write().unwrap_or_else(|p| p.into_inner()) = table;
    }
}

/// Which Services select which guest: a Service routes to a guest when
/// every pair of its selector is among the instance's labels.
fn service_routes(
    inner: &Arc<Inner>,
    guests: &HashMap<(String, String), Guest>,
) -> HashMap<(String, String), SocketAddr> {
    let mut table = HashMap::new();
    for service in objects(inner, "", "services") {
        let Some(selector) = service["spec"]["selector"].as_object().filter(|s| !s.is_empty()) else { continue };
        let namespace = namespace_of(&service);
        let backing = guests
            .iter()
            .find(|((ns, _), guest)| ns == namespace && selector.iter().all(|(k, v)| guest.labels.get(k) == Some(v)));
        if let Some((_, guest)) = backing {
            table.insert((namespace.to_string(), name_of(&service).to_string()), guest.address);
        }
    }
    table
}

fn boot(inner: &Arc<Inner>, config: &GuestConfig, vmi: &Value, address: SocketAddr) -> Result<Guest, String> {
    let data = user_data(inner, vmi)?;
    if data.authorized.is_empty() {
        return Err("the user data's first user has no ssh_authorized_keys".into());
    }
    let dir = guest_dir(&config.root, vmi);
    let home = dir.join("home");
    std::fs::create_dir_all(&home).map_err(|e| format!("cannot create {}: {e}", home.display()))?;
    let server = match config.ssh {
        GuestSsh::OpenSsh => Server::OpenSsh(boot_sshd(config, &data, &dir, &home, address)?),
        GuestSsh::InProcess => {
            let shell = ShellUser { login: config.login_user.clone(), hostname: name_of(vmi).to_string(), home };
            Server::InProcess(guest_ssh::start(address, &data.host_key, &data.authorized, &config.login_user, shell)?)
        }
    };
    let labels = vmi["metadata"]["labels"].as_object().cloned().unwrap_or_default();
    let uid = vmi["metadata"]["uid"].as_str().unwrap_or_default().to_string();
    Ok(Guest { uid, address, labels, _server: server })
}

/// Starts OpenSSH's sshd for the guest, its files in `dir`.
fn boot_sshd(
    config: &GuestConfig,
    data: &UserData,
    dir: &Path,
    home: &Path,
    address: SocketAddr,
) -> Result<Child, String> {
    let sshd = sshd_path().ok_or("sshd is missing: install openssh-server to reach the demo's machines")?;
    let _ = std::fs::create_dir_all("/run/sshd");
    write_private(&dir.join("host_key"), data.host_key.as_bytes())?;
    write_private(&dir.join("authorized_keys"), (data.authorized.join("\n") + "\n").as_bytes())?;
    let shell = format!(
        "ForceCommand export HOME='{home}'; cd \"$HOME\"; if [ -n \"$SSH_ORIGINAL_COMMAND\" ]; then exec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"; else exec /bin/sh -i; fi\n",
        home = home.display()
    );
    let extra = format!("AllowUsers {}\n{shell}", config.login_user);
    std::fs::write(dir.join("sshd_config"), crate::support::openssh::sshd_config_at(dir, address, &extra))
        .map_err(|e| format!("cannot write the sshd configuration: {e}"))?;
    let log = std::fs::File::create(dir.join("sshd.log")).map_err(|e| format!("cannot create the sshd log: {e}"))?;
    Command::new(sshd)
        .args(["-D", "-e", "-f"])
        .arg(dir.join("sshd_config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start sshd: {e}"))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())
}
