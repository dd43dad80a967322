//! A small W3C WebDriver client for the web console's browser test: it
//! starts Debian's `chromedriver` on an ephemeral port, opens a headless
//! Chromium session and speaks the protocol's JSON over plain HTTP/1.1
//! on std sockets (no WebDriver crate needed).
//!
//! Elements are found the way a person finds them: by the text of their
//! label, button or link, and the tests check the accessible name the
//! browser computes matches it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
/// How long an element may take to appear.
const WAIT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(100);
/// The W3C key of an element reference.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Why the browser cannot run here, if it cannot.
pub fn missing() -> Option<String> {
    for path in [CHROMEDRIVER, CHROMIUM] {
        if !Path::new(path).exists() {
            return Some(format!(
                "{path} is missing (scripts/install-test-deps.sh installs chromium and chromium-driver)"
            ));
        }
    }
    None
}

pub struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
}

#[derive(Clone, Debug)]
pub struct Element(String);

impl Browser {
    /// Starts chromedriver and a headless Chromium window of 1366x900.
    pub fn start() -> Browser {
        let mut driver = Command::new(CHROMEDRIVER)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let stdout = driver.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let port = loop {
            let line = lines
                .next()
                .expect("chromedriver reports its port")
                .unwrap();
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                break rest.trim_end_matches('.').trim().parse::<u16>().unwrap();
            }
        };
        // Keep draining chromedriver's output so it never blocks on a pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1366,900",
                         "--no-first-run", "--lang=en-US"]
            }
        }}});
        let mut browser = Browser {
            driver,
            addr,
            session: String::new(),
        };
        let created = browser.call("POST", "/session", Some(capabilities));
        browser.session = created["sessionId"].as_str().unwrap().to_owned();
        browser
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, value) = exchange(self.addr, method, path, body);
        assert!(
            status == 200,
            "WebDriver {method} {path} failed ({status}): {value}"
        );
        value
    }

    /// A call that may fail; returns the error name on failure.
    fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let (status, value) = exchange(self.addr, method, path, body);
        if status == 200 {
            Ok(value)
        } else {
            Err(value["error"]
                .as_str()
                .unwrap_or("unknown error")
                .to_owned())
        }
    }

    fn session_call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    pub fn goto(&self, url: &str) {
        self.session_call("POST", "/url", Some(json!({"url": url})));
    }

    pub fn url(&self) -> String {
        self.session_call("GET", "/url", None)
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Every displayed element matching an XPath.
    pub fn visible(&self, xpath: &str) -> Vec<Element> {
        let found = self.try_call(
            "POST",
            &format!("/session/{}/elements", self.session),
            Some(json!({"using": "xpath", "value": xpath})),
        );
        let Ok(Value::Array(found)) = found else {
            return Vec::new();
        };
        found
            .iter()
            .filter_map(|e| e[ELEMENT_KEY].as_str().map(|id| Element(id.to_owned())))
            .filter(|e| {
                self.try_call(
                    "GET",
                    &format!("/session/{}/element/{}/displayed", self.session, e.0),
                    None,
                )
                .is_ok_and(|v| v == Value::Bool(true))
            })
            .collect()
    }

    /// Waits for the first displayed element matching an XPath.
    pub fn wait(&self, xpath: &str) -> Element {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(element) = self.visible(xpath).into_iter().next() {
                return element;
            }
            assert!(
                Instant::now() < deadline,
                "no visible element matches {xpath} on {}",
                self.url()
            );
            std::thread::sleep(POLL);
        }
    }

    /// Waits until nothing displayed matches an XPath.
    pub fn wait_gone(&self, xpath: &str) {
        let deadline = Instant::now() + WAIT;
        while !self.visible(xpath).is_empty() {
            assert!(Instant::now() < deadline, "{xpath} is still shown");
            std::thread::sleep(POLL);
        }
    }

    /// The browser's accessible name of an element.
    pub fn accessible_name(&self, element: &Element) -> String {
        self.session_call(
            "GET",
            &format!("/element/{}/computedlabel", element.0),
            None,
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    fn named(&self, xpath: &str, name: &str) -> Element {
        let element = self.wait(xpath);
        assert_eq!(
            self.accessible_name(&element),
            name,
            "accessible name of {xpath}"
        );
        element
    }

    /// The form control whose `<label>` reads `name`.
    pub fn input(&self, name: &str) -> Element {
        let xpath = format!(
            "//*[self::input or self::select or self::textarea][@id=//label[normalize-space(.)='{name}']/@for]"
        );
        self.named(&xpath, name)
    }

    /// The button whose accessible name is `name`.
    pub fn button(&self, name: &str) -> Element {
        let xpath = format!("//button[normalize-space(.)='{name}' or @aria-label='{name}']");
        self.named(&xpath, name)
    }

    /// The checkbox whose accessible name is `name` (its `aria-label`, or
    /// the `<label>` around it).
    pub fn checkbox(&self, name: &str) -> Element {
        let xpath = format!(
            "//input[@type='checkbox'][@aria-label='{name}' or (not(@aria-label) and parent::label[normalize-space(.)='{name}'])]"
        );
        self.named(&xpath, name)
    }

    /// Whether a checkbox or radio button is ticked.
    pub fn checked(&self, element: &Element) -> bool {
        self.session_call(
            "GET",
            &format!("/element/{}/property/checked", element.0),
            None,
        )
        .as_bool()
        .unwrap_or(false)
    }

    /// The link whose text is `name`.
    pub fn link(&self, name: &str) -> Element {
        self.named(&format!("//a[normalize-space(.)='{name}']"), name)
    }

    /// Waits for an element whose own text is exactly `text`.
    pub fn text(&self, text: &str) -> Element {
        self.wait(&format!("//*[normalize-space(text())='{text}']"))
    }

    pub fn click(&self, element: &Element) {
        self.session_call(
            "POST",
            &format!("/element/{}/click", element.0),
            Some(json!({})),
        );
    }

    /// Replaces a control's value with `text`.
    pub fn fill(&self, element: &Element, text: &str) {
        self.session_call(
            "POST",
            &format!("/element/{}/clear", element.0),
            Some(json!({})),
        );
        self.session_call(
            "POST",
            &format!("/element/{}/value", element.0),
            Some(json!({"text": text})),
        );
    }

    /// Picks the option with visible text `label` in a `<select>`.
    pub fn choose(&self, select: &Element, label: &str) {
        let option = self.session_call(
            "POST",
            &format!("/element/{}/element", select.0),
            Some(json!({"using": "xpath", "value": format!("./option[normalize-space(.)='{label}']")})),
        );
        let id = option[ELEMENT_KEY].as_str().unwrap().to_owned();
        self.click(&Element(id));
    }

    pub fn element_text(&self, element: &Element) -> String {
        self.session_call("GET", &format!("/element/{}/text", element.0), None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Runs a script in the page and returns its result.
    pub fn execute(&self, script: &str) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// The text of an open `alert()`, if any.
    pub fn alert_text(&self) -> Option<String> {
        self.try_call(
            "GET",
            &format!("/session/{}/alert/text", self.session),
            None,
        )
        .ok()
        .map(|v| v.as_str().unwrap_or_default().to_owned())
    }

    /// Writes a PNG of the window to `dir/name.png`.
    pub fn screenshot(&self, dir: &Path, name: &str) -> PathBuf {
        let data = self.session_call("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }
}

/// One WebDriver request on its own connection; the answer is read by its
/// Content-Length (chromedriver keeps connections open). Returns the
/// status and the answer's `value`.
fn exchange(addr: SocketAddr, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut stream = TcpStream::connect(addr).expect("chromedriver accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut data = vec![0; length];
    reader.read_exact(&mut data).unwrap();
    let json: Value = serde_json::from_slice(&data).unwrap_or(Value::Null);
    (status, json["value"].clone())
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.try_call("DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
