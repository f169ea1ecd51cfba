//! `fen-fs web` in a real browser: Debian's Chromium, headless, driven over WebDriver
//! (chromedriver on 127.0.0.1, a free port) with fantoccini. Every page loads with no
//! console error and no request to another host (Chromium's own browser and
//! performance logs); the planted word is found as it is typed, and its hit opens
//! the session at the very message; a hostile session shows its `<script>`,
//! `onerror`, `onload`, `javascript:` links and iframes as characters and runs
//! nothing; a long session loads the rest as one scrolls; an append shows without a
//! reload; a page of another origin cannot read the API.
//!
//! Without chromium or chromedriver the test says SKIPPED; FEN_FS_REQUIRE_BROWSER=1
//! (CI) makes that a failure. FEN_FS_WEB_SCREENSHOTS=DIR saves a PNG of each page
//! there (`scripts/web-screenshots` writes docs/web/'s).

mod mcp_support;
mod support;
mod web_support;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use web_support::{A, A_TITLE, HOSTILE, IMAGE, LONG, PLANTED, Server, World, session_path};

fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Chromium and its driver, or `None` (SKIPPED, or a failure when required).
fn browser(test: &str) -> Option<(PathBuf, PathBuf)> {
    let chromium = which(&["chromium", "chromium-browser"]);
    let driver = which(&["chromedriver"]);
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        _ => {
            let why = "chromium or chromedriver is not installed (apt-get install chromium chromium-driver)";
            if std::env::var("FEN_FS_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
                panic!("{test}: {why}, and FEN_FS_REQUIRE_BROWSER=1");
            }
            eprintln!("\n*** SKIPPED {test}: {why} ***\n");
            None
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// chromedriver on 127.0.0.1, stopped when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start(path: &Path) -> Driver {
        let port = free_port();
        let child = Command::new(path)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let d = Driver { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while ureq::get(&d.url("/status")).call().is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer in 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        d
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The log `kind` (browser, performance) since the last call.
    fn log(&self, session: &str, kind: &str) -> Vec<Value> {
        let answer = ureq::post(&self.url(&format!("/session/{session}/se/log")))
            .set("Content-Type", "application/json")
            .send_string(&json!({"type": kind}).to_string())
            .expect("read the browser's log");
        let r: Value = serde_json::from_reader(answer.into_reader()).unwrap();
        r["value"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One browser on one server, and what each page is checked for.
struct Browser<'a> {
    c: Client,
    driver: &'a Driver,
    session: String,
    server: &'a Server,
    shots: Option<PathBuf>,
}

impl Browser<'_> {
    async fn js(&self, script: &str) -> Value {
        self.c.execute(script, vec![]).await.expect(script)
    }

    /// Waits (bounded) until `script` returns true.
    async fn until(&self, what: &str, script: &str) {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if self.js(script).await == json!(true) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not after 90 s ({script})"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn ready(&self) {
        self.until(
            "the page's script ran",
            "return document.readyState === 'complete' && document.documentElement.dataset.ready === '1'",
        )
        .await;
    }

    async fn visit(&self, path: &str) {
        let url = if path.starts_with("http") {
            path.to_string()
        } else {
            format!("http://{}{path}", self.server.host())
        };
        self.c.goto(&url).await.expect("goto");
        self.ready().await;
    }

    /// No console error, and every request went to this server.
    fn clean(&self, page: &str) {
        let errors: Vec<Value> = self
            .driver
            .log(&self.session, "browser")
            .into_iter()
            .filter(|e| e["level"] == "SEVERE" || e["level"] == "WARNING")
            .collect();
        assert!(
            errors.is_empty(),
            "{page}: console errors or warnings: {errors:#?}"
        );
        let ours = format!("http://{}/", self.server.host());
        let mut elsewhere = Vec::new();
        let mut requests = 0;
        for e in self.driver.log(&self.session, "performance") {
            let Ok(m) = serde_json::from_str::<Value>(e["message"].as_str().unwrap_or("")) else {
                continue;
            };
            if m["message"]["method"] != "Network.requestWillBeSent" {
                continue;
            }
            let url = m["message"]["params"]["request"]["url"]
                .as_str()
                .unwrap_or("")
                .to_string();
            requests += 1;
            // The browser's own pages (its first tab's) load chrome:// files, never
            // from the network.
            let internal = url.starts_with("chrome://") || url.starts_with("chrome-untrusted://");
            if !(url.starts_with(&ours)
                || url.starts_with("data:")
                || url.starts_with("about:")
                || internal)
            {
                elsewhere.push(url);
            }
        }
        assert!(
            elsewhere.is_empty(),
            "{page}: requests to other hosts: {elsewhere:#?}"
        );
        let _ = requests;
    }

    async fn shot(&self, name: &str) {
        if let Some(dir) = &self.shots {
            let png = self.c.screenshot().await.expect("screenshot");
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(format!("web-{name}.png")), png).unwrap();
        }
    }

    async fn count(&self, selector: &str) -> u64 {
        self.js(&format!(
            "return document.querySelectorAll({}).length",
            serde_json::to_string(selector).unwrap()
        ))
        .await
        .as_u64()
        .unwrap()
    }
}

#[test]
fn every_page_in_chromium() {
    let test = "every_page_in_chromium";
    let Some((chromium, chromedriver)) = browser(test) else {
        return;
    };
    let world = World::new(130);
    let server = Server::start(&world.args());
    let driver = Driver::start(&chromedriver);
    let profile = tempfile::tempdir().unwrap();
    let shots = std::env::var_os("FEN_FS_WEB_SCREENSHOTS").map(PathBuf::from);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        caps.insert(
            "goog:loggingPrefs".into(),
            json!({"browser": "ALL", "performance": "ALL"}),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let c = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&driver.url(""))
            .await
            .expect("a WebDriver session of Chromium");
        let session = c.session_id().await.unwrap().expect("a session id");
        let b = Browser {
            c,
            driver: &driver,
            session,
            server: &server,
            shots,
        };
        // What the browser did before the first page is not the pages'.
        let _ = driver.log(&b.session, "browser");
        let _ = driver.log(&b.session, "performance");
        pages(&b, &world).await;
        b.c.close().await.unwrap();
    });
}

