//! Every case of the conversation projection (SPEC §3), on hand-written transcripts
//! (the ctl grammar refuses invalid compactions, readers must still cope with them).
//! Each case runs twice: with UUIDv7 ids and with foreign (non-UUID) id strings.

mod core_support;

use core_support::*;
use fen_fs::store::Store;

/// Builds a transcript line by line, chaining ids like a writer would.
struct Tx {
    out: String,
    n: u64,
    last: Option<String>,
    foreign: bool,
}

impl Tx {
    fn new(foreign: bool) -> Tx {
        Tx {
            out: header_line("sess-1", "/proj"),
            n: 0,
            last: None,
            foreign,
        }
    }

    fn next_id(&mut self) -> String {
        self.n += 1;
        if self.foreign {
            format!("entry-{}", self.n)
        } else {
            uid(self.n)
        }
    }

    /// Appends an entry whose fields after the envelope are `rest` (raw JSON members).
    fn entry(&mut self, kind: &str, rest: &str) -> String {
        let id = self.next_id();
        let parent = self.last.as_deref().map(q).unwrap_or_else(|| "null".into());
        self.out.push_str(&format!(
            "{{\"type\":{},\"id\":{},\"parent-id\":{},\"timestamp\":\"2026-01-02T03:04:{:02}.000Z\"{}{}}}\n",
            q(kind),
            q(&id),
            parent,
            self.n % 60,
            if rest.is_empty() { "" } else { "," },
            rest
        ));
        self.last = Some(id.clone());
        id
    }

    /// A message entry; returns (id, the message's raw bytes).
    fn msg(&mut self, role: &str, content: &str) -> (String, String) {
        let raw = format!("{{\"role\":{}, \"content\":{}}}", q(role), q(content));
        let id = self.entry("message", &format!("\"message\":{raw}"));
        (id, raw)
    }

    fn compaction(&mut self, rest: &str) -> String {
        self.entry("compaction", rest)
    }

    fn keep(&mut self, summary: &str, first_kept: &str) -> String {
        self.compaction(&format!(
            "\"summary\":{},\"first-kept-entry-id\":{},\"tokens-before\":10,\"tokens-after\":5",
            q(summary),
            q(first_kept)
        ))
    }
}

/// Loads `tx` as a session and checks conversation.json is exactly `expected`; also
/// checks meta's context_tokens and last_compaction, and a direct SessionIndex load.
fn check(tx: &Tx, expected: &[String], last_valid: Option<&str>, total_compactions: usize) {
    let (_tmp, store) = temp_store();
    check_in(&store, tx, expected, last_valid, total_compactions);
}

fn check_in(store: &Store, tx: &Tx, expected: &[String], last_valid: Option<&str>, total: usize) {
    let dir = format!("2026-01-02T03-04-05-006Z_sess-{}", tx.foreign as u8);
    let s = hand_session(store, "--proj--", &dir, tx.out.as_bytes());
    let bytes = conversation_bytes(&s);
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        String::from_utf8_lossy(&render_conversation(expected)),
        "foreign ids: {}\ntranscript:\n{}",
        tx.foreign,
        tx.out
    );
    split_conversation(&bytes);
    let m = meta(&s);
    assert_eq!(m["context_tokens"], tokens(expected));
    assert_eq!(m["compactions"], total as u64);
    assert_eq!(m["malformed_lines"], 0);
    match last_valid {
        None => assert!(m["last_compaction"].is_null(), "{}", m["last_compaction"]),
        Some(id) => assert_eq!(m["last_compaction"]["id"], id),
    }
    let idx = s.current().unwrap();
    assert_eq!(idx.compactions.len(), total);
    assert_eq!(
        idx.compactions.iter().filter(|c| c.is_valid()).count() > 0,
        last_valid.is_some()
    );
    assert_eq!(
        idx.latest_valid_compaction
            .map(|i| idx.compactions[i].id.clone().unwrap()),
        last_valid.map(String::from)
    );
}

fn both(case: impl Fn(bool)) {
    case(false);
    case(true);
}

