//! Gemini CLI 0.61.0 itself writes a session (a prompt, a tool call the mock model asks
//! for, its result), fen-fs shows it through a real mount, then Gemini resumes it: the
//! history Gemini sent the model on resume must be `conversation.json`, after the
//! per-request steps Gemini applies (AGENT-FORMATS-MORE.md §2.3: a fresh
//! `<session_context>` turn first, consecutive same-role turns merged into one, a
//! `<tool>__` prefix stripped from call ids). The mount then shows what that resume
//! wrote, and Gemini resumes once more with exactly that.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use support::Mount;
use support::mock_model::{MockModel, Request, Response, gemini_parts, gemini_text, is_gemini};

/// The mock model: asks for `list_directory` when the prompt says USE_TOOL (until
/// the result comes back), else answers "reply N".
fn model() -> MockModel {
    let n = std::sync::atomic::AtomicUsize::new(0);
    MockModel::start(move |req: &Request| {
        if !is_gemini(req) {
            return Response::not_found();
        }
        let stream = req.path.contains(":streamGenerateContent");
        let body = req.json().unwrap_or(Value::Null);
        let last = body["contents"]
            .as_array()
            .and_then(|c| c.last())
            .cloned()
            .unwrap_or(Value::Null);
        let answered = last["parts"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p.get("functionResponse").is_some()));
        if last.to_string().contains("USE_TOOL") && !answered {
            return gemini_parts(
                json!([{"functionCall": {"name": "list_directory", "args": {"dir_path": "."}}}]),
                stream,
            );
        }
        let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        gemini_text(&format!("reply {i}"), stream)
    })
}

