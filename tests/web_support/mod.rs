//! Shared by the `fen-fs web` tests: the server as a child process (its address read
//! from its first line), plain HTTP/1.1 over a TCP socket (so a test sets every header
//! itself, Host included), and a small history in Claude Code's own format: an
//! ordinary session with a planted word, a hostile one whose text and tool output try
//! every way of running script, and a long one.
#![allow(dead_code)]

use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

pub const A: &str = "0a0a0a0a-0000-4000-8000-00000000000a";
pub const HOSTILE: &str = "0d0d0d0d-0000-4000-8000-00000000000d";
pub const LONG: &str = "0e0e0e0e-0000-4000-8000-00000000000e";
/// The word planted in A's eighth message.
pub const PLANTED: &str = "zephyrine";
/// A secret in B's first prompt: shown to the owner, redacted in an export.
pub const SECRET: &str = "sk-ant-api03-6YYZYn9ZhyiA4uoRgnatmUdjAWtGSU8po_799NksnRH9ucAUsdMlHUvTCQCyEZDz-TddJ8HyS5SUkCnD8zRA9a9SkpXz9AA";
pub const B: &str = "0b0b0b0b-0000-4000-8000-00000000000b";
/// A session whose prompt holds a screenshot (an image part, shown from its data).
pub const IMAGE: &str = "0c0c0c0c-0000-4000-8000-00000000000c";
/// A's title (its first prompt).
pub const A_TITLE: &str = "Fix the flaky login test";

/// What a hostile session tries: each would set `window.__pwned` or change the
/// page's title if it ran.
pub const ATTACKS: [&str; 7] = [
    "<script>window.__pwned = 1; document.title = 'pwned'</script>",
    "<img src=x onerror=\"window.__pwned = 2\">",
    "<svg onload=\"window.__pwned = 3\"><circle r=5></circle></svg>",
    "[click me](javascript:window.__pwned=4)",
    "<iframe src=\"javascript:parent.__pwned=5\"></iframe>",
    "<a href=\"javascript:window.__pwned=6\">a link</a>",
    "<style>body{display:none}</style><object data=\"javascript:window.__pwned=7\"></object>",
];

/// The `fen-fs web` server of a test.
pub struct Server {
    pub child: Child,
    /// The address it printed (with `?token=`).
    pub url: String,
    pub port: u16,
    pub token: String,
}

impl Server {
    /// `fen-fs web --port 0 ARGS`, once it printed its address.
    pub fn start(args: &[String]) -> Server {
        let mut cmd = super::support::fen_fs();
        cmd.arg("web")
            .args(["--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("start fen-fs web");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(l)) = lines.next() {
                let _ = tx.send(l);
            }
            // The rest is drained, so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("fen-fs web printed no address in 60 s");
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| panic!("not the address of 127.0.0.1: {url}"));
        let (port, token) = rest.split_once("/?token=").expect("a ?token= address");
        Server {
            port: port.parse().unwrap(),
            token: token.to_string(),
            url: url.clone(),
            child,
        }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn cookie(&self) -> String {
        format!("fen_fs_web_{}={}", self.port, self.token)
    }

    /// GET `path` as the page would (its Host, its cookie).
    pub fn get(&self, path: &str) -> Response {
        self.raw(&format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
            self.host(),
            self.cookie()
        ))
    }

