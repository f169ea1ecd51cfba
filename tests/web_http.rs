//! `fen-fs web` over plain HTTP, no browser: the guard (Host allow-list first, the
//! token and its cookie, Origin of a POST, no CORS header, the CSP on every answer),
//! every page and its JSON over a Claude Code history, a hostile session rendered as
//! text, the Usage JSON equal to `fen-fs usage --json`, the Session page's next
//! messages as one scrolls and an append within a poll, downloads, and a clean stop
//! on SIGTERM.

mod mcp_support;
mod support;
mod web_support;

use web_support::{
    A, A_TITLE, ATTACKS, B, HOSTILE, LONG, PLANTED, SECRET, Server, World, session_path,
};

fn world_server() -> (World, Server) {
    let w = World::new(130);
    let s = Server::start(&w.args());
    (w, s)
}

#[test]
fn the_guard_refuses_other_hosts_missing_tokens_and_foreign_posts() {
    let (_w, s) = world_server();
    let port = s.port;

    // Host first, before anything else: even with the right cookie.
    for host in [
        "evil.example",
        "evil.example:80",
        &format!("127.0.0.2:{port}"),
        "127.0.0.1",
    ] {
        let r = s.raw(&format!(
            "GET / HTTP/1.1\r\nHost: {host}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
            s.cookie()
        ));
        assert_eq!(r.status, 403, "Host {host}: {r:?}");
        assert!(
            r.body.starts_with("fen-fs web: refused: the Host header"),
            "{}",
            r.body
        );
        assert!(r.body.contains("DNS rebinding"), "{}", r.body);
        assert_eq!(r.body.lines().count(), 1, "one line saying why: {}", r.body);
    }
    let r = s.raw(&format!(
        "GET /?token={} HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n",
        s.token
    ));
    assert!(r.status == 403 || r.status == 400, "empty Host: {r:?}");
    assert!(
        r.header("set-cookie").is_none(),
        "no cookie for a request with an empty Host"
    );
    let r = s.raw(&format!("GET /?token={} HTTP/1.0\r\n\r\n", s.token));
    assert!((400..500).contains(&r.status), "no Host at all: {r:?}");
    assert!(r.header("set-cookie").is_none());
    // Each of the names this server answers to is accepted.
    for host in [
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        s.host(),
    ] {
        let r = s.raw(&format!(
            "GET / HTTP/1.1\r\nHost: {host}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
            s.cookie()
        ));
        assert_eq!(r.status, 200, "Host {host}: {}", r.body);
    }

    // No token: 401; a wrong one: 403.
    let r = s.raw(&format!(
        "GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        s.host()
    ));
    assert_eq!(r.status, 401, "{r:?}");
    assert!(r.body.contains("no token"), "{}", r.body);
    for path in [
        "/api/search?q=zephyrine",
        "/assets/app.js",
        "/usage",
        "/s/x/messages",
    ] {
        let r = s.raw(&format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            s.host()
        ));
        assert_eq!(r.status, 401, "{path} without the token: {r:?}");
        assert!(!r.body.contains(PLANTED));
    }
    let r = s.raw(&format!(
        "GET / HTTP/1.1\r\nHost: {}\r\nCookie: fen_fs_web_{port}=0123456789abcdef0123456789abcdef\r\nConnection: close\r\n\r\n",
        s.host()
    ));
    assert_eq!(r.status, 403, "a wrong cookie: {r:?}");
    let r = s.raw(&format!(
        "GET /?token=nope HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        s.host()
    ));
    assert_eq!(r.status, 403);
    assert!(r.header("set-cookie").is_none());

    // The token sets the cookie and goes to the same address without it.
    let r = s.raw(&format!(
        "GET /search?q=a+b&token={}&x=1 HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        s.token,
        s.host()
    ));
    assert_eq!(r.status, 303, "{r:?}");
    assert_eq!(r.header("location"), Some("/search?q=a+b&x=1"));
    let cookie = r.header("set-cookie").expect("a cookie");
    assert!(
        cookie.starts_with(&format!("fen_fs_web_{port}={};", s.token)),
        "{cookie}"
    );
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attr), "{attr} in {cookie}");
    }

    // A POST needs this page's Origin (or Sec-Fetch-Site: same-origin).
    let post = |extra: &str| {
        s.raw(&format!(
            "POST /s/{A}/export HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n",
            s.host(),
            s.cookie()
        ))
    };
    for (extra, why) in [
        ("", "no Origin"),
        ("Origin: http://evil.example\r\n", "another Origin"),
        ("Origin: null\r\n", "a null Origin"),
        ("Sec-Fetch-Site: cross-site\r\n", "cross-site"),
        (
            &format!("Origin: http://127.0.0.1:{}\r\n", port + 1) as &str,
            "another port",
        ),
    ] {
        let r = post(extra);
        assert_eq!(r.status, 403, "{why}: {r:?}");
        assert!(
            r.body.contains("must come from this page"),
            "{why}: {}",
            r.body
        );
    }
    for extra in [
        format!("Origin: http://127.0.0.1:{port}\r\n"),
        format!("Origin: http://localhost:{port}\r\n"),
        "Sec-Fetch-Site: same-origin\r\n".to_string(),
    ] {
        let r = post(&extra);
        assert_ne!(r.status, 403, "{extra}: {r:?}");
    }

    // No CORS header anywhere, even asked; the CSP on every answer, refusals too.
    let preflight = s.raw(&format!(
        "OPTIONS /api/search?q=x HTTP/1.1\r\nHost: {}\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: GET\r\nConnection: close\r\n\r\n",
        s.host()
    ));
    assert!(preflight.status >= 400, "{preflight:?}");
    let asked = s.raw(&format!(
        "GET /api/search?q={PLANTED} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nOrigin: http://evil.example\r\nConnection: close\r\n\r\n",
        s.host(),
        s.cookie()
    ));
    let refused = s.raw("GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n");
    for r in [
        &preflight,
        &asked,
        &refused,
        &s.get("/"),
        &s.get("/assets/app.js"),
    ] {
        assert!(
            !r.headers
                .iter()
                .any(|(k, _)| k.starts_with("access-control-")),
            "a CORS header: {:?}",
            r.headers
        );
        let csp = r.header("content-security-policy").expect("a CSP");
        for part in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "connect-src 'self'",
        ] {
            assert!(csp.contains(part), "{part} in {csp}");
        }
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{csp}"
        );
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    assert_eq!(s.stop().code(), Some(0), "SIGTERM: a clean exit");
}

