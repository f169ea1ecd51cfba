//! Search (SPEC §8 in the browser): `/search?q=` is the page (bookmarkable, works
//! without script), `/api/search?q=` the same answer as JSON for the box on every
//! page, asked as one types. The answer never waits for the index to be brought up
//! to date: it comes from the index as it is, and says when it may be partial
//! (`partial`: the index is being built or updated; the page asks again).

use super::chrome::{self, Tab, esc, session_href, url_part, when};
use crate::search::hits::Hit;
use crate::web::app::App;
use serde::Serialize;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// Hits on the page, and in the box's list.
pub const PAGE_LIMIT: usize = 50;
pub const LIVE_LIMIT: usize = 12;

/// One hit as the page shows it.
#[derive(Serialize)]
pub struct ShownHit {
    /// The Session page at the very message.
    pub href: String,
    pub title: String,
    pub agent: String,
    pub host: String,
    pub cwd: Option<String>,
    pub updated_at: Option<String>,
    pub role: String,
    pub in_conversation: bool,
    /// Matched words between `**`.
    pub snippet: String,
}

#[derive(Serialize, Default)]
pub struct Answer {
    pub query: String,
    pub hits: Vec<ShownHit>,
    /// What to know about the answer (the index being built, a source left out).
    pub notes: Vec<String>,
    /// The answer may miss what the index has not reached yet (how far it is):
    /// ask again soon. `null` when the index is whole.
    pub partial: Option<String>,
    /// What is wrong with the query (one line), when it cannot be asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the server took, in milliseconds.
    pub took_ms: f64,
}

/// The Session page's address of `hit`'s message.
pub fn hit_href(hit: &Hit) -> String {
    let mut href = session_href(&hit.dir);
    if let Some(e) = hit.entry.as_deref().filter(|_| hit.role != "title") {
        let _ = write!(href, "?entry={}", url_part(e));
    }
    href
}

/// Answers `text` (the box's words and filters).
pub fn answer(app: &Arc<App>, text: &str, limit: usize) -> Answer {
    let started = std::time::Instant::now();
    let mut out = Answer {
        query: text.to_string(),
        ..Answer::default()
    };
    if text.trim().is_empty() {
        return out;
    }
    let request = match crate::web::query::request(text, limit) {
        Ok(r) => r,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    match app.history.search_waiting(&request, Duration::ZERO) {
        Ok(a) => {
            // The index's first build (or a check of it against the sessions after
            // a mount) is partial; a routine update started by this question is not
            // (what it finds shows at the next key).
            out.partial = a.answer.building.map(|b| capitalized(&b.say()) + ".");
            out.notes = a.notes;
            out.hits = a
                .answer
                .hits
                .iter()
                .map(|h| ShownHit {
                    href: hit_href(h),
                    title: h
                        .title
                        .as_deref()
                        .or(h.preview.as_deref())
                        .map(|t| crate::store::index::one_line(t, 120))
                        .filter(|t| !t.is_empty())
                        .unwrap_or_else(|| "(untitled)".into()),
                    agent: h.agent.clone(),
                    host: h.host.clone(),
                    cwd: h.cwd.clone(),
                    updated_at: h.updated_at.clone(),
                    role: h.role.clone(),
                    in_conversation: h.in_conversation,
                    snippet: h.snippet.clone(),
                })
                .collect();
        }
        Err(e) => out.error = Some(e.reason),
    }
    out.took_ms = started.elapsed().as_secs_f64() * 1000.0;
    out
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// A snippet with its `**marks**` as `<mark>`, the rest as text.
pub fn marked(snippet: &str) -> String {
    let mut out = String::new();
    for (i, piece) in snippet.split(crate::search::snippet::MARK).enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<mark>{}</mark>", esc(piece));
        } else {
            out.push_str(&esc(piece));
        }
    }
    out
}

/// The page.
pub fn page(app: &Arc<App>, text: &str) -> String {
    let mut out = chrome::start(
        if text.trim().is_empty() {
            "Search"
        } else {
            text
        },
        Tab::Search,
        text,
    );
    out.push_str("<h1>Search</h1>\n");
    let a = answer(app, text, PAGE_LIMIT);
    out.push_str("<div id=\"results\" class=\"results\">");
    results(&mut out, &a);
    out.push_str("</div>\n");
    if text.trim().is_empty() {
        out.push_str("<p class=\"help\">Type in the box above: every word must match in one message (case and accents do not matter; <code>test*</code> for a prefix), <code>\"a phrase\"</code>, <code>-word</code> to leave out; filters <code>agent:claude</code>, <code>cwd:/home/you/project</code>, <code>host:laptop</code>, <code>since:7d</code>.</p>\n");
    }
    chrome::end(out)
}

fn results(out: &mut String, a: &Answer) {
    if let Some(e) = &a.error {
        chrome::note(out, "error", e);
        return;
    }
    for n in &a.notes {
        chrome::note(out, "partial", n);
    }
    if let Some(why) = &a.partial {
        chrome::note(out, "partial", why);
    }
    if a.hits.is_empty() {
        if !a.query.trim().is_empty() {
            chrome::note(out, "empty", "No session matches.");
        }
        return;
    }
    out.push_str("<ol class=\"hits\">\n");
    for h in &a.hits {
        let _ = writeln!(
            out,
            "<li><a class=\"hit\" href=\"{}\"><span class=\"title\">{}</span> <span class=\"meta\">{} · {} · {} · {}{}</span><span class=\"snippet\">{}</span></a></li>",
            esc(&h.href),
            esc(&h.title),
            when(h.updated_at.as_deref()),
            esc(&h.agent),
            esc(&h.host),
            esc(h.cwd.as_deref().unwrap_or("")),
            if h.in_conversation {
                String::new()
            } else {
                " · <em>compacted out of the conversation</em>".into()
            },
            marked(&h.snippet),
        );
    }
    out.push_str("</ol>\n");
}
