//! The Session page (`/s/DIR`): one session as people read it, rendered by
//! `crate::views::html` (the renderer `fen-fs export` shares). A session of hundreds
//! of MB opens at once: the page holds the header and the first screen of messages
//! (`FIRST_MESSAGES`, at most `FIRST_BYTES` of HTML), and `app.js` asks
//! `/s/DIR/messages?from=N` for the next as one scrolls, and for new ones every half
//! second once it has them all (an append shows within a second, without a reload).
//!
//! Every reading goes on from where an earlier one stopped
//! (`SessionSource::each_message_since` and its marks, kept per session in
//! `Readings`): scrolling through a large session reads it once, a poll reads only
//! what was appended, and a poll of a session that did not change costs one `stat`.

use super::chrome::{self, esc, session_href, url_part};
use crate::error::Result;
use crate::neutral::{Message, SessionFacts};
use crate::resume::find::Found;
use crate::sources::{ControlFlow, MessageMark};
use crate::views::html::{self, HtmlHeader, Mode};
use crate::web::app::App;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

/// Messages on the first screen, and in each later fragment.
pub const FIRST_MESSAGES: usize = 40;
/// HTML bytes after which a screen or fragment ends (at a message's end).
pub const FIRST_BYTES: usize = 1 << 20;
/// Messages before a search hit's that its page starts with.
const BEFORE_HIT: u64 = 2;
/// Messages a source may still give after a reading asked it to stop (it stops
/// at the next place a later reading can go on from).
const AFTER_STOP_SHOWN: usize = 200;
/// Sessions whose readings are remembered.
const READINGS_KEPT: usize = 128;

/// Where readings of each recently shown session got to.
#[derive(Default)]
pub struct Readings {
    sessions: Mutex<HashMap<String, Arc<Mutex<Reading>>>>,
}

struct Reading {
    /// The session, as `find` resolved its name.
    found: Option<Arc<Found>>,
    /// Position (messages before it, history included) → the mark a reading can go
    /// on from there.
    marks: BTreeMap<u64, MessageMark>,
    /// The session's size and time when a reading last reached its end, and how many
    /// messages it had then.
    end: Option<(u64, SystemTime, u64)>,
    last_use: Instant,
}

/// What one reading gave.
pub struct Read {
    pub facts: SessionFacts,
    /// The position after the last message read: where the next reading starts.
    pub next: u64,
    /// It reached the session's last message.
    pub done: bool,
}

impl Readings {
    fn of(&self, spec: &str) -> Arc<Mutex<Reading>> {
        let mut all = self.sessions.lock().unwrap();
        if all.len() >= READINGS_KEPT && !all.contains_key(spec) {
            // The least recently used goes.
            let oldest = all
                .iter()
                .filter_map(|(k, r)| r.try_lock().ok().map(|r| (k.clone(), r.last_use)))
                .min_by_key(|(_, t)| *t)
                .map(|(k, _)| k);
            if let Some(k) = oldest {
                all.remove(&k);
            }
        }
        all.entry(spec.to_string())
            .or_insert_with(|| {
                Arc::new(Mutex::new(Reading {
                    found: None,
                    marks: BTreeMap::new(),
                    end: None,
                    last_use: Instant::now(),
                }))
            })
            .clone()
    }