#[test]
fn no_compaction_replays_every_message() {
    both(|f| {
        let mut tx = Tx::new(f);
        let (_, a) = tx.msg("user", "hello");
        tx.entry("bash", "\"cmd\":\"ls\"");
        let (_, b) = tx.msg("assistant", "hi");
        tx.entry("title", "\"title\":\"T\"");
        tx.entry("metadata", "\"data\":{\"k\":1}");
        let (_, c) = tx.msg("tool", "result");
        let (_, d) = tx.msg("x-custom-role", "");
        check(&tx, &[a, b, c, d], None, 0);
    });
}

#[test]
fn empty_conversation() {
    both(|f| {
        let mut tx = Tx::new(f);
        tx.entry("title", "\"title\":\"only a title\"");
        check(&tx, &[], None, 0);
    });
}

#[test]
fn first_kept_form() {
    both(|f| {
        let mut tx = Tx::new(f);
        let (_, _a) = tx.msg("user", "one");
        let (kid, b) = tx.msg("assistant", "two");
        let (_, c) = tx.msg("user", "three");
        let cid = tx.keep("S1", &kid);
        let (_, d) = tx.msg("assistant", "four");
        tx.entry("reasoning", "\"text\":\"hidden\"");
        let (_, e) = tx.msg("user", "five");
        check(&tx, &[synthetic("S1"), b, c, d, e], Some(&cid), 1);
    });
}

#[test]
fn first_kept_is_the_very_first_message() {
    both(|f| {
        let mut tx = Tx::new(f);
        let (kid, a) = tx.msg("user", "one");
        let cid = tx.keep("all kept", &kid);
        check(&tx, &[synthetic("all kept"), a], Some(&cid), 1);
    });
}

#[test]
fn null_first_kept() {
    both(|f| {
        let mut tx = Tx::new(f);
        tx.msg("user", "one");
        tx.msg("assistant", "two");
        let cid = tx.compaction("\"summary\":\"S\",\"first-kept-entry-id\":null");
        check(&tx, &[synthetic("S")], Some(&cid), 1);
        let (_, c) = tx.msg("user", "three");
        tx.entry("diff", "\"patch\":\"+x\"");
        let (_, d) = tx.msg("assistant", "four");
        check(&tx, &[synthetic("S"), c, d], Some(&cid), 1);
    });
}

#[test]
fn replacement_messages_form() {
    both(|f| {
        let mut tx = Tx::new(f);
        tx.msg("user", "one");
        tx.msg("assistant", "two");
        let r1 = r#"{"role":"user",  "content":"what we did"}"#.to_string();
        let r2 = r#"{"content":[{"type":"text","text":"ok"}],"role":"assistant"}"#.to_string();
        let cid = tx.compaction(&format!(
            "\"summary\":\"S\",\"messages\":[ {r1} , {r2} ],\"trigger\":\"auto\""
        ));
        check(&tx, &[r1.clone(), r2.clone()], Some(&cid), 1);
        let (_, c) = tx.msg("user", "three");
        check(&tx, &[r1, r2, c], Some(&cid), 1);
    });
}

#[test]
fn empty_replacement_list_is_valid() {
    both(|f| {
        let mut tx = Tx::new(f);
        tx.msg("user", "one");
        let cid = tx.compaction("\"summary\":\"S\",\"messages\":[]");
        check(&tx, &[], Some(&cid), 1);
        let (_, b) = tx.msg("user", "two");
        check(&tx, &[b], Some(&cid), 1);
    });
}

#[test]
fn empty_summary_string_is_still_a_string() {
    both(|f| {
        let mut tx = Tx::new(f);
        tx.msg("user", "one");
        let cid = tx.compaction("\"summary\":\"\",\"first-kept-entry-id\":null");
        check(&tx, &[synthetic("")], Some(&cid), 1);
    });
}

#[test]
fn several_compactions_latest_valid_wins() {
    both(|f| {
        let mut tx = Tx::new(f);
        let (k1, _a) = tx.msg("user", "one");
        tx.keep("S1", &k1);
        let (k2, b) = tx.msg("assistant", "two");
        tx.compaction("\"summary\":\"S2\",\"first-kept-entry-id\":null");
        let (_, c) = tx.msg("user", "three");
        let r = r#"{"role":"user","content":"R"}"#.to_string();
        let c3 = tx.compaction(&format!("\"summary\":\"S3\",\"messages\":[{r}]"));
        let (_, d) = tx.msg("assistant", "four");
        check(&tx, &[r.clone(), d.clone()], Some(&c3), 3);
        // A later first-kept compaction may keep messages from before earlier ones.
        let c4 = tx.keep("S4", &k2);
        let (_, e) = tx.msg("user", "five");
        check(&tx, &[synthetic("S4"), b, c, d, e], Some(&c4), 4);
    });
}

