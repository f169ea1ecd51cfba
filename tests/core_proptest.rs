//! Property: for any sequence of valid appends (messages of any role and content,
//! custom entries, titles, metadata) and compactions (first-kept at a random earlier
//! message, null, or replacement messages), interleaved with lines a foreign writer
//! appends (garbage, invalid compactions), `conversation.json` equals a reference model
//! that implements SPEC §3 directly over the list of operations.
//!
//! Two sinks run the same operations:
//! - `core`: `Store::create_session` + `Session::append` + `views::snapshot` (the real path;
//!   few cases, each append costs a file refresh);
//! - `memory`: lines serialized with the crate's own `NewEntry::to_line`, the file written
//!   with std, the index fed incrementally with `SessionIndex::ingest`, and the view
//!   rendered with `ConversationSnapshot` (cheap, many cases).
//!
//! Case counts: `FEN_CORE_PROPTEST_CASES` (core) and `FEN_CORE_PROPTEST_MEM_CASES` (memory).

mod core_support;

use core_support::*;
use fen_fs::ctl::grammar::parse_session_line;
use fen_fs::store::Store;
use fen_fs::store::ids::next_entry_id;
use fen_fs::store::index::SessionIndex;
use fen_fs::store::session::Session;
use fen_fs::views::conversation::ConversationSnapshot;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone)]
enum Op {
    Msg {
        role: String,
        content: String,
        form: u8,
    },
    Custom {
        kind: String,
        text: String,
    },
    Title(String),
    Meta(String, u32),
    Keep {
        pick: prop::sample::Index,
        summary: String,
    },
    Null {
        summary: String,
    },
    Replace {
        summary: String,
        msgs: Vec<(String, String)>,
    },
    /// A foreign writer's line: 0 garbage, 1..=4 invalid compactions.
    Foreign(u8),
    Flush,
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z0-9 .,!?]{0,16}",
        1 => "\\PC{0,12}",
        1 => Just("line\nbreak \"quoted\" \\ tab\t".to_string()),
    ]
}

/// A message `content` as raw JSON: a string, text blocks, null or a number.
fn content() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => text().prop_map(|t| q(&t)),
        1 => proptest::collection::vec(text(), 1..3).prop_map(|ts| {
            let blocks: Vec<String> =
                ts.iter().map(|t| format!("{{\"type\":\"text\",\"text\":{}}}", q(t))).collect();
            format!("[{}]", blocks.join(","))
        }),
        1 => Just("null".to_string()),
        1 => (0u32..1000).prop_map(|n| n.to_string()),
    ]
}

fn role() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["user", "assistant", "tool", "system", "x-agent"])
        .prop_map(String::from)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (role(), content(), 0u8..4).prop_map(|(role, content, form)| Op::Msg { role, content, form }),
        2 => (prop::sample::select(vec!["bash", "tool-call", "reasoning", "diff"]), text())
            .prop_map(|(k, text)| Op::Custom { kind: k.to_string(), text }),
        1 => text().prop_map(Op::Title),
        1 => (prop::sample::select(vec!["a", "b", "c"]), 0u32..9).prop_map(|(k, v)| Op::Meta(k.to_string(), v)),
        2 => (any::<prop::sample::Index>(), text()).prop_map(|(pick, summary)| Op::Keep { pick, summary: format!("S{summary}") }),
        1 => text().prop_map(|s| Op::Null { summary: format!("N{s}") }),
        1 => (text(), proptest::collection::vec((role(), content()), 0..3))
            .prop_map(|(s, msgs)| Op::Replace { summary: format!("R{s}"), msgs }),
        1 => (0u8..5).prop_map(Op::Foreign),
        2 => Just(Op::Flush),
    ]
}

/// SPEC §3, straightforwardly.
#[derive(Default, Clone)]
struct Model {
    messages: Vec<String>,
    latest: Option<Compaction>,
    title: Option<String>,
    metadata: serde_json::Map<String, Value>,
    roles: BTreeMap<String, u64>,
    custom: BTreeMap<String, u64>,
    compactions: u64,
    malformed: u64,
}

