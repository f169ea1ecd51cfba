//! The Sessions page (`/`): every session of every agent and host, newest first, a
//! page of `PAGE` rows at a time (100,000 sessions never make one giant table),
//! filtered by agent, host, project, time, kept/deleted and archived. The filters are
//! the address's query, so a filtered page can be bookmarked.
//!
//! Tokens and cost come from the usage counter's last count: the page never waits
//! for it; before its first count the cells say so and `app.js` fills them in from
//! `/api/session-usage` when it is done.

use super::chrome::{self, Tab, count, dollars, esc, session_href, url_part, when};
use crate::views::listing::Listing;
use crate::web::app::App;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

/// Rows per page.
pub const PAGE: usize = 100;
/// Projects offered in the project box's list.
const PROJECTS_OFFERED: usize = 300;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Filters {
    pub agent: String,
    pub host: String,
    pub project: String,
    /// Updated on or after this day (YYYY-MM-DD, local).
    pub since: String,
    /// Updated on or before this day.
    pub until: String,
    /// `kept` (shown from fen's kept copy), `deleted` (its source is gone), `live`
    /// (read from the agent's own files); empty: all.
    pub kept: String,
    /// `hide` or `only`; empty: shown with the others.
    pub archived: String,
    /// From 1.
    pub page: usize,
}

impl Filters {
    fn day(s: &str) -> Option<chrono::NaiveDate> {
        chrono::NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").ok()
    }

    fn keeps(&self, l: &Listing) -> bool {
        let day = || {
            l.updated_at
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&chrono::Local).date_naive())
        };
        (self.agent.is_empty() || l.agent.name() == self.agent)
            && (self.host.is_empty() || l.host.as_deref() == Some(self.host.as_str()))
            && (self.project.is_empty()
                || l.cwd.as_deref().is_some_and(|c| {
                    let p = self.project.trim_end_matches('/');
                    c == p || c.strip_prefix(p).is_some_and(|r| r.starts_with('/'))
                }))
            && Self::day(&self.since).is_none_or(|s| day().is_some_and(|d| d >= s))
            && Self::day(&self.until).is_none_or(|u| day().is_some_and(|d| d <= u))
            && match self.kept.as_str() {
                "kept" => l.kept,
                "deleted" => l.source_deleted == Some(true),
                "live" => !l.kept,
                _ => true,
            }
            && match self.archived.as_str() {
                "hide" => !l.archived,
                "only" => l.archived,
                _ => true,
            }
    }

    /// The query of these filters on page `page`.
    fn href(&self, page: usize) -> String {
        let mut q = Vec::new();
        for (k, v) in [
            ("agent", &self.agent),
            ("host", &self.host),
            ("project", &self.project),
            ("since", &self.since),
            ("until", &self.until),
            ("kept", &self.kept),
            ("archived", &self.archived),
        ] {
            if !v.is_empty() {
                q.push(format!("{k}={}", url_part(v)));
            }
        }
        if page > 1 {
            q.push(format!("page={page}"));
        }
        if q.is_empty() {
            "/".into()
        } else {
            format!("/?{}", q.join("&"))
        }
    }
}

