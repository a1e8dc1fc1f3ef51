//! A WebDriver client for the browser tests (`report.rs`, `web.rs`): chromedriver started on a
//! free loopback port, one headless Chromium session, HTTP/1.1 over a plain socket, JSON both
//! ways; and the rule for a machine without them: fail in CI (`MSGBENCH_REQUIRE_BROWSER=1`),
//! else say what is missing and skip, leaving the line in `target/test-skips/`.

#![allow(dead_code)] // each test file uses what it needs

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::browser;

/// One HTTP exchange: the status and the JSON body (null when empty).
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<(u16, Value), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    // Generous: a full-page screenshot or a PDF of a long page takes a while on a slow runner.
    s.set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(|e| e.to_string())?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| format!("{method} {path}: {e}"))?;
    let mut r = BufReader::new(s);
    let mut status_line = String::new();
    r.read_line(&mut status_line)
        .map_err(|e| format!("{method} {path}: {e}"))?;
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{method} {path}: bad status line {status_line:?}"))?;
    let (mut length, mut chunked) = (None, false);
    loop {
        let mut line = String::new();
        r.read_line(&mut line).map_err(|e| e.to_string())?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut payload = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).map_err(|e| e.to_string())?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .map_err(|e| format!("bad chunk size {size:?}: {e}"))?;
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            payload.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = length {
        payload.resize(n, 0);
        r.read_exact(&mut payload).map_err(|e| e.to_string())?;
    } else {
        r.read_to_end(&mut payload).map_err(|e| e.to_string())?;
    }
    let v = if payload.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&payload).map_err(|e| format!("{method} {path}: not JSON: {e}"))?
    };
    Ok((status, v))
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// chromedriver and one browser session; both ended on drop, whatever happened.
pub struct Browser {
    driver: Child,
    port: u16,
    session: Option<String>,
    profile: PathBuf,
    log: PathBuf,
}

impl Browser {
    pub fn start(dir: &Path, programs: &browser::Found) -> Browser {
        let port = free_port();
        let log = dir.join("chromedriver.log");
        let profile = dir.join("chromium-profile");
        std::fs::create_dir_all(&profile).unwrap();
        let driver = Command::new(&programs.driver)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let mut b = Browser {
            driver,
            port,
            session: None,
            profile,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok((200, v)) = http(port, "GET", "/status", None) {
                if v["value"]["ready"] == true {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not become ready in 30 s; its log: {}",
                b.driver_log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": programs.browser,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                    format!("--user-data-dir={}", b.profile.display()),
                ],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let (status, v) = http(port, "POST", "/session", Some(&caps)).unwrap();
        assert_eq!(
            status,
            200,
            "creating a session failed: {v}; chromedriver log: {}",
            b.driver_log()
        );
        b.session = Some(v["value"]["sessionId"].as_str().unwrap().to_string());
        b
    }

    /// A browser 1280 × 900 pixels with the local file `page` open: how the report's tests
    /// view a page they wrote.
    pub fn showing(dir: &Path, programs: &browser::Found, page: &Path) -> Browser {
        let b = Browser::start(dir, programs);
        b.resize(1280, 900);
        b.cmd(
            "POST",
            "/url",
            Some(json!({"url": format!("file://{}", page.display())})),
        );
        b
    }

    pub fn driver_log(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// A command on the session; its `value`, or a panic saying what failed.
    pub fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let full = format!("/session/{}{path}", self.session.as_ref().unwrap());
        match http(self.port, method, &full, body.as_ref()) {
            Ok((200, v)) => v["value"].clone(),
            Ok((status, v)) => panic!("{method} {path}: HTTP {status}: {v}"),
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }

    pub fn execute(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    pub fn resize(&self, width: u32, height: u32) {
        self.cmd(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        );
    }

    pub fn screenshot(&self, to: &Path) {
        let b64 = self.cmd("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::write(to, png).unwrap();
    }

    /// The browser console since the last call.
    pub fn console(&self) -> Vec<Value> {
        self.cmd("POST", "/se/log", Some(json!({"type": "browser"})))
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(id) = self.session.take() {
            let _ = http(self.port, "DELETE", &format!("/session/{id}"), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Chromium and chromedriver when the browser part can run; when it cannot, fails (CI) or says
/// what is missing. `test` names the test in the line, `skip` its file in `target/test-skips/`.
pub fn browser_available(test: &str, skip: &str) -> Option<browser::Found> {
    let why = match browser::on_this_machine() {
        Ok(found) => return Some(found),
        Err(why) => why,
    };
    assert!(
        std::env::var("MSGBENCH_REQUIRE_BROWSER").as_deref() != Ok("1"),
        "MSGBENCH_REQUIRE_BROWSER=1, but the {test} cannot run: {why}"
    );
    let note = format!("SKIPPED: {test}: {why}");
    println!("{note}");
    // cargo test shows a passing test's output to no one: `make unit` prints what is left in
    // target/test-skips/ after the run, where a person sees it.
    let skips = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-skips");
    std::fs::create_dir_all(&skips).unwrap();
    std::fs::write(skips.join(skip), format!("{note}\n")).unwrap();
    None
}
