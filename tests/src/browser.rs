//! A real Chromium (Debian's `chromium` package) for the web page's tests, driven over the
//! DevTools protocol (chromiumoxide), headless, from plain test threads.
//!
//! Every console error, uncaught exception and browser log error of a page (a script that
//! failed, a file the policy blocked, a request that failed) is kept, and
//! [`Page::assert_no_errors`] fails the test on any. Waits are for what the page shows (an
//! element, a script condition), with a deadline, never a fixed sleep. Screenshots go to
//! `target/screenshots/`.

use chromiumoxide::cdp::browser_protocol::emulation::{
    MediaFeature, SetDeviceMetricsOverrideParams, SetEmulatedMediaParams,
};
use chromiumoxide::cdp::browser_protocol::input::{DispatchKeyEventParams, DispatchKeyEventType};
use chromiumoxide::cdp::browser_protocol::log::{EventEntryAdded, LogEntryLevel};
use chromiumoxide::cdp::js_protocol::runtime::{
    ConsoleApiCalledType, EventConsoleApiCalled, EventExceptionThrown,
};
use chromiumoxide::page::ScreenshotParams;
use futures_util::StreamExt as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a wait for the page lasts at most.
const PATIENCE: Duration = Duration::from_secs(30);

/// The Chromium binary: `WEFT_CHROMIUM`, else Debian's.
fn executable() -> Result<PathBuf, String> {
    let path = std::env::var_os("WEFT_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "no Chromium at {} (apt-get install chromium; .ci/run does), or set WEFT_CHROMIUM",
            path.display()
        ))
    }
}

/// A running headless Chromium; closed when dropped.
pub struct Browser {
    runtime: tokio::runtime::Runtime,
    browser: Option<chromiumoxide::Browser>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium with a fresh profile, a 1280x800 window and the time zone UTC.
    ///
    /// # Panics
    ///
    /// When it is missing or does not start (a test's setup).
    pub fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime for the browser");
        let profile = tempfile::tempdir().expect("a profile folder");
        let config = chromiumoxide::BrowserConfig::builder()
            .chrome_executable(executable().expect("Chromium"))
            .no_sandbox()
            .window_size(1280, 800)
            .viewport(None)
            .user_data_dir(profile.path())
            // The page shows times in the browser's zone: UTC, whatever the machine's, so
            // that tests can name them.
            .env("TZ", "UTC")
            .launch_timeout(Duration::from_secs(60))
            .request_timeout(Duration::from_secs(60))
            .build()
            .expect("a browser configuration");
        let browser = runtime.block_on(async {
            let (browser, mut handler) = chromiumoxide::Browser::launch(config)
                .await
                .expect("Chromium starts");
            tokio::spawn(async move { while handler.next().await.is_some() {} });
            browser
        });
        Browser {
            runtime,
            browser: Some(browser),
            _profile: profile,
        }
    }

    /// A new tab that opens `url`, its errors kept from before the first byte loads.
    pub fn open(&self, url: &str) -> Page<'_> {
        let browser = self.browser.as_ref().expect("a running browser");
        let errors = Arc::new(Mutex::new(Vec::new()));
        let page = self.runtime.block_on(async {
            let page = browser.new_page("about:blank").await.expect("a tab");
            page.enable_log().await.expect("Log.enable");
            page.enable_runtime().await.expect("Runtime.enable");
            let mut console = page
                .event_listener::<EventConsoleApiCalled>()
                .await
                .expect("console events");
            let mut thrown = page
                .event_listener::<EventExceptionThrown>()
                .await
                .expect("exception events");
            let mut logged = page
                .event_listener::<EventEntryAdded>()
                .await
                .expect("log events");
            let e = Arc::clone(&errors);
            tokio::spawn(async move {
                while let Some(ev) = console.next().await {
                    if matches!(
                        ev.r#type,
                        ConsoleApiCalledType::Error | ConsoleApiCalledType::Assert
                    ) {
                        let text: Vec<String> = ev
                            .args
                            .iter()
                            .map(|a| {
                                a.value
                                    .as_ref()
                                    .map(ToString::to_string)
                                    .or_else(|| a.description.clone())
                                    .unwrap_or_default()
                            })
                            .collect();
                        push(&e, format!("console.error: {}", text.join(" ")));
                    }
                }
            });
            let e = Arc::clone(&errors);
            tokio::spawn(async move {
                while let Some(ev) = thrown.next().await {
                    let d = &ev.exception_details;
                    let what = d
                        .exception
                        .as_ref()
                        .and_then(|x| x.description.clone())
                        .unwrap_or_else(|| d.text.clone());
                    push(
                        &e,
                        format!(
                            "exception at {}:{}:{}: {what}",
                            d.url.clone().unwrap_or_default(),
                            d.line_number,
                            d.column_number
                        ),
                    );
                }
            });
            let e = Arc::clone(&errors);
            tokio::spawn(async move {
                while let Some(ev) = logged.next().await {
                    if ev.entry.level == LogEntryLevel::Error {
                        push(
                            &e,
                            format!(
                                "log error: {} ({})",
                                ev.entry.text,
                                ev.entry.url.clone().unwrap_or_default()
                            ),
                        );
                    }
                }
            });
            page.goto(url).await.expect("the page loads");
            page
        });
        Page {
            browser: self,
            page,
            errors,
        }
    }
}

