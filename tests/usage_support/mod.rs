//! Generated agent histories with token usage, as each agent writes them, for the
//! usage tests: Claude Code (responses repeated on every content block, a resumed
//! copy, subagent transcripts in both layouts and a workflow run's, a `/btw` side
//! question replaying its parent, 5-minute and 1-hour cache writes, a
//! response past 200k input tokens, fast mode, a recorded cost, a response without a
//! request id), Codex (token_count events with and without `last_token_usage`,
//! repeated events, a model switch, a fork that replays its parent, an archived
//! rollout), Gemini CLI (cached input, thoughts, tool tokens, a message re-appended
//! with new counts, a subagent's chat). Times cluster around midnight in New York
//! across the 2026 switch to summer time, so days depend on the time zone.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The roots written: `<dir>/claude`, `<dir>/codex`, `<dir>/gemini` (Gemini's home
/// folder: its files are under `.gemini/`).
pub struct History {
    pub claude: PathBuf,
    pub codex: PathBuf,
    pub gemini_home: PathBuf,
}

impl History {
    pub fn gemini(&self) -> PathBuf {
        self.gemini_home.join(".gemini")
    }

    /// `--source` arguments for fen-fs.
    pub fn source_args(&self) -> Vec<String> {
        vec![
            "--no-detect".into(),
            "--source".into(),
            format!("claude={}", self.claude.display()),
            "--source".into(),
            format!("codex={}", self.codex.display()),
            "--source".into(),
            format!("gemini={}", self.gemini().display()),
        ]
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

fn line(v: &Value) -> String {
    // Compact, as the agents write (ccusage does not read other spacing).
    let mut s = serde_json::to_string(v).unwrap();
    s.push('\n');
    s
}

fn write(path: &Path, lines: &[String]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::File::create(path).unwrap();
    for l in lines {
        f.write_all(l.as_bytes()).unwrap();
    }
}

/// `2026-03-01T04:10:00.000Z` plus `minutes`.
fn at(day: u32, minutes: i64) -> String {
    let base = chrono::NaiveDate::from_ymd_opt(2026, 3, day)
        .unwrap()
        .and_hms_opt(3, 40, 0)
        .unwrap()
        .and_utc();
    (base + chrono::Duration::minutes(minutes)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn uuid(r: &mut Rng) -> String {
    let (a, b) = (r.next(), r.next());
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

/// How one Claude Code response is written.
struct Resp<'a> {
    time: &'a str,
    model: &'a str,
    /// `Some("")`: no request id.
    request: Option<&'a str>,
    extra: &'a [(&'a str, Value)],
    /// Lines (content blocks) sharing the response's id and usage.
    blocks: usize,
}

/// One Claude Code response: one line per content block, sharing id, request id and
/// usage.
fn claude_response(
    r: &mut Rng,
    session: &str,
    cwd: &str,
    usage: Value,
    w: Resp,
) -> (Vec<String>, String) {
    let Resp {
        time,
        model,
        request,
        extra,
        blocks,
    } = w;
    let id = format!("msg_01{:016x}", r.next());
    let req = request
        .map(str::to_string)
        .unwrap_or_else(|| format!("req_011C{:016x}", r.next()));
    let mut out = Vec::new();
    for b in 0..blocks {
        let block = match b {
            0 => json!({"type":"thinking","thinking":"planning the change","signature":"c2ln"}),
            1 => {
                json!({"type":"tool_use","id":format!("toolu_{:x}",r.next()),"name":"Bash","input":{"command":"cargo test"}})
            }
            _ => json!({"type":"text","text":"done"}),
        };
        let mut v = json!({
            "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd,
            "sessionId": session, "version": "2.1.114", "gitBranch": "main",
            "message": {"model": model, "id": id, "type": "message", "role": "assistant",
                        "content": [block], "stop_reason": null, "stop_sequence": null,
                        "usage": usage},
            "requestId": req, "type": "assistant", "uuid": uuid(r), "timestamp": time
        });
        if request == Some("") {
            v.as_object_mut().unwrap().remove("requestId");
        }
        for (k, val) in extra {
            v[*k] = val.clone();
        }
        out.push(line(&v));
    }
    (out, id)
}

fn claude_user(r: &mut Rng, session: &str, cwd: &str, time: &str, text: &str) -> String {
    line(&json!({
        "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd,
        "sessionId": session, "version": "2.1.114", "type": "user",
        "message": {"role": "user", "content": text}, "uuid": uuid(r), "timestamp": time
    }))
}

fn usage(r: &mut Rng, hour_share: u64) -> Value {
    let written = r.range(0, 30_000);
    let one_hour = written * hour_share / 100;
    json!({
        "input_tokens": r.range(1, 40), "cache_creation_input_tokens": written,
        "cache_read_input_tokens": r.range(0, 180_000), "output_tokens": r.range(1, 4_000),
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {"ephemeral_5m_input_tokens": written - one_hour,
                           "ephemeral_1h_input_tokens": one_hour}
    })
}

pub fn write_history(dir: &Path) -> History {
    let h = History {
        claude: dir.join("claude"),
        codex: dir.join("codex"),
        gemini_home: dir.join("gemini-home"),
    };
    write_claude(&h.claude);
    write_codex(&h.codex);
    write_gemini(&h.gemini());
    h
}

fn write_claude(root: &Path) {
    let mut r = Rng(0x5eed_c1a0de);
    let cwd = "/home/u/alpha";
    let project = root.join("projects/-home-u-alpha");
    let a = uuid(&mut r);
    let mut lines = Vec::new();
    let models = [
        "claude-sonnet-4-5-20250929",
        "claude-opus-4-7",
        "claude-haiku-4-5",
    ];
    // Ten days around New York's midnight, across the switch to summer time (03-08).
    for day in 1..=10u32 {
        for k in 0..6i64 {
            let t = at(day, k * 17);
            lines.push(claude_user(&mut r, &a, cwd, &t, "go on"));
            let model = models[(day as usize + k as usize) % models.len()];
            let share = [0, 100, 40][k as usize % 3];
            let u = usage(&mut r, share);
            let (l, _) = claude_response(
                &mut r,
                &a,
                cwd,
                u,
                Resp {
                    time: &t,
                    model,
                    request: None,
                    extra: &[],
                    blocks: 3,
                },
            );
            lines.extend(l);
        }
    }
    // Past 200k input tokens: the higher tier.
    let big = json!({"input_tokens": 250_000, "cache_creation_input_tokens": 0,
                     "cache_read_input_tokens": 0, "output_tokens": 900});
    let (l, _) = claude_response(
        &mut r,
        &a,
        cwd,
        big,
        Resp {
            time: &at(4, 5),
            model: "claude-sonnet-4-5-20250929",
            request: None,
            extra: &[],
            blocks: 2,
        },
    );
    lines.extend(l);
    // Fast mode.
    let fast = json!({"input_tokens": 300, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 1000, "output_tokens": 700, "speed": "fast"});
    let (l, _) = claude_response(
        &mut r,
        &a,
        cwd,
        fast,
        Resp {
            time: &at(5, 7),
            model: "claude-opus-4-6",
            request: None,
            extra: &[],
            blocks: 2,
        },
    );
    lines.extend(l);
    // The cost Claude Code once recorded.
    let u = usage(&mut r, 0);
    let (l, _) = claude_response(
        &mut r,
        &a,
        cwd,
        u,
        Resp {
            time: &at(6, 9),
            model: "claude-sonnet-4-5-20250929",
            request: None,
            extra: &[("costUSD", json!(0.4321))],
            blocks: 1,
        },
    );
    lines.extend(l);
    // No request id: each line counts (as ccusage counts it).
    let u = usage(&mut r, 0);
    let (l, _) = claude_response(
        &mut r,
        &a,
        cwd,
        u,
        Resp {
            time: &at(7, 11),
            model: "claude-haiku-4-5",
            request: Some(""),
            extra: &[],
            blocks: 2,
        },
    );
    lines.extend(l);
    // A synthetic message (no model call).
    let zero = json!({"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0});
    let (l, _) = claude_response(
        &mut r,
        &a,
        cwd,
        zero,
        Resp {
            time: &at(8, 1),
            model: "<synthetic>",
            request: None,
            extra: &[],
            blocks: 1,
        },
    );
    lines.extend(l);
    write(&project.join(format!("{a}.jsonl")), &lines);
    // A resumed copy (older CLIs): the history under a new session id, then more.
    let b = uuid(&mut r);
    let mut copy: Vec<String> = lines[..40].iter().map(|l| l.replace(&a, &b)).collect();
    for k in 0..4i64 {
        let t = at(10, 30 + k * 13);
        let u = usage(&mut r, 100);
        let (l, _) = claude_response(
            &mut r,
            &b,
            cwd,
            u,
            Resp {
                time: &t,
                model: "claude-opus-4-7",
                request: None,
                extra: &[],
                blocks: 2,
            },
        );
        copy.extend(l);
    }
    write(&project.join(format!("{b}.jsonl")), &copy);
    // A subagent (new layout): its own responses, and one of the parent's again.
    let mut sub = Vec::new();
    for k in 0..5i64 {
        let t = at(3, 40 + k * 9);
        let u = usage(&mut r, 0);
        let (l, _) = claude_response(
            &mut r,
            &a,
            cwd,
            u,
            Resp {
                time: &t,
                model: "claude-haiku-4-5",
                request: None,
                extra: &[("isSidechain", json!(true)), ("agentId", json!("a1b2c3"))],
                blocks: 2,
            },
        );
        sub.extend(l);
    }
    sub.push(lines[1].clone());
    write(&project.join(&a).join("subagents/agent-a1b2c3.jsonl"), &sub);
    // A subagent (old layout, in the project folder).
    let mut old = Vec::new();
    for k in 0..3i64 {
        let t = at(2, 50 + k * 7);
        let u = usage(&mut r, 40);
        let (l, _) = claude_response(
            &mut r,
            &a,
            cwd,
            u,
            Resp {
                time: &t,
                model: "claude-sonnet-4-5-20250929",
                request: None,
                extra: &[("isSidechain", json!(true))],
                blocks: 1,
            },
        );
        old.extend(l);
    }
    write(&project.join("agent-d4e5f6.jsonl"), &old);
    // A `/btw` side question (versions before 2.1.330): the parent's first lines
    // replayed as its sidechain lines (same message and request ids), then its own
    // response. Not a session; its usage counts (its own response once).
    let side_id = "aside_question-0123456789abcdef";
    let mut side: Vec<String> = lines[..24]
        .iter()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["isSidechain"] = json!(true);
            v["agentId"] = json!(side_id);
            format!("{v}\n")
        })
        .collect();
    let u = usage(&mut r, 100);
    let (l, _) = claude_response(
        &mut r,
        &a,
        cwd,
        u,
        Resp {
            time: &at(3, 58),
            model: "claude-opus-4-7",
            request: None,
            extra: &[("isSidechain", json!(true)), ("agentId", json!(side_id))],
            blocks: 1,
        },
    );
    side.extend(l);
    write(
        &project
            .join(&a)
            .join(format!("subagents/agent-{side_id}.jsonl")),
        &side,
    );
    // A workflow run's subagent.
    let mut flow = Vec::new();
    for k in 0..3i64 {
        let t = at(4, 20 + k * 5);
        let u = usage(&mut r, 40);
        let (l, _) = claude_response(
            &mut r,
            &a,
            cwd,
            u,
            Resp {
                time: &t,
                model: "claude-haiku-4-5",
                request: None,
                extra: &[
                    ("isSidechain", json!(true)),
                    ("agentId", json!("a0123456789abcdef")),
                ],
                blocks: 2,
            },
        );
        flow.extend(l);
    }
    write(
        &project
            .join(&a)
            .join("subagents/workflows/wf_0a1b2c3d-4e5-1/agent-a0123456789abcdef.jsonl"),
        &flow,
    );
    // Another project.
    let c = uuid(&mut r);
    let cwd2 = "/home/u/beta";
    let mut other = Vec::new();
    for day in [2u32, 9] {
        let t = at(day, 44);
        other.push(claude_user(&mut r, &c, cwd2, &t, "hi"));
        let u = usage(&mut r, 50);
        let (l, _) = claude_response(
            &mut r,
            &c,
            cwd2,
            u,
            Resp {
                time: &t,
                model: "claude-sonnet-4-5-20250929",
                request: None,
                extra: &[],
                blocks: 2,
            },
        );
        other.extend(l);
    }
    write(
        &root
            .join("projects/-home-u-beta")
            .join(format!("{c}.jsonl")),
        &other,
    );
}

fn codex_counts(i: u64, c: u64, o: u64, reason: u64) -> Value {
    json!({"input_tokens": i, "cached_input_tokens": c, "output_tokens": o,
           "reasoning_output_tokens": reason, "total_tokens": i + o})
}

fn write_codex(root: &Path) {
    let mut r = Rng(0xc0de_c0de);
    let id = "019cc000-0000-7000-8000-00000000c0d1";
    let cwd = "/home/u/alpha";
    let mut lines = vec![line(
        &json!({"timestamp": at(2, 0), "type": "session_meta", "payload": {
        "id": id, "timestamp": at(2, 0), "cwd": cwd, "originator": "codex_cli_rs",
        "cli_version": "0.169.0", "source": "cli", "model_provider": "openai"}}),
    )];
    let mut total = [0u64; 4];
    let mut minute = 0i64;
    for day in 2..=9u32 {
        let model = if day < 6 {
            "gpt-5.3-codex"
        } else {
            "gpt-5.2-codex"
        };
        lines.push(line(
            &json!({"timestamp": at(day, minute), "type": "turn_context",
            "payload": {"turn_id": format!("t{day}"), "cwd": cwd, "model": model}}),
        ));
        for _ in 0..4 {
            minute = (minute + 11) % 120;
            let (i, o) = (r.range(2_000, 60_000), r.range(50, 3_000));
            let c = i * r.range(0, 90) / 100;
            let reason = o / 3;
            for (t, n) in total.iter_mut().zip([i, c, o, reason]) {
                *t += n;
            }
            let t = at(day, minute);
            let info = json!({"total_token_usage": codex_counts(total[0], total[1], total[2], total[3]),
                              "last_token_usage": codex_counts(i, c, o, reason),
                              "model_context_window": 258400});
            let ev = json!({"timestamp": t, "type": "event_msg",
                            "payload": {"type": "token_count", "info": info, "rate_limits": null}});
            lines.push(line(&ev));
            // A rate-limit update repeats the totals: not a new call.
            if day % 3 == 0 {
                let mut again = ev.clone();
                again["timestamp"] = json!(at(day, minute + 1));
                lines.push(line(&again));
            }
        }
    }
    let file = |folder: &str, day: &str, id: &str| {
        root.join(folder)
            .join(day)
            .join(format!("rollout-2026-03-02T00-00-00-{id}.jsonl"))
    };
    write(&file("sessions", "2026/03/02", id), &lines);
    // A fork: its own session_meta, then the parent's lines replayed, then its own.
    let fork = "019cc000-0000-7000-8000-00000000c0d2";
    let mut f = vec![line(
        &json!({"timestamp": at(9, 90), "type": "session_meta", "payload": {
        "id": fork, "timestamp": at(9, 90), "cwd": cwd, "originator": "codex_cli_rs",
        "cli_version": "0.169.0", "source": "cli", "forked_from_id": id}}),
    )];
    f.extend(lines[1..].iter().cloned());
    for k in 0..3i64 {
        let (i, o) = (r.range(1_000, 9_000), r.range(10, 900));
        for (t, n) in total.iter_mut().zip([i, 0, o, 0]) {
            *t += n;
        }
        let info = json!({"total_token_usage": codex_counts(total[0], total[1], total[2], total[3]),
                          "last_token_usage": codex_counts(i, 0, o, 0)});
        f.push(line(
            &json!({"timestamp": at(9, 100 + k), "type": "event_msg",
                            "payload": {"type": "token_count", "info": info}}),
        ));
    }
    write(&file("sessions", "2026/03/09", fork), &f);
    // An archived rollout of older Codex: totals only (each call is their growth).
    let old = "019cc000-0000-7000-8000-00000000c0d3";
    let mut a = vec![
        line(
            &json!({"timestamp": at(1, 0), "type": "session_meta", "payload": {
            "id": old, "timestamp": at(1, 0), "cwd": "/home/u/beta", "originator": "codex_cli_rs",
            "cli_version": "0.40.0", "source": "cli"}}),
        ),
        line(&json!({"timestamp": at(1, 1), "type": "turn_context",
                     "payload": {"cwd": "/home/u/beta", "model": "gpt-5.1"}})),
    ];
    let mut t = [0u64; 4];
    for k in 0..5i64 {
        let (i, o) = (r.range(1_000, 20_000), r.range(10, 2_000));
        let c = i / 2;
        for (tt, n) in t.iter_mut().zip([i, c, o, 0]) {
            *tt += n;
        }
        let info = json!({"total_token_usage": codex_counts(t[0], t[1], t[2], t[3])});
        a.push(line(
            &json!({"timestamp": at(1, 20 + k * 15), "type": "event_msg",
                            "payload": {"type": "token_count", "info": info}}),
        ));
    }
    let archived = root
        .join("archived_sessions")
        .join(format!("rollout-2026-03-01T00-00-00-{old}.jsonl"));
    write(&archived, &a);
}

fn gemini_tokens(r: &mut Rng, cached: bool) -> Value {
    let input = r.range(5_000, 90_000);
    let c = if cached {
        input * r.range(10, 80) / 100
    } else {
        0
    };
    let (output, thoughts, tool) = (r.range(20, 2_000), r.range(0, 800), r.range(0, 300));
    json!({"input": input, "output": output, "cached": c, "thoughts": thoughts, "tool": tool,
           "total": input + output + thoughts + tool})
}

fn write_gemini(root: &Path) {
    let mut r = Rng(0x6e_3141);
    let project = root.join("tmp/alpha");
    std::fs::create_dir_all(project.join("chats")).unwrap();
    std::fs::write(project.join(".project_root"), "/home/u/alpha\n").unwrap();
    let sid = "6e3141aa-0000-4000-8000-000000000001";
    let mut lines = vec![line(
        &json!({"sessionId": sid, "projectHash": "ab".repeat(32),
        "startTime": at(3, 0), "lastUpdated": at(3, 0), "kind": "main"}),
    )];
    let mut n = 0;
    for day in 3..=8u32 {
        for k in 0..3i64 {
            n += 1;
            let t = at(day, k * 23);
            lines.push(line(
                &json!({"id": format!("u{n}"), "timestamp": t, "type": "user",
                                    "content": [{"text": "go"}]}),
            ));
            let model = if k == 2 {
                "gemini-2.5-flash"
            } else {
                "gemini-2.5-pro"
            };
            let tokens = gemini_tokens(&mut r, k > 0);
            let msg = json!({"id": format!("g{n}"), "timestamp": t, "type": "gemini",
                             "content": "ok", "thoughts": [], "tokens": tokens, "model": model});
            lines.push(line(&msg));
            if k == 1 {
                // The recorder appends a message again when it changes: the last counts.
                let mut again = msg.clone();
                again["tokens"] = gemini_tokens(&mut r, true);
                lines.push(line(&again));
            }
        }
    }
    write(
        &project.join("chats/session-2026-03-03T03-40-6e3141aa.jsonl"),
        &lines,
    );
    let sub = "6e3141aa-0000-4000-8000-000000000002";
    let subl = vec![
        line(
            &json!({"sessionId": sub, "projectHash": "ab".repeat(32), "startTime": at(5, 0),
                     "lastUpdated": at(5, 0), "kind": "subagent"}),
        ),
        line(
            &json!({"id": "s1", "timestamp": at(5, 3), "type": "gemini", "content": "sub",
                     "tokens": gemini_tokens(&mut r, true), "model": "gemini-2.5-flash"}),
        ),
    ];
    write(
        &project.join("chats").join(sid).join(format!("{sub}.jsonl")),
        &subl,
    );
}

/// Appends one more Claude Code response (one line) to the history's first session,
/// on `time`; returns the bytes appended.
pub fn append_claude_response(h: &History, time: &str, output_tokens: u64) -> usize {
    let project = h.claude.join("projects/-home-u-alpha");
    let file = std::fs::read_dir(&project)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl")
                && !p
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("agent-")
        })
        .min()
        .unwrap();
    append_claude_response_to(&file, time, output_tokens)
}

/// Appends one more Claude Code response (one line) to the session file `file`.
pub fn append_claude_response_to(file: &Path, time: &str, output_tokens: u64) -> usize {
    let session = file.file_stem().unwrap().to_string_lossy().into_owned();
    let mut r = Rng(output_tokens | 1);
    let u = json!({"input_tokens": 3, "output_tokens": output_tokens,
                   "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let (l, _) = claude_response(
        &mut r,
        &session,
        "/home/u/alpha",
        u,
        Resp {
            time,
            model: "claude-sonnet-4-5-20250929",
            request: None,
            extra: &[],
            blocks: 1,
        },
    );
    let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    f.write_all(l[0].as_bytes()).unwrap();
    l[0].len()
}
