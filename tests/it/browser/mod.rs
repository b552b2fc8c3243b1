//! A real Chromium for the web view's tests, driven over WebDriver: Debian's `chromedriver`
//! starts `chromium` headless with a fresh profile, and `fantoccini` speaks the protocol. A
//! machine without them skips the browser tests with a message; under `CI=true` a missing
//! browser fails them instead (`.ci/run` installs it).

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One Chromium at a time, across the test modules that start one: the machine has two
/// cores, and a deadline of a second must measure the page, not a crowd of browsers.
pub static ONE_BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The flags Chromium needs here: no sandbox (root), no GPU, nothing fetched from outside.
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,900",
];

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// `chromium` and `chromedriver`, or `None` after saying what is missing (a panic under CI).
pub fn chromium() -> Option<(PathBuf, PathBuf)> {
    let (browser, driver) = (on_path("chromium"), on_path("chromedriver"));
    if let (Some(browser), Some(driver)) = (&browser, &driver) {
        return Some((browser.clone(), driver.clone()));
    }
    let missing: Vec<&str> = [("chromium", &browser), ("chromedriver", &driver)]
        .into_iter()
        .filter(|(_, found)| found.is_none())
        .map(|(name, _)| name)
        .collect();
    let message = format!(
        "{} not found on PATH (apt-get install chromium chromium-driver)",
        missing.join(" and ")
    );
    if std::env::var("CI").is_ok_and(|ci| ci == "true") {
        panic!("CI runs the browser tests: {message}");
    }
    eprintln!("SKIPPED: this browser test did not run: {message}");
    None
}

pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub async fn start((browser, driver): (PathBuf, PathBuf)) -> Browser {
        let port = crate::common::free_port();
        let driver = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "chromedriver did not start"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = tempfile::tempdir().expect("a profile directory");
        let mut args: Vec<String> = FLAGS.iter().map(|f| f.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let capabilities = json!({"goog:chromeOptions": {"binary": browser, "args": args}});
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a Chromium session");
        Browser {
            client,
            driver,
            _profile: profile,
        }
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("navigate");
    }

    /// Runs `expression` in the page and answers its value.
    pub async fn eval(&self, expression: &str) -> Value {
        self.client
            .execute(&format!("return ({expression});"), vec![])
            .await
            .unwrap_or_else(|e| panic!("{expression}: {e}"))
    }

    /// Waits until `expression` is truthy in the page, checking every 20 ms, or panics after
    /// `deadline`. Answers its value and how long it took.
    pub async fn wait_until(
        &self,
        deadline: Duration,
        what: &str,
        expression: &str,
    ) -> (Value, Duration) {
        let start = Instant::now();
        loop {
            let value = self.eval(expression).await;
            let truthy = match &value {
                Value::Null | Value::Bool(false) => false,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return (value, start.elapsed());
            }
            assert!(
                start.elapsed() < deadline,
                "timed out after {deadline:?} waiting for {what} ({expression} is {value})"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Clicks the element `css` names until `expression` is truthy in the page, or panics after
    /// `deadline`. WebDriver clicks the point where the element was when it found it: a layout
    /// change in between (a section's data arriving above it) sends the click elsewhere, and a
    /// user would click again. Another click is sent only once a second has passed without
    /// the click's effect, so a slow page is not clicked twice.
    pub async fn click_until(&self, css: &str, deadline: Duration, expression: &str) {
        let start = Instant::now();
        loop {
            self.click(css).await;
            let clicked = Instant::now();
            while clicked.elapsed() < Duration::from_secs(1) {
                if self.eval(expression).await == Value::Bool(true) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                start.elapsed() < deadline,
                "clicking {css} did not make {expression} true in {deadline:?}"
            );
        }
    }

    /// Types `text` into the element `css` names.
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.client.find(Locator::Css(css)).await.expect(css);
        element.send_keys(text).await.expect("keys sent");
    }

    pub async fn click(&self, css: &str) {
        let element = self.client.find(Locator::Css(css)).await.expect(css);
        element.click().await.expect("clicked");
    }

    /// Saves a PNG of the window under the target directory's `screenshots/`, and answers its
    /// path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("screenshot");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
        path
    }

    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