/// The page.
pub fn page(app: &Arc<App>, f: &Filters) -> String {
    let mut out = chrome::start("Sessions", Tab::Sessions, "");
    let all = match app.listing() {
        Ok(l) => l,
        Err(e) => {
            chrome::note(
                &mut out,
                "error",
                &format!("the sessions could not be listed: {}", e.reason),
            );
            return chrome::end(out);
        }
    };
    let usage = app.session_usage();
    let shown: Vec<&Listing> = all.iter().filter(|l| f.keeps(l)).collect();
    let pages = shown.len().div_ceil(PAGE).max(1);
    let page = f.page.clamp(1, pages);
    let first = (page - 1) * PAGE;
    let rows = &shown[first.min(shown.len())..(first + PAGE).min(shown.len())];

    out.push_str("<h1>Sessions</h1>\n");
    filters_form(&mut out, &all, f);
    let _ = writeln!(
        out,
        "<p class=\"count\" id=\"count\">{} of {} sessions{}</p>",
        count(shown.len() as u64),
        count(all.len() as u64),
        if shown.is_empty() {
            String::new()
        } else {
            format!(
                ", {}–{} shown, newest first",
                count(first as u64 + 1),
                count((first + rows.len()) as u64)
            )
        }
    );
    match (&usage, app.usage_failure()) {
        (_, Some(why)) => chrome::note(
            &mut out,
            "partial",
            &format!("Tokens and cost could not be counted: {why}"),
        ),
        (None, None) => chrome::note(
            &mut out,
            "partial",
            "Tokens and cost are still being counted: they fill in when the count is done.",
        ),
        _ => {}
    }
    let hosts: BTreeSet<&str> = all.iter().filter_map(|l| l.host.as_deref()).collect();
    out.push_str("<table class=\"sessions\"><thead><tr><th>Title</th><th>Agent</th>");
    if hosts.len() > 1 || !f.host.is_empty() {
        out.push_str("<th>Host</th>");
    }
    out.push_str("<th>Project</th><th>Updated</th><th class=\"num\">Messages</th><th class=\"num\">Tokens</th><th class=\"num\">Cost</th></tr></thead>\n<tbody>\n");
    for l in rows {
        row(
            &mut out,
            l,
            usage.as_deref(),
            hosts.len() > 1 || !f.host.is_empty(),
        );
    }
    out.push_str("</tbody></table>\n");
    if shown.is_empty() {
        chrome::note(&mut out, "empty", "No session matches these filters.");
    }
    pager(&mut out, f, page, pages);
    chrome::end(out)
}

fn row(out: &mut String, l: &Listing, usage: Option<&crate::web::app::SessionUsage>, host: bool) {
    let title = l
        .title
        .as_deref()
        .or(l.preview.as_deref())
        .map(|t| crate::store::index::one_line(t, 160))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "(untitled)".into());
    let mut badges = String::new();
    if l.source_deleted == Some(true) {
        badges.push_str(" <span class=\"badge deleted\" title=\"its agent deleted it; shown from fen's kept copy\">deleted</span>");
    } else if l.kept {
        badges.push_str(
            " <span class=\"badge kept\" title=\"shown from fen's kept copy\">kept</span>",
        );
    }
    if l.parent_id.is_some() {
        // A subagent's session: its parent's page, when that is shown.
        match l
            .parent
            .as_deref()
            .map(|d| d.rsplit('/').next().unwrap_or(d))
        {
            Some(parent) => {
                let _ = write!(
                    badges,
                    " <a class=\"badge subagent\" href=\"{}\" title=\"a subagent: its parent session\">subagent</a>",
                    esc(&session_href(parent))
                );
            }
            None => badges.push_str(" <span class=\"badge subagent\">subagent</span>"),
        }
    }
    if let Some(v) = l.version {
        let _ = write!(badges, " <span class=\"badge\">version {v}</span>");
    }
    if l.archived {
        badges.push_str(" <span class=\"badge archived\">archived</span>");
    }
    let _ = write!(
        out,
        "<tr><td class=\"title\"><a href=\"{}\">{}</a>{badges}</td><td>{}</td>",
        esc(&session_href(&l.dir)),
        esc(&title),
        esc(l.agent.name())
    );
    if host {
        let _ = write!(out, "<td>{}</td>", esc(l.host.as_deref().unwrap_or("")));
    }
    let cwd = l.cwd.as_deref().unwrap_or("");
    let short = cwd.rsplit('/').find(|s| !s.is_empty()).unwrap_or(cwd);
    let _ = write!(
        out,
        "<td class=\"project\" title=\"{}\">{}</td><td>{}</td><td class=\"num\">{}</td>",
        esc(cwd),
        esc(short),
        when(l.updated_at.as_deref()),
        count(l.messages as u64)
    );
    match usage {
        Some(u) => match u.of(l) {
            Some(c) => {
                let _ = writeln!(
                    out,
                    "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                    count(c.tokens),
                    esc(&dollars(c.cost))
                );
            }
            None => {
                out.push_str("<td class=\"num none\">–</td><td class=\"num none\">–</td></tr>\n")
            }
        },
        None => {
            let _ = writeln!(
                out,
                "<td class=\"num pending\" data-usage=\"{0}\" data-what=\"tokens\">…</td><td class=\"num pending\" data-usage=\"{0}\" data-what=\"cost\">…</td></tr>",
                esc(&usage_key(l))
            );
        }
    }
}