#[derive(Clone)]
enum Compaction {
    /// Keep messages from this index on.
    Keep(usize, String),
    /// Messages appended after the compaction: from this index on.
    Null(usize, String),
    Replace(usize, Vec<String>),
}

impl Model {
    fn conversation(&self) -> Vec<String> {
        match &self.latest {
            None => self.messages.clone(),
            Some(Compaction::Keep(k, s)) => std::iter::once(synthetic(s))
                .chain(self.messages[*k..].iter().cloned())
                .collect(),
            Some(Compaction::Null(at, s)) => std::iter::once(synthetic(s))
                .chain(self.messages[*at..].iter().cloned())
                .collect(),
            Some(Compaction::Replace(at, r)) => r
                .iter()
                .cloned()
                .chain(self.messages[*at..].iter().cloned())
                .collect(),
        }
    }
}

/// One way of appending and reading back.
trait Sink {
    fn append(&mut self, lines: &[String]) -> Vec<String>;
    fn foreign(&mut self, bytes: &[u8]);
    fn conversation(&mut self) -> Vec<u8>;
    /// Extra checks against the model after each flush (meta.json for the core sink).
    fn check(&mut self, model: &Model, latest_valid_id: Option<&str>);
    fn finish(&mut self, expected_tokens: &BTreeMap<String, (u64, u64)>, model: &Model);
}

/// A pending line: its text, the model index of its message (if it is one), and for
/// a compaction the expected (tokens-before, tokens-after).
struct Pending {
    line: String,
    msg: Option<usize>,
    compaction_tokens: Option<(u64, u64)>,
}

