//! Headless Chromium driven over WebDriver by chromedriver, for the UI
//! tests: start it, find, fill and click, read the console.

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Process;
use kite_testkit::openssh::free_port;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

pub fn require_browser() {
    for tool in [CHROMIUM, CHROMEDRIVER] {
        assert!(
            Path::new(tool).exists(),
            "{tool} is missing: the UI test drives Debian's chromium and chromium-driver; install them (scripts/test.sh does)"
        );
    }
}

/// Polls `check` until it gives `Some`, for at most `within`.
pub async fn until<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {within:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub struct Browser {
    pub client: Client,
    driver_port: u16,
    _driver: Process,
    _profile: tempfile::TempDir,
}

pub async fn browser() -> Browser {
    require_browser();
    let driver_port = free_port();
    let driver = Process(
        Command::new(CHROMEDRIVER)
            .arg(format!("--port={driver_port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let profile = tempfile::tempdir().unwrap();
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": CHROMIUM,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--disable-dev-shm-usage", "--window-size=1280,900",
                     format!("--user-data-dir={}", profile.path().display())]
        }),
    );
    capabilities.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));
    let url = format!("http://127.0.0.1:{driver_port}");
    let client = until(Duration::from_secs(20), "chromedriver to start a session", || {
        let capabilities = capabilities.clone();
        let url = url.clone();
        async move {
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(capabilities)
                .connect(&url)
                .await
                .ok()
        }
    })
    .await;
    Browser { client, driver_port, _driver: driver, _profile: profile }
}

impl Browser {
    /// The browser console's warnings and errors since the last call (chromedriver's log endpoint).
    pub async fn console_problems(&self) -> Vec<String> {
        let session = self.client.session_id().await.unwrap().unwrap();
        let entries: Value = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{}/session/{session}/se/log", self.driver_port))
            .json(&json!({ "type": "browser" }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        entries["value"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter(|e| e["level"] == "SEVERE" || e["level"] == "WARNING")
            .map(|e| e["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    pub async fn text_of(&self, css: &str) -> Option<String> {
        let element = self.client.find(Locator::Css(css)).await.ok()?;
        element.text().await.ok()
    }

    pub async fn fill(&self, css: &str, text: &str) {
        let element = self.client.find(Locator::Css(css)).await.unwrap();
        element.clear().await.unwrap();
        element.send_keys(text).await.unwrap();
    }

    pub async fn click(&self, css: &str) {
        self.client.find(Locator::Css(css)).await.unwrap().click().await.unwrap();
    }

    /// Signs `name` in on the sign-in page of the API at `base`
    /// (`<name>@example.org`, `<name>-password`, as `signed_up` makes them),
    /// and waits for the dashboard.
    pub async fn sign_in(&self, base: &str, name: &str) {
        self.client.goto(&format!("{base}/login")).await.unwrap();
        self.fill("#email", &format!("{name}@example.org")).await;
        self.fill("#password", &format!("{name}-password")).await;
        self.click("form button[type=submit]").await;
        let what = format!("{name}'s dashboard");
        until(Duration::from_secs(10), &what, || async { (self.path().await == "/").then_some(()) }).await;
    }

    pub async fn path(&self) -> String {
        self.client.current_url().await.unwrap().path().to_string()
    }

    pub async fn screenshot(&self, path: &Path) {
        if let Ok(png) = self.client.screenshot().await {
            let _ = std::fs::create_dir_all(path.parent().unwrap());
            let _ = std::fs::write(path, png);
        }
    }
}