    /// Reads session `spec` from position `from` on: `each` gets each message and its
    /// position, and returns `Break` to stop (messages the source still gives before
    /// the next place a reading can go on from are given too: they count). `None`
    /// when nothing changed since a reading reached the end at `from` (a `stat`).
    pub fn read(
        &self,
        app: &App,
        spec: &str,
        from: u64,
        each: &mut dyn FnMut(u64, &SessionFacts, Message) -> ControlFlow<()>,
    ) -> Result<Option<Read>> {
        let reading = self.of(spec);
        let mut r = reading.lock().unwrap();
        r.last_use = Instant::now();
        let found = match r.found.take() {
            Some(f) if f.source.session_stat(&f.ns, &f.dir).is_ok() => f,
            _ => Arc::new(app.history.find(spec)?),
        };
        let stat = found.source.session_stat(&found.ns, &found.dir)?;
        r.found = Some(found.clone());
        if let Some((size, mtime, total)) = r.end
            && from >= total
            && size == stat.size
            && mtime == stat.mtime
        {
            return Ok(None);
        }
        let (start, mark) = r
            .marks
            .range(..=from)
            .next_back()
            .map(|(p, m)| (*p, *m))
            .unwrap_or((0, MessageMark::default()));
        let mut last: Option<u64> = None;
        let mut shown_last: Option<u64> = None;
        let mut stopped = false;
        let mut after_stop = 0usize;
        let mut overflow = false;
        let got =
            found
                .source
                .each_message_since(&found.ns, &found.dir, mark, &mut |facts, at, m| {
                    last = Some(last.map_or(at, |l| l.max(at)));
                    if at < from || overflow {
                        return if overflow {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        };
                    }
                    if stopped {
                        // Given after a stop: they count (the mark is after them), so
                        // they are shown; a source that does not stop soon is left,
                        // and the next reading starts over after the last one shown.
                        after_stop += 1;
                        if after_stop > AFTER_STOP_SHOWN {
                            overflow = true;
                        } else {
                            let _ = each(at, facts, m);
                            shown_last = Some(at);
                        }
                        return ControlFlow::Break(());
                    }
                    let flow = each(at, facts, m);
                    shown_last = Some(at);
                    if flow.is_break() {
                        stopped = true;
                    }
                    flow
                })?;
        if overflow {
            return Ok(Some(Read {
                facts: got.facts,
                next: shown_last.map_or(from, |l| l + 1),
                done: false,
            }));
        }
        let next = match last {
            Some(l) => l + 1,
            None if got.resumed => start,
            None => 0,
        };
        if !got.mark.is_none() {
            r.marks.insert(next, got.mark);
        }
        let done = !got.stopped;
        if done {
            r.end = Some((stat.size, stat.mtime, next));
        }
        Ok(Some(Read {
            facts: got.facts,
            next,
            done,
        }))
    }