#[test]
fn every_page_answers_over_the_history_and_a_hostile_session_is_text() {
    let (w, s) = world_server();
    let home = s.get_until("/", "the sessions listed", |r| r.body.contains(A_TITLE));
    assert_eq!(home.status, 200);
    assert_eq!(
        home.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    for id in [A, HOSTILE, LONG] {
        assert!(home.body.contains(id), "{id} listed");
    }
    assert!(!home.body.contains("<script>"), "no inline script");
    assert!(
        home.body
            .contains("<script src=\"/assets/app.js\" defer></script>")
    );
    // Filters: by project, by agent; a page past the end shows the last.
    let web = s.get("/?project=/home/u/web");
    assert!(
        web.body.contains(A) && !web.body.contains(LONG),
        "{}",
        web.body
    );
    assert!(!s.get("/?agent=codex").body.contains(A));
    assert!(s.get("/?page=99").body.contains(A));

    // Search: the planted word, its snippet marked, a link to the very message.
    let found = s.get_until(
        &format!("/api/search?q={PLANTED}"),
        "the planted word found",
        |r| r.body.contains("\"href\""),
    );
    let answer: serde_json::Value = serde_json::from_str(&found.body).unwrap();
    let hit = &answer["hits"][0];
    assert_eq!(hit["agent"], "claude");
    assert!(
        hit["snippet"]
            .as_str()
            .unwrap()
            .contains(&format!("**{PLANTED}**"))
    );
    let href = hit["href"].as_str().unwrap();
    assert!(
        href.starts_with("/s/") && href.contains("?entry="),
        "{href}"
    );
    let page = s.get(href);
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("data-focus=\"m-7\""),
        "focus on the message"
    );
    assert!(page.body.contains("id=\"m-7\""));
    // The query language's filters, written in the box.
    let none: serde_json::Value =
        serde_json::from_str(&s.get(&format!("/api/search?q={PLANTED}+agent:codex")).body).unwrap();
    assert_eq!(none["hits"].as_array().unwrap().len(), 0);
    let bad: serde_json::Value =
        serde_json::from_str(&s.get("/api/search?q=x+agent:nobody").body).unwrap();
    assert!(bad["error"].as_str().unwrap().contains("nobody"));
    let search_page = s.get(&format!("/search?q={PLANTED}"));
    assert!(
        search_page
            .body
            .contains(&format!("<mark>{PLANTED}</mark>"))
    );

    // The hostile session: every attack is characters on the page, none markup.
    let hostile = session_path(&s, HOSTILE);
    let page = s.get(&hostile);
    assert_eq!(page.status, 200, "{}", page.body);
    let main = &page.body[page.body.find("<main").unwrap()..];
    // Every `<` of the page begins a real tag (a text's `<` is `&lt;`): no tag is one
    // that runs or loads something, and no attribute is an event or a script URL.
    for tag in main
        .split('<')
        .skip(1)
        .map(|t| &t[..t.find('>').unwrap_or(t.len())])
    {
        let t = tag.to_ascii_lowercase();
        let name: String = t
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        assert!(
            ![
                "script", "img", "svg", "iframe", "object", "embed", "style", "link", "meta",
                "base", "form"
            ]
            .contains(&name.as_str()),
            "<{tag}> in the hostile session's page"
        );
        assert!(!t.contains("javascript:"), "<{tag}>: a script URL");
        assert!(
            !t.split_whitespace().skip(1).any(|a| a.starts_with("on")),
            "<{tag}>: an event attribute"
        );
    }
    assert!(
        main.contains("&lt;script&gt;window.__pwned = 1"),
        "shown as text"
    );
    // Inside an element a quote needs no reference: the escaped `<` is what makes
    // the tag text (and no tag of the page has an event attribute, checked above).
    assert!(
        main.contains("&lt;img src=x onerror=") && main.contains("window.__pwned = 2"),
        "shown as text"
    );
    let _ = ATTACKS;

    // A long session: the first screen, then the rest a fragment at a time.
    let long = session_path(&s, LONG);
    let first = s.get(&long);
    let shown = first.body.matches("<article id=\"m-").count();
    assert!(
        shown > 0 && shown < 130,
        "{shown} messages on the first screen"
    );
    let next: u64 = first
        .body
        .split("data-next=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(next, shown as u64);
    let mut seen = shown as u64;
    let mut from = next;
    loop {
        let f: serde_json::Value =
            serde_json::from_str(&s.get(&format!("{long}/messages?from={from}")).body).unwrap();
        let html = f["html"].as_str().unwrap();
        assert!(
            html.contains(&format!("id=\"m-{from}\"")),
            "starts at {from}"
        );
        seen += html.matches("<article id=\"m-").count() as u64;
        from = f["next"].as_u64().unwrap();
        if f["done"] == true {
            break;
        }
    }
    assert_eq!(seen, 130, "every message once");
    // Earlier messages, for a page that starts at a hit.
    let earlier: serde_json::Value =
        serde_json::from_str(&s.get(&format!("{long}/messages?before=60")).body).unwrap();
    assert_eq!(earlier["from"], 20);
    assert!(earlier["html"].as_str().unwrap().contains("id=\"m-20\""));
    assert!(!earlier["html"].as_str().unwrap().contains("id=\"m-60\""));

    // An append shows at the next poll; a poll of an unchanged session is empty.
    let a = session_path(&s, A);
    let f: serde_json::Value =
        serde_json::from_str(&s.get(&format!("{a}/messages?from=30")).body).unwrap();
    assert_eq!(f["html"], "");
    assert_eq!(f["done"], true);
    web_support::append_turn(
        &w.session_file(A),
        A,
        "/home/u/web",
        30,
        "the appended quillwort answer",
    );
    let grown = s.get_until(&format!("{a}/messages?from=30"), "the append shown", |r| {
        r.body.contains("quillwort")
    });
    let f: serde_json::Value = serde_json::from_str(&grown.body).unwrap();
    assert!(f["html"].as_str().unwrap().contains("id=\"m-30\""));
    assert_eq!(f["next"], 31);

    // Downloads: the transcript as the agent wrote it, conversation.md.
    let t = s.get(&format!("{a}/transcript.jsonl"));
    assert_eq!(t.status, 200);
    assert_eq!(t.body, std::fs::read_to_string(w.session_file(A)).unwrap());
    assert!(
        t.header("content-disposition")
            .unwrap()
            .starts_with("attachment;")
    );
    let md = s.get(&format!("{a}/conversation.md"));
    assert_eq!(md.status, 200);
    assert!(md.body.contains(PLANTED));

    // Export: the file `fen-fs export` writes, its secrets redacted (the page itself
    // shows the owner's data as it is); by the link (GET) or by a form (POST).
    let b = session_path(&s, B);
    assert!(
        s.get(&b).body.contains(SECRET),
        "the owner sees the session as it is"
    );
    let exported = s.get(&format!("{b}/export"));
    assert_eq!(exported.status, 200, "{}", exported.body);
    assert_eq!(
        exported.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        exported
            .header("content-disposition")
            .unwrap()
            .contains(&format!("claude-{B}.html"))
    );
    assert!(
        !exported.body.contains(SECRET),
        "the secret left through Export"
    );
    assert!(exported.body.contains("[REDACTED:anthropic-key]"));
    assert!(
        exported
            .header("x-fen-fs-redacted")
            .unwrap()
            .contains("anthropic-key")
    );
    let cli = support::fen_fs()
        .args(["export", B, "-o", "-"])
        .args(w.args())
        .output()
        .unwrap();
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    assert_eq!(
        exported.body.as_bytes(),
        cli.stdout,
        "the same file as fen-fs export"
    );
    let posted = s.raw(&format!(
        "POST {b}/export HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nOrigin: http://{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        s.host(),
        s.cookie(),
        s.host()
    ));
    assert_eq!(posted.status, 200);

    // Machines, assets, and a session that is not there.
    let machines = s.get("/machines");
    assert_eq!(machines.status, 200);
    assert!(machines.body.contains("this machine"));
    assert!(machines.body.contains("desktop"), "the peer's machine");
    assert!(
        home.body.contains("Port the login form"),
        "the peer's session listed"
    );
    for (asset, kind) in [
        ("app.js", "text/javascript"),
        ("app.css", "text/css"),
        ("session.css", "text/css"),
    ] {
        let r = s.get(&format!("/assets/{asset}"));
        assert_eq!(r.status, 200);
        assert!(r.header("content-type").unwrap().starts_with(kind));
    }
    let missing = s.get("/s/no-such-session");
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("no session matches"));
    assert_eq!(s.get("/nothing/here").status, 404);
}

