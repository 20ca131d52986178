//! A real headless Chromium for the admin UI tests, driven over WebDriver
//! (chromedriver on a free port, `fantoccini` as the client).
//!
//! Calls are synchronous like the rest of the harness (each runs on the
//! browser's own tokio runtime). Every page the test looks at is
//! screenshotted into the test's scratch directory, which `Scratch` keeps
//! under `target/e2e-logs/` when the test fails; a failing test also gets a
//! screenshot and the HTML of the page it was on.
//!
//! Binaries: `/usr/bin/chromium` and `/usr/bin/chromedriver` (Debian's
//! `chromium` and `chromium-driver`), or `SHORTLINK_CHROMIUM` and
//! `SHORTLINK_CHROMEDRIVER`. `SHORTLINK_TRACE=1` makes chromedriver log
//! every command and DevTools message to `logs/chromedriver.log`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};

use crate::{free_port, Scratch};

fn binary(var: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default));
    assert!(
        path.exists(),
        "{} not found: install Debian's chromium and chromium-driver (make deps), or set {var}",
        path.display()
    );
    path
}

/// A headless Chromium session with its chromedriver.
pub struct Browser {
    rt: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    shots: PathBuf,
    seq: u32,
    _profile: PathBuf,
}

impl Browser {
    /// Starts chromedriver and a fresh headless Chromium (its own profile
    /// directory under the scratch directory).
    pub fn start(scratch: &Scratch) -> Browser {
        let chromium = binary("SHORTLINK_CHROMIUM", "/usr/bin/chromium");
        let chromedriver = binary("SHORTLINK_CHROMEDRIVER", "/usr/bin/chromedriver");
        let port = free_port();
        let log = std::fs::File::create(scratch.path("logs/chromedriver.log")).unwrap();
        let mut driver = Command::new(chromedriver);
        driver.arg(format!("--port={port}"));
        if std::env::var_os("SHORTLINK_TRACE").is_some() {
            driver.arg("--verbose");
        }
        let driver = driver
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start chromedriver");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !crate::listening(port) {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen in 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = scratch.path("chromium-profile");
        std::fs::create_dir_all(&profile).unwrap();
        let shots = scratch.path("screenshots");
        std::fs::create_dir_all(&shots).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let caps = serde_json::json!({
            "browserName": "chrome",
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--disable-quic", "--disable-dev-shm-usage",
                    "--window-size=1280,1000", "--hide-scrollbars",
                    // Keep the compositor drawing, or screenshots may wait
                    // 10 s for a frame.
                    "--disable-renderer-backgrounding",
                    "--disable-backgrounding-occluded-windows",
                    "--disable-background-timer-throttling",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        });
        let caps = match caps {
            serde_json::Value::Object(m) => m,
            _ => unreachable!(),
        };
        let client = rt
            .block_on(async {
                let mut builder =
                    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
                builder.capabilities(caps);
                tokio::time::timeout(
                    Duration::from_secs(60),
                    builder.connect(&format!("http://127.0.0.1:{port}")),
                )
                .await
            })
            .expect("chromium session within 60 s")
            .expect("chromium session");
        Browser {
            rt,
            client: Some(client),
            driver,
            shots,
            seq: 0,
            _profile: profile,
        }
    }

    fn c(&self) -> &Client {
        self.client.as_ref().unwrap()
    }

    /// Opens `url` and screenshots the page as `name`.
    pub fn goto(&mut self, url: &str, name: &str) {
        let c = self.c().clone();
        self.rt
            .block_on(c.goto(url))
            .unwrap_or_else(|e| panic!("goto {url}: {e}"));
        self.shot(name);
    }

    /// The current URL.
    pub fn url(&self) -> String {
        let c = self.c().clone();
        self.rt.block_on(c.current_url()).unwrap().to_string()
    }

    /// The path of the current URL.
    pub fn path(&self) -> String {
        let c = self.c().clone();
        self.rt
            .block_on(c.current_url())
            .unwrap()
            .path()
            .to_string()
    }

    /// The page's HTML.
    pub fn source(&self) -> String {
        let c = self.c().clone();
        self.rt.block_on(c.source()).unwrap()
    }

    /// The element matching a CSS selector (fails the test if none).
    pub fn find(&self, css: &str) -> Element {
        let c = self.c().clone();
        self.rt
            .block_on(c.find(Locator::Css(css)))
            .unwrap_or_else(|e| panic!("no element {css:?} on {}: {e}", self.url()))
    }

    /// Whether an element matches.
    pub fn exists(&self, css: &str) -> bool {
        let c = self.c().clone();
        !self
            .rt
            .block_on(c.find_all(Locator::Css(css)))
            .unwrap()
            .is_empty()
    }

    /// The visible text of an element.
    pub fn text(&self, css: &str) -> String {
        let e = self.find(css);
        self.rt.block_on(e.text()).unwrap()
    }

    /// The current value of an input.
    pub fn value(&self, css: &str) -> String {
        let e = self.find(css);
        self.rt
            .block_on(e.prop("value"))
            .unwrap()
            .unwrap_or_default()
    }

    /// Clears an input and types `text` into it.
    pub fn fill(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.rt.block_on(e.clear()).unwrap();
        self.rt.block_on(e.send_keys(text)).unwrap();
    }

    /// Puts the file at `path` (absolute) into a file input.
    pub fn upload(&self, css: &str, path: &Path) {
        let e = self.find(css);
        let path = path.to_str().expect("a UTF-8 path");
        self.rt
            .block_on(e.send_keys(path))
            .unwrap_or_else(|err| panic!("upload {path} into {css:?}: {err}"));
    }