fn run(sink: &mut dyn Sink, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model = Model::default();
    let mut ids: Vec<Option<String>> = Vec::new(); // per model message, once appended
    let mut pending: Vec<Pending> = Vec::new();
    let mut latest_valid_id: Option<String> = None;
    let mut latest_is_pending = false;
    let mut tokens_by_id: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut flush = |sink: &mut dyn Sink,
                     pending: &mut Vec<Pending>,
                     ids: &mut Vec<Option<String>>,
                     model: &Model,
                     latest_valid_id: &mut Option<String>,
                     latest_is_pending: &mut bool|
     -> Result<(), TestCaseError> {
        if !pending.is_empty() {
            let lines: Vec<String> = pending.iter().map(|p| p.line.clone()).collect();
            let got = sink.append(&lines);
            prop_assert_eq!(got.len(), lines.len());
            for (p, id) in pending.iter().zip(&got) {
                if let Some(i) = p.msg {
                    ids[i] = Some(id.clone());
                }
                if let Some(t) = p.compaction_tokens {
                    tokens_by_id.insert(id.clone(), t);
                }
            }
            if *latest_is_pending {
                let last_c = pending
                    .iter()
                    .zip(&got)
                    .rev()
                    .find(|(p, _)| p.compaction_tokens.is_some());
                *latest_valid_id = last_c.map(|(_, id)| id.clone());
                *latest_is_pending = false;
            }
            pending.clear();
        }
        let bytes = sink.conversation();
        let expected = render_conversation(&model.conversation());
        prop_assert_eq!(
            String::from_utf8_lossy(&bytes),
            String::from_utf8_lossy(&expected)
        );
        split_conversation(&bytes);
        sink.check(model, latest_valid_id.as_deref());
        Ok(())
    };

    for op in ops {
        let before = tokens(&model.conversation());
        match op {
            Op::Msg {
                role,
                content,
                form,
            } => {
                let (line, raw) = match form {
                    0 => {
                        let l = format!("{{\"role\":{},\"content\":{content}}}", q(role));
                        (l.clone(), l)
                    }
                    1 => {
                        let raw = format!(
                            "{{ \"content\" : {content} ,\"role\":{}, \"x-n\":[1, 2] }}",
                            q(role)
                        );
                        (format!("  {raw}\t"), raw)
                    }
                    2 => {
                        let raw = format!("{{\"role\":{},\"content\":{content}}}", q(role));
                        (format!("{{\"type\":\"message\",\"message\":{raw}}}"), raw)
                    }
                    _ => {
                        let raw = format!("{{\"role\": {}, \"content\": {content}}}", q(role));
                        (
                            format!("{{\"message\":  {raw} , \"type\":\"message\"}}"),
                            raw,
                        )
                    }
                };
                model.messages.push(raw);
                *model.roles.entry(role.clone()).or_default() += 1;
                ids.push(None);
                pending.push(Pending {
                    line,
                    msg: Some(model.messages.len() - 1),
                    compaction_tokens: None,
                });
            }
            Op::Custom { kind, text } => {
                *model.custom.entry(kind.clone()).or_default() += 1;
                let line = format!("{{\"type\":{},\"text\":{}}}", q(kind), q(text));
                pending.push(Pending {
                    line,
                    msg: None,
                    compaction_tokens: None,
                });
            }
            Op::Title(t) => {
                model.title = Some(t.clone());
                let line = format!("{{\"type\":\"title\",\"title\":{}}}", q(t));
                pending.push(Pending {
                    line,
                    msg: None,
                    compaction_tokens: None,
                });
            }
            Op::Meta(k, v) => {
                model.metadata.insert(k.clone(), Value::from(*v));
                let line = format!("{{\"type\":\"metadata\",\"data\":{{{}:{v}}}}}", q(k));
                pending.push(Pending {
                    line,
                    msg: None,
                    compaction_tokens: None,
                });
            }
            Op::Keep { .. } | Op::Null { .. } | Op::Replace { .. } => {
                // Only messages of earlier batches have ids a writer could name.
                let known: Vec<usize> = (0..ids.len()).filter(|&i| ids[i].is_some()).collect();
                let line = match op {
                    Op::Keep { pick, summary } if !known.is_empty() => {
                        let k = known[pick.index(known.len())];
                        model.latest = Some(Compaction::Keep(k, summary.clone()));
                        format!(
                            "{{\"type\":\"compaction\",\"summary\":{},\"first-kept-entry-id\":{}}}",
                            q(summary),
                            q(ids[k].as_ref().unwrap())
                        )
                    }
                    Op::Keep { summary, .. } | Op::Null { summary } => {
                        model.latest =
                            Some(Compaction::Null(model.messages.len(), summary.clone()));
                        format!(
                            "{{\"type\":\"compaction\",\"summary\":{},\"first-kept-entry-id\":null}}",
                            q(summary)
                        )
                    }
                    Op::Replace { summary, msgs } => {
                        let raws: Vec<String> = msgs
                            .iter()
                            .map(|(r, c)| format!("{{\"role\":{},\"content\":{c}}}", q(r)))
                            .collect();
                        model.latest =
                            Some(Compaction::Replace(model.messages.len(), raws.clone()));
                        format!(
                            "{{\"type\":\"compaction\",\"summary\":{},\"messages\":[{}],\"trigger\":\"auto\"}}",
                            q(summary),
                            raws.join(", ")
                        )
                    }
                    _ => unreachable!(),
                };
                model.compactions += 1;
                let after = tokens(&model.conversation());
                latest_is_pending = true;
                pending.push(Pending {
                    line,
                    msg: None,
                    compaction_tokens: Some((before, after)),
                });
            }
            Op::Foreign(kind) => {
                flush(
                    sink,
                    &mut pending,
                    &mut ids,
                    &model,
                    &mut latest_valid_id,
                    &mut latest_is_pending,
                )?;
                let line: &[u8] = match kind {
                    0 => b"this is not JSON {\n",
                    1 => b"{\"type\":\"compaction\",\"summary\":1,\"first-kept-entry-id\":null}\n",
                    2 => b"{\"type\":\"compaction\",\"summary\":\"x\",\"first-kept-entry-id\":\"0fff0000-0000-7000-8000-00000000beef\"}\n",
                    3 => b"{\"type\":\"compaction\",\"summary\":\"x\",\"messages\":[{\"content\":\"no role\"}]}\n",
                    _ => b"{\"type\":\"compaction\",\"summary\":\"x\"}\n",
                };
                if *kind == 0 {
                    model.malformed += 1;
                } else {
                    model.compactions += 1;
                }
                sink.foreign(line);
            }
            Op::Flush => {
                flush(
                    sink,
                    &mut pending,
                    &mut ids,
                    &model,
                    &mut latest_valid_id,
                    &mut latest_is_pending,
                )?;
            }
        }
    }
    flush(
        sink,
        &mut pending,
        &mut ids,
        &model,
        &mut latest_valid_id,
        &mut latest_is_pending,
    )?;
    sink.finish(&tokens_by_id, &model);
    Ok(())
}

