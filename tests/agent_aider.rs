//! Aider 0.86.2 itself writes its history against a mock Chat Completions model (a run
//! whose answer edits a file, then runs that restore the history with
//! `--restore-chat-history`), fen-fs reads the runs from the project folder, and what
//! Aider sent on each restore must be the runs' `conversation.json` messages, one run
//! after another, between its prompt's examples and the new prompt.

mod support;

use fen_fs::sources::aider::{AiderReader, AiderUnits};
use fen_fs::sources::foreign::{ForeignReader, ForeignSummary, feed_all, render_message};
use fen_fs::sources::units::UnitSource;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::mock_model::{MockModel, Request, Response, is_openai_chat, openai_chat_reply};

/// The mock model: answers a prompt saying EDIT with a whole-file edit of a.txt, any
/// other with "reply N".
fn model() -> MockModel {
    let n = AtomicUsize::new(0);
    MockModel::start(move |req: &Request| {
        if !is_openai_chat(req) {
            return Response::not_found();
        }
        let body = req.json().unwrap_or(Value::Null);
        let stream = body["stream"].as_bool().unwrap_or(false);
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m["content"].to_string())
            .unwrap_or_default();
        let i = n.fetch_add(1, Ordering::SeqCst) + 1;
        let reply = if last.contains("EDIT") {
            format!("Here is the change.\n\na.txt\n```\nchanged {i}\n```\n")
        } else {
            format!("reply {i}")
        };
        let usage = json!({"prompt_tokens": 1000 + i, "completion_tokens": 5,
                           "total_tokens": 1005 + i});
        openai_chat_reply(Some(&reply), &[], usage, stream)
    })
}

fn aider(bin: &Path, home: &Path, project: &Path, mock: &MockModel, args: &[&str]) {
    let meta = home.join("model-metadata.json");
    std::fs::write(
        &meta,
        json!({"openai/mock-model": {"max_input_tokens": 128000, "max_output_tokens": 4096,
               "input_cost_per_token": 0.000001, "output_cost_per_token": 0.000002,
               "litellm_provider": "openai", "mode": "chat"}})
        .to_string(),
    )
    .unwrap();
    let base = format!("{}/v1", mock.base_url());
    let out = Command::new(bin)
        .args(["--model", "openai/mock-model", "--openai-api-base", &base])
        .arg("--model-metadata-file")
        .arg(&meta)
        .args([
            "--no-check-update",
            "--no-analytics",
            "--no-git",
            "--yes-always",
            "--no-pretty",
            "--no-show-release-notes",
            "--no-fancy-input",
        ])
        .args(args)
        .current_dir(project)
        .env("HOME", home)
        .env("OPENAI_API_KEY", "dummy-key")
        // Offline: litellm's price table from the package, not the network.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run aider");
    assert!(
        out.status.success(),
        "aider {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every run of the project's history: summary and conversation, earliest first.
fn runs(project: &Path) -> Vec<(ForeignSummary, Vec<Value>, Vec<u8>)> {
    let units = AiderUnits::new(vec![project.to_path_buf()], false);
    let mut out: Vec<_> = units
        .list()
        .into_iter()
        .map(|u| {
            let bytes = units.dump(&u.key).unwrap().bytes;
            let mut r = AiderReader::new();
            let tail = feed_all(&mut r, &bytes);
            let conv = r
                .conversation(tail)
                .iter()
                .map(|m| serde_json::from_slice(&render_message(m, &bytes)).unwrap())
                .collect();
            (r.summary(tail), conv, bytes)
        })
        .collect();
    out.sort_by(|a, b| a.0.created_at.cmp(&b.0.created_at));
    out
}

/// Whether the messages of a request hold `want` as one run of messages, followed by
/// nothing of the restored history.
fn sent_in_order(body: &Value, want: &[Value]) -> bool {
    let sent: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| json!({"role": m["role"], "content": m["content"]}))
        .collect();
    sent.windows(want.len()).any(|w| w == want)
}

#[test]
fn aider_restores_every_runs_conversation_json() {
    let test = "aider_restores_every_runs_conversation_json";
    let Some(bin) = support::agent_bin(test, "aider") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("a.txt"), "hello\n").unwrap();
    let mock = model();
    aider(
        &bin,
        &home,
        &project,
        &mock,
        &["a.txt", "--message", "first prompt EDIT"],
    );
    assert!(
        std::fs::read_to_string(project.join("a.txt"))
            .unwrap()
            .starts_with("changed")
    );
    let first = runs(&project);
    assert_eq!(first.len(), 1);
    assert!(first[0].0.resumable);
    assert_eq!(first[0].1.len(), 2, "{:?}", first[0].1);

    let n = mock.requests().len();
    aider(
        &bin,
        &home,
        &project,
        &mock,
        &["--restore-chat-history", "--message", "second prompt"],
    );
    let body = mock.requests()[n..]
        .iter()
        .find(|r| is_openai_chat(r))
        .and_then(Request::json)
        .unwrap();
    assert!(sent_in_order(&body, &first[0].1), "{body}");

    // Two runs now: the first no longer resumes on its own; the restore sends both.
    let both = runs(&project);
    assert_eq!(both.len(), 2);
    assert!(!both[0].0.resumable && both[1].0.resumable);
    assert_eq!(both[0].0.id, first[0].0.id, "a run keeps its id");
    let mut want: Vec<Value> = both[0].1.clone();
    want.extend(both[1].1.iter().cloned());
    let n = mock.requests().len();
    aider(
        &bin,
        &home,
        &project,
        &mock,
        &["--restore-chat-history", "--message", "third prompt"],
    );
    let body = mock.requests()[n..]
        .iter()
        .find(|r| is_openai_chat(r))
        .and_then(Request::json)
        .unwrap();
    assert!(sent_in_order(&body, &want), "{body}");

    // Usage: one record per answer, each once.
    let mut keys = Vec::new();
    for (s, _, dump) in runs(&project) {
        let mut u = fen_fs::sources::aider::usage::AiderUsage::new(Default::default());
        let out = fen_fs::usage_record::read_all(&mut u, &dump);
        assert_eq!(out.malformed, 0, "{s:?}");
        keys.extend(out.records.iter().map(|r| r.key.unwrap()));
    }
    let calls = mock.requests().iter().filter(|r| is_openai_chat(r)).count();
    assert_eq!(keys.len(), calls);
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), calls);
}
