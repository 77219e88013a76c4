//! KubeVirt's `console` subresource: the real path, subprotocol and
//! refusals, and the simulated guests' serial login behind it, driven by a
//! WebSocket client over TCP.

mod common;

use base64::Engine as _;
use common::{create_web_instance, object, tenant_vmis};
use futures::{SinkExt, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use kite_testkit::FakeApiServer;
use kite_testkit::console::PLAIN_PROTOCOL;
use kite_testkit::rbac::AuthorizationMode;
use kite_testkit::sim::{GuestConfig, GuestNetwork, GuestSsh};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http;

/// The machine's password, and its SHA-512-crypt hash as cloud-init gets it.
const PASSWORD: &str = "console-pass-1";

/// A cluster with RBAC, the KubeVirt CRDs, the guests' serial logins and an
/// instance `web` of login `web` whose password is [`PASSWORD`]; it is Running when `running`.
async fn cluster(root: &std::path::Path, running: bool) -> (FakeApiServer, SocketAddr, kite_testkit::sim::Guests) {
    use sha_crypt::{PasswordHasher, ShaCrypt};
    let server = FakeApiServer::builder().authorization(AuthorizationMode::Rbac).build().unwrap();
    kite_testkit::sim::install(&server).unwrap();
    let admin = server.client();
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &object(json!({"metadata": {"name": "tenant"}})))
        .await
        .unwrap();
    let hash = ShaCrypt::default().hash_password_with_salt(PASSWORD.as_bytes(), b"0123456789ab").unwrap();
    let userdata = format!(
        "#cloud-config\nssh_keys: {{ed25519_private: unused}}\nusers:\n- name: web\n  lock_passwd: false\n  hashed_passwd: '{}'\n  ssh_authorized_keys: []\n",
        hash.as_str()
    );
    let secret: Secret = object(json!({"metadata": {"name": "web-cloud-init"},
        "data": {"userdata": base64::engine::general_purpose::STANDARD.encode(userdata)}}));
    Api::<Secret>::namespaced(admin.clone(), "tenant").create(&PostParams::default(), &secret).await.unwrap();
    create_web_instance(admin, json!({}), running).await;
    let guests = kite_testkit::sim::start_guests(
        &server,
        GuestConfig {
            root: root.to_path_buf(),
            login_user: "nobody".into(),
            poll: Duration::from_secs(3600),
            network: GuestNetwork::LoopbackPorts,
            ssh: GuestSsh::OpenSsh,
        },
    );
    let address = server.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
    (server, address, guests)
}

fn request(address: SocketAddr, name: &str, token: &str, protocol: Option<&str>) -> http::Request<()> {
    let url = format!(
        "ws://{address}/apis/subresources.kubevirt.io/v1/namespaces/tenant/virtualmachineinstances/{name}/console"
    );
    let mut request = url.into_client_request().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    if let Some(protocol) = protocol {
        request.headers_mut().insert("sec-websocket-protocol", protocol.parse().unwrap());
    }
    request
}

/// The status and body of a refused upgrade.
async fn refused(request: http::Request<()>) -> (u16, String) {
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => (
            response.status().as_u16(),
            String::from_utf8_lossy(response.body().as_deref().unwrap_or_default()).into_owned(),
        ),
        Err(other) => panic!("expected an HTTP refusal, got {other}"),
        Ok(_) => panic!("the upgrade was expected to be refused"),
    }
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Reads binary frames until the text shown so far contains `wanted`; bounded to ten seconds.
async fn until_shown(socket: &mut Socket, shown: &mut String, wanted: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !shown.contains(wanted) {
        let frame = tokio::time::timeout_at(deadline, socket.next())
            .await
            .unwrap_or_else(|_| panic!("waited 10 s for {wanted:?}; the console showed {shown:?}"));
        match frame {
            Some(Ok(Message::Binary(bytes))) => shown.push_str(&String::from_utf8_lossy(&bytes)),
            Some(Ok(_)) => {}
            other => panic!("the console closed ({other:?}) before showing {wanted:?}; it showed {shown:?}"),
        }
    }
}

