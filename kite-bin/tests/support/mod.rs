//! A `kite api` process against kite-testkit's API server, and an HTTP
//! client that signs in the way a browser or a script does.
#![allow(dead_code)]

pub mod browser;
pub mod console;
pub mod operator;
pub mod rbac_cluster;

use k8s_openapi::api::core::v1::Namespace;
use kite_core::api::*;
use kite_testkit::FakeApiServer;
use kite_testkit::fixtures::{IMAGE, a_platform, eventually};
use kite_testkit::openssh::free_port;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Runs the real `kubectl` on `kubeconfig`, bounded to 30 s; its output. Fails when kubectl is missing.
pub fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> String {
    use kite_testkit::openssh::{run_bounded, text};
    let found = Command::new("kubectl").args(["version", "--client"]).output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "kubectl is missing: these tests read the cluster with the real kubectl; install kubectl"
    );
    let mut command = Command::new("kubectl");
    command.arg("--kubeconfig").arg(kubeconfig).args(args);
    let output = run_bounded(command, None, Duration::from_secs(30));
    assert!(output.status.success(), "kubectl {args:?}: {}", text(&output.stderr));
    text(&output.stdout)
}

/// A child process, killed when dropped: with its process group, when it
/// leads one (a demo started with [`Process::in_own_group`], whose
/// machines' `sshd`s would otherwise outlive it).
pub struct Process(pub Child);

