//! The web UI in a real browser: Debian's headless Chromium, driven over
//! WebDriver by chromedriver, against `kite demo`. Sign up, sign out, sign
//! in, create a machine, watch it reach Running on the live dashboard, read
//! the SSH command on its page, delete it; at phone width too, and with no
//! console errors. A failure saves a screenshot under
//! `target/ui-failures/`.

mod support;

use fantoccini::Locator;
use futures::FutureExt;
use kite_testkit::openssh::free_port;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::browser::{Browser, browser, until};
use support::start_demo;

async fn journey(browser: &Browser, base: &str, ssh: u16) {
    let page = |path: &str| format!("{base}{path}");
    let client = &browser.client;

    // Signed out, the dashboard sends you to sign in; sign up from there.
    client.goto(&page("/")).await.unwrap();
    assert_eq!(browser.path().await, "/login");
    client.goto(&page("/signup")).await.unwrap();
    browser.fill("#username", "Ada").await;
    browser.fill("#email", "ada@example.org").await;
    browser.fill("#password", "ada-password").await;
    browser.click("form button[type=submit]").await;
    until(Duration::from_secs(10), "the dashboard after signing up", || async {
        (browser.path().await == "/" && browser.text_of("h1").await.as_deref() == Some("Your machines")).then_some(())
    })
    .await;

    // Sign out, and back in.
    browser.click("button[data-action='POST /api/v1/auth/logout']").await;
    until(Duration::from_secs(10), "the sign-in page", || async { (browser.path().await == "/login").then_some(()) })
        .await;
    browser.fill("#email", "ada@example.org").await;
    browser.fill("#password", "wrong-password").await;
    browser.click("form button[type=submit]").await;
    let refusal = until(Duration::from_secs(10), "the refusal", || async {
        browser.text_of("[role=alert]").await.filter(|t| !t.is_empty())
    })
    .await;
    assert_eq!(refusal, "the email or password is not right");
    // The browser logs the refused request itself; nothing else may be logged.
    let problems = browser.console_problems().await;
    assert!(problems.iter().all(|p| p.contains("/api/v1/auth/login") && p.contains("401")), "{problems:?}");
    browser.fill("#password", "ada-password").await;
    browser.click("form button[type=submit]").await;
    until(Duration::from_secs(10), "the dashboard", || async { (browser.path().await == "/").then_some(()) }).await;

    // Create a machine once the image is imported (the form lists it as importing before).
    until(Duration::from_secs(60), "the image to be ready in the form", || async {
        client.goto(&page("/")).await.ok()?;
        let option = client.find(Locator::Css("#vm-image option")).await.ok()?;
        option.is_enabled().await.ok()?.then_some(())
    })
    .await;
    browser.fill("#vm-name", "web").await;
    browser.fill("#vm-ssh-id", "ada_web").await;
    browser.fill("#vm-password", "machine-password").await;
    browser.click("#create button[type=submit]").await;
    until(Duration::from_secs(20), "the machine's row", || async {
        client.find(Locator::Css("tr[data-vm=web]")).await.ok().map(|_| ())
    })
    .await;
    // The row updates by itself until the machine runs.
    until(Duration::from_secs(90), "the machine to show Running", || async {
        let text = browser.text_of("tr[data-vm=web] .phase").await?;
        (text == "Running").then_some(())
    })
    .await;
    until(Duration::from_secs(10), "the summary to count it running", || async {
        (browser.text_of(".summary").await? == "1 machine, 1 running.").then_some(())
    })
    .await;
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console problems on the dashboard: {problems:?}");
    if let Ok(path) = std::env::var("KITE_UI_SCREENSHOT") {
        browser.screenshot(Path::new(&path)).await;
    }

    // Its page says how to connect.
    browser.click("tr[data-vm=web] a").await;
    until(Duration::from_secs(10), "the machine's page", || async {
        (browser.path().await == "/vms/web").then_some(())
    })
    .await;
    let command = browser.text_of("#ssh-command").await.unwrap();
    assert_eq!(command, format!("ssh -p {ssh} ada_web@127.0.0.1"));
    let config = browser.text_of("#ssh-config").await.unwrap();
    assert!(config.contains(&format!("Port {ssh}")) && config.contains("User ada_web"), "{config}");

    // At phone width nothing overflows sideways.
    client.set_window_size(390, 844).await.unwrap();
    let overflow =
        client.execute("return document.documentElement.scrollWidth - window.innerWidth;", vec![]).await.unwrap();
    assert!(overflow.as_i64().unwrap() <= 0, "the machine page is wider than a phone: {overflow}");
    client.goto(&page("/")).await.unwrap();
    let overflow =
        client.execute("return document.documentElement.scrollWidth - window.innerWidth;", vec![]).await.unwrap();
    assert!(overflow.as_i64().unwrap() <= 0, "the dashboard is wider than a phone: {overflow}");
    client.set_window_size(1280, 900).await.unwrap();

    // Delete it, after confirming.
    client.goto(&page("/vms/web")).await.unwrap();
    browser.click("button[aria-label='Delete web']").await;
    let question = client.get_alert_text().await.unwrap();
    assert!(question.contains("Delete the machine web"), "{question}");
    client.accept_alert().await.unwrap();
    client.goto(&page("/")).await.unwrap();
    until(Duration::from_secs(60), "the machine to be gone", || async {
        client.find(Locator::Css("tr[data-vm=web]")).await.is_err().then_some(())
    })
    .await;
    let errors = client.execute("return window.kiteErrors;", vec![]).await.unwrap();
    assert_eq!(errors, json!([]), "script errors");
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console problems: {problems:?}");

    // The admin pages render, with the gateway's observed state.
    client.goto(&page("/admin/settings")).await.unwrap();
    let phase = browser.text_of("[data-live='/fragments/admin/gateway'] .phase").await.unwrap();
    assert_eq!(phase, "Ready");
    for path in ["/admin/users", "/admin/vms", "/admin/offers"] {
        client.goto(&page(path)).await.unwrap();
        assert!(browser.text_of("h1").await.is_some(), "{path} renders");
    }
    // An offer is made for a user picked from the list (the form sends the user's id).
    let chosen = browser.text_of("#offer-user option").await.unwrap();
    assert!(chosen.starts_with("Ada <"), "the users are listed by name and email: {chosen}");
    browser.click("form[data-api='POST /api/v1/admin/vm-offers'] button[type=submit]").await;
    until(Duration::from_secs(20), "the offer to be listed", || async {
        client.goto(&page("/admin/offers")).await.ok()?;
        browser.text_of("table tbody tr td").await.filter(|first| first.starts_with("offer-")).map(|_| ())
    })
    .await;
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console problems on the admin pages: {problems:?}");

    // Admins choose who may sign up.
    client.goto(&page("/admin/settings")).await.unwrap();
    browser.click("#signup-mode option[value=Invited]").await;
    browser.fill("#invited-emails", "grace@example.org\nlin@example.org").await;
    browser.click("form[data-nest=signup] button[type=submit]").await;
    let mode = "return document.querySelector('#signup-mode').value;";
    until(Duration::from_secs(10), "the sign-up rules to be saved", || async {
        client.goto(&page("/admin/settings")).await.ok()?;
        (client.execute(mode, vec![]).await.ok()? == json!("Invited")).then_some(())
    })
    .await;
    let invited = client.execute("return document.querySelector('#invited-emails').value;", vec![]).await.unwrap();
    assert_eq!(invited, json!("grace@example.org\nlin@example.org"));

    // The account page adds an SSH key, shows its fingerprint, and removes it.
    client.goto(&page("/account")).await.unwrap();
    let key = kite_testkit::openssh::new_key();
    let line = kite_testkit::openssh::public_line(key.public_key());
    let fingerprint = key.public_key().fingerprint(russh::keys::HashAlg::Sha256).to_string();
    browser.fill("#new-key", &line).await;
    browser.click("form[data-api='POST /api/v1/me/ssh-keys'] button[type=submit]").await;
    until(Duration::from_secs(10), "the key's fingerprint on the account page", || async {
        (browser.text_of("table.keys td code").await? == fingerprint).then_some(())
    })
    .await;
    browser.click("table.keys button.danger").await;
    until(Duration::from_secs(10), "the key to go", || async {
        (browser.text_of("p.empty").await.as_deref() == Some("No key yet.")).then_some(())
    })
    .await;

    // The account page changes the password (the session goes on, with a new
    // CSRF token) and signs out everywhere.
    let csrf = "return document.cookie;";
    client.goto(&page("/account")).await.unwrap();
    let before = client.execute(csrf, vec![]).await.unwrap();
    browser.fill("#current-password", "ada-password").await;
    browser.fill("#new-password", "ada-new-password").await;
    browser.click("form[data-api='POST /api/v1/me/password'] button[type=submit]").await;
    until(Duration::from_secs(10), "the new session's cookies", || async {
        (client.execute(csrf, vec![]).await.ok()? != before).then_some(())
    })
    .await;
    until(Duration::from_secs(10), "the account page again", || async {
        (browser.path().await == "/account" && browser.text_of("h1").await.as_deref() == Some("Account")).then_some(())
    })
    .await;
    browser.click("button[data-action='POST /api/v1/auth/logout-everywhere']").await;
    until(Duration::from_secs(10), "the sign-in page", || async { (browser.path().await == "/login").then_some(()) })
        .await;
    browser.fill("#email", "ada@example.org").await;
    browser.fill("#password", "ada-new-password").await;
    browser.click("form button[type=submit]").await;
    until(Duration::from_secs(10), "the dashboard with the new password", || async {
        (browser.path().await == "/").then_some(())
    })
    .await;
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console problems on the account page: {problems:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_signs_up_creates_a_machine_reads_how_to_connect_and_deletes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (http, ssh) = (free_port(), free_port());
    let _demo = start_demo(dir.path(), http, ssh);
    let base = format!("http://127.0.0.1:{http}");
    let health = format!("{base}/api/v1/health");
    until(Duration::from_secs(60), "the demo", || async {
        let answer = reqwest::get(&health).await.ok()?;
        answer.status().is_success().then_some(())
    })
    .await;
    let browser = browser().await;
    let outcome = std::panic::AssertUnwindSafe(journey(&browser, &base, ssh)).catch_unwind().await;
    if let Err(panic) = outcome {
        let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-failures/journey.png");
        browser.screenshot(&shot).await;
        eprintln!("the UI test failed; a screenshot is at {}", shot.display());
        let _ = browser.client.clone().close().await;
        std::panic::resume_unwind(panic);
    }
    browser.client.clone().close().await.unwrap();
}