async fn type_text(socket: &mut Socket, text: &str) {
    socket.send(Message::Binary(text.as_bytes().to_vec().into())).await.unwrap();
}

#[tokio::test]
async fn the_serial_login_checks_the_machines_password_and_opens_a_shell_in_its_home() {
    let root = tempfile::tempdir().unwrap();
    let (server, address, _guests) = cluster(root.path(), true).await;
    let token = server.admin_token().unwrap();
    let (mut socket, response) =
        tokio_tungstenite::connect_async(request(address, "web", &token, Some(PLAIN_PROTOCOL))).await.unwrap();
    assert_eq!(response.headers()["sec-websocket-protocol"], PLAIN_PROTOCOL);
    let mut shown = String::new();
    until_shown(&mut socket, &mut shown, "web login: ").await;
    type_text(&mut socket, "web\r").await;
    until_shown(&mut socket, &mut shown, "Password: ").await;
    type_text(&mut socket, "wrong-password\r").await;
    until_shown(&mut socket, &mut shown, "Login incorrect").await;
    assert!(!shown.contains("wrong-password"), "the password is not echoed: {shown:?}");
    shown.clear();
    until_shown(&mut socket, &mut shown, "web login: ").await;
    type_text(&mut socket, "web\r").await;
    until_shown(&mut socket, &mut shown, "Password: ").await;
    type_text(&mut socket, &format!("{PASSWORD}\r")).await;
    until_shown(&mut socket, &mut shown, "web@web:~$ ").await;
    type_text(&mut socket, "echo answer-$((6*7)); pwd\r").await;
    until_shown(&mut socket, &mut shown, "answer-42").await;
    let home = root.path().join("tenant/web/home");
    until_shown(&mut socket, &mut shown, &home.display().to_string()).await;
    // Logging out brings the prompt back, as getty does.
    shown.clear();
    type_text(&mut socket, "exit\r").await;
    until_shown(&mut socket, &mut shown, "web login: ").await;
    socket.close(None).await.unwrap();
}

#[tokio::test]
async fn the_console_is_refused_as_virt_api_refuses_it() {
    let root = tempfile::tempdir().unwrap();
    let (server, address, _guests) = cluster(root.path(), false).await;
    let token = server.admin_token().unwrap();
    let (status, body) = refused(request(address, "web", &token, Some(PLAIN_PROTOCOL))).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains(
            r#"Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io \"web\": VMI is not running"#
        ),
        "{body}"
    );
    let (status, body) = refused(request(address, "nothing", &token, Some(PLAIN_PROTOCOL))).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains(r#"virtualmachineinstance.kubevirt.io \"nothing\" not found"#), "{body}");

    // Without `get` on virtualmachineinstances/console in subresources.kubevirt.io, RBAC refuses.
    Api::<ServiceAccount>::namespaced(server.client(), "tenant")
        .create(&PostParams::default(), &object(json!({"metadata": {"name": "reader"}})))
        .await
        .unwrap();
    let reader = server.service_account_token("tenant", "reader").unwrap();
    let (status, body) = refused(request(address, "web", &reader, Some(PLAIN_PROTOCOL))).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(
            r#"cannot get resource \"virtualmachineinstances/console\" in API group \"subresources.kubevirt.io\""#
        ),
        "{body}"
    );

    // A plain GET is not a console.
    let url = format!(
        "http://{address}/apis/subresources.kubevirt.io/v1/namespaces/tenant/virtualmachineinstances/web/console"
    );
    tenant_vmis(server.client())
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Running"}})))
        .await
        .unwrap();
    let response = plain_get(&url, &token).await;
    assert!(response.starts_with("HTTP/1.1 400"), "{response}");
    assert!(response.contains("the console is a WebSocket"), "{response}");
}

/// A GET over a raw socket (the tests' only HTTP client here): the status line and body.
async fn plain_get(url: &str, token: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let request =
        format!("GET /{path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut response)).await.unwrap().unwrap();
    response
}
