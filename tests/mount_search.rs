//! Search with real tools: `fen-fs search` over a generated history in each agent's
//! own format (scripts/gen_history.py, whose manifest says which sessions hold which
//! planted word) and the fixtures; the mount's `search/` folder with `ls`, `cd`, `cat`
//! and `jq`; appends found within a second; a damaged or unwritable index; and no
//! byte written in another agent's folder.

mod support;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use support::{Mount, fen_fs, out_text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures")
}

/// A quick generated history (a few MB of Claude Code, Codex and pi sessions) in `dir`.
fn history(dir: &Path) -> Value {
    let out = std::process::Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen_history.py"))
        .arg(dir)
        .args(["--scale", "quick"])
        .output()
        .expect("python3 runs scripts/gen_history.py");
    assert!(out.status.success(), "{}", out_text(&out));
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn sources_of(h: &Path) -> Vec<String> {
    ["claude", "codex", "pi"]
        .iter()
        .flat_map(|a| {
            [
                "--source".to_string(),
                format!("{a}={}", h.join(a).display()),
            ]
        })
        .chain(["--no-detect".to_string()])
        .collect()
}

/// `fen-fs ARGS` with `--store`.
fn run(store: &Path, args: &[String]) -> std::process::Output {
    fen_fs()
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap()
}

/// The `--json` lines of a search (the index's progress line left out).
fn hits(store: &Path, sources: &[String], query: &[&str]) -> Vec<Value> {
    let mut args = vec!["search".to_string(), "--json".into()];
    if !query.contains(&"--limit") {
        args.extend(["--limit".to_string(), "200".into()]);
    }
    args.extend(sources.iter().cloned());
    args.extend(query.iter().map(|s| s.to_string()));
    let out = run(store, &args);
    assert!(out.status.success(), "{}", out_text(&out));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("id").is_some())
        .collect()
}

#[test]
fn planted_words_are_found_in_every_agent_with_the_right_session() {
    let tmp = tempfile::tempdir().unwrap();
    let h = tmp.path().join("history");
    let manifest = history(&h);
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let src = sources_of(&h);
    // What `fen-fs list` says of every session: the oracle for id, agent and cwd.
    let mut list_args = vec!["list".to_string(), "--all".into(), "--json".into()];
    list_args.extend(src.iter().cloned());
    let listed: Vec<Value> =
        serde_json::from_slice(&run(&store, &list_args).stdout).expect("list --json");
    let by_dir: BTreeMap<String, &Value> = listed
        .iter()
        .map(|l| (l["dir"].as_str().unwrap().to_string(), l))
        .collect();
    let mut agents_seen = BTreeSet::new();
    for w in manifest["words"].as_array().unwrap() {
        let word = w["word"].as_str().unwrap();
        let files: Vec<&str> = w["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        let found = hits(&store, &src, &[word]);
        assert_eq!(found.len(), files.len(), "{word}: {found:#?}");
        for hit in &found {
            let l = by_dir[hit["dir"].as_str().unwrap()];
            assert_eq!(hit["id"], l["id"], "{word}");
            assert_eq!(hit["agent"], l["agent"], "{word}");
            assert_eq!(hit["cwd"], l["cwd"], "{word}");
            let agent = hit["agent"].as_str().unwrap();
            let id = hit["id"].as_str().unwrap();
            assert!(
                files.iter().any(|f| f.starts_with(agent) && f.contains(id)),
                "{word}: {agent} {id} is one of {files:?}"
            );
            agents_seen.insert(agent.to_string());
            assert_eq!(
                hit["in_conversation"], w["in_conversation"],
                "{word} in {id}"
            );
            assert!(
                hit["snippet"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("**{word}**"))
            );
        }
    }
    assert_eq!(
        agents_seen.into_iter().collect::<Vec<_>>(),
        ["claude", "codex", "pi"]
    );
}

#[test]
fn filters_phrases_exclusions_and_prefixes_on_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let h = tmp.path().join("history");
    let manifest = history(&h);
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let src = sources_of(&h);
    let word = "fjordbramble";
    let all = hits(&store, &src, &[word]);
    assert!(all.len() > 3);
    for agent in ["claude", "codex", "pi"] {
        let only = hits(&store, &src, &["--agent", agent, word]);
        assert!(only.iter().all(|h| h["agent"] == agent), "{agent}");
        assert_eq!(
            only.len(),
            all.iter().filter(|h| h["agent"] == agent).count(),
            "{agent}"
        );
    }
    let cwd = all[0]["cwd"].as_str().unwrap().to_string();
    let here = hits(&store, &src, &["--cwd", &cwd, word]);
    assert!(!here.is_empty() && here.iter().all(|h| h["cwd"] == cwd.as_str()));
    assert!(hits(&store, &src, &["--since", "2100-01-01", word]).is_empty());
    assert_eq!(
        hits(&store, &src, &["--since", "1970-01-02", word]).len(),
        all.len()
    );
    assert_eq!(hits(&store, &src, &["--limit", "2", word]).len(), 2);
    // Prefixes and exclusions.
    assert_eq!(hits(&store, &src, &["fjordbram*"]).len(), all.len());
    let excluded = hits(&store, &src, &[word, "-quokkalantern"]);
    assert!(excluded.len() <= all.len());
    // A phrase: the word and the one after it in a found snippet.
    let rare = manifest["words"][0]["word"].as_str().unwrap();
    let snippet = hits(&store, &src, &[rare])[0]["snippet"]
        .as_str()
        .unwrap()
        .to_string();
    let after = snippet
        .split(&format!("**{rare}**"))
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string())
        .filter(|w| !w.is_empty());
    if let Some(after) = after {
        let phrase = format!("\"{rare} {after}\"");
        assert_eq!(hits(&store, &src, &[&phrase]).len(), 1, "{phrase}");
        let reversed = format!("\"{after} {rare}\"");
        assert!(hits(&store, &src, &[&reversed]).is_empty(), "{reversed}");
    }
    // The table: one line per session.
    let mut args = vec!["search".to_string()];
    args.extend(src.iter().cloned());
    args.push(word.into());
    let out = run(&store, &args);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), all.len().min(20), "{text}");
    assert!(text.contains(&format!("**{word}**")), "{text}");
}

