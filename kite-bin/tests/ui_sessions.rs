//! SSH sessions in the web UI, in a real browser against `kite demo`: an
//! admin's sessions through the gateway (real OpenSSH client, real sshd
//! guests) are listed; a finished one replays in asciinema-player with its
//! output whole; a live one is watched as it runs and ended from the page
//! (the user's ssh is told why and the list says who ended it); another
//! user sees none of them, through the API or the pages. A failure saves a
//! screenshot under `target/ui-failures/`.

mod support;

use fantoccini::Locator;
use futures::FutureExt;
use kite_testkit::openssh::{free_port, require, text};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::browser::{Browser, browser, until};
use support::{
    Process, Session, create_machine_when_accepted, signed_up, ssh_password_command, ssh_with_password, start_demo,
};

/// The text the player's terminal shows now.
async fn terminal_text(browser: &Browser) -> String {
    let script = "return Array.from(document.querySelectorAll('.ap-line')).map(l => l.textContent).join('\\n');";
    browser.client.execute(script, vec![]).await.ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

async fn sessions_of(session: &Session) -> Vec<Value> {
    let (status, body) = session.get("/ssh-sessions").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["sessions"].as_array().cloned().unwrap_or_default()
}

async fn journey(browser: &Browser, base: &str, ssh: u16, dir: &Path) {
    let client = &browser.client;
    let page = |path: &str| format!("{base}{path}");
    let anonymous =
        Session { http: reqwest::Client::new(), base: base.to_string(), token: None, cookies: None, csrf: None };
    let ada = signed_up(&anonymous, "ada").await;
    let bob = signed_up(&anonymous, "bob").await;
    create_machine_when_accepted(&ada, json!({ "name": "web", "sshId": "ada_web", "sshPassword": "machine-password" }))
        .await;
    until(Duration::from_secs(90), "the machine to run", || async {
        let (_, body) = ada.get("/vms/web").await;
        (body["vm"]["phase"] == "Running").then_some(())
    })
    .await;

    // A finished session with a terminal: its output has a two-byte character.
    let done = ssh_with_password(ssh, "ada_web", "machine-password", "echo replay-marker-caf\u{e9}; exit 3", dir);
    assert_eq!(done.status.code(), Some(3), "{}", text(&done.stderr));
    // A live one, ticking until it is ended.
    let live_ssh = ssh_password_command(
        ssh,
        "ada_web",
        "machine-password",
        dir,
        &["-tt"],
        "echo live-start; i=0; while sleep 0.3; do i=$((i+1)); echo tick-$i; done",
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut live_ssh = Process(live_ssh);
    let sessions = until(Duration::from_secs(20), "both sessions in the list", || async {
        let sessions = sessions_of(&ada).await;
        (sessions.len() == 2 && sessions.iter().any(|s| s["live"] == true)).then_some(sessions)
    })
    .await;
    let live = sessions.iter().find(|s| s["live"] == true).unwrap().clone();
    let finished = sessions.iter().find(|s| s["live"] == false).unwrap().clone();
    assert_eq!((live["machine"].as_str(), live["owner"].as_str()), (Some("web"), Some("ada")), "{live}");
    assert_eq!(finished["channels"][0]["kind"], "exec", "{finished}");
    assert!(finished["bytesToUser"].as_u64().unwrap() > 0, "{finished}");
    assert_eq!(live["canEnd"], true);

    // Another user sees none of it: not in the list, not by id, not on the pages.
    assert!(sessions_of(&bob).await.is_empty(), "bob sees no sessions of ada's machine");
    let id = finished["id"].as_str().unwrap();
    let channel = finished["channels"][0]["channel"].as_u64().unwrap();
    let (status, _) = bob.send(bob.http.get(format!("{base}/api/v1/ssh-sessions/{id}/recordings/{channel}"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = bob.post(&format!("/ssh-sessions/{}/terminate", live["id"].as_str().unwrap()), json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = anonymous.get("/ssh-sessions").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // The recording itself is an asciicast whose every line parses.
    let cast = ada
        .http
        .get(format!("{base}/api/v1/ssh-sessions/{id}/recordings/{channel}"))
        .bearer_auth(ada.token.as_deref().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(cast.status(), StatusCode::OK);
    let cast = cast.text().await.unwrap();
    let lines: Vec<Value> = cast.lines().map(|line| serde_json::from_str(line).expect("an asciicast line")).collect();
    assert_eq!(lines[0]["version"], 2);
    assert!(cast.contains("replay-marker-caf\u{e9}"), "{cast}");

    // Bob's pages.
    browser.sign_in(base, "bob").await;
    client.goto(&page("/sessions")).await.unwrap();
    assert_eq!(browser.text_of("#sessions tbody").await.as_deref(), Some("No sessions yet."));
    client.goto(&page(&format!("/sessions/{id}/{channel}"))).await.unwrap();
    assert_eq!(browser.text_of("h1").await.as_deref(), Some("No such session"));
    // The browser logs that 404 itself; nothing else may be logged.
    let problems = browser.console_problems().await;
    assert!(
        problems.iter().all(|p| p.contains(&format!("/sessions/{id}/{channel}")) && p.contains("404")),
        "{problems:?}"
    );
    browser.click("button[data-action='POST /api/v1/auth/logout']").await;
    until(Duration::from_secs(10), "the sign-in page", || async { (browser.path().await == "/login").then_some(()) })
        .await;

    // Ada, the admin: the list says recording is on, and shows both sessions.
    browser.sign_in(base, "ada").await;
    client.goto(&page("/vms/web")).await.unwrap();
    let last = browser.text_of("#last-login").await.unwrap();
    assert!(last.starts_with("Last login:") && last.contains("ada_web"), "{last}");
    assert!(browser.text_of(".recording-notice").await.unwrap().contains("recorded"), "the owner is told");
    client.goto(&page("/sessions")).await.unwrap();
    let notice = browser.text_of(".recording-notice").await.unwrap();
    assert!(notice.contains("not what is typed"), "{notice}");
    assert_eq!(client.find_all(Locator::Css("#sessions tbody tr[data-session]")).await.unwrap().len(), 2);

    // Replay the finished one: the player shows its output, the two-byte character whole.
    browser.click(&format!("tr[data-session='{id}'] a")).await;
    until(Duration::from_secs(10), "the player page", || async {
        (browser.path().await == format!("/sessions/{id}/{channel}")).then_some(())
    })
    .await;
    until(Duration::from_secs(20), "the replayed output", || async {
        terminal_text(browser).await.contains("replay-marker-caf\u{e9}").then_some(())
    })
    .await;

    // Watch the live one, then end it.
    let live_id = live["id"].as_str().unwrap();
    client.goto(&page("/sessions")).await.unwrap();
    browser.click(&format!("tr[data-session='{live_id}'] a")).await;
    let first = until(Duration::from_secs(20), "ticks in the live player", || async {
        let text = terminal_text(browser).await;
        text.contains("tick-").then_some(text)
    })
    .await;
    until(Duration::from_secs(20), "newer ticks while watching", || async {
        let text = terminal_text(browser).await;
        (text != first && text.contains("tick-")).then_some(())
    })
    .await;
    browser.click("button[data-action$='/terminate']").await;
    let question = client.get_alert_text().await.unwrap();
    assert!(question.contains("End this session on web"), "{question}");
    client.accept_alert().await.unwrap();
    until(Duration::from_secs(10), "the sessions list", || async {
        (browser.path().await == "/sessions").then_some(())
    })
    .await;
    // The user's ssh is disconnected, and told why.
    let deadline = Instant::now() + Duration::from_secs(20);
    while live_ssh.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the live session's ssh is still connected");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut told = String::new();
    live_ssh.0.stderr.take().unwrap().read_to_string(&mut told).unwrap();
    assert!(told.contains("This session was ended by an admin"), "{told}");
    let sessions = until(Duration::from_secs(20), "the ended session in the list", || async {
        let sessions = sessions_of(&ada).await;
        sessions.iter().all(|s| s["live"] == false).then_some(sessions)
    })
    .await;
    let reason = sessions.iter().find(|s| s["id"] == live_id).unwrap()["endReason"].clone();
    assert!(reason.as_str().unwrap().contains("ended by ada"), "{reason}");

    let errors = client.execute("return window.kiteErrors;", vec![]).await.unwrap();
    assert_eq!(errors, json!([]), "script errors");
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console problems: {problems:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_listed_replayed_watched_and_ended_only_by_whom_may() {
    require("sshd");
    let dir = tempfile::tempdir().unwrap();
    let (http, ssh) = (free_port(), free_port());
    let _demo = start_demo(&dir.path().join("state"), http, ssh);
    let base = format!("http://127.0.0.1:{http}");
    until(Duration::from_secs(60), "the demo", || async {
        let answer = reqwest::get(format!("{base}/api/v1/health")).await.ok()?;
        answer.status().is_success().then_some(())
    })
    .await;
    let browser = browser().await;
    let outcome = std::panic::AssertUnwindSafe(journey(&browser, &base, ssh, dir.path())).catch_unwind().await;
    if let Err(panic) = outcome {
        let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-failures/sessions.png");
        browser.screenshot(&shot).await;
        eprintln!("the sessions UI test failed; a screenshot is at {}", shot.display());
        let _ = browser.client.clone().close().await;
        std::panic::resume_unwind(panic);
    }
    browser.client.clone().close().await.unwrap();
}
