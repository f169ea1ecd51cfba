//! `fen-fs web` (SPEC §15): the history in a browser. A thin HTTP server (axum, on
//! hyper and tower) over `crate::history`, the same history `fen-fs mcp` serves:
//! fen's store, every agent's sessions, kept copies, peers, the search index and the
//! usage ledgers, with or without a mount.
//!
//! - `guard`: what every request passes first (Host allow-list, the run's token and
//!   its cookie, Origin of a POST) and the headers every answer carries (CSP, no
//!   CORS); see docs/web.md for why each;
//! - `app`: the state the handlers share (the history, caches of the listing, usage
//!   and Syncthing's answers, where each open session's reading got to);
//! - `pages/`: one file per page (sessions, search, session, usage, machines) and
//!   `chrome.rs`, what every page has around it;
//! - `assets/`: the page's script and stylesheet, compiled into the binary (no CDN,
//!   no build step): the page works offline.
//!
//! Everything a session holds reaches the page through `crate::views::html` (the
//! Session page's renderer, shared with `fen-fs export`) or through `chrome::esc`:
//! as text, never as markup.

pub mod app;
pub mod assets;
pub mod guard;
pub mod pages;
pub mod query;
pub mod readings;

use crate::error::{Error, Result};
use crate::history::History;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

/// How the server was asked to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to listen on (127.0.0.1 unless `--listen`).
    pub listen: IpAddr,
    /// 0: a free port.
    pub port: u16,
    /// Start the desktop's browser on the address (`xdg-open`).
    pub open: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            listen: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            open: false,
        }
    }
}

/// Serves the pages over `history` until SIGINT or SIGTERM. Prints the address with
/// its token on stdout once the socket answers.
pub fn serve(history: History, options: Options) -> Result<()> {
    // Before any thread of the server starts.
    crate::workers::limit_malloc_arenas();
    if !options.listen.is_loopback() {
        eprintln!(
            "fen-fs web: warning: listening on {}, not on this machine only: anyone who can reach it and has the token reads every session (the token still guards every request)",
            options.listen
        );
    }
    let listener = std::net::TcpListener::bind(SocketAddr::new(options.listen, options.port))
        .map_err(|e| {
            Error::io(
                format!("listening on {}:{}", options.listen, options.port),
                &e,
            )
        })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("listening", &e))?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::io("listening", &e))?
        .port();
    let token = guard::new_token()?;
    let history = Arc::new(history);
    let app = Arc::new(app::App::new(
        history.clone(),
        guard::Guard::new(token.clone(), options.listen, port),
    ));
    app.warm();
    // One thread answers the sockets; every page's work runs on blocking threads.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(8)
        .enable_all()
        .build()
        .map_err(|e| Error::io("starting the web server", &e))?;
    let served = runtime.block_on(async {
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(|e| Error::io("listening", &e))?;
        let url = format!("http://127.0.0.1:{port}/?token={token}");
        let shown = if options.listen.is_loopback() || options.listen.is_unspecified() {
            url.clone()
        } else {
            format!(
                "http://{}/?token={token}",
                SocketAddr::new(options.listen, port)
            )
        };
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{shown}");
            let _ = out.flush();
        }
        if options.open {
            open_browser(&shown);
        }
        axum::serve(listener, pages::router(app.clone()))
            .with_graceful_shutdown(stopped())
            .await
            .map_err(|e| Error::io("serving", &e))
    });
    app.stop();
    history.stop();
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    served
}

/// Resolves at SIGINT or SIGTERM.
async fn stopped() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without signal handlers the default ones end the process.
        return std::future::pending().await;
    };
    std::future::poll_fn(|cx| {
        if int.poll_recv(cx).is_ready() || term.poll_recv(cx).is_ready() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}

/// `xdg-open URL`, not waited for; a failure is said and the server goes on.
fn open_browser(url: &str) {
    match std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => eprintln!("fen-fs web: could not start xdg-open ({e}): open the address above"),
    }
}