#[test]
fn bad_input_exits_2_and_says_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    for (args, says) in [
        (vec!["search", ""], "empty"),
        (vec!["search", "\"open phrase"], "unbalanced"),
        (vec!["search", "-only"], "only excludes"),
        (vec!["search", "--agent", "vim", "x"], "unknown agent"),
        (vec!["search", "--since", "yesterday", "x"], "not a date"),
        (vec!["search", "--limit", "0", "x"], "1 or more"),
        (vec!["search"], "QUERY"),
    ] {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let out = run(&store, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out_text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// Polls `f` until it is true; the time it took, or None after `limit`.
fn within(limit: Duration, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// Hit lines of `search/<query>/hits.jsonl` in the mount (and whether the index said
/// it is complete).
fn mount_hits(m: &Mount, query: &str) -> (Vec<Value>, bool) {
    let text = std::fs::read_to_string(m.path("search").join(query).join("hits.jsonl"))
        .unwrap_or_default();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let complete = !lines.iter().any(|l| l.get("index").is_some());
    (
        lines
            .into_iter()
            .filter(|l| l.get("id").is_some())
            .collect(),
        complete,
    )
}

fn wait_complete(m: &Mount) {
    within(Duration::from_secs(20), || mount_hits(m, "anything").1)
        .expect("the search index is built");
}

/// Waits until `query` finds something (sessions made just now are indexed by the
/// daemon's next look).
fn wait_found(m: &Mount, query: &str) {
    within(Duration::from_secs(10), || {
        !mount_hits(m, query).0.is_empty()
    })
    .unwrap_or_else(|| panic!("{query} found; log:\n{}", m.daemon_log()));
}

#[test]
fn the_search_folder_works_with_ls_cd_cat_and_jq() {
    let fixtures = fixtures();
    let claude = format!("claude={}", fixtures.join("claude").display());
    let Some(m) = Mount::with_args(
        "the_search_folder_works_with_ls_cd_cat_and_jq",
        &["--source", &claude, "--no-detect"],
    ) else {
        return;
    };
    let s = m.create_session("/home/u/web", "The login test is flaky on CI");
    m.create_session("/search", "a session whose cwd is /search");
    wait_complete(&m);
    wait_found(&m, "flaky login");
    let dir = s.file_name().unwrap().to_string_lossy().to_string();
    let out = m.sh(&format!(
        "ls search/ | wc -l; ls 'search/flaky login'; \
         cd 'search/flaky login/01-{dir}' && cat meta.json | jq -r .dir && pwd -P; \
         cd - >/dev/null; readlink 'search/flaky login/01-{dir}'; \
         jq -r .agent 'search/flaky login/hits.jsonl'; \
         ls -d _search search"
    ));
    let text = out_text(&out);
    assert!(out.status.success(), "{text}");
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines[0], "0", "ls search/ lists nothing: {text}");
    assert_eq!(lines[1], format!("01-{dir}"), "{text}");
    assert_eq!(lines[2], "hits.jsonl", "{text}");
    assert_eq!(lines[3], dir, "{text}");
    assert_eq!(
        lines[4],
        m.path("home-u-web").join(&dir).to_string_lossy(),
        "{text}"
    );
    assert_eq!(lines[5], format!("../../home-u-web/{dir}"), "{text}");
    assert_eq!(lines[6], "fen", "{text}");
    assert_eq!(&lines[7..], ["_search", "search"], "{text}");
    // `fen-fs search` while mounted: a plain query is the mount's answer (its daemon
    // has the index open), byte for byte what this process finds opening the index
    // itself (`--limit 500` is not the default: it is not asked of the mount).
    for json in [true, false] {
        let ask = |limit: Option<&str>| {
            let mut args: Vec<String> = vec!["search".into(), "--source".into(), claude.clone()];
            args.push("--no-detect".into());
            if json {
                args.push("--json".into());
            }
            if let Some(l) = limit {
                args.extend(["--limit".to_string(), l.to_string()]);
            }
            args.push("flaky login".into());
            let out = fen_fs()
                .args(&args)
                .arg("--store")
                .arg(&m.store)
                .env("RUST_LOG", "fen_fs::commands::search=debug")
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", out_text(&out));
            // The proof that the mount answered: it says so at debug level.
            let asked = String::from_utf8_lossy(&out.stderr).contains("answered by the mount");
            assert_eq!(asked, limit.is_none(), "{}", out_text(&out));
            out.stdout
        };
        let (mounted, opened) = (ask(None), ask(Some("500")));
        assert!(!mounted.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&mounted),
            String::from_utf8_lossy(&opened),
            "json: {json}"
        );
        assert!(
            String::from_utf8_lossy(&mounted).contains(&*m.path("home-u-web").to_string_lossy()),
            "absolute paths in the mount"
        );
    }
    // Another agent's session, found and opened the same way.
    let (found, _) = mount_hits(&m, "\"TODO app\"");
    assert!(found.iter().any(|h| h["agent"] == "claude"), "{found:?}");
    let link = m
        .path("search/\"TODO app\"")
        .join(format!("01-{}", found[0]["dir"].as_str().unwrap()));
    assert!(std::fs::read(link.join("conversation.json")).is_ok());
    // A bad query: the lookup fails with EINVAL.
    let bad = m.sh("ls 'search/\"open'");
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("Invalid argument"),
        "{}",
        out_text(&bad)
    );
}