/// How a row names its session to `/api/session-usage`: `agent/host/id` (the agent
/// and host hold no `/`; the id is the rest, whatever it holds).
pub fn usage_key(l: &Listing) -> String {
    format!(
        "{}/{}/{}",
        l.agent.name(),
        l.host.as_deref().unwrap_or(crate::host::this_host()),
        l.id
    )
}

fn filters_form(out: &mut String, all: &[Listing], f: &Filters) {
    let mut agents = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    // Projects by their newest session (the listing is newest first).
    let mut projects: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, l) in all.iter().enumerate() {
        agents.insert(l.agent.name());
        if let Some(h) = &l.host {
            hosts.insert(h.as_str());
        }
        if let Some(c) = &l.cwd {
            projects.entry(c.as_str()).or_insert(i);
        }
    }
    let mut projects: Vec<(&str, usize)> = projects.into_iter().collect();
    projects.sort_by_key(|(_, i)| *i);
    let select =
        |out: &mut String, name: &str, label: &str, options: &[(&str, &str)], cur: &str| {
            let _ = write!(out, "<label>{label} <select name=\"{name}\">");
            for (v, text) in options {
                let _ = write!(
                    out,
                    "<option value=\"{}\"{}>{}</option>",
                    esc(v),
                    if *v == cur { " selected" } else { "" },
                    esc(text)
                );
            }
            out.push_str("</select></label> ");
        };
    out.push_str("<form class=\"filters\" method=\"get\" action=\"/\" id=\"filters\">");
    let mut opts: Vec<(&str, &str)> = vec![("", "every agent")];
    opts.extend(agents.iter().map(|a| (*a, *a)));
    select(out, "agent", "Agent", &opts, &f.agent);
    if hosts.len() > 1 || !f.host.is_empty() {
        let mut opts: Vec<(&str, &str)> = vec![("", "every host")];
        opts.extend(hosts.iter().map(|h| (*h, *h)));
        select(out, "host", "Host", &opts, &f.host);
    }
    let _ = write!(
        out,
        "<label>Project <input name=\"project\" list=\"projects\" value=\"{}\" placeholder=\"/path/of/project\" size=\"28\"></label> <datalist id=\"projects\">",
        esc(&f.project)
    );
    for (p, _) in projects.iter().take(PROJECTS_OFFERED) {
        let _ = write!(out, "<option value=\"{}\">", esc(p));
    }
    let _ = write!(
        out,
        "</datalist><label>From <input type=\"date\" name=\"since\" value=\"{}\"></label> <label>to <input type=\"date\" name=\"until\" value=\"{}\"></label> ",
        esc(&f.since),
        esc(&f.until)
    );
    select(
        out,
        "kept",
        "Kept",
        &[
            ("", "all"),
            ("live", "in their agent's files"),
            ("kept", "kept copies"),
            ("deleted", "deleted by their agent"),
        ],
        &f.kept,
    );
    select(
        out,
        "archived",
        "Archived",
        &[("", "shown"), ("hide", "hidden"), ("only", "only")],
        &f.archived,
    );
    out.push_str("<button type=\"submit\">Filter</button> <a href=\"/\">clear</a></form>\n");
}

fn pager(out: &mut String, f: &Filters, page: usize, pages: usize) {
    if pages <= 1 {
        return;
    }
    out.push_str("<nav class=\"pager\" aria-label=\"pages\">");
    if page > 1 {
        let _ = write!(
            out,
            "<a href=\"{}\" rel=\"prev\">← newer</a> ",
            esc(&f.href(page - 1))
        );
    }
    let mut shown = BTreeSet::new();
    for p in [
        1,
        page.saturating_sub(2),
        page.saturating_sub(1),
        page,
        page + 1,
        page + 2,
        pages,
    ] {
        if p >= 1 && p <= pages {
            shown.insert(p);
        }
    }
    let mut last = 0;
    for p in shown {
        if p > last + 1 {
            out.push_str("<span>…</span> ");
        }
        if p == page {
            let _ = write!(out, "<span aria-current=\"page\">{p}</span> ");
        } else {
            let _ = write!(out, "<a href=\"{}\">{p}</a> ", esc(&f.href(p)));
        }
        last = p;
    }
    if page < pages {
        let _ = write!(
            out,
            "<a href=\"{}\" rel=\"next\">older →</a>",
            esc(&f.href(page + 1))
        );
    }
    out.push_str("</nav>\n");
}