#[test]
fn usage_is_what_fen_fs_usage_json_says() {
    let (w, s) = world_server();
    for report in ["daily", "model", "project", "agent", "session"] {
        let r = s.get_until(
            &format!("/api/usage?report={report}&range=custom&since=2026-01-01&until=2026-03-31"),
            "usage counted",
            |r| r.status == 200,
        );
        let mut cli = support::fen_fs();
        cli.args([
            "usage",
            report,
            "--json",
            "--since",
            "2026-01-01",
            "--until",
            "2026-03-31",
        ])
        .args(w.args());
        let out = cli.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            r.body,
            String::from_utf8(out.stdout).unwrap(),
            "report {report}"
        );
        assert!(!r.body.is_empty(), "{report}: rows");
    }
    let page = s.get_until(
        "/usage?range=custom&since=2026-01-01&until=2026-03-31",
        "the usage page counted",
        |r| r.body.contains("id=\"by-agent\""),
    );
    assert!(page.body.contains("claude-sonnet-4-5"));
    assert!(page.body.contains("/usage/chart.svg?report=daily"));
    for report in ["daily", "project", "model"] {
        let svg = s.get(&format!("/usage/chart.svg?report={report}&range=custom&since=2026-01-01&until=2026-03-31&stack=model"));
        assert_eq!(svg.status, 200, "{report}: {}", svg.body);
        assert_eq!(svg.header("content-type"), Some("image/svg+xml"));
        roxmltree::Document::parse(&svg.body).expect("well-formed SVG");
    }
    let bad = s.get("/usage?range=custom&since=2026-03-01&until=2026-01-01");
    assert!(bad.body.contains("before since"), "{}", bad.body);
    // The Sessions page shows each session's tokens once counted.
    let home = s.get_until("/", "tokens shown", |r| !r.body.contains("data-usage="));
    assert!(home.body.contains("$"), "a cost column");
}