    /// Clicks an element, waits for the page that follows, screenshots it.
    pub fn click(&mut self, css: &str, name: &str) {
        let e = self.find(css);
        let started = Instant::now();
        self.rt
            .block_on(e.click())
            .unwrap_or_else(|err| panic!("click {css:?}: {err}"));
        if started.elapsed() > Duration::from_secs(2) {
            eprintln!("click {css:?} ({name}) took {:?}", started.elapsed());
        }
        self.shot(name);
    }

    /// Clicks a button that asks `confirm()`, accepts the dialog, and
    /// screenshots the page that follows.
    pub fn click_and_confirm(&mut self, css: &str, name: &str) {
        let e = self.find(css);
        self.rt.block_on(e.click()).unwrap();
        let c = self.c().clone();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.rt.block_on(c.accept_alert()) {
                Ok(()) => break,
                Err(err) => {
                    assert!(Instant::now() < deadline, "no confirm dialog: {err}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(200));
        self.shot(name);
    }

    /// Runs a script in the page and returns its result.
    pub fn js(&self, script: &str) -> serde_json::Value {
        let c = self.c().clone();
        self.rt.block_on(c.execute(script, vec![])).unwrap()
    }

    /// Runs a Chrome DevTools Protocol command (`Emulation.…`, say) and
    /// returns its result.
    pub fn cdp(&self, cmd: &str, params: serde_json::Value) -> serde_json::Value {
        let c = self.c().clone();
        let command = DevTools {
            cmd: cmd.to_string(),
            params,
        };
        self.rt
            .block_on(c.issue_cmd(command))
            .unwrap_or_else(|e| panic!("DevTools {cmd}: {e}"))
    }

    /// The value of a cookie the browser holds for the current site.
    pub fn cookie(&self, name: &str) -> Option<String> {
        let c = self.c().clone();
        self.rt
            .block_on(c.get_all_cookies())
            .unwrap()
            .into_iter()
            .find(|k| k.name() == name)
            .map(|k| k.value().to_string())
    }

    /// Saves a PNG of the page under the scratch directory as `NN-name.png`.
    pub fn shot(&mut self, name: &str) -> PathBuf {
        self.seq += 1;
        let path = self.shots.join(format!("{:02}-{name}.png", self.seq));
        self.save_screenshot(&path);
        path
    }

    /// Saves a PNG of the page at `path`.
    pub fn save_screenshot(&self, path: &Path) {
        let c = self.c().clone();
        // Wait for the page to paint a frame first: asking for a shot of a
        // page that has not painted yet can stall for 10 s.
        let _ = self.rt.block_on(async {
            tokio::time::timeout(
                Duration::from_secs(5),
                c.execute_async(
                    "const done = arguments[arguments.length - 1]; \
                     requestAnimationFrame(() => requestAnimationFrame(() => done(true)));",
                    vec![],
                ),
            )
            .await
        });
        match self.rt.block_on(c.screenshot()) {
            Ok(png) => std::fs::write(path, png).unwrap(),
            Err(e) => eprintln!("screenshot {} failed: {e}", path.display()),
        }
    }

    /// Saves a PNG of the whole page (the window is made as tall as the
    /// page for the shot), e.g. for documentation.
    pub fn save_full_page(&self, path: &Path) {
        let c = self.c().clone();
        let height = self
            .js("return document.body.scrollHeight")
            .as_u64()
            .unwrap_or(1000)
            .clamp(600, 4000) as u32;
        let (w, h) = self.rt.block_on(c.get_window_size()).unwrap();
        // The window's height includes the (headless, thin) browser frame.
        self.rt
            .block_on(c.set_window_size(
                w as u32,
                height + (h as u32).saturating_sub(self.inner_height()),
            ))
            .unwrap();
        self.save_screenshot(path);
        self.rt
            .block_on(c.set_window_size(w as u32, h as u32))
            .unwrap();
    }

    fn inner_height(&self) -> u32 {
        self.js("return window.innerHeight").as_u64().unwrap_or(0) as u32
    }

    /// Polls `f` (reloading the page between tries) until it is true.
    pub fn wait_for(&mut self, what: &str, timeout: Duration, mut f: impl FnMut(&Browser) -> bool) {
        let deadline = Instant::now() + timeout;
        loop {
            if f(self) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(250));
            let c = self.c().clone();
            self.rt.block_on(c.refresh()).unwrap();
        }
    }
}

/// chromedriver's `POST /session/{id}/goog/cdp/execute`: one DevTools
/// command, which WebDriver itself has no word for.
#[derive(Debug)]
struct DevTools {
    cmd: String,
    params: serde_json::Value,
}

impl WebDriverCompatibleCommand for DevTools {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!(
            "session/{}/goog/cdp/execute",
            session.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        let body = serde_json::json!({ "cmd": self.cmd, "params": self.params });
        (http::Method::POST, Some(body.to_string()))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if std::thread::panicking() && self.client.is_some() {
            let path = self.shots.join("failure.png");
            self.save_screenshot(&path);
            let c = self.c().clone();
            if let Ok(html) = self.rt.block_on(c.source()) {
                let _ = std::fs::write(self.shots.join("failure.html"), html);
            }
            eprintln!("screenshots of every page are in {}", self.shots.display());
        }
        if let Some(c) = self.client.take() {
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(Duration::from_secs(10), c.close()).await });
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