fn gemini(bin: &Path, home: &Path, project: &Path, mock: &MockModel, args: &[&str]) {
    let out = Command::new(bin)
        .args(args)
        .current_dir(project)
        .env("HOME", home)
        .env("GEMINI_CLI_HOME", home)
        .env("GOOGLE_GEMINI_BASE_URL", mock.base_url())
        .env("GEMINI_API_KEY", "dummy-key")
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("NO_COLOR", "1")
        .output()
        .expect("run gemini");
    assert!(
        out.status.success(),
        "gemini {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What Gemini does to its stored history for one request: consecutive same-role
/// turns become one, call ids lose a `<tool>__` prefix.
fn as_request(turns: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for t in turns {
        let mut parts = t["parts"].as_array().unwrap().clone();
        for p in &mut parts {
            for key in ["functionCall", "functionResponse"] {
                if let Some(id) = p[key]["id"].as_str()
                    && let Some((_, rest)) = id.split_once("__")
                {
                    p[key]["id"] = json!(rest);
                }
            }
        }
        match out.last_mut() {
            Some(prev) if prev["role"] == t["role"] => {
                prev["parts"].as_array_mut().unwrap().extend(parts)
            }
            _ => out.push(json!({"role": t["role"], "parts": parts})),
        }
    }
    out
}

#[test]
fn gemini_resumes_with_what_conversation_json_holds() {
    let test = "gemini_resumes_with_what_conversation_json_holds";
    let Some(bin) = support::agent_bin(test, "gemini") else {
        return;
    };
    if !support::fuse_available(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("a.txt"), "hello\n").unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "model": {"name": "gemini-2.5-flash"},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
            "privacy": {"usageStatisticsEnabled": false}
        })
        .to_string(),
    )
    .unwrap();
    let mock = model();
    gemini(
        &bin,
        &home,
        &project,
        &mock,
        &["-p", "first prompt USE_TOOL"],
    );
    let first_run = mock.requests().len();
    assert!(first_run >= 2, "a tool call and its answer");
    // As if the session was created in an earlier minute than the resume runs in (the
    // usual case: a session is resumed later). Gemini names its file by the minute it
    // starts, so a resume in another minute first starts a new file of its own.
    let chats = home.join(".gemini/tmp/proj/chats");
    let files: Vec<_> = std::fs::read_dir(&chats)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let id8 = files[0]
        .strip_suffix(".jsonl")
        .and_then(|f| f.rsplit('-').next())
        .unwrap();
    std::fs::rename(
        chats.join(&files[0]),
        chats.join(format!("session-2026-01-01T00-00-{id8}.jsonl")),
    )
    .unwrap();

    let source = format!("gemini={}", home.join(".gemini").display());
    let Some(m) = Mount::with_args(test, &["--no-detect", "--source", &source]) else {
        return;
    };
    let ns = m.path(&fen_fs::store::naming::mount_name(
        &fen_fs::store::naming::slug(project.to_str().unwrap()),
    ));
    let dirs: Vec<_> = std::fs::read_dir(&ns)
        .unwrap_or_else(|e| panic!("{}: {e}", ns.display()))
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let dir = &dirs[0];
    let meta = support::meta(dir);
    assert_eq!(meta["agent"], "gemini");
    assert_eq!(meta["resumable"], true, "{meta}");
    assert_eq!(meta["cwd"], project.to_str().unwrap());
    assert_eq!(meta["preview"], "first prompt USE_TOOL");
    let before: Vec<Value> =
        serde_json::from_slice(&std::fs::read(dir.join("conversation.json")).unwrap()).unwrap();
    let roles: Vec<&str> = before.iter().map(|t| t["role"].as_str().unwrap()).collect();
    assert_eq!(roles.first(), Some(&"user"));
    assert!(
        before
            .iter()
            .any(|t| t["parts"][0].get("functionCall").is_some()),
        "{before:?}"
    );

    let n = mock.requests().len();
    gemini(
        &bin,
        &home,
        &project,
        &mock,
        &["--resume", "latest", "-p", "second prompt"],
    );
    assert_resumed_with(&before, "second prompt", &mock.requests()[n..]);

    // The resume appended to the session's file: the mount shows it on the next read,
    // still one session (the file Gemini started first holds only context). Gemini
    // 0.61.0 rewrote the history into it keeping the tool call's result beside the
    // `<id>_response` turn it adds, so its own loader now gives that response twice:
    // the oracle of what the mount shows is what Gemini resumes with next.
    // Gemini rewrites the session's file while it resumes: a look that read it
    // mid-rewrite found no message it can resume (so no folder) until the next look
    // (the daemon follows another agent's files by inotify and a sweep every 0.4 s).
    // The folder must be back, with the resume in it, within that.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let after_bytes = loop {
        match std::fs::read(dir.join("conversation.json")) {
            Ok(b)
                if serde_json::from_slice::<Vec<Value>>(&b)
                    .is_ok_and(|a| a.len() >= before.len() + 2) =>
            {
                break b;
            }
            r if std::time::Instant::now() >= deadline => {
                let now: Vec<_> = std::fs::read_dir(&ns)
                    .unwrap()
                    .flatten()
                    .map(|e| e.file_name())
                    .collect();
                panic!(
                    "{}: {:?}; the namespace holds {now:?}",
                    dir.display(),
                    r.map(|b| b.len())
                );
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    };
    let after: Vec<Value> = serde_json::from_slice(&after_bytes).unwrap();
    assert!(after.len() >= before.len() + 2, "{after:?}");
    assert_eq!(after[after.len() - 2]["parts"][0]["text"], "second prompt");
    assert_eq!(after[after.len() - 1]["role"], "model");
    let dirs_now = std::fs::read_dir(&ns)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .count();
    assert_eq!(dirs_now, 1, "one session, one folder");
    assert_eq!(
        support::meta(dir)["id"],
        meta["id"],
        "same session, same folder"
    );
    let n = mock.requests().len();
    gemini(
        &bin,
        &home,
        &project,
        &mock,
        &["--resume", "latest", "-p", "third prompt"],
    );
    assert_resumed_with(&after, "third prompt", &mock.requests()[n..]);
}

/// The first model request of a `--resume latest -p prompt` run (`requests`) sent
/// `shown` (a `conversation.json`) after Gemini's fresh context turn, then `prompt`.
fn assert_resumed_with(shown: &[Value], prompt: &str, requests: &[Request]) {
    let sent = requests
        .iter()
        .find(|r| r.path.contains(":streamGenerateContent"))
        .and_then(Request::json)
        .expect("the resumed run asked the model");
    let contents = sent["contents"].as_array().unwrap();
    // Gemini's fresh context turn opens the request.
    let context = &contents[0]["parts"][0];
    assert!(
        context["text"]
            .as_str()
            .unwrap()
            .starts_with("<session_context>")
    );
    let mut turns = vec![json!({"role": "user", "parts": [context.clone()]})];
    turns.extend(shown.iter().cloned());
    turns.push(json!({"role": "user", "parts": [{"text": prompt}]}));
    assert_eq!(
        &as_request(&turns)[..],
        &contents[..],
        "resumed with {prompt:?}"
    );
}