async fn pages(b: &Browser<'_>, world: &World) {
    let s = b.server;

    // Sessions: the token's address sets the cookie and lands on the page without it.
    b.visit(&s.url).await;
    let url = b.c.current_url().await.unwrap();
    assert_eq!(
        url.as_str(),
        format!("http://{}/", s.host()),
        "the token left the address"
    );
    assert!(b.count("table.sessions tbody tr").await >= 4);
    let cookie_seen = b.js("return document.cookie").await;
    assert_eq!(
        cookie_seen,
        json!(""),
        "the cookie is HttpOnly: no script reads it"
    );
    b.until(
        "tokens counted",
        "return document.querySelectorAll('td.pending').length === 0",
    )
    .await;
    b.clean("sessions");
    b.shot("sessions").await;

    // Search as you type: the planted word, a few keys at a time.
    let q = b.c.find(Locator::Css("#q")).await.unwrap();
    q.send_keys(&PLANTED[..4]).await.unwrap();
    q.send_keys(&PLANTED[4..]).await.unwrap();
    b.until(
        "the planted word found as typed",
        &format!("return !!document.querySelector('#live a.hit') && document.querySelector('#live mark').textContent.toLowerCase() === '{PLANTED}'"),
    )
    .await;
    b.shot("search-as-you-type").await;
    b.clean("search as you type");
    let hit = b.c.find(Locator::Css("#live a.hit")).await.unwrap();
    hit.click().await.unwrap();
    b.until(
        "the hit's session opened",
        "return location.pathname.startsWith('/s/')",
    )
    .await;
    b.ready().await;
    b.until(
        "the very message in view",
        "const a = document.querySelector('article.focus'); if (!a) return false; const r = a.getBoundingClientRect(); return a.id === 'm-7' && r.top < innerHeight && r.bottom > 0",
    )
    .await;
    b.clean("a search hit's session");

    // The Search page.
    b.visit(&format!("/search?q={PLANTED}")).await;
    assert!(b.count("#results a.hit").await >= 1);
    b.clean("search");
    b.shot("search").await;

    // A session: its header, the bar, the copy buttons; the page's own title.
    let a = session_path(s, A);
    b.visit(&a).await;
    assert_eq!(b.c.title().await.unwrap(), A_TITLE);
    assert!(
        b.count("header.bar #q").await == 1,
        "the bar on the Session page"
    );
    assert!(b.count("button.copy").await >= 2, "copy buttons");
    b.until(
        "every message shown",
        "return document.querySelector('#more').dataset.done === '1'",
    )
    .await;
    b.clean("session");
    b.shot("session").await;

    // An append shows without a reload.
    b.js("window.__same_page = 42; return true").await;
    let appended = Instant::now();
    web_support::append_turn(
        &world.session_file(A),
        A,
        "/home/u/web",
        30,
        "the appended quillwort answer",
    );
    b.until(
        "the append shown",
        "return document.body.innerText.includes('quillwort')",
    )
    .await;
    eprintln!(
        "web_browser: the append showed after {:?} (the page polls every 0.5 s)",
        appended.elapsed()
    );
    assert_eq!(
        b.js("return window.__same_page").await,
        json!(42),
        "no reload"
    );
    b.clean("session, appended");

    // A screenshot in a prompt shows from its data (the CSP allows `data:` images
    // and nothing else: no console error).
    let image = session_path(s, IMAGE);
    b.visit(&image).await;
    b.until(
        "the screenshot shown",
        "const i = document.querySelector('#messages img'); return !!i && i.complete && i.naturalWidth === 2 && i.src.startsWith('data:image/png;base64,')",
    )
    .await;
    b.clean("a session with an image");

    // The hostile session: everything as characters, nothing run.
    let hostile = session_path(s, HOSTILE);
    b.visit(&hostile).await;
    let title = b.c.title().await.unwrap();
    // Unfold every folded part (the tool call and its result): still nothing runs.
    b.js("document.querySelectorAll('details').forEach(d => d.open = true); return true")
        .await;
    // Give anything that would run the time to run.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        b.js("return typeof window.__pwned").await,
        json!("undefined"),
        "a session's script ran"
    );
    assert_eq!(b.c.title().await.unwrap(), title, "the title changed");
    assert!(title.starts_with("Look at this page"), "{title}");
    for sel in [
        "#messages script",
        "#messages iframe",
        "#messages object",
        "#messages style",
        "#messages svg",
        "#messages img",
        "#messages [onerror]",
        "#messages [onload]",
        "#messages a[href^='javascript']",
    ] {
        assert_eq!(b.count(sel).await, 0, "{sel} in the hostile session's page");
    }
    let text = b
        .js("return document.querySelector('#messages').innerText")
        .await;
    let text = text.as_str().unwrap();
    for shown in [
        "<script>window.__pwned = 1",
        "onerror=\"window.__pwned = 2\"",
        "<svg onload=",
        "javascript:window.__pwned=4",
        "<iframe src=",
    ] {
        assert!(text.contains(shown), "{shown:?} shown as text");
    }
    assert!(
        b.count("#messages details.tool").await >= 2,
        "the tool call and its result folded"
    );
    b.clean("hostile session");
    b.shot("session-hostile").await;

    // A long session: the first screen, the rest as one scrolls.
    let long = session_path(s, LONG);
    b.visit(&long).await;
    let first = b.count("#messages article").await;
    assert!(first < 130, "{first} messages on the first screen");
    let deadline = Instant::now() + Duration::from_secs(90);
    while b.count("#messages article").await < 130 {
        b.js("window.scrollTo(0, document.body.scrollHeight); return true")
            .await;
        assert!(
            Instant::now() < deadline,
            "scrolling did not load every message"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(b.count("#messages article").await, 130);
    assert!(b.count("#m-129").await == 1);
    b.clean("long session");

    // Usage: charts (images of this server) and tables; the page fills in once counted.
    b.visit("/usage?range=custom&since=2026-01-01&until=2026-03-31")
        .await;
    b.until(
        "usage counted",
        "return !!document.querySelector('#by-agent')",
    )
    .await;
    b.ready().await;
    b.until(
        "the charts drawn",
        "return Array.from(document.images).length >= 3 && Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)",
    )
    .await;
    assert!(b.count("#by-model tbody tr").await >= 1);
    b.clean("usage");
    b.shot("usage").await;

    // Machines.
    b.visit("/machines").await;
    assert!(b.count("table.machines tbody tr").await >= 1);
    b.clean("machines");
    b.shot("machines").await;

    // A page of another origin cannot read the API: localhost:PORT is another origin
    // than 127.0.0.1:PORT, and no answer carries a CORS header.
    let other = format!("http://localhost:{}/api/search?q={PLANTED}", s.port);
    let read = b
        .c
        .execute_async(
            "const [url, done] = arguments; fetch(url, {credentials: 'include'}).then(r => r.text()).then(t => done('read: ' + t), e => done('blocked: ' + e))",
            vec![json!(other)],
        )
        .await
        .unwrap();
    let read = read.as_str().unwrap();
    assert!(
        read.starts_with("blocked"),
        "another origin read the API: {read}"
    );
    // That blocked read is an expected console error: drained, not counted.
    let _ = b.driver.log(&b.session, "browser");
    let _ = b.driver.log(&b.session, "performance");
}