/// A Claude Code session of one prompt, `id` in `dir/projects/-tmp-w/`.
fn claude_session(dir: &Path, id: &str, text: &str) -> PathBuf {
    let folder = dir.join("projects/-tmp-w");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("{id}.jsonl"));
    std::fs::write(&path, claude_line(id, "u1", None, text)).unwrap();
    path
}

fn claude_line(session: &str, uuid: &str, parent: Option<&str>, text: &str) -> String {
    let v = serde_json::json!({
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": session,
        "cwd": "/tmp/w",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "isSidechain": false,
        "userType": "external",
        "version": "2.1.0",
        "message": {"role": "user", "content": text},
    });
    format!("{v}\n")
}

#[test]
fn appends_through_ctl_and_by_other_agents_are_found_within_a_second() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("claude");
    let id = "0a0a0a0a-0000-4000-8000-000000000001";
    let file = claude_session(&agent, id, "a first prompt");
    let claude = format!("claude={}", agent.display());
    let Some(m) = Mount::with_args(
        "appends_through_ctl_and_by_other_agents_are_found_within_a_second",
        &["--source", &claude, "--no-detect"],
    ) else {
        return;
    };
    let s = m.create_session("/home/u/p", "hello");
    wait_complete(&m);
    for i in 0..3 {
        let word = format!("ctlword{i}x");
        support::ctl_ok(&s, &format!("{{\"role\":\"user\",\"content\":\"{word}\"}}"));
        let took = within(Duration::from_secs(10), || {
            !mount_hits(&m, &word).0.is_empty()
        });
        assert!(
            took.is_some_and(|t| t < support::under_load(Duration::from_secs(1))),
            "ctl append found after {took:?}"
        );
    }
    // The command line beside the daemon reads the index the daemon keeps fresh.
    let out = run(
        &m.store,
        &[
            "search".into(),
            "--json".into(),
            "--source".into(),
            claude.clone(),
            "--no-detect".into(),
            "ctlword2x".into(),
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ctlword2x"),
        "{}",
        out_text(&out)
    );
    // Another agent writes to its own file.
    for i in 0..3 {
        let word = format!("agentword{i}x");
        let parent = if i == 0 {
            "u1".to_string()
        } else {
            format!("u{}", i + 1)
        };
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(claude_line(id, &format!("u{}", i + 2), Some(&parent), &word).as_bytes())
            .unwrap();
        let took = within(Duration::from_secs(10), || {
            mount_hits(&m, &word).0.iter().any(|h| h["id"] == id)
        });
        assert!(
            took.is_some_and(|t| t < support::under_load(Duration::from_secs(1))),
            "agent append found after {took:?}; log:\n{}",
            m.daemon_log()
        );
    }
}