// --- the real path -------------------------------------------------------------------

struct CoreSink {
    _tmp: tempfile::TempDir,
    store: Store,
    session: Option<Arc<Session>>,
}

impl Sink for CoreSink {
    fn append(&mut self, lines: &[String]) -> Vec<String> {
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        match &self.session {
            Some(s) => append(&self.store, s, &refs),
            None => {
                // The first line creates the session (root ctl), the rest are appended.
                let first = parse_session_line(lines[0].as_bytes()).unwrap();
                let (s, id) = self
                    .store
                    .create_session("/prop", None, &first, &fen_fs::ctl::grammar::check_against)
                    .unwrap();
                let mut ids = vec![id];
                if lines.len() > 1 {
                    ids.extend(append(&self.store, &s, &refs[1..]));
                }
                self.session = Some(s);
                ids
            }
        }
    }

    fn foreign(&mut self, bytes: &[u8]) {
        let s = self
            .session
            .as_ref()
            .expect("the first operation created the session");
        raw_append(&s.path, bytes);
    }

    fn conversation(&mut self) -> Vec<u8> {
        match &self.session {
            Some(s) => conversation_bytes(s),
            None => b"[]\n".to_vec(),
        }
    }

    fn check(&mut self, model: &Model, latest_valid_id: Option<&str>) {
        let Some(s) = &self.session else { return };
        let m = meta(s);
        assert_eq!(m["context_tokens"], tokens(&model.conversation()));
        assert_eq!(m["messages"], model.messages.len());
        assert_eq!(m["compactions"], model.compactions);
        assert_eq!(m["malformed_lines"], model.malformed);
        assert_eq!(m["title"].as_str(), model.title.as_deref());
        assert_eq!(m["metadata"], Value::Object(model.metadata.clone()));
        assert_eq!(m["roles"], serde_json::to_value(&model.roles).unwrap());
        assert_eq!(
            m["custom_entries"],
            serde_json::to_value(&model.custom).unwrap()
        );
        assert_eq!(m["last_compaction"]["id"].as_str(), latest_valid_id);
    }

    fn finish(&mut self, expected: &BTreeMap<String, (u64, u64)>, _model: &Model) {
        let Some(s) = &self.session else { return };
        // Computed tokens-before / tokens-after are the context before and after.
        let mut seen = 0;
        for line in std::fs::read_to_string(&s.path).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Some(id) = v["id"].as_str() else { continue };
            if let Some(&(before, after)) = expected.get(id) {
                assert_eq!(v["tokens-before"], before, "tokens-before of {id}");
                assert_eq!(v["tokens-after"], after, "tokens-after of {id}");
                seen += 1;
            }
        }
        assert_eq!(seen, expected.len());
        // The chain survives the foreign lines (they carry no id).
        let mut prev: Option<String> = None;
        for line in std::fs::read_to_string(&s.path).unwrap().lines().skip(1) {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Some(id) = v["id"].as_str() else { continue };
            assert_eq!(v["parent-id"].as_str(), prev.as_deref());
            assert!(prev.as_deref().is_none_or(|p| p < id));
            prev = Some(id.to_string());
        }
        // A fresh load (another store on the same root) renders the same bytes.
        let other =
            Store::open(&self.store.root, fen_fs::store::durability::FsyncMode::No).unwrap();
        let again = other.session(&s.namespace, &s.dir).unwrap();
        assert_eq!(conversation_bytes(&again), conversation_bytes(s));
    }
}

// --- the cheap path --------------------------------------------------------------------

