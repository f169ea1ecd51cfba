//! The pages and their JSON, routed. Every route is behind `guard::check`; every
//! handler that reads files, the index or the usage counter runs on a blocking
//! thread, so a slow one never holds up another page.
//!
//! | address | what |
//! |---|---|
//! | `/` | Sessions (`sessions.rs`), filters in the query |
//! | `/search?q=` | Search (`search.rs`); `/api/search?q=` its JSON, as you type |
//! | `/s/DIR` | Session (`session.rs`); `?entry=E`: from a search hit's message |
//! | `/s/DIR/messages?from=N` | the next messages (JSON: HTML fragments) |
//! | `/s/DIR/transcript.jsonl`, `/s/DIR/conversation.md` | downloads |
//! | `/s/DIR/export` | the session as one HTML file (`fen-fs export`) |
//! | `/usage` | Usage (`usage.rs`); `/usage/chart.svg`, `/api/usage` (= `fen-fs usage --json`) |
//! | `/machines` | Machines (`machines.rs`) |
//! | `/api/status`, `/api/session-usage?keys=` | what the pages poll for |
//! | `/assets/NAME` | the script, stylesheets and icon (`assets.rs`) |

pub mod chrome;
pub mod machines;
pub mod search;
pub mod session;
pub mod sessions;
pub mod usage;

use super::app::App;
use super::guard;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use std::sync::Arc;

type AppState = State<Arc<App>>;

/// The routes, behind the guard.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(sessions_page))
        .route("/search", get(search_page))
        .route("/api/search", get(api_search))
        .route("/api/status", get(api_status))
        .route("/api/session-usage", get(api_session_usage))
        .route("/api/usage", get(api_usage))
        .route("/usage", get(usage_page))
        .route("/usage/chart.svg", get(usage_chart))
        .route("/machines", get(machines_page))
        .route("/s/{dir}", get(session_page))
        .route("/s/{dir}/messages", get(session_messages))
        .route("/s/{dir}/transcript.jsonl", get(download_transcript))
        .route("/s/{dir}/conversation.md", get(download_markdown))
        .route("/s/{dir}/export", get(export).post(export))
        .route("/assets/{name}", get(asset))
        .route("/favicon.ico", get(favicon))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), guard::check))
        .with_state(app)
}

/// Runs `f` on a blocking thread; a panic is a 500 saying so.
async fn blocking<F>(f: F) -> Response
where
    F: FnOnce() -> Response + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => {
            log::error!("web: a handler failed: {e}");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("fen-fs web: this page failed inside fen-fs ({e}); the server goes on\n"),
            )
        }
    }
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

fn json<T: serde::Serialize>(value: &T) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(value).unwrap_or_default(),
    )
        .into_response()
}