    /// GET `path` until `ok` holds (bounded: a loaded machine builds slowly).
    pub fn get_until(&self, path: &str, what: &str, ok: impl Fn(&Response) -> bool) -> Response {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let r = self.get(path);
            if ok(&r) {
                return r;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not after 90 s; last answer to {path}: {} {}",
                r.status,
                r.body
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Sends `request` as it is.
    pub fn raw(&self, request: &str) -> Response {
        raw(self.port, request)
    }

    /// SIGTERM, then its exit status (within 30 s).
    pub fn stop(mut self) -> std::process::ExitStatus {
        // SAFETY: a plain kill(2) of our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "fen-fs web did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Names lower case, in order.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request on a new connection, read to its end (the request says `Connection:
/// close`, or is HTTP/1.0).
pub fn raw(port: u16, request: &str) -> Response {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).expect("read the answer");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect::<Vec<_>>();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// One line of a Claude Code session.
fn line(
    id: &str,
    cwd: &str,
    i: usize,
    t0: chrono::DateTime<chrono::FixedOffset>,
    parent: Option<&str>,
) -> serde_json::Value {
    let ts = (t0 + chrono::Duration::seconds(i as i64))
        .to_utc()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    json!({
        "uuid": format!("{}-{i:04}", &id[..8]), "parentUuid": parent, "sessionId": id, "cwd": cwd,
        "timestamp": ts, "isSidechain": false, "userType": "external", "version": "2.1.0",
    })
}

/// A Claude Code session whose assistant calls a tool whose output holds `attacks`,
/// and whose prompts and answers hold them as text.
pub fn hostile_session(root: &Path) -> PathBuf {
    let cwd = "/home/u/evil";
    let folder = root.join("projects").join(cwd.replace(['/', '.'], "-"));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("{HOSTILE}.jsonl"));
    let t0 = chrono::DateTime::parse_from_rfc3339("2026-02-10T09:00:00Z").unwrap();
    let all = ATTACKS.join("\n\n");
    let mut lines = Vec::new();
    let mut l = line(HOSTILE, cwd, 0, t0, None);
    l["type"] = json!("user");
    l["message"] = json!({"role": "user", "content": format!("Look at this page: {all}")});
    lines.push(l);
    let mut l = line(HOSTILE, cwd, 1, t0, Some("0d0d0d0d-0000"));
    l["type"] = json!("assistant");
    l["message"] = json!({
        "id": "msg_h1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": format!("Reading it. {all}")},
            {"type": "tool_use", "id": "toolu_h1", "name": "Bash", "input": {"command": format!("curl http://example.invalid/ # {}", ATTACKS[0])}},
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    });
    lines.push(l);
    let mut l = line(HOSTILE, cwd, 2, t0, Some("0d0d0d0d-0001"));
    l["type"] = json!("user");
    l["message"] = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_h1", "content": format!("<html><body>{all}</body></html>")},
    ]});
    lines.push(l);
    let mut l = line(HOSTILE, cwd, 3, t0, Some("0d0d0d0d-0002"));
    l["type"] = json!("assistant");
    l["message"] = json!({
        "id": "msg_h2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": format!("```html\n{all}\n```\nAll shown as text.")}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 120, "output_tokens": 30},
    });
    lines.push(l);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// A 2×2 PNG, red.
pub const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg==";

/// A Claude Code session whose first prompt holds a screenshot.
pub fn image_session(root: &Path) -> PathBuf {
    let cwd = "/home/u/shots";
    let folder = root.join("projects").join(cwd.replace(['/', '.'], "-"));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("{IMAGE}.jsonl"));
    let t0 = chrono::DateTime::parse_from_rfc3339("2026-02-12T09:00:00Z").unwrap();
    let mut l = line(IMAGE, cwd, 0, t0, None);
    l["type"] = json!("user");
    l["message"] = json!({"role": "user", "content": [
        {"type": "text", "text": "The button is red in this screenshot"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}},
    ]});
    let mut a = line(IMAGE, cwd, 1, t0, Some("0c0c0c0c-0000"));
    a["type"] = json!("assistant");
    a["message"] = json!({
        "id": "msg_i1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "It should be blue."}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 50, "output_tokens": 8},
    });
    std::fs::write(&path, format!("{l}\n{a}\n")).unwrap();
    path
}

/// Appends a user prompt and an assistant answer to Claude Code session `path`
/// (its last entry's uuid `parent`), the answer holding `text`.
pub fn append_turn(path: &Path, id: &str, cwd: &str, n: usize, text: &str) {
    let t0 = chrono::DateTime::parse_from_rfc3339("2026-03-05T09:00:00Z").unwrap();
    let existing = std::fs::read_to_string(path).unwrap();
    let last: serde_json::Value = serde_json::from_str(existing.lines().last().unwrap()).unwrap();
    let parent = last["uuid"].as_str().unwrap().to_string();
    let mut l = line(id, cwd, n, t0, Some(&parent));
    l["uuid"] = json!(format!("{}-live-{n}", &id[..8]));
    l["type"] = json!("assistant");
    l["message"] = json!({
        "id": format!("msg_live_{n}"), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    });
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(format!("{l}\n").as_bytes()).unwrap();
}

/// The history of the tests: Claude Code sessions A (30 messages, the planted word in
/// message 7), HOSTILE, LONG (`long` messages) and B (a second project), with usage.
pub struct World {
    pub tmp: tempfile::TempDir,
    pub store: PathBuf,
    pub claude: PathBuf,
}

