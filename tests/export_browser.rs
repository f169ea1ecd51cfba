//! An exported HTML file opened in a real browser (Debian's `chromium`, driven by
//! `chromium-driver` over WebDriver on 127.0.0.1), with networking off: it shows the
//! conversation, makes no request to any host or file, runs nothing a hostile
//! session planted, folds with `<details>` that open on a click without script,
//! follows the reader's dark setting and hides the page's links in print.
//!
//! SKIPPED (loudly) without chromium and chromedriver; `FEN_FS_REQUIRE_BROWSER=1`
//! (CI) makes that a failure.

mod export_support;
mod support;

use export_support::{ID, claude_session};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{fen_fs, out_text};

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// The browser and its driver, or `None` (said loudly) when they are missing.
fn browser(test: &str) -> Option<(PathBuf, PathBuf)> {
    let chromium = which("chromium").or_else(|| which("chromium-browser"));
    let driver = which("chromedriver");
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        _ => {
            let why =
                "chromium and chromedriver are needed (apt-get install chromium chromium-driver)";
            if std::env::var("FEN_FS_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
                panic!("{test}: {why}");
            }
            eprintln!("SKIPPED {test}: {why}");
            None
        }
    }
}

/// A chromedriver of ours on a free loopback port, stopped when dropped.
struct Driver {
    child: Child,
    base: String,
    session: Option<String>,
}