fn status_of(e: &crate::Error) -> StatusCode {
    match e.errno {
        libc::ENOENT => StatusCode::NOT_FOUND,
        libc::EINVAL => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

async fn not_found() -> Response {
    text(
        StatusCode::NOT_FOUND,
        "fen-fs web: no such page (the pages: /, /search, /usage, /machines, /s/SESSION)\n".into(),
    )
}

async fn sessions_page(State(app): AppState, Query(f): Query<sessions::Filters>) -> Response {
    blocking(move || chrome::html(sessions::page(&app, &f))).await
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SearchArgs {
    q: String,
    limit: Option<usize>,
}

async fn search_page(State(app): AppState, Query(a): Query<SearchArgs>) -> Response {
    blocking(move || chrome::html(search::page(&app, &a.q))).await
}

async fn api_search(State(app): AppState, Query(a): Query<SearchArgs>) -> Response {
    blocking(move || {
        json(&search::answer(
            &app,
            &a.q,
            a.limit.unwrap_or(search::LIVE_LIMIT),
        ))
    })
    .await
}

#[derive(serde::Serialize)]
struct Status {
    /// The usage counter's first count is done.
    usage_counted: bool,
    usage_failed: Option<String>,
    /// The search index is being brought up to date.
    index_updating: bool,
}

async fn api_status(State(app): AppState) -> Response {
    blocking(move || {
        json(&Status {
            usage_counted: app.session_usage().is_some(),
            usage_failed: app.usage_failure(),
            index_updating: app.history.index_updating(),
        })
    })
    .await
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct KeysArgs {
    /// Sessions as the Sessions page names them (`agent/host/id`), one a line.
    keys: String,
}

async fn api_session_usage(State(app): AppState, Query(a): Query<KeysArgs>) -> Response {
    blocking(move || {
        let Some(u) = app.session_usage() else {
            return json(&serde_json::json!({"counted": false}));
        };
        let mut sessions = serde_json::Map::new();
        for key in a.keys.split('\n').filter(|s| !s.is_empty()).take(1000) {
            let mut parts = key.splitn(3, '/');
            let (agent, host, id) = (parts.next(), parts.next(), parts.next());
            let cost = match (
                agent.and_then(|a| crate::agent::Agent::parse(a).ok()),
                host,
                id,
            ) {
                (Some(agent), Some(host), Some(id)) => u.get(agent, Some(host), id),
                _ => None,
            };
            let v = match cost {
                Some(c) => serde_json::json!({
                    "tokens": chrome::count(c.tokens),
                    "cost": chrome::dollars(c.cost),
                }),
                None => serde_json::json!({"tokens": "–", "cost": "–"}),
            };
            sessions.insert(key.to_string(), v);
        }
        json(&serde_json::json!({"counted": true, "sessions": sessions}))
    })
    .await
}

/// The usage counts for a page that shows them: `None` until the first count is done
/// (the page says so rather than wait), then brought up to date (warm: a `stat` a
/// file).
fn counted_usage(app: &Arc<App>) -> std::result::Result<Option<Arc<crate::usage::Usage>>, String> {
    if app.session_usage().is_none() {
        return Ok(None);
    }
    app.history.usage().map(Some).map_err(|e| e.reason)
}

async fn usage_page(State(app): AppState, Query(r): Query<usage::Range>) -> Response {
    blocking(move || match counted_usage(&app) {
        Ok(u) => chrome::html(usage::page(&app, &r, u)),
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("fen-fs web: {e}\n"),
        ),
    })
    .await
}

async fn usage_chart(State(app): AppState, Query(r): Query<usage::Range>) -> Response {
    blocking(move || {
        let u = match counted_usage(&app) {
            Ok(Some(u)) => u,
            Ok(None) => {
                return text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "fen-fs web: the usage is still being counted\n".into(),
                );
            }
            Err(e) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("fen-fs web: {e}\n"),
                );
            }
        };
        match usage::chart(&u, &r) {
            Ok(svg) => ([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response(),
            Err(e) => text(StatusCode::BAD_REQUEST, format!("fen-fs web: {e}\n")),
        }
    })
    .await
}

async fn api_usage(State(app): AppState, Query(r): Query<usage::Range>) -> Response {
    blocking(move || {
        // The API waits for the count (a script asking for numbers wants them).
        let u = match app.history.usage() {
            Ok(u) => u,
            Err(e) => return text(status_of(&e), format!("fen-fs web: {}\n", e.reason)),
        };
        match usage::json_lines(&u, &r) {
            Ok(lines) => ([(header::CONTENT_TYPE, "application/x-ndjson")], lines).into_response(),
            Err(e) => text(StatusCode::BAD_REQUEST, format!("fen-fs web: {e}\n")),
        }
    })
    .await
}

async fn machines_page(State(app): AppState) -> Response {
    blocking(move || chrome::html(machines::page(&app))).await
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SessionArgs {
    entry: Option<String>,
}

async fn session_page(
    State(app): AppState,
    Path(dir): Path<String>,
    Query(a): Query<SessionArgs>,
) -> Response {
    blocking(
        move || match session::page(&app, &dir, a.entry.as_deref()) {
            Ok(body) => {
                let mut resp = body.into_response();
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/html; charset=utf-8"),
                );
                resp
            }
            Err(e) => {
                let mut resp = chrome::html(session::missing(&dir, &e.reason));
                *resp.status_mut() = status_of(&e);
                resp
            }
        },
    )
    .await
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MessagesArgs {
    from: Option<u64>,
    before: Option<u64>,
}

async fn session_messages(
    State(app): AppState,
    Path(dir): Path<String>,
    Query(a): Query<MessagesArgs>,
) -> Response {
    blocking(
        move || match session::fragment(&app, &dir, a.from, a.before) {
            Ok(f) => json(&f),
            Err(e) => text(status_of(&e), format!("fen-fs web: {}\n", e.reason)),
        },
    )
    .await
}

async fn download_transcript(State(app): AppState, Path(dir): Path<String>) -> Response {
    download(app, dir, crate::views::ViewKind::Transcript).await
}

async fn download_markdown(State(app): AppState, Path(dir): Path<String>) -> Response {
    download(app, dir, crate::views::ViewKind::Markdown).await
}

/// A view of the session, streamed from its snapshot (a session of hundreds of MB
/// is never whole in memory).
async fn download(app: Arc<App>, dir: String, kind: crate::views::ViewKind) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(4);
    let name = kind.file_name();
    let opened = tokio::task::spawn_blocking(move || {
        let found = app.history.find(&dir)?;
        let snap = found.source.snapshot(&found.ns, &found.dir, kind, 0)?;
        let size = snap.size();
        std::thread::spawn(move || {
            let mut at = 0u64;
            while at < size {
                let chunk = match snap.read_at(at, 256 * 1024) {
                    Ok(c) if c.is_empty() => break,
                    Ok(c) => c,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(std::io::Error::other(e.reason)));
                        break;
                    }
                };
                at += chunk.len() as u64;
                if tx.blocking_send(Ok(chunk)).is_err() {
                    break;
                }
            }
        });
        Ok::<_, crate::Error>((found.dir, size))
    })
    .await;
    match opened {
        Ok(Ok((dir, size))) => {
            let mut resp = Body::from_stream(Chunks(rx)).into_response();
            let h = resp.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(if name.ends_with(".md") {
                    "text/markdown; charset=utf-8"
                } else {
                    "application/jsonl"
                }),
            );
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
            let file = format!("{}-{name}", safe_file_name(&dir));
            if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{file}\"")) {
                h.insert(header::CONTENT_DISPOSITION, v);
            }
            resp
        }
        Ok(Err(e)) => text(status_of(&e), format!("fen-fs web: {}\n", e.reason)),
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("fen-fs web: {e}\n"),
        ),
    }
}