#[test]
fn listening_elsewhere_warns_and_a_bad_port_is_a_clear_error() {
    let w = World::new(2);
    // The port of a server already listening.
    let s = Server::start(&w.args());
    let out = support::fen_fs()
        .args(["web", "--port", &s.port.to_string()])
        .args(w.args())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("listening on 127.0.0.1:{}", s.port)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = support::fen_fs()
        .args(["web", "--listen", "not-an-address"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // Another address: a warning, and the token still needed.
    let mut cmd = support::fen_fs();
    cmd.args(["web", "--port", "0", "--listen", "0.0.0.0"])
        .args(w.args())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert!(line.contains("warning: listening on 0.0.0.0"), "{line}");
    let _ = child.kill();
    let _ = child.wait();
    drop(s);
}

/// Two agents can write ids of one form (pi's and Claude Code's are both UUIDs): a
/// pi session with Claude session A's id shows its own tokens and cost, and A its
/// own, on the Sessions page, its JSON, and each Session page's header.
#[test]
fn tokens_and_cost_are_each_sessions_own_when_two_agents_share_an_id() {
    let w = World::new(130);
    let pi = w.tmp.path().join("pi");
    web_support::pi_session(&pi, "/home/u/pi", A, 1000, 234, 0.5);
    let mut args = w.args();
    args.extend(["--source".into(), format!("pi={}", pi.display())]);
    let s = Server::start(&args);
    let home = s.get_until("/", "tokens counted", |r| {
        r.body.contains("Port the parser to pi") && !r.body.contains("data-usage=")
    });
    let row = |agent: &str| -> String {
        home.body
            .split("<tr>")
            .find(|r| r.contains(A) && r.contains(&format!("<td>{agent}</td>")))
            .unwrap_or_else(|| panic!("no {agent} row of {A}"))
            .to_string()
    };
    // Claude's A: 15 answers of 10 + 5 tokens.
    assert!(row("claude").contains(">225<"), "{}", row("claude"));
    assert!(
        row("pi").contains(">1,234<") && row("pi").contains(">$0.50<"),
        "{}",
        row("pi")
    );
    // The JSON the page fills its cells from, by agent, host and id.
    let host = fen_fs::host::this_host();
    let keys = format!("claude/{host}/{A}\npi/{host}/{A}");
    let r = s.get(&format!("/api/session-usage?keys={}", url_encode(&keys)));
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["sessions"][format!("claude/{host}/{A}")]["tokens"], "225");
    assert_eq!(v["sessions"][format!("pi/{host}/{A}")]["tokens"], "1,234");
    assert_eq!(v["sessions"][format!("pi/{host}/{A}")]["cost"], "$0.50");
    // Each Session page's header.
    let pi_href = home
        .body
        .split("href=\"")
        .map(|s| &s[..s.find('"').unwrap()])
        .find(|h| h.contains(&format!("pi-{A}")))
        .expect("the pi session's link")
        .to_string();
    let page = s.get(&pi_href);
    assert!(page.body.contains("<dd>1,234</dd>"), "{}", page.body);
    let page = s.get(&session_path(&s, A));
    assert!(page.body.contains("<dd>225</dd>"), "claude's A");
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The commands that continue a session are the ones that work: a session already
/// continued in Codex by `fen-fs resume --in codex` offers the Codex session made
/// then (as `fen-fs resume` and the MCP server's `resume_command` do), not a second
/// copy; a session its agent deleted (shown from fen's kept copy) is restored before
/// its agent resumes it.
#[test]
fn resume_commands_open_what_was_made_and_restore_what_was_deleted() {
    let (w, s) = world_server();
    let codex = w.tmp.path().join("codex");
    std::fs::create_dir_all(&codex).unwrap();
    let a = session_path(&s, A);
    let before = s.get(&a);
    assert!(
        before
            .body
            .contains(&format!("fen-fs resume {A} --in codex"))
    );

    let mut resume = support::fen_fs();
    resume
        .args(["resume", A, "--in", "codex"])
        .args(w.args())
        .args(["--source", &format!("codex={}", codex.display())]);
    let out = resume.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `cd /home/u/web && codex resume NEW`.
    let printed = String::from_utf8(out.stdout).unwrap();
    let made = printed.trim().lines().last().unwrap().to_string();
    assert!(made.contains("codex resume "), "{made}");
    let after = s.get(&a);
    assert!(
        after.body.contains(&html_text(&made)),
        "the Codex session made then: {made}"
    );
    assert!(
        !after
            .body
            .contains(&format!("fen-fs resume {A} --in codex")),
        "a second copy offered"
    );
    assert!(
        after.body.contains(&format!("fen-fs resume {A} --in pi")),
        "the other agents as before"
    );

    // B's file is kept, then deleted by its agent.
    let keep = support::fen_fs()
        .arg("keep")
        .args(["--store", &w.store.display().to_string(), "--no-detect"])
        .args(["--source", &format!("claude={}", w.claude.display())])
        .output()
        .unwrap();
    assert!(
        keep.status.success(),
        "{}",
        String::from_utf8_lossy(&keep.stderr)
    );
    std::fs::remove_file(w.session_file(B)).unwrap();
    let home = s.get_until("/?kept=deleted", "B shown as deleted", |r| {
        r.body.contains(B)
    });
    assert!(home.body.contains("badge deleted"));
    let b = session_path(&s, B);
    let page = s.get(&b);
    assert!(page.body.contains("deleted by its agent"), "the badge");
    let restore = format!(
        "fen-fs restore {B} --store {} --source claude={} --no-detect &amp;&amp; cd /home/u/api &amp;&amp; claude --resume {B}",
        w.store.display(),
        w.claude.display()
    );
    assert!(page.body.contains(&restore), "{}", page.body);
}

/// `s` as it stands in the page's HTML text.
fn html_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The Export button gives the page that was read: for every session of every
/// agent's public fixtures (Claude Code's compactions and rewinds, Codex, Gemini CLI,
/// Copilot CLI, Cursor's transcripts, OpenClaw), the exported file holds the same
/// message articles as the Session page with every fragment loaded, and the header
/// the page's tokens and cost.
#[test]
fn the_export_button_gives_the_page_that_was_read_for_every_agents_sessions() {
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures");
    let store = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--store".to_string(),
        store.path().display().to_string(),
        "--no-detect".into(),
    ];
    for agent in ["claude", "codex", "gemini", "copilot", "cursor", "openclaw"] {
        args.extend([
            "--source".into(),
            format!("{agent}={}", fixtures.join(agent).display()),
        ]);
    }
    let s = Server::start(&args);
    let home = s.get_until("/", "every session counted", |r| {
        r.body.contains("<table") && !r.body.contains("data-usage=")
    });
    let mut pages = 1;
    while home.body.contains(&format!("?page={}", pages + 1)) {
        pages += 1;
    }
    let mut sessions = Vec::new();
    for p in 1..=pages {
        let page = s.get(&format!("/?page={p}"));
        for row in page
            .body
            .split("<tr><td class=\"title\"><a href=\"")
            .skip(1)
        {
            sessions.push(row[..row.find('"').unwrap()].to_string());
        }
    }
    assert!(sessions.len() >= 50, "{} sessions", sessions.len());
    let mut with_tokens = 0;
    let mut compared = 0;
    for href in &sessions {
        let on_page = web_support::page_articles(&s, href);
        let exported = s.get(&format!("{href}/export"));
        assert_eq!(exported.status, 200, "{href}: {}", exported.body);
        let in_file = web_support::article_ids(&exported.body);
        assert_eq!(in_file, on_page, "{href}: the export's messages");
        compared += usize::from(!on_page.is_empty());
        let page = s.get(href);
        let fact = |body: &str, name: &str| -> Option<String> {
            body.split(&format!("<dt>{name}</dt><dd>"))
                .nth(1)
                .map(|r| r[..r.find("</dd>").unwrap()].to_string())
        };
        assert_eq!(
            fact(&exported.body, "tokens"),
            fact(&page.body, "tokens"),
            "{href}: tokens"
        );
        assert_eq!(
            fact(&exported.body, "cost"),
            fact(&page.body, "cost"),
            "{href}"
        );
        with_tokens += usize::from(fact(&page.body, "tokens").is_some());
    }
    assert!(compared >= 40, "{compared} sessions with messages");
    assert!(with_tokens >= 10, "{with_tokens} sessions with tokens");
}

/// While the index is first built, a search answers at once from what is indexed
/// and says so once, with how far the build is; the box asks again until the
/// answer is whole.
#[test]
fn a_search_while_the_index_is_built_says_so_once_and_then_is_whole() {
    let w = World::new(130);
    let texts: Vec<String> = (0..60)
        .map(|i| format!("busy message {i} of a large history"))
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    for n in 0..400 {
        let id = format!("1a1a{n:04x}-0000-4000-8000-000000000001");
        mcp_support::claude_session(
            &w.claude,
            &format!("/home/u/many-{}", n % 20),
            &id,
            "2026-01-20T08:00:00Z",
            &texts,
        );
    }
    let s = Server::start(&w.args());
    let partial_seen = std::cell::Cell::new(0);
    let whole = s.get_until(&format!("/api/search?q={PLANTED}"), "a whole answer", |r| {
        let a: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        let said: Vec<String> = a["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect();
        assert!(
            !said.iter().any(|n| n.contains("brought up to date")),
            "the build said in a note as well: {said:?}"
        );
        if let Some(p) = a["partial"].as_str() {
            partial_seen.set(partial_seen.get() + 1);
            assert!(
                p.starts_with("The search index is being brought up to date"),
                "{p}"
            );
            assert!(!p.contains("ask again"), "the page asks by itself: {p}");
        }
        a["partial"].is_null() && !a["hits"].as_array().unwrap().is_empty()
    });
    assert!(whole.body.contains(PLANTED));
    assert!(
        partial_seen.get() > 0,
        "no answer came before the index was built"
    );
    let page = s.get(&format!("/search?q={PLANTED}"));
    assert_eq!(page.body.matches("brought up to date").count(), 0);
}

/// Claude Code's subagents are linked both ways: the parent's header lists the
/// subagent's page and says below the tool call that started it that it ran there
/// (an inline one: from which message of the history), the subagent's header links
/// to its parent, and the Sessions page marks the subagent's row, linking to its
/// parent.
#[test]
fn subagents_are_linked_both_ways_on_the_pages_and_marked_in_the_list() {
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures");
    let store = tempfile::tempdir().unwrap();
    let s = Server::start(&[
        "--store".to_string(),
        store.path().display().to_string(),
        "--no-detect".into(),
        "--source".into(),
        format!("claude={}", fixtures.join("claude").display()),
    ]);
    let parent = "/s/2026-04-18T13-10-51-686Z_claude-ef958aa1-0e93-49f0-bb71-150f63befcd1";
    let child = format!("{parent}.agent-aef063ba534d73153");
    let list = s.get_until(
        "/?project=-experiments/worktrees",
        "the subagent listed",
        |r| r.body.contains(&child),
    );
    let row = list
        .body
        .split("<tr>")
        .find(|r| r.contains(&format!("href=\"{child}\"")))
        .unwrap();
    assert!(
        row.contains(&format!("<a class=\"badge subagent\" href=\"{parent}\"")),
        "{row}"
    );
    let p = s.get(parent);
    assert!(p.body.contains("<dt>subagents</dt>"), "the parent's header");
    assert!(
        p.body.contains(&format!("<a href=\"{child}\">")),
        "links the subagent"
    );
    // Every fragment of the parent: where each subagent ran.
    let all = web_support::page_html(&s, parent);
    assert!(
        all.contains(&format!(
            "<p class=\"subagent-ran\">↳ subagent <a href=\"{child}\"><code>aef063ba534d73153</code></a> ran here</p>"
        )),
        "where it ran"
    );
    assert!(all.contains("<code>a4ca7529859c158c2</code> ran here (its transcript is not here)"));
    let c = s.get(&child);
    assert!(
        c.body.contains("<dt>subagent of</dt>"),
        "the subagent's header"
    );
    assert!(
        c.body.contains(&format!("<a href=\"{parent}\">")),
        "links its parent"
    );
    // An inline subagent (Claude Code 1.0's sidechain lines): the message its
    // messages start from, in the same page.
    let old = "/s/2025-09-07T09-52-03-071Z_claude-5c0375b4-57a5-4f26-b12d-d022ee4e51b7";
    let html = web_support::page_html(&s, old);
    let entry = "6340ddef-f656-4b72-a065-82390f637678";
    assert!(
        html.contains(&format!(
            "from <a href=\"{old}?entry={entry}\">entry <code>{entry}</code></a>"
        )),
        "the inline subagent's first message"
    );
    let focused = s.get(&format!("{old}?entry={entry}"));
    assert!(
        focused.body.contains("data-focus=\"m-"),
        "that message found"
    );
}