struct MemSink {
    _tmp: tempfile::TempDir,
    path: std::path::PathBuf,
    idx: SessionIndex,
    len: u64,
    last: Option<String>,
}

impl MemSink {
    fn new() -> MemSink {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.jsonl");
        let header = header_line("mem", "/mem");
        std::fs::write(&path, &header).unwrap();
        let mut idx = SessionIndex::new();
        idx.ingest(0, header.as_bytes());
        MemSink {
            _tmp: tmp,
            path,
            idx,
            len: header.len() as u64,
            last: None,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        raw_append(&self.path, bytes);
        let used = self.idx.ingest(self.len, bytes);
        assert_eq!(used, bytes.len());
        self.len += bytes.len() as u64;
    }
}

impl Sink for MemSink {
    fn append(&mut self, lines: &[String]) -> Vec<String> {
        let mut out = String::new();
        let mut ids = Vec::new();
        for l in lines {
            let e = parse_session_line(l.as_bytes()).unwrap();
            let id = next_entry_id(self.last.as_deref()).to_string();
            out.push_str(&e.to_line(&id, self.last.as_deref(), "2026-01-01T00:00:00.000Z", &[]));
            self.last = Some(id.clone());
            ids.push(id);
        }
        self.push(out.as_bytes());
        ids
    }

    fn foreign(&mut self, bytes: &[u8]) {
        self.push(bytes);
    }

    fn conversation(&mut self) -> Vec<u8> {
        let file = std::fs::File::open(&self.path).unwrap();
        let snap = ConversationSnapshot::new(&self.idx, file).unwrap();
        let all = snap.read_at(0, snap.size() as usize + 10).unwrap();
        assert_eq!(all.len() as u64, snap.size());
        // Random-ish windows read the same bytes as the whole.
        let n = all.len() as u64;
        for (off, len) in [
            (0, 1),
            (1, 2),
            (n / 3, 7),
            (n / 2, 100),
            (n.saturating_sub(3), 10),
        ] {
            let part = snap.read_at(off, len).unwrap();
            let lo = (off as usize).min(all.len());
            let hi = (lo + len).min(all.len());
            assert_eq!(part, &all[lo..hi], "window {off}+{len}");
        }
        all
    }

    fn check(&mut self, model: &Model, _latest_valid_id: Option<&str>) {
        assert_eq!(self.idx.message_count(), model.messages.len());
        assert_eq!(self.idx.compactions.len() as u64, model.compactions);
        assert_eq!(self.idx.malformed_lines, model.malformed);
    }

    fn finish(&mut self, _expected: &BTreeMap<String, (u64, u64)>, _model: &Model) {
        // The incrementally fed index equals one fed the whole file at once.
        let bytes = std::fs::read(&self.path).unwrap();
        let mut whole = SessionIndex::new();
        whole.ingest(0, &bytes);
        assert_eq!(
            *whole.messages.read().unwrap(),
            *self.idx.messages.read().unwrap()
        );
        assert_eq!(whole.compactions, self.idx.compactions);
        assert_eq!(
            whole.latest_valid_compaction,
            self.idx.latest_valid_compaction
        );
        assert_eq!(whole.title, self.idx.title);
        assert_eq!(whole.metadata, self.idx.metadata);
        assert_eq!(whole.last_entry_id, self.idx.last_entry_id);
    }
}

fn cases(var: &str, default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Operation lists whose first operation can start a session (a foreign line or a
/// flush first would have no file to go to: skip them).
fn ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..max).prop_filter("starts with an entry", |ops| {
        !matches!(ops[0], Op::Foreign(_) | Op::Flush)
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases("FEN_CORE_PROPTEST_CASES", 10),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn core_appends_match_the_reference_model(ops in ops(20)) {
        let (tmp, store) = temp_store();
        let mut sink = CoreSink { _tmp: tmp, store, session: None };
        run(&mut sink, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases("FEN_CORE_PROPTEST_MEM_CASES", 256),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn serialized_entries_match_the_reference_model(ops in ops(40)) {
        let mut sink = MemSink::new();
        run(&mut sink, &ops)?;
    }
}