/// A file name made of `s`'s safe characters.
fn safe_file_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect()
}

/// The chunks a reading thread sends, as a body's stream.
struct Chunks(tokio::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>);

impl futures_core::Stream for Chunks {
    type Item = std::io::Result<Vec<u8>>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

/// The session as one self-contained HTML file, secrets redacted (SPEC §16: what
/// leaves through the Export button is what `fen-fs export` writes). Made whole in a
/// temporary file first (a scan that fails sends nothing), then streamed.
async fn export(State(app): AppState, Path(dir): Path<String>) -> Response {
    let made = tokio::task::spawn_blocking(move || {
        let found = app.history.find(&dir)?;
        let agent = found.source.agent().name().to_string();
        // The tokens and cost the page shows (the server's count), else as the
        // usage ledgers last saved them (what `fen-fs export` shows).
        let listed = app
            .listing()
            .ok()
            .and_then(|l| l.iter().find(|l| l.dir == found.dir).cloned());
        let counted = app
            .session_usage()
            .zip(listed)
            .and_then(|(u, l)| u.of(&l))
            .or_else(|| {
                crate::export::counted(
                    &found.source,
                    &found.ns,
                    &found.dir,
                    &app.history.store().root,
                )
            });
        let options = crate::export::Options {
            counted,
            ..crate::export::Options::default()
        };
        let (file, report) =
            crate::export::to_temp(found.source.as_ref(), &found.ns, &found.dir, &options)?;
        let size = file
            .metadata()
            .map_err(|e| crate::Error::io("export", &e))?
            .len();
        Ok::<_, crate::Error>((file, report, size, agent))
    })
    .await;
    let (file, report, size, agent) = match made {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => return text(status_of(&e), format!("fen-fs web: export: {}\n", e.reason)),
        Err(e) => {
            return text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("fen-fs web: export: {e}\n"),
            );
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(4);
    std::thread::spawn(move || {
        use std::io::Read;
        let mut file = file;
        loop {
            let mut chunk = vec![0u8; 256 * 1024];
            match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    chunk.truncate(n);
                    if tx.blocking_send(Ok(chunk)).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    break;
                }
            }
        }
    });
    let format = crate::export::Format::Html;
    let mut resp = Body::from_stream(Chunks(rx)).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    let name = crate::export::file_name(&agent, &report.id, format);
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    // What was redacted, as `fen-fs export` says it on stderr.
    if let Ok(v) = HeaderValue::from_str(&report.summary()) {
        h.insert("x-fen-fs-redacted", v);
    }
    resp
}

/// Browsers ask for it on pages that name no icon (the Session page).
async fn favicon() -> Response {
    asset(Path("icon.svg".into())).await
}

async fn asset(Path(name): Path<String>) -> Response {
    match super::assets::get(&name) {
        Some((body, kind)) => {
            let mut resp = ([(header::CONTENT_TYPE, kind)], body).into_response();
            resp.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, max-age=300"),
            );
            resp
        }
        None => not_found().await,
    }
}
