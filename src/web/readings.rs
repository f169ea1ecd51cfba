//! Where readings of each recently shown session got to: every reading goes on
//! from where an earlier one stopped (`SessionSource::each_message_since` and its
//! marks, kept per session): scrolling through a large session reads it once, a poll
//! reads only what was appended, and a poll of a session that did not change costs
//! one `stat`.

use crate::error::Result;
use crate::history::History;
use crate::neutral::{Message, SessionFacts};
use crate::resume::find::Found;
use crate::sources::{ControlFlow, MessageMark};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

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
        history: &History,
        spec: &str,
        from: u64,
        each: &mut dyn FnMut(u64, &SessionFacts, Message) -> ControlFlow<()>,
    ) -> Result<Option<Read>> {
        let reading = self.of(spec);
        let mut r = reading.lock().unwrap();
        r.last_use = Instant::now();
        let found = match r.found.take() {
            Some(f) if f.source.session_stat(&f.ns, &f.dir).is_ok() => f,
            _ => Arc::new(history.find(spec)?),
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
    pub fn position_of(&self, history: &History, spec: &str, entry: &str) -> Result<Option<u64>> {
        let mut at_entry = None;
        self.read(history, spec, 0, &mut |at, _, m| {
            if m.entry.as_deref() == Some(entry) {
                at_entry = Some(at);
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        Ok(at_entry)
    }

    /// Forgets where the last reading of `spec` ended: the next reads it again (a
    /// page loaded again says nothing of its first screen).
    pub fn forget_end(&self, spec: &str) {
        self.of(spec).lock().unwrap().end = None;
    }
}