/// Writes one invalid compaction, given a message id and a custom entry's id.
type MakeBad = Box<dyn Fn(&mut Tx, &str, &str) -> String>;

/// Invalid compactions are ignored: the previous valid one applies.
#[test]
fn invalid_compactions_fall_back_to_the_previous_valid_one() {
    both(|f| {
        let invalid: Vec<MakeBad> = vec![
            // first-kept names no entry at all
            Box::new(|tx, _, _| {
                tx.keep(
                    "bad",
                    if tx.foreign {
                        "entry-999"
                    } else {
                        "01900000-0000-7000-8000-0000000003e7"
                    },
                )
            }),
            // first-kept names a message that comes after the compaction
            Box::new(|tx, _, _| {
                let future = if tx.foreign {
                    format!("entry-{}", tx.n + 2)
                } else {
                    uid(tx.n + 2)
                };
                tx.keep("bad", &future)
            }),
            // first-kept names an entry that is not a message
            Box::new(|tx, _, custom| tx.keep("bad", custom)),
            // summary is not a string
            Box::new(|tx, kid, _| {
                tx.compaction(&format!(
                    "\"summary\":42,\"first-kept-entry-id\":{}",
                    q(kid)
                ))
            }),
            Box::new(|tx, _, _| tx.compaction("\"summary\":null,\"first-kept-entry-id\":null")),
            Box::new(|tx, _, _| tx.compaction("\"summary\":[\"a\"],\"messages\":[]")),
            // summary missing
            Box::new(|tx, _, _| tx.compaction("\"first-kept-entry-id\":null")),
            // first-kept of the wrong type
            Box::new(|tx, _, _| tx.compaction("\"summary\":\"bad\",\"first-kept-entry-id\":17")),
            // neither first-kept nor messages
            Box::new(|tx, _, _| tx.compaction("\"summary\":\"bad\"")),
            // messages not an array / items without a string role
            Box::new(|tx, _, _| {
                tx.compaction("\"summary\":\"bad\",\"messages\":{\"role\":\"user\"}")
            }),
            Box::new(|tx, _, _| {
                tx.compaction(
                    "\"summary\":\"bad\",\"messages\":[{\"role\":\"user\"},{\"content\":\"x\"}]",
                )
            }),
            Box::new(|tx, _, _| tx.compaction("\"summary\":\"bad\",\"messages\":[{\"role\":3}]")),
            Box::new(|tx, _, _| tx.compaction("\"summary\":\"bad\",\"messages\":[\"user\"]")),
        ];
        for (i, make_bad) in invalid.iter().enumerate() {
            let mut tx = Tx::new(f);
            let (_, _a) = tx.msg("user", "one");
            let custom = tx.entry("bash", "\"cmd\":\"x\"");
            let (kid, b) = tx.msg("assistant", "two");
            let good = tx.keep("good", &kid);
            let (_, c) = tx.msg("user", "three");
            let bad = make_bad(&mut tx, &kid, &custom);
            let (_, d) = tx.msg("assistant", "four");
            let (_, e) = tx.msg("user", "five");
            assert_ne!(good, bad);
            let (_tmp, store) = temp_store();
            eprintln!("invalid case {i}");
            check_in(
                &store,
                &tx,
                &[synthetic("good"), b, c, d, e],
                Some(&good),
                2,
            );
        }
    });
}