impl Process {
    /// Starts `command` in a process group of its own, so that dropping it
    /// stops what it started too.
    pub fn in_own_group(command: &mut Command) -> Self {
        use std::os::unix::process::CommandExt as _;
        Self(command.process_group(0).spawn().unwrap())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        kite_testkit::process_group::signal_group(&self.0, "KILL");
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fake cluster and `kite api` on it.
pub struct Platform {
    pub server: FakeApiServer,
    pub client: kube::Client,
    pub base: String,
    _api: Process,
    _dir: tempfile::TempDir,
}

async fn create_namespace(client: &kube::Client, name: &str) {
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
}

impl Platform {
    /// A cluster with Kite's CRDs, the `kite` namespace and a platform whose
    /// golden image is imported; `kite api` serving on it.
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// [`Platform::start`], with more arguments for `kite api`. As in
    /// `kite demo`, the first account to sign up is the admin.
    pub async fn start_with(extra: &[&str]) -> Self {
        Self::launch(extra, true).await
    }

    /// [`Platform::start`] as deployed: the first admin is the account of
    /// `KitePlatform.spec.signup.adminEmail` (none is set here).
    pub async fn start_as_deployed() -> Self {
        Self::launch(&[], false).await
    }

    async fn launch(extra: &[&str], first_signup_is_admin: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let server = FakeApiServer::new().unwrap();
        for crd in kite_core::api::crds() {
            server.install_crd(&crd).unwrap();
        }
        let client = server.client();
        create_namespace(&client, "kite").await;
        let platforms = Api::<KitePlatform>::all(client.clone());
        platforms.create(&PostParams::default(), &KitePlatform::new(PLATFORM_NAME, a_platform())).await.unwrap();
        let status = json!({ "status": { "goldenImages": [{ "name": IMAGE, "ready": true, "progress": "100.0%" }] } });
        platforms.patch_status(PLATFORM_NAME, &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
        let address = server.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        kite_testkit::kubeconfig::write(&kubeconfig, address).unwrap();
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_kite"))
            .args(["api", "--kubeconfig", kubeconfig.to_str().unwrap(), "--namespace", "kite"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            .args(first_signup_is_admin.then_some("--first-signup-is-admin"))
            .env("RUST_LOG", std::env::var("KITE_API_LOG").unwrap_or_else(|_| "warn".into()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let platform =
            Self { server, client, base: format!("http://127.0.0.1:{port}"), _api: Process(child), _dir: dir };
        let http = reqwest::Client::new();
        let health = format!("{}/api/v1/health", platform.base);
        eventually(Duration::from_secs(20), "kite api to answer healthy", || {
            let http = http.clone();
            let health = health.clone();
            async move { http.get(&health).send().await.ok().filter(|r| r.status() == StatusCode::OK).map(|_| ()) }
        })
        .await;
        platform
    }

    /// A client with no session.
    pub fn anonymous(&self) -> Session {
        Session { http: reqwest::Client::new(), base: self.base.clone(), token: None, cookies: None, csrf: None }
    }

    /// Signs up `name` (`<name>@example.org`, password `<name>-password`) and
    /// gives the user's namespace, as the controller would.
    pub async fn sign_up(&self, name: &str) -> Session {
        let mut session = self.anonymous();
        let (status, body) = session
            .post("/auth/signup", json!({ "username": name, "email": format!("{name}@example.org"), "password": format!("{name}-password") }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        session.token = body["token"].as_str().map(str::to_string);
        let namespace = body["user"]["namespace"].as_str().unwrap().to_string();
        create_namespace(&self.client, &namespace).await;
        session
    }

    /// The id (`ku-<uuid>`) of the user signed in as `session`.
    pub async fn id_of(&self, session: &Session) -> String {
        let (status, body) = session.get("/me").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["user"]["name"].as_str().unwrap().to_string()
    }

    /// Sets the level of the user with `email`, directly in the cluster.
    pub async fn set_level(&self, session: &Session, level: u8) {
        let (_, me) = session.get("/me").await;
        let name = me["user"]["name"].as_str().unwrap();
        let patch = json!({ "spec": { "access_level": level } });
        Api::<KiteUser>::all(self.client.clone())
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        eventually(Duration::from_secs(5), "the API to see the new level", || async {
            let (_, me) = session.get("/me").await;
            (me["user"]["access_level"] == level).then_some(())
        })
        .await;
    }
}

/// An HTTP client with a Bearer token, or with cookies like a browser.
#[derive(Clone)]
pub struct Session {
    pub http: reqwest::Client,
    pub base: String,
    pub token: Option<String>,
    pub cookies: Option<String>,
    pub csrf: Option<String>,
}

impl Session {
    fn url(&self, path: &str) -> String {
        format!("{}/api/v1{path}", self.base)
    }

    fn authorise(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let mut request = request;
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(cookies) = &self.cookies {
            request = request.header("cookie", cookies);
        }
        request
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let response = self.authorise(request).timeout(Duration::from_secs(20)).send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
        (status, body)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(self.http.get(self.url(path))).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(self.with_csrf(self.http.post(self.url(path))).json(&body)).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(self.with_csrf(self.http.patch(self.url(path))).json(&body)).await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.send(self.with_csrf(self.http.delete(self.url(path)))).await
    }

    fn with_csrf(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.csrf {
            Some(csrf) => request.header("x-csrf-token", csrf),
            None => request,
        }
    }

    /// Signs in with the browser's credential: the cookies of the answer.
    pub async fn browser_login(base: &str, email: &str, password: &str) -> (Session, Value) {
        let http = reqwest::Client::new();
        let response = http
            .post(format!("{base}/api/v1/auth/login"))
            .json(&json!({ "email": email, "password": password }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let set_cookies: Vec<String> =
            response.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_string()).collect();
        let body: Value = response.json().await.unwrap();
        let cookies =
            set_cookies.iter().map(|c| c.split(';').next().unwrap().to_string()).collect::<Vec<_>>().join("; ");
        let session = Session { http, base: base.into(), token: None, cookies: Some(cookies), csrf: None };
        (session, json!({ "body": body, "set-cookie": set_cookies }))
    }
}

/// A machine request that a level-1 user may make.
pub fn a_machine(name: &str, ssh_id: &str) -> Value {
    json!({ "name": name, "sshId": ssh_id, "sshPassword": "machine-password", "domainPrefix": name })
}

/// `ssh` to the gateway with a password (through SSH_ASKPASS), running `command`.
pub fn ssh_with_password(
    port: u16,
    login: &str,
    password: &str,
    command: &str,
    dir: &std::path::Path,
) -> std::process::Output {
    ssh_with_password_and_input(port, login, password, command, dir, None)
}

/// The same, feeding `input` to the command.
pub fn ssh_with_password_and_input(
    port: u16,
    login: &str,
    password: &str,
    command: &str,
    dir: &std::path::Path,
    input: Option<Vec<u8>>,
) -> std::process::Output {
    let ssh = ssh_password_command(port, login, password, dir, &[], command);
    kite_testkit::openssh::run_bounded(ssh, input, Duration::from_secs(60))
}

/// The `ssh` command line that signs in to the gateway with a password
/// (through SSH_ASKPASS, written under `dir`), with `options`, running `command`.
pub fn ssh_password_command(
    port: u16,
    login: &str,
    password: &str,
    dir: &std::path::Path,
    options: &[&str],
    command: &str,
) -> Command {
    let askpass = dir.join("askpass.sh");
    std::fs::write(&askpass, format!("#!/bin/sh\nprintf '%s\\n' '{password}'\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut ssh = Command::new(kite_testkit::openssh::require("ssh"));
    ssh.args(kite_testkit::openssh::ssh_client_options())
        .args(["-o", "ConnectTimeout=10", "-o", "PreferredAuthentications=password", "-o", "PubkeyAuthentication=no"])
        .args(["-o", "NumberOfPasswordPrompts=1", "-p", &port.to_string()])
        .args(options)
        .args([&format!("{login}@127.0.0.1"), command])
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0");
    ssh
}

/// Asks `session`'s API for the machine `body` describes until it is
/// accepted (`201`): while the image imports or the user's namespace is
/// being prepared, the API says so (`422`, `409`) and the request is repeated.
pub async fn create_machine_when_accepted(session: &Session, body: Value) -> Value {
    eventually(Duration::from_secs(60), "the machine to be accepted", || async {
        let (status, answer) = session.post("/vms", body.clone()).await;
        match status {
            StatusCode::CREATED => Some(answer),
            StatusCode::UNPROCESSABLE_ENTITY | StatusCode::CONFLICT => None,
            other => panic!("creating the machine: {other} {answer}"),
        }
    })
    .await
}

/// `kite demo` on loopback ports, its state under `dir`, importing images in 2 s.
pub fn start_demo(dir: &std::path::Path, http: u16, ssh: u16) -> Process {
    Process::in_own_group(
        Command::new(env!("CARGO_BIN_EXE_kite"))
            .args(["demo", "--http", &format!("127.0.0.1:{http}"), "--ssh", &format!("127.0.0.1:{ssh}")])
            .args(["--kube", &format!("127.0.0.1:{}", free_port()), "--import-seconds", "2"])
            .arg("--state-dir")
            .arg(dir)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()),
    )
}

/// Waits (60 s at most) until the API at `base` answers healthy; an anonymous session on it.
pub async fn answering(base: &str) -> Session {
    eventually(Duration::from_secs(60), "the API to answer healthy", || async {
        let answer = reqwest::get(format!("{base}/api/v1/health")).await.ok()?;
        answer.status().is_success().then_some(())
    })
    .await;
    Session { http: reqwest::Client::new(), base: base.to_string(), token: None, cookies: None, csrf: None }
}

/// Signs `name` up (`<name>@example.org`, `<name>-password`) and in; a session with its Bearer token.
pub async fn signed_up(anonymous: &Session, name: &str) -> Session {
    let (email, password) = (format!("{name}@example.org"), format!("{name}-password"));
    let (status, body) =
        anonymous.post("/auth/signup", json!({ "username": name, "email": email, "password": password })).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, login) = anonymous.post("/auth/login", json!({ "email": email, "password": password })).await;
    assert_eq!(status, StatusCode::OK, "{login}");
    Session { token: login["token"].as_str().map(str::to_string), ..anonymous.clone() }
}

/// [`kubectl`], off the async runtime.
pub async fn kubectl_async(kubeconfig: &std::path::Path, args: &[&str]) -> String {
    let kubeconfig = kubeconfig.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || kubectl(&kubeconfig, &args.iter().map(String::as_str).collect::<Vec<_>>()))
        .await
        .unwrap()
}