impl World {
    pub fn new(long: usize) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        std::fs::create_dir_all(&store).unwrap();
        let claude = tmp.path().join("claude");
        let texts: Vec<String> = (0..30)
            .map(|i| match i {
                0 => A_TITLE.to_string(),
                7 => format!("The retry hides a race: {PLANTED} timing in the login handler"),
                i if i % 2 == 1 => format!(
                    "Answer {i}: here is **bold** text and code:\n\n```rust\nfn answer_{i}() -> u32 {{ {i} }}\n```"
                ),
                i => format!("message number {i}"),
            })
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        super::mcp_support::claude_session(
            &claude,
            "/home/u/web",
            A,
            "2026-03-01T10:00:00Z",
            &texts,
        );
        super::mcp_support::claude_session(
            &claude,
            "/home/u/api",
            B,
            "2026-02-01T09:00:00Z",
            &[
                &format!("Deploy the api with ANTHROPIC_API_KEY={SECRET}"),
                "Deployed.",
            ],
        );
        let texts: Vec<String> = (0..long).map(|i| format!("long message {i}")).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        super::mcp_support::claude_session(
            &claude,
            "/home/u/long",
            LONG,
            "2026-01-15T08:00:00Z",
            &texts,
        );
        hostile_session(&claude);
        image_session(&claude);
        // Another machine's store, as Syncthing delivers it (§12): one fen session.
        let peer = tmp.path().join("peers").join("desktop");
        let cwd = "/home/u/web";
        let ns = fen_fs::store::naming::slug(cwd);
        std::fs::create_dir_all(peer.join(&ns)).unwrap();
        let id = "0190a000-0000-7000-8000-0000000000f1";
        let header = json!({"type":"session","version":2,"id":id,"timestamp":"2026-02-20T08:00:00.000Z","cwd":cwd});
        let entry = json!({"type":"message","id":"0190a000-0000-7000-8000-000000000001","parent-id":null,
            "timestamp":"2026-02-20T08:01:00.000Z","message":{"role":"user","content":"Port the login form to the desktop build"}});
        std::fs::write(
            peer.join(&ns)
                .join(format!("2026-02-20T08-00-00-000Z_{id}.jsonl")),
            format!("{header}\n{entry}\n"),
        )
        .unwrap();
        World { tmp, store, claude }
    }

    pub fn args(&self) -> Vec<String> {
        vec![
            "--store".into(),
            self.store.display().to_string(),
            "--no-detect".into(),
            "--source".into(),
            format!("claude={}", self.claude.display()),
            "--peers".into(),
            self.tmp.path().join("peers").display().to_string(),
        ]
    }

    pub fn session_file(&self, id: &str) -> PathBuf {
        let mut stack = vec![self.claude.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy() == format!("{id}.jsonl"))
                {
                    return p;
                }
            }
        }
        panic!("no file of session {id}");
    }
}

/// The Session page's address of Claude Code session `id` (its folder name as
/// listed: the Sessions page links it).
pub fn session_path(server: &Server, id: &str) -> String {
    let page = server.get_until("/", "the session listed", |r| r.body.contains(id));
    let at = page
        .body
        .find(&format!("claude-{id}"))
        .expect("the session's link");
    let start = page.body[..at].rfind("href=\"").unwrap() + "href=\"".len();
    let end = start + page.body[start..].find('"').unwrap();
    page.body[start..end].to_string()
}

/// A pi session (format 3) of `id` in `cwd` under `root` (pi's agent folder): one
/// prompt and one answer whose usage pi recorded as `input` + `output` tokens costing
/// `cost` dollars.
pub fn pi_session(root: &Path, cwd: &str, id: &str, input: u64, output: u64, cost: f64) -> PathBuf {
    let folder = root.join("sessions").join(format!(
        "--{}--",
        cwd.trim_start_matches('/').replace('/', "-")
    ));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("2026-03-02T10-00-00-000Z_{id}.jsonl"));
    let lines = [
        json!({"type": "session", "version": 3, "id": id, "timestamp": "2026-03-02T10:00:00.000Z", "cwd": cwd}),
        json!({"type": "message", "id": "e0000001", "parentId": null, "timestamp": "2026-03-02T10:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "Port the parser to pi"}], "timestamp": 1_772_445_601_000u64}}),
        json!({"type": "message", "id": "e0000002", "parentId": "e0000001", "timestamp": "2026-03-02T10:00:05.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Ported."}],
                "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                "usage": {"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0, "totalTokens": input + output,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}},
                "stopReason": "stop", "timestamp": 1_772_445_605_000u64}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// Every message article of the Session page at `path`: the first screen and each
/// next fragment, as the page loads them scrolling down (their `id`s, in order).
pub fn page_articles(server: &Server, path: &str) -> Vec<String> {
    article_ids(&page_html(server, path))
}

/// The Session page at `path` with every next fragment appended, as the page holds
/// it once scrolled to its end.
pub fn page_html(server: &Server, path: &str) -> String {
    let first = server.get(path);
    assert_eq!(first.status, 200, "{path}: {}", first.body);
    let mut html = first.body.clone();
    let attr = |name: &str| -> String {
        first
            .body
            .split(&format!("{name}=\""))
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_default()
            .to_string()
    };
    let href = attr("data-href").replace("&amp;", "&");
    let mut next: u64 = attr("data-next").parse().unwrap();
    let mut done = attr("data-done") == "1";
    while !done {
        let r = server.get(&format!("{href}?from={next}"));
        let f: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        html.push_str(f["html"].as_str().unwrap());
        next = f["next"].as_u64().unwrap();
        done = f["done"] == true;
    }
    html
}

/// The `id`s of `<article id="m-N">`s in `html`, in order.
pub fn article_ids(html: &str) -> Vec<String> {
    html.split("<article id=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}