impl Driver {
    fn start(driver: &Path) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let d = Driver {
            child,
            base: format!("http://127.0.0.1:{port}"),
            session: None,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = ureq::get(&format!("{}/status", d.base))
                .call()
                .ok()
                .and_then(|r| r.into_string().ok())
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if ready {
                return d;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let req = ureq::request(method, &url).timeout(Duration::from_secs(120));
        let res = match body {
            Some(b) => req
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => req.call(),
        };
        match res {
            Ok(r) => {
                serde_json::from_str::<Value>(&r.into_string().unwrap()).unwrap()["value"].take()
            }
            Err(ureq::Error::Status(code, r)) => {
                panic!(
                    "{method} {path}: {code} {}",
                    r.into_string().unwrap_or_default()
                )
            }
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }

    fn open(&mut self, chromium: &Path, profile: &Path, extra: &[&str]) {
        let mut args = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            format!("--user-data-dir={}", profile.display()),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "goog:loggingPrefs": {"performance": "ALL", "browser": "ALL"}
        }}});
        let v = self.call("POST", "/session", Some(caps));
        self.session = Some(v["sessionId"].as_str().unwrap().to_string());
        // Networking off: every request to a host fails (none is expected anyway).
        self.s(
            "POST",
            "/chromium/network_conditions",
            Some(json!({"network_conditions": {"offline": true, "latency": 0, "download_throughput": 0, "upload_throughput": 0}})),
        );
    }

    fn s(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let id = self.session.as_deref().expect("a session");
        self.call(method, &format!("/session/{id}{path}"), body)
    }

    fn script(&self, js: &str) -> Value {
        self.s(
            "POST",
            "/execute/sync",
            Some(json!({"script": js, "args": []})),
        )
    }

    fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.s(
            "POST",
            "/goog/cdp/execute",
            Some(json!({"cmd": cmd, "params": params})),
        )
    }

    fn log(&self, kind: &str) -> Vec<Value> {
        self.s("POST", "/se/log", Some(json!({"type": kind})))
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(id) = self.session.take() {
            let _ = ureq::delete(&format!("{}/session/{id}", self.base)).call();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const HOSTILE: &str = "<script>window.__pwned=1</script> <img src=x onerror=\"window.__pwned=2\"> \
<svg onload=\"window.__pwned=3\"></svg> <iframe src=\"https://evil.example/\"></iframe> \
[click](javascript:window.__pwned=4) ![t](https://evil.example/pixel.png) \
<link rel=stylesheet href=\"https://evil.example/x.css\"> </pre></details><script>window.__pwned=5</script> \
key ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d";

#[test]
fn an_exported_page_reads_offline_and_runs_nothing() {
    let Some((chromium, driver)) = browser("an_exported_page_reads_offline_and_runs_nothing")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    claude_session(&claude, ID, "/p/browser", HOSTILE);
    let store = tmp.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let page = tmp.path().join("session.html");
    let o = fen_fs()
        .args(["export", ID, "--no-detect", "--source"])
        .arg(format!("claude={}", claude.display()))
        .arg("--store")
        .arg(&store)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let url = format!("file://{}", page.display());

    let mut d = Driver::start(&driver);
    d.open(&chromium, &tmp.path().join("profile"), &[]);
    // What the browser did before (its new tab page) is read off its log first.
    d.log("performance");
    d.s("POST", "/url", Some(json!({"url": url})));
    let facts = d.script(
        "return {
            title: document.title,
            text: document.body.innerText,
            pwned: window.__pwned === undefined ? null : window.__pwned,
            articles: document.querySelectorAll('article').length,
            details: document.querySelectorAll('details').length,
            open: document.querySelectorAll('details[open]').length,
            scripts: document.scripts.length,
            images: document.images.length,
            frames: document.querySelectorAll('iframe, object, embed, svg, link').length,
            resources: performance.getEntriesByType('resource').map(e => e.name),
            background: getComputedStyle(document.body).backgroundColor
        };",
    );
    assert!(
        facts["title"].as_str().unwrap().starts_with("title "),
        "{facts}"
    );
    let text = facts["text"].as_str().unwrap();
    assert!(
        text.contains("please look at this:"),
        "the conversation shows: {text}"
    );
    assert!(
        text.contains("<script>window.__pwned=1</script>"),
        "hostile text shows as characters"
    );
    assert!(text.contains("[REDACTED:github-token]") && !text.contains("ghp_u8jz"));
    assert_eq!(facts["pwned"], Value::Null, "nothing planted ran");
    assert_eq!(facts["articles"], 8, "{facts}");
    assert!(facts["details"].as_u64().unwrap() >= 5, "{facts}");
    assert_eq!(facts["open"], 0, "folded parts start folded");
    assert_eq!(facts["scripts"], 0);
    assert_eq!(facts["images"], 0);
    assert_eq!(facts["frames"], 0, "{facts}");
    assert_eq!(facts["resources"], json!([]), "no resource was loaded");
    assert_eq!(
        facts["background"], "rgb(255, 255, 255)",
        "light by default"
    );

    // No request at all: the browser's own log of network events holds none but
    // the page itself.
    let requests: Vec<String> = d
        .log("performance")
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e["message"].as_str()?).ok())
        .filter(|m| m["message"]["method"] == "Network.requestWillBeSent")
        .filter_map(|m| {
            m["message"]["params"]["request"]["url"]
                .as_str()
                .map(String::from)
        })
        .filter(|u| *u != url)
        .collect();
    assert!(requests.is_empty(), "requests: {requests:?}");
    let console: Vec<String> = d
        .log("browser")
        .iter()
        .filter_map(|e| e["message"].as_str().map(String::from))
        .collect();
    assert!(
        console
            .iter()
            .all(|m| !m.contains("Content Security Policy") && !m.contains("Refused")),
        "the page tried something the policy refused: {console:?}"
    );

    // The harness sees requests when there are some: a tampered copy of the page
    // (its policy taken out, an image from a host and a stylesheet from a file put
    // in) makes both show in the log.
    let tampered = tmp.path().join("tampered.html");
    let html = std::fs::read_to_string(&page).unwrap();
    let at = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let end = at + html[at..].find('>').unwrap() + 1;
    let html = format!(
        "{}<link rel=\"stylesheet\" href=\"other.css\"><img src=\"https://evil.example/p.png\">{}",
        &html[..at],
        &html[end..]
    );
    std::fs::write(&tampered, html).unwrap();
    d.log("performance");
    let control = format!("file://{}", tampered.display());
    d.s("POST", "/url", Some(json!({"url": control})));
    let seen: Vec<String> = d
        .log("performance")
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e["message"].as_str()?).ok())
        .filter(|m| m["message"]["method"] == "Network.requestWillBeSent")
        .filter_map(|m| {
            m["message"]["params"]["request"]["url"]
                .as_str()
                .map(String::from)
        })
        .filter(|u| *u != control)
        .collect();
    assert!(
        seen.iter().any(|u| u.contains("evil.example"))
            && seen.iter().any(|u| u.ends_with("other.css")),
        "the control's requests are seen: {seen:?}"
    );
    d.s("POST", "/url", Some(json!({"url": url})));

    // A folded tool call opens on a click, without script.
    let summary = d.s(
        "POST",
        "/element",
        Some(json!({"using": "css selector", "value": "details.tool.call > summary"})),
    );
    let element = summary
        .as_object()
        .and_then(|o| o.values().next())
        .and_then(Value::as_str)
        .unwrap()
        .to_string();
    d.s(
        "POST",
        &format!("/element/{element}/click"),
        Some(json!({})),
    );
    let opened = d.script("return document.querySelector('details.tool.call').open;");
    assert_eq!(opened, true);

    // The reader's dark setting, and print.
    d.cdp(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    );
    let dark = d.script("return getComputedStyle(document.body).backgroundColor;");
    assert_eq!(dark, "rgb(13, 17, 23)", "dark by the reader's setting");
    d.cdp("Emulation.setEmulatedMedia", json!({"media": "print"}));
    let print = d.script(
        "return [getComputedStyle(document.body).backgroundColor, getComputedStyle(document.querySelector('a.anchor')).display];",
    );
    assert_eq!(
        print,
        json!(["rgb(255, 255, 255)", "none"]),
        "print: light, no anchors"
    );
    // Folded parts print unfolded (a closed <details>' content is visible in print).
    let folded =
        "return document.querySelector('details.tool.result:not([open]) pre').checkVisibility();";
    assert_eq!(d.script(folded), true, "a folded tool result prints");
    d.cdp("Emulation.setEmulatedMedia", json!({"media": "screen"}));
    assert_eq!(d.script(folded), false, "and stays folded on screen");
}
