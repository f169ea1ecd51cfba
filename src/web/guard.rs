//! What every request passes before any other work, and what every answer carries
//! (SPEC §15; docs/web.md says why each):
//!
//! 1. its `Host` names this server (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`,
//!    or the `--listen` address): else 403 with a line saying why (a page of another
//!    site whose name was pointed at 127.0.0.1, DNS rebinding, is refused here);
//! 2. the run's token: `?token=` (compared in constant time) sets an HttpOnly,
//!    SameSite=Strict cookie and redirects to the same address without it; every
//!    other request needs that cookie (401 without, 403 with a wrong one);
//! 3. anything but GET and HEAD also needs an `Origin` of this server (or
//!    `Sec-Fetch-Site: same-origin`): a form of another site cannot post here;
//! 4. every answer, refusals too, carries a strict Content-Security-Policy (scripts
//!    and styles from this server only, no inline script, no other origin), `nosniff`,
//!    no framing, no referrer, and never an `Access-Control-*` header.

use crate::error::{Error, Result};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::IpAddr;
use std::sync::Arc;

/// The policy: this server's scripts, styles, images and fetches only; `data:` images
/// (a session's pasted screenshot); nothing inline, nothing framed, no plugin, forms
/// posting here only.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The run's secret and the names this server answers to.
pub struct Guard {
    token: String,
    /// `Host` values accepted, lower case.
    hosts: Vec<String>,
    /// `Origin` values accepted for a POST.
    origins: Vec<String>,
    /// The cookie's name: one per port (cookies are per host, not per port: two
    /// servers on one machine must not overwrite each other's).
    cookie: String,
}

/// A random token: 128 bits from the kernel, as hex.
pub fn new_token() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::io("reading /dev/urandom for the token", &e))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Guard {
    pub fn new(token: String, listen: IpAddr, port: u16) -> Guard {
        let mut hosts = vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ];
        if !listen.is_loopback() && !listen.is_unspecified() {
            hosts.push(match listen {
                IpAddr::V4(a) => format!("{a}:{port}"),
                IpAddr::V6(a) => format!("[{a}]:{port}"),
            });
        }
        let origins = hosts.iter().map(|h| format!("http://{h}")).collect();
        Guard {
            token,
            hosts,
            origins,
            cookie: format!("fen_fs_web_{port}"),
        }
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    fn host_ok(&self, headers: &HeaderMap) -> std::result::Result<(), String> {
        let values: Vec<&HeaderValue> = headers.get_all(header::HOST).iter().collect();
        let host = match values.as_slice() {
            [] => return Err("the request has no Host header".into()),
            [one] => one.to_str().unwrap_or("").trim().to_ascii_lowercase(),
            _ => return Err("the request has more than one Host header".into()),
        };
        if host.is_empty() {
            return Err("the request's Host header is empty".into());
        }
        if self.hosts.contains(&host) {
            Ok(())
        } else {
            Err(format!(
                "the Host header {host:?} is not this server's address ({}): a page of another site reaching this port through its own name (DNS rebinding) is refused",
                self.hosts.join(", ")
            ))
        }
    }

    fn cookie_token<'a>(&self, headers: &'a HeaderMap) -> Option<&'a str> {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == self.cookie)
            .map(|(_, v)| v)
    }

    fn origin_ok(&self, headers: &HeaderMap) -> std::result::Result<(), String> {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
            return if self.origins.contains(&origin) {
                Ok(())
            } else {
                Err(format!(
                    "a request that can change something must come from this page: its Origin {origin:?} is not {}",
                    self.origins.join(", ")
                ))
            };
        }
        match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
            Some("same-origin") => Ok(()),
            _ => Err(
                "a request that can change something must come from this page: it has no Origin header (nor Sec-Fetch-Site: same-origin)".into(),
            ),
        }
    }
}

/// Constant-time comparison of two tokens.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// A refusal: the status and one line saying why.
fn refuse(status: StatusCode, why: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("fen-fs web: refused: {why}\n"),
    )
        .into_response()
}

/// The headers of every answer.
pub fn harden(resp: &mut Response) {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    // Never: whatever a layer below might have added.
    let cors: Vec<header::HeaderName> = h
        .keys()
        .filter(|k| k.as_str().starts_with("access-control-"))
        .cloned()
        .collect();
    for k in cors {
        h.remove(k);
    }
}

/// The middleware: checks in the order of the module's list, then the handler.
pub async fn check(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let mut resp = checked(&guard, req, next).await;
    harden(&mut resp);
    resp
}

async fn checked(g: &Guard, req: Request, next: Next) -> Response {
    if let Err(why) = g.host_ok(req.headers()) {
        return refuse(StatusCode::FORBIDDEN, &why);
    }
    let uri = req.uri().clone();
    if let Some(query) = uri.query() {
        let mut token = None;
        let mut rest = Vec::new();
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some(("token", v)) => token = Some(v),
                _ if pair == "token" => token = Some(""),
                _ => rest.push(pair),
            }
        }
        if let Some(t) = token {
            if !same(t, &g.token) {
                return refuse(
                    StatusCode::FORBIDDEN,
                    "wrong token: open the address `fen-fs web` printed when it started (each run has its own)",
                );
            }
            let mut to = uri.path().to_string();
            if !rest.is_empty() {
                to.push('?');
                to.push_str(&rest.join("&"));
            }
            let cookie = format!(
                "{}={}; Path=/; HttpOnly; SameSite=Strict",
                g.cookie, g.token
            );
            let mut resp = StatusCode::SEE_OTHER.into_response();
            let h = resp.headers_mut();
            if let (Ok(loc), Ok(c)) = (HeaderValue::from_str(&to), HeaderValue::from_str(&cookie)) {
                h.insert(header::LOCATION, loc);
                h.insert(header::SET_COOKIE, c);
            }
            return resp;
        }
    }
    match g.cookie_token(req.headers()) {
        None => {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "no token: open the address `fen-fs web` printed when it started (it ends in ?token=...)",
            );
        }
        Some(t) if !same(t, &g.token) => {
            return refuse(
                StatusCode::FORBIDDEN,
                "wrong token (a cookie of an earlier run?): open the address `fen-fs web` printed when it started",
            );
        }
        Some(_) => {}
    }
    if req.method() != Method::GET
        && req.method() != Method::HEAD
        && let Err(why) = g.origin_ok(req.headers())
    {
        return refuse(StatusCode::FORBIDDEN, &why);
    }
    next.run(req).await
}