    /// The position of the message whose entry is `entry` (a search hit's), reading
    /// from the start; `None` when no message has it.
    pub fn position_of(&self, app: &App, spec: &str, entry: &str) -> Result<Option<u64>> {
        let mut at_entry = None;
        self.read(app, spec, 0, &mut |at, _, m| {
            if m.entry.as_deref() == Some(entry) {
                at_entry = Some(at);
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        Ok(at_entry)
    }
}

/// Messages from `from` rendered as HTML, a screen's worth.
pub struct Screen {
    pub facts: SessionFacts,
    pub html: Vec<u8>,
    pub next: u64,
    pub done: bool,
    /// Nothing changed since the last reading reached the end.
    pub unchanged: bool,
}

/// Renders a screen of `spec`'s messages from position `from`, stopping before
/// `until` when given (earlier messages loaded above the first shown).
pub fn screen(app: &App, spec: &str, from: u64, until: Option<u64>) -> Result<Screen> {
    let mut out = Vec::new();
    let mut n = 0usize;
    let mut runs: Option<html::SubagentRuns> = None;
    let read = app.readings.read(app, spec, from, &mut |at, facts, m| {
        if until.is_some_and(|u| at >= u) {
            return ControlFlow::Break(());
        }
        let runs = runs.get_or_insert_with(|| {
            html::SubagentRuns::of(&facts.subagents, Mode::Page, &|l| {
                if l.inline {
                    Some(format!(
                        "{}?entry={}",
                        session_href(&facts.dir),
                        url_part(&l.id)
                    ))
                } else {
                    l.dir
                        .as_deref()
                        .map(|d| session_href(d.rsplit('/').next().unwrap_or(d)))
                }
            })
        });
        let _ = html::write_message_marked(&mut out, at as usize, &m, runs);
        n += 1;
        if n >= FIRST_MESSAGES || out.len() >= FIRST_BYTES {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    Ok(match read {
        Some(r) => Screen {
            facts: r.facts,
            html: out,
            next: r.next.max(from),
            done: r.done,
            unchanged: false,
        },
        None => Screen {
            facts: SessionFacts::default(),
            html: out,
            next: from,
            done: true,
            unchanged: true,
        },
    })
}

/// The JSON of `/s/DIR/messages`.
#[derive(Serialize)]
pub struct Fragment {
    /// `<article>`s, as the page's.
    pub html: String,
    pub from: u64,
    pub next: u64,
    pub done: bool,
}

/// `/s/DIR/messages?from=N` (forward) or `?before=N` (the screen before N).
pub fn fragment(app: &App, spec: &str, from: Option<u64>, before: Option<u64>) -> Result<Fragment> {
    let (start, until) = match before {
        Some(b) => (b.saturating_sub(FIRST_MESSAGES as u64), Some(b)),
        None => (from.unwrap_or(0), None),
    };
    let s = screen(app, spec, start, until)?;
    Ok(Fragment {
        html: String::from_utf8_lossy(&s.html).into_owned(),
        from: start,
        next: s.next,
        done: s.done && until.is_none(),
    })
}

/// The page: header, the first screen (from a search hit's message when `entry`
/// names one), and what `app.js` needs to load the rest.
pub fn page(app: &Arc<App>, spec: &str, entry: Option<&str>) -> Result<Vec<u8>> {
    let focus = match entry {
        Some(e) => app.readings.position_of(app, spec, e)?,
        None => None,
    };
    let from = focus.map_or(0, |p| p.saturating_sub(BEFORE_HIT));
    let s = screen(app, spec, from, None)?;
    let s = if s.unchanged {
        // A page loaded again of a session read to its end: its facts and messages
        // are read again (the reading's end says nothing about the first screen).
        let reading = app.readings.of(spec);
        reading.lock().unwrap().end = None;
        screen(app, spec, from, None)?
    } else {
        s
    };
    let facts = &s.facts;
    let mut header = HtmlHeader::from_facts(facts);
    let listing = app.listing().ok();
    let me = listing.as_ref().and_then(|l| {
        l.iter()
            .find(|l| l.dir == facts.dir && l.id == facts.id)
            .cloned()
    });
    // Sessions of one agent and machine: an id alone could name another agent's.
    let here = crate::host::this_host();
    let kin = |x: &crate::views::listing::Listing| {
        x.agent == facts.agent
            && x.host.as_deref().unwrap_or(here) == facts.host.as_deref().unwrap_or(here)
    };
    if let Some(me) = &me {
        header.archived = me.archived;
        if let Some(p) = &me.parent_id {
            let parent_dir = me
                .parent
                .as_deref()
                .map(|d| d.rsplit('/').next().unwrap_or(d));
            let parent = listing.as_ref().and_then(|l| {
                l.iter()
                    .find(|x| Some(x.dir.as_str()) == parent_dir && kin(x))
                    .or_else(|| l.iter().find(|x| &x.id == p && kin(x)))
            });
            header.parent = Some(html::SessionLink {
                label: parent
                    .and_then(|x| x.title.clone().or(x.preview.clone()))
                    .unwrap_or_else(|| p.clone()),
                id: p.clone(),
                href: parent.map(|x| session_href(&x.dir)),
            });
        }
    }
    if let Some(all) = &listing {
        header.subagents = all
            .iter()
            .filter(|x| {
                x.parent_id.as_deref() == Some(facts.id.as_str()) && !facts.id.is_empty() && kin(x)
            })
            .map(|x| html::SessionLink {
                label: x
                    .title
                    .clone()
                    .or(x.preview.clone())
                    .unwrap_or_else(|| x.id.clone()),
                id: x.id.clone(),
                href: Some(session_href(&x.dir)),
            })
            .collect();
    }
    if let Some(u) = app.session_usage()
        && let Some(c) = u.get(facts.agent, facts.host.as_deref(), &facts.id)
    {
        header.tokens = Some(c.tokens);
        header.cost_usd = c.cost;
    }
    header.resume = resume_lines(app, facts);
    let base = session_href(&facts.dir);
    header.page = html::PageParts {
        stylesheets: vec!["/assets/session.css".into(), "/assets/app.css".into()],
        scripts: vec!["/assets/app.js".into()],
        actions: vec![
            html::Action {
                label: "transcript.jsonl".into(),
                href: format!("{base}/transcript.jsonl"),
                download: true,
            },
            html::Action {
                label: "conversation.md".into(),
                href: format!("{base}/conversation.md"),
                download: true,
            },
            html::Action {
                label: "Export as HTML".into(),
                href: format!("{base}/export"),
                download: true,
            },
        ],
    };
    let mut out = Vec::with_capacity(s.html.len() + 16 * 1024);
    html::write_document_start(&mut out, &header, Mode::Page)
        .map_err(|e| crate::Error::io("rendering", &e))?;
    if from > 0 {
        out.extend_from_slice(
            format!(
                "<p class=\"earlier\" id=\"earlier\"><button type=\"button\" data-before=\"{from}\">{from} earlier messages: show them</button></p>\n"
            )
            .as_bytes(),
        );
    }
    out.extend_from_slice(&s.html);
    out.extend_from_slice(
        format!(
            "<div id=\"more\" class=\"more\" data-href=\"{}/messages\" data-next=\"{}\" data-done=\"{}\" data-focus=\"{}\" data-spec=\"{}\">{}</div>\n",
            esc(&base),
            s.next,
            u8::from(s.done),
            focus.map(|f| format!("m-{f}")).unwrap_or_default(),
            esc(&url_part(spec)),
            if s.done { "" } else { "Loading more messages…" }
        )
        .as_bytes(),
    );
    html::write_document_end(&mut out, Mode::Page)
        .map_err(|e| crate::Error::io("rendering", &e))?;
    Ok(out)
}

/// The commands that continue the session (§10): in its own agent (its file
/// restored first when its agent deleted it), and in each agent `fen-fs resume --in`
/// writes: the session made there by an earlier `--in` from this unchanged session
/// when the resume ledger has one (as `fen-fs resume` and the MCP server's
/// `resume_command` give it), else the command that makes one.
fn resume_lines(app: &App, facts: &SessionFacts) -> Vec<html::ResumeLine> {
    use crate::resume::command::{ResumeCommand, own_agent_line, quote};
    let mut out = Vec::new();
    let peer = facts.host.is_some();
    let id = if facts.id.is_empty() || peer {
        facts.dir.clone()
    } else {
        facts.id.clone()
    };
    let store_root = &app.history.store().root;
    if !peer && facts.resumable {
        if let Some(line) = own_agent_line(
            facts.agent,
            &id,
            facts.cwd.as_deref(),
            facts.source_deleted,
            &app.history.store_args,
        ) {
            out.push(html::ResumeLine {
                agent: if facts.source_deleted {
                    format!(
                        "{} (its own agent; its file is restored first)",
                        facts.agent.name()
                    )
                } else {
                    format!("{} (its own agent)", facts.agent.name())
                },
                command: line,
            });
        } else if facts.agent == crate::agent::Agent::Fen
            && let Some(ctl) =
                crate::resume::command::ctl_in_mount(store_root, &facts.namespace, &facts.dir)
        {
            out.push(html::ResumeLine {
                agent: "fen (append to its ctl)".into(),
                command: quote(&ctl.display().to_string()),
            });
        }
    }
    if facts.resumable || facts.agent == crate::agent::Agent::Fen {
        for target in crate::resume::TARGETS {
            let agent = crate::resume::parse_target(target).expect("a target");
            if let Some(r) = crate::resume::made_earlier(store_root, facts, agent) {
                let command = match ResumeCommand::of(agent, &r.id, Some(&r.cwd)) {
                    Some(c) => c.shell(),
                    None => {
                        let mut words = vec!["fen-fs".to_string(), "resume".into(), quote(&r.id)];
                        words.extend(app.history.store_args.iter().map(|a| quote(a)));
                        words.join(" ")
                    }
                };
                out.push(html::ResumeLine {
                    agent: format!(
                        "the {target} session made from it at {}",
                        crate::views::local_time(&r.made_at)
                    ),
                    command,
                });
                continue;
            }
            let mut words = vec![
                "fen-fs".to_string(),
                "resume".into(),
                quote(&id),
                "--in".into(),
                target.to_string(),
            ];
            words.extend(app.history.store_args.iter().map(|a| quote(a)));
            out.push(html::ResumeLine {
                agent: format!("as a new {target} session"),
                command: words.join(" "),
            });
        }
    }
    out
}

/// A refusal page for a session that cannot be shown.
pub fn missing(spec: &str, why: &str) -> String {
    let mut out = chrome::start("Session not found", chrome::Tab::Session, "");
    chrome::note(&mut out, "error", &format!("{spec}: {why}"));
    chrome::end(out)
}