fn push(errors: &Mutex<Vec<String>>, what: String) {
    errors
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(what);
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(mut b) = self.browser.take() {
            self.runtime.block_on(async {
                let _ = b.close().await;
                let _ = b.wait().await;
            });
        }
    }
}

/// A tab of the [`Browser`].
pub struct Page<'b> {
    browser: &'b Browser,
    page: chromiumoxide::Page,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Page<'_> {
    fn block<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.browser.runtime.block_on(f)
    }

    /// The value of the script `expression` (awaited when it is a promise), as JSON.
    pub fn eval(&self, expression: &str) -> serde_json::Value {
        self.block(async {
            self.page
                .evaluate(expression)
                .await
                .unwrap_or_else(|e| panic!("`{expression}` failed: {e}"))
                .value()
                .cloned()
                .unwrap_or(serde_json::Value::Null)
        })
    }

    /// Waits until the script condition `expression` is true; `what` says what is awaited.
    pub fn wait_until(&self, expression: &str, what: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if self.eval(&format!("!!({expression})")) == serde_json::Value::Bool(true) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: `{expression}` never held; errors so far: {:?}; the page says: {}",
                self.errors(),
                self.eval("document.body.innerText")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until an element matches `selector`.
    pub fn wait_for(&self, selector: &str) {
        self.wait_until(
            &format!(
                "document.querySelector({})",
                serde_json::Value::from(selector)
            ),
            selector,
        );
    }

    /// The text of the first element matching `selector` (after waiting for it).
    pub fn text(&self, selector: &str) -> String {
        self.wait_for(selector);
        self.eval(&format!(
            "document.querySelector({}).textContent",
            serde_json::Value::from(selector)
        ))
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    /// How many elements match `selector` now.
    pub fn count(&self, selector: &str) -> usize {
        self.eval(&format!(
            "document.querySelectorAll({}).length",
            serde_json::Value::from(selector)
        ))
        .as_u64()
        .unwrap_or(0) as usize
    }

    /// Clicks the first element matching `selector` as a user would (after waiting for it).
    pub fn click(&self, selector: &str) {
        self.wait_for(selector);
        self.block(async {
            // A tab behind another draws no frames, and a click waits for one.
            self.page
                .bring_to_front()
                .await
                .unwrap_or_else(|e| panic!("bring the tab to the front: {e}"));
            self.page
                .find_element(selector)
                .await
                .unwrap_or_else(|e| panic!("{selector}: {e}"))
                .click()
                .await
                .unwrap_or_else(|e| panic!("click {selector}: {e}"));
        });
    }

    /// Types `text` into the first element matching `selector`.
    pub fn type_into(&self, selector: &str, text: &str) {
        self.wait_for(selector);
        self.block(async {
            self.page
                .bring_to_front()
                .await
                .unwrap_or_else(|e| panic!("bring the tab to the front: {e}"));
            let e = self
                .page
                .find_element(selector)
                .await
                .unwrap_or_else(|e| panic!("{selector}: {e}"));
            e.click()
                .await
                .unwrap_or_else(|e| panic!("{selector}: {e}"));
            e.type_str(text)
                .await
                .unwrap_or_else(|e| panic!("type into {selector}: {e}"));
        });
    }

    /// Opens `url` in this tab; an address that differs from the current one only after
    /// `#` changes the hash (the page routes it, without loading again).
    pub fn goto(&self, url: &str) {
        let here = self.eval("location.href.split('#')[0]");
        let (there, hash) = url.split_once('#').unwrap_or((url, ""));
        if here.as_str() == Some(there) {
            self.eval(&format!(
                "location.hash = {}",
                serde_json::Value::from(format!("#{hash}"))
            ));
            return;
        }
        self.block(async {
            self.page
                .goto(url)
                .await
                .unwrap_or_else(|e| panic!("{url}: {e}"));
        });
    }

    /// Makes the window `width` x `height` CSS pixels (a phone: 390 x 844).
    pub fn resize(&self, width: i64, height: i64) {
        self.block(async {
            self.page
                .execute(SetDeviceMetricsOverrideParams::new(
                    width,
                    height,
                    1.0,
                    width < 600,
                ))
                .await
                .expect("resize");
        });
    }

    /// Presses `key` (a DOM key name: `ArrowDown`, `Enter`, `Home`...) on the element that
    /// has the focus, as a keyboard would.
    pub fn press(&self, key: &str) {
        let (code, vk, text) = match key {
            "ArrowDown" => ("ArrowDown", 40, None),
            "ArrowUp" => ("ArrowUp", 38, None),
            "Home" => ("Home", 36, None),
            "End" => ("End", 35, None),
            "Enter" => ("Enter", 13, Some("\r")),
            " " => ("Space", 32, Some(" ")),
            "Tab" => ("Tab", 9, None),
            "Escape" => ("Escape", 27, None),
            other => panic!("press: no key code for {other}"),
        };
        self.block(async {
            self.page
                .bring_to_front()
                .await
                .unwrap_or_else(|e| panic!("bring the tab to the front: {e}"));
            for kind in [DispatchKeyEventType::KeyDown, DispatchKeyEventType::KeyUp] {
                let mut b = DispatchKeyEventParams::builder()
                    .r#type(kind.clone())
                    .key(key)
                    .code(code)
                    .windows_virtual_key_code(vk);
                if let (Some(t), DispatchKeyEventType::KeyDown) = (text, &kind) {
                    b = b.text(t);
                }
                self.page
                    .execute(b.build().expect("a key event"))
                    .await
                    .unwrap_or_else(|e| panic!("press {key}: {e}"));
            }
        });
    }

    /// Shows the page as the system's dark setting asks (`true`) or its light one.
    pub fn dark(&self, dark: bool) {
        self.block(async {
            self.page
                .execute(
                    SetEmulatedMediaParams::builder()
                        .features(vec![MediaFeature::new(
                            "prefers-color-scheme",
                            if dark { "dark" } else { "light" },
                        )])
                        .build(),
                )
                .await
                .expect("emulate the colour scheme");
        });
    }

    /// The WCAG 2.1 A and AA violations axe-core finds on the page as it is now, one line
    /// each (rule, impact, the elements); axe-core is npm's, installed by `./test.sh` into
    /// `target/axe-core` and evaluated in the page through the DevTools protocol (the
    /// page's policy allows no script but its own).
    pub fn axe(&self) -> Vec<String> {
        let path = crate::server::root().join("target/axe-core/node_modules/axe-core/axe.min.js");
        let source = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "axe-core is missing at {} ({e}): ./test.sh installs it (npm install --prefix target/axe-core axe-core@4.10.3)",
                path.display()
            )
        });
        if self.eval("typeof window.axe") != "object" {
            self.block(async {
                self.page
                    .evaluate_expression(source)
                    .await
                    .expect("axe-core loads");
            });
        }
        let found = self.eval(
            "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})\
             .then(r => r.violations.map(v => `${v.id} (${v.impact}): ${v.help}; ${v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' ' + (n.failureSummary || '').replace(/\\s+/g, ' ')).join(' | ')}`))",
        );
        found
            .as_array()
            .expect("axe's answer")
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Saves a screenshot of the whole page as `target/screenshots/NAME.png`; its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let dir = crate::server::root().join("target").join("screenshots");
        std::fs::create_dir_all(&dir).expect("screenshot folder");
        let path = dir.join(format!("{name}.png"));
        self.block(async {
            self.page
                .save_screenshot(ScreenshotParams::builder().full_page(true).build(), &path)
                .await
                .expect("screenshot");
        });
        path
    }

    /// The console errors, exceptions and log errors seen so far.
    pub fn errors(&self) -> Vec<String> {
        self.errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The errors seen so far, forgotten: for a step that makes one on purpose (the
    /// browser logs every 404 answer it gets).
    pub fn take_errors(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .errors
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Fails the test if the page logged any error.
    pub fn assert_no_errors(&self) {
        let errors = self.errors();
        assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
    }
}