#[test]
fn compacted_messages_are_found_out_of_the_conversation() {
    let Some(m) = Mount::new("compacted_messages_are_found_out_of_the_conversation") else {
        return;
    };
    let s = m.create_session("/home/u/c", "the original walrus request");
    support::ctl_ok(
        &s,
        r#"{"type":"compaction","summary":"earlier work summarized","first-kept-entry-id":null}"#,
    );
    support::ctl_ok(&s, r#"{"role":"user","content":"after the compaction"}"#);
    wait_found(&m, "walrus");
    wait_found(&m, "\"after the compaction\"");
    let (h, _) = mount_hits(&m, "walrus");
    assert_eq!(h[0]["in_conversation"], false, "{h:?}");
    let (h, _) = mount_hits(&m, "\"after the compaction\"");
    assert_eq!(h[0]["in_conversation"], true, "{h:?}");
}

fn index_files(store: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(store.join(".fen-cache/search"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            [".idx", ".pos", ".store", ".term"]
                .iter()
                .any(|e| n.ends_with(e))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_damaged_index_is_rebuilt_with_a_warning_and_an_unwritable_one_kept_in_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let claude = format!("claude={}", fixtures().join("claude").display());
    let src = ["--source".to_string(), claude, "--no-detect".into()];
    let q = |store: &Path| {
        let mut args = vec!["search".to_string(), "--json".into()];
        args.extend(src.iter().cloned());
        args.push("\"TODO app\"".into());
        run(store, &args)
    };
    let first = q(&store);
    assert!(first.status.success(), "{}", out_text(&first));
    let expected = String::from_utf8(first.stdout).unwrap();
    assert!(expected.contains("\"agent\":\"claude\""));
    for damage in ["truncate", "corrupt"] {
        let files = index_files(&store);
        let f = files
            .iter()
            .find(|p| {
                p.to_string_lossy()
                    .ends_with(if damage == "truncate" { ".idx" } else { ".pos" })
            })
            .unwrap();
        match damage {
            "truncate" => {
                let len = std::fs::metadata(f).unwrap().len();
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(f)
                    .unwrap()
                    .set_len(len / 2)
                    .unwrap();
            }
            _ => {
                use std::os::unix::fs::FileExt;
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(f)
                    .unwrap()
                    .write_at(b"\x00\xff\x00\xff", 3)
                    .unwrap();
            }
        }
        let out = q(&store);
        assert!(out.status.success(), "{damage}: {}", out_text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("rebuilding"), "{damage}: {err}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected, "{damage}");
        let again = q(&store);
        assert!(again.stderr.is_empty(), "{damage}: {}", out_text(&again));
    }
    // A cache folder that cannot be made: answered from memory, said once.
    std::fs::remove_dir_all(store.join(".fen-cache/search")).unwrap();
    std::fs::write(store.join(".fen-cache/search"), b"in the way").unwrap();
    let out = q(&store);
    assert!(out.status.success(), "{}", out_text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("memory").count(), 1, "{err}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

/// Size and mtime of every file and folder under `dir`.
fn listing(dir: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            out.insert(e.path(), (m.len(), m.modified().unwrap()));
            if m.is_dir() {
                todo.push(e.path());
            }
        }
    }
    out
}

#[test]
fn nothing_is_written_in_other_agents_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let h = tmp.path().join("history");
    history(&h);
    let roots = [h.join("claude"), h.join("codex"), h.join("pi")];
    let before: Vec<_> = roots.iter().map(|r| listing(r)).collect();
    let args: Vec<String> = vec![
        "--source".into(),
        format!("claude={}", roots[0].display()),
        "--source".into(),
        format!("codex={}", roots[1].display()),
        "--source".into(),
        format!("pi={}", roots[2].display()),
        "--no-detect".into(),
    ];
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(m) = Mount::with_args("nothing_is_written_in_other_agents_folders", &refs) else {
        return;
    };
    wait_complete(&m);
    assert!(!mount_hits(&m, "fjordbramble").0.is_empty());
    assert!(!mount_hits(&m, "test").0.is_empty());
    let mut cli = vec!["search".to_string()];
    cli.extend(args.iter().cloned());
    cli.push("test".into());
    assert!(run(&m.store, &cli).status.success());
    drop(m);
    // And a command line run with no mount, which writes the index itself.
    let store = tmp.path().join("store2");
    std::fs::create_dir(&store).unwrap();
    assert!(run(&store, &cli).status.success());
    let after: Vec<_> = roots.iter().map(|r| listing(r)).collect();
    assert_eq!(before, after);
}
