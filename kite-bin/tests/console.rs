//! The serial console, against `kite demo` (the API over TCP to kite-testkit,
//! whose guests answer on the `console` subresource with a login): the
//! ticket rules, the WebSocket bridge driven by a WebSocket client, the
//! closes the platform decides, and, in headless Chromium, the console page.

mod support;

use kite_testkit::openssh::free_port;
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;
use support::browser::{browser, until};
use support::console::{closed_because, open, refused, request, send, ticket, until_shown};
use support::{Session, answering, create_machine_when_accepted, signed_up, start_demo};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_opens_once_per_ticket_for_its_session_and_machine_and_closes_when_it_should() {
    let dir = tempfile::tempdir().unwrap();
    let (http_port, ssh) = (free_port(), free_port());
    let _demo = start_demo(&dir.path().join("state"), http_port, ssh);
    let base = format!("http://127.0.0.1:{http_port}");
    let anonymous = answering(&base).await;
    let ada = signed_up(&anonymous, "ada").await; // the first account: the admin
    let alice = signed_up(&anonymous, "alice").await;
    let (status, body) = ada.patch("/admin/users/alice/access-level", json!({ "access_level": 1 })).await;
    assert!(status.is_success(), "{status} {body}");
    let created = create_machine_when_accepted(
        &alice,
        json!({ "name": "web", "sshId": "alice_web", "sshPassword": "machine-password" }),
    )
    .await;
    let namespace = created["vm"]["namespace"].as_str().unwrap().to_string();

    // Not Running yet: no ticket.
    let (status, body) = alice.post("/vms/web/console-ticket", json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body["message"].as_str().unwrap().contains("not running"), "{body}");
    until(Duration::from_secs(90), "the machine to run", || async {
        (alice.get("/vms/web").await.1["vm"]["phase"] == "Running").then_some(())
    })
    .await;
    // Nobody else's machine, and no ticket for another user's machine without being admin.
    let (status, _) = ada.post("/vms/web/console-ticket", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = alice.post(&format!("/admin/vms/{namespace}/web/console-ticket"), json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let path = ticket(&alice, "/vms/web/console-ticket").await;
    // Another machine's path, another user, another session of the same user, another site.
    let elsewhere = path.replace("/vms/web/", "/vms/db/");
    let (status, message) = refused(request(&alice, &elsewhere, None)).await;
    assert_eq!((status, message.contains("for another machine")), (403, true), "{message}");
    let (status, message) = refused(request(&ada, &path, None)).await;
    assert_eq!((status, message.contains("another session")), (403, true), "{message}");
    let again = signed_in_again(&anonymous, "alice").await;
    let (status, message) = refused(request(&again, &path, None)).await;
    assert_eq!((status, message.contains("another session")), (403, true), "{message}");
    let (status, message) = refused(request(&alice, &path, Some("http://evil.example"))).await;
    assert_eq!((status, message.contains("this site's own pages")), (403, true), "{message}");
    let (status, message) = refused(request(&alice, &format!("{path}x"), None)).await;
    assert_eq!((status, message.contains("not valid or has expired")), (401, true), "{message}");
    // A plain GET is refused without using the ticket up.
    let plain =
        alice.http.get(format!("{base}{path}")).bearer_auth(alice.token.as_deref().unwrap()).send().await.unwrap();
    assert_eq!(plain.status(), StatusCode::BAD_REQUEST);

    // The ticket opens the console once: log in with the machine's password, run a command.
    let mut console = open(&alice, &path).await;
    let mut shown = String::new();
    send(&mut console, "\r").await;
    until_shown(&mut console, &mut shown, "web login: ").await;
    send(&mut console, "alice_web\r").await;
    until_shown(&mut console, &mut shown, "Password: ").await;
    send(&mut console, "machine-password\r").await;
    until_shown(&mut console, &mut shown, "alice_web@web").await;
    send(&mut console, "echo console-$((6*7))\r").await;
    until_shown(&mut console, &mut shown, "console-42").await;
    let (status, message) = refused(request(&alice, &path, None)).await;
    assert_eq!((status, message.contains("already used")), (409, true), "{message}");
    console.close(None).await.unwrap();

    // An admin opens any machine's console.
    let path = ticket(&ada, &format!("/admin/vms/{namespace}/web/console-ticket")).await;
    let mut console = open(&ada, &path).await;
    let mut shown = String::new();
    send(&mut console, "\r").await;
    until_shown(&mut console, &mut shown, "web login: ").await;
    console.close(None).await.unwrap();

    // A console without input closes after the platform's idle time.
    let (status, body) = ada.patch("/admin/settings", json!({ "consoleIdleSeconds": 5 })).await;
    assert!(status.is_success(), "{status} {body}");
    let mut console = open(&alice, &ticket(&alice, "/vms/web/console-ticket").await).await;
    let started = std::time::Instant::now();
    let reason = closed_because(&mut console).await;
    assert!(reason.contains("without input"), "{reason}");
    assert!(started.elapsed() >= Duration::from_secs(4), "closed after {:?}", started.elapsed());
    let (status, body) = ada.patch("/admin/settings", json!({ "consoleIdleSeconds": 900 })).await;
    assert!(status.is_success(), "{status} {body}");

    // A change of level closes it at once; so does the account's deletion.
    let mut console = open(&alice, &ticket(&alice, "/vms/web/console-ticket").await).await;
    let (status, body) = ada.patch("/admin/users/alice/access-level", json!({ "access_level": 2 })).await;
    assert!(status.is_success(), "{status} {body}");
    assert_eq!(closed_because(&mut console).await, "your access level changed; open the console again");
    let mut console = open(&alice, &ticket(&alice, "/vms/web/console-ticket").await).await;
    let (status, body) = ada.delete("/admin/users/alice").await;
    assert!(status.is_success(), "{status} {body}");
    assert_eq!(closed_because(&mut console).await, "your account was deleted");
}

/// A second session of `name` (signed up by [`signed_up`]).
async fn signed_in_again(anonymous: &Session, name: &str) -> Session {
    let body = json!({ "email": format!("{name}@example.org"), "password": format!("{name}-password") });
    let (status, login) = anonymous.post("/auth/login", body).await;
    assert_eq!(status, StatusCode::OK, "{login}");
    Session { token: login["token"].as_str().map(str::to_string), ..anonymous.clone() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_browser_the_console_logs_in_with_the_machines_password_and_runs_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let (http_port, ssh) = (free_port(), free_port());
    let _demo = start_demo(&dir.path().join("state"), http_port, ssh);
    let base = format!("http://127.0.0.1:{http_port}");
    let ada = signed_up(&answering(&base).await, "ada").await;
    create_machine_when_accepted(&ada, json!({ "name": "box", "sshId": "ada_box", "sshPassword": "machine-password" }))
        .await;

    let browser = browser().await;
    let client = &browser.client;
    browser.sign_in(&base, "ada").await;
    // Before the machine runs, the page says so and opens nothing.
    client.goto(&format!("{base}/vms/box/console")).await.unwrap();
    if ada.get("/vms/box").await.1["vm"]["phase"] != "Running" {
        let status = browser.text_of("#console-status").await.unwrap_or_default();
        assert!(status.contains("not running"), "{status}");
    }
    until(Duration::from_secs(90), "the machine to run", || async {
        (ada.get("/vms/box").await.1["vm"]["phase"] == "Running").then_some(())
    })
    .await;
    client.goto(&format!("{base}/vms/box")).await.unwrap();
    browser.click("#open-console").await;
    until(Duration::from_secs(20), "the console to connect", || async {
        browser.text_of("#console-status").await.filter(|s| s.starts_with("Connected")).map(|_| ())
    })
    .await;
    let rows = || async { browser.text_of(".xterm-rows").await.unwrap_or_default() };
    type_keys(&browser, "\r").await;
    until(Duration::from_secs(20), "the login prompt", || async { rows().await.contains("box login:").then_some(()) })
        .await;
    type_keys(&browser, "ada_box\r").await;
    until(Duration::from_secs(20), "the password prompt", || async {
        rows().await.contains("Password:").then_some(())
    })
    .await;
    type_keys(&browser, "machine-password\r").await;
    until(Duration::from_secs(20), "the shell", || async { rows().await.contains("ada_box@box").then_some(()) }).await;
    type_keys(&browser, "echo browser-$((6*7))\r").await;
    until(Duration::from_secs(20), "the command's output", || async {
        rows().await.contains("browser-42").then_some(())
    })
    .await;
    let text = rows().await;
    assert!(!text.contains("machine-password"), "the password is not shown: {text}");
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console problems: {problems:?}");
    browser.client.clone().close().await.unwrap();
}

/// Types `text` into the terminal, `\r` as the Enter key.
async fn type_keys(browser: &support::browser::Browser, text: &str) {
    let terminal = browser.client.find(fantoccini::Locator::Css(".xterm-helper-textarea")).await.unwrap();
    let enter = char::from(fantoccini::key::Key::Enter).to_string();
    terminal.send_keys(&text.replace('\r', &enter)).await.unwrap();
}