/// Invalid compactions with no valid one before them: full replay.
#[test]
fn invalid_compactions_alone_mean_full_replay() {
    both(|f| {
        let mut tx = Tx::new(f);
        let (_, a) = tx.msg("user", "one");
        let (_, b) = tx.msg("assistant", "two");
        tx.keep(
            "missing",
            if f {
                "nope"
            } else {
                "01900000-0000-7000-8000-00000000ffff"
            },
        );
        let future = if f {
            format!("entry-{}", tx.n + 2)
        } else {
            uid(tx.n + 2)
        };
        tx.keep("future", &future);
        let (_, c) = tx.msg("user", "three");
        tx.compaction("\"summary\":1,\"first-kept-entry-id\":null");
        tx.compaction("\"summary\":\"s\",\"messages\":[{\"content\":\"no role\"}]");
        let (_, d) = tx.msg("user", "four");
        check(&tx, &[a, b, c, d], None, 4);
    });
}

/// A compaction that points at itself is not "a message entry before C".
#[test]
fn compaction_pointing_at_itself_is_ignored() {
    both(|f| {
        let mut tx = Tx::new(f);
        let (_, a) = tx.msg("user", "one");
        let own = if f {
            format!("entry-{}", tx.n + 1)
        } else {
            uid(tx.n + 1)
        };
        tx.keep("self", &own);
        let (_, b) = tx.msg("user", "two");
        check(&tx, &[a, b], None, 1);
    });
}

/// The synthetic message is never written; title, metadata, custom entries never show.
#[test]
fn only_messages_and_the_summary_appear() {
    both(|f| {
        let mut tx = Tx::new(f);
        let (k, a) = tx.msg("user", "one");
        tx.entry("title", "\"title\":\"T\"");
        tx.entry("metadata", "\"data\":{\"role\":\"user\"}");
        tx.entry(
            "tool-call",
            "\"role\":\"user\",\"content\":\"looks like a message\"",
        );
        let cid = tx.keep("summary with \"quotes\" and\nnewlines ✓", &k);
        tx.entry(
            "bash",
            "\"message\":{\"role\":\"user\",\"content\":\"nested\"}",
        );
        check(
            &tx,
            &[synthetic("summary with \"quotes\" and\nnewlines ✓"), a],
            Some(&cid),
            1,
        );
    });
}

/// A version-1 file (no ids) replays every message; a compaction there can only be
/// the null or replacement form.
#[test]
fn version_one_compactions() {
    let (_tmp, store) = temp_store();
    let text = concat!(
        "{\"type\":\"session\",\"version\":1,\"id\":\"v1\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"cwd\":\"/v1\"}\n",
        "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n",
        "{\"type\":\"compaction\",\"summary\":\"S\",\"first-kept-entry-id\":null}\n",
        "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":\"b\"}}\n",
    );
    let s = hand_session(
        &store,
        "--v1--",
        "2025-01-01T00-00-00-000Z_v1",
        text.as_bytes(),
    );
    assert_eq!(
        conversation_items(&s),
        [
            synthetic("S"),
            r#"{"role":"assistant","content":"b"}"#.to_string()
        ]
    );
}

/// A message without an id (a v1-style line, or a foreign writer that left it out) in
/// the middle of a v2 file: ids are otherwise increasing, and a later compaction keeps
/// a message from before it.
#[test]
fn id_less_message_between_v2_entries() {
    let (_tmp, store) = temp_store();
    let mut tx = Tx::new(false);
    let (k1, a) = tx.msg("user", "one");
    let (_, b) = tx.msg("assistant", "two");
    let anon = r#"{"role":"user","content":"no id"}"#.to_string();
    tx.out
        .push_str(&format!("{{\"type\":\"message\",\"message\":{anon}}}\n"));
    let (_, c) = tx.msg("assistant", "three");
    let (_, d) = tx.msg("user", "four");
    let cid = tx.keep("S", &k1);
    check_in(
        &store,
        &tx,
        &[
            synthetic("S"),
            a,
            b.clone(),
            anon.clone(),
            c.clone(),
            d.clone(),
        ],
        Some(&cid),
        1,
    );

    // The ctl path uses the same look-up: keeping the first message must be accepted.
    let s = store
        .session("--proj--", "2026-01-02T03-04-05-006Z_sess-0")
        .unwrap();
    let line = format!(r#"{{"type":"compaction","summary":"T","first-kept-entry-id":"{k1}"}}"#);
    let ids = try_append(&store, &s, &[&line]).expect("first-kept names a message of this session");
    assert_eq!(ids.len(), 1);
}
