//! `fen-fs usage` on the command line (no mount): `--json` field names as SPEC §13
//! lists them, the filters, the reports, exit 2 for an unknown report or a bad date,
//! a session without usage counting nothing (not an error), a usage object that
//! cannot be read skipped with a warning, a model without a price counted at an
//! unknown cost (never 0), `--prices FILE`.

mod support;
mod usage_support;

use serde_json::Value;
use std::path::Path;
use std::process::Output;
use usage_support::History;

fn usage(h: &History, store: &Path, args: &[&str]) -> Output {
    support::fen_fs()
        .arg("usage")
        .args(args)
        .arg("--store")
        .arg(store)
        .args(h.source_args())
        .env("TZ", "UTC")
        .output()
        .expect("run fen-fs usage")
}

fn lines(o: &Output) -> Vec<Value> {
    assert!(
        o.status.success(),
        "fen-fs usage failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

fn setup() -> (tempfile::TempDir, History, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let h = usage_support::write_history(&tmp.path().join("history"));
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    (tmp, h, store)
}

const COMMON: [&str; 9] = [
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "total_tokens",
    "cost_usd",
    "agents",
    "models",
    "hosts",
];

#[test]
fn json_lines_have_the_spec_fields_per_report() {
    let (_tmp, h, store) = setup();
    for (report, key, sample) in [
        ("daily", "period", "2026-03-05"),
        ("weekly", "period", "2026-W10"),
        ("monthly", "period", "2026-03"),
        ("project", "project", "/home/u/beta"),
        ("model", "model", "gpt-5.3-codex"),
        ("agent", "agent", "gemini"),
        ("session", "session", "019cc000-0000-7000-8000-00000000c0d1"),
        ("host", "host", ""),
    ] {
        let o = usage(&h, &store, &[report, "--json"]);
        let rows = lines(&o);
        assert!(!rows.is_empty(), "{report}");
        for l in String::from_utf8_lossy(&o.stdout).lines() {
            assert!(
                l.starts_with(&format!("{{\"{key}\":")),
                "{report}: the subject first: {l}"
            );
        }
        for r in &rows {
            for k in std::iter::once(key).chain(COMMON) {
                assert!(r.get(k).is_some(), "{report}: no {k} in {r}");
            }
            let n = |k: &str| r[k].as_u64().unwrap();
            assert_eq!(
                n("total_tokens"),
                n("input_tokens")
                    + n("output_tokens")
                    + n("cache_write_tokens")
                    + n("cache_read_tokens")
                    + n("reasoning_tokens"),
                "{r}"
            );
        }
        if !sample.is_empty() {
            assert!(
                rows.iter().any(|r| r[key] == sample),
                "{report}: no {sample}"
            );
        }
    }
    // --breakdown: one line per row and model, each naming its model.
    let rows = lines(&usage(&h, &store, &["daily", "--json", "--breakdown"]));
    let days = lines(&usage(&h, &store, &["daily", "--json"]));
    assert!(rows.len() > days.len());
    for r in &rows {
        assert!(r["model"].is_string(), "{r}");
    }
    for d in &days {
        let parts: Vec<&Value> = rows.iter().filter(|r| r["period"] == d["period"]).collect();
        let sum: u64 = parts
            .iter()
            .map(|r| r["total_tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, d["total_tokens"].as_u64().unwrap(), "{}", d["period"]);
    }
    // The table: a bar column, and a totals line.
    let o = usage(&h, &store, &["monthly"]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains('█'), "{text}");
    assert!(text.lines().any(|l| l.starts_with("Total")), "{text}");
}

#[test]
fn filters_narrow_what_is_counted() {
    let (_tmp, h, store) = setup();
    let total = |rows: &[Value]| {
        rows.iter()
            .map(|r| r["total_tokens"].as_u64().unwrap())
            .sum::<u64>()
    };
    let all = lines(&usage(&h, &store, &["agent", "--json"]));
    let codex = lines(&usage(&h, &store, &["agent", "--json", "--agent", "codex"]));
    assert_eq!(codex.len(), 1);
    assert_eq!(codex[0]["agent"], "codex");
    assert_eq!(Some(&codex[0]), all.iter().find(|r| r["agent"] == "codex"));
    let days = lines(&usage(
        &h,
        &store,
        &[
            "daily",
            "--json",
            "--since",
            "2026-03-04",
            "--until",
            "20260306",
        ],
    ));
    let periods: Vec<&str> = days.iter().map(|r| r["period"].as_str().unwrap()).collect();
    assert_eq!(periods, ["2026-03-04", "2026-03-05", "2026-03-06"]);
    let beta = lines(&usage(
        &h,
        &store,
        &["project", "--json", "--cwd", "/home/u/beta"],
    ));
    assert_eq!(beta.len(), 1);
    assert_eq!(beta[0]["project"], "/home/u/beta");
    let by_project = lines(&usage(&h, &store, &["project", "--json"]));
    assert_eq!(
        Some(&beta[0]),
        by_project.iter().find(|r| r["project"] == "/home/u/beta")
    );
    assert!(total(&by_project) > total(&beta));
    // Every record of this machine's sources is this host's.
    let hosts = lines(&usage(&h, &store, &["host", "--json"]));
    assert_eq!(hosts.len(), 1);
    let me = hosts[0]["host"].as_str().unwrap().to_string();
    assert_eq!(
        lines(&usage(&h, &store, &["host", "--json", "--host", &me])),
        hosts
    );
    assert!(
        lines(&usage(
            &h,
            &store,
            &["daily", "--json", "--host", "elsewhere"]
        ))
        .is_empty()
    );
    // Days follow --timezone: the same responses on other days.
    let utc = lines(&usage(&h, &store, &["daily", "--json"]));
    let ny = lines(&usage(
        &h,
        &store,
        &["daily", "--json", "--timezone", "America/New_York"],
    ));
    assert_eq!(total(&utc), total(&ny));
    assert_ne!(
        utc.iter()
            .map(|r| r["total_tokens"].clone())
            .collect::<Vec<_>>(),
        ny.iter()
            .map(|r| r["total_tokens"].clone())
            .collect::<Vec<_>>()
    );
}

#[test]
fn unknown_reports_and_bad_dates_exit_2_with_a_message() {
    let (_tmp, h, store) = setup();
    for args in [
        &["yearly"][..],
        &["daily", "--since", "2026-02-30"],
        &["daily", "--until", "yesterday"],
        &["daily", "--timezone", "Mars/Olympus"],
        &["daily", "--agent", "vim"],
    ] {
        let o = usage(&h, &store, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.trim().is_empty(), "{args:?}: no message");
    }
    let o = usage(&h, &store, &["yearly"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("daily, weekly, monthly"));
}

fn write_lines(path: &Path, lines: &[Value]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn claude_line(session: &str, id: &str, usage: Value, model: &str) -> Value {
    serde_json::json!({"parentUuid": null, "isSidechain": false, "type": "assistant",
        "uuid": format!("u-{id}"), "timestamp": "2026-05-01T12:00:00.000Z", "cwd": "/home/u/gamma",
        "sessionId": session, "requestId": format!("req-{id}"),
        "message": {"id": id, "model": model, "role": "assistant", "content": [], "usage": usage}})
}

#[test]
fn sessions_without_usage_count_nothing_and_bad_usage_is_skipped_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("claude");
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let s1 = "11111111-2222-4333-8444-555555555555";
    let s2 = "66666666-2222-4333-8444-555555555555";
    let project = root.join("projects/-home-u-gamma");
    // A session with messages but no usage at all.
    write_lines(
        &project.join(format!("{s1}.jsonl")),
        &[
            serde_json::json!({"type": "user", "uuid": "a", "parentUuid": null, "sessionId": s1,
            "cwd": "/home/u/gamma", "timestamp": "2026-05-01T11:00:00.000Z",
            "message": {"role": "user", "content": "hello"}}),
        ],
    );
    let h = History {
        claude: root.clone(),
        codex: tmp.path().join("none"),
        gemini_home: tmp.path().join("none"),
    };
    let o = usage(&h, &store, &["session", "--json"]);
    assert!(lines(&o).is_empty());
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = usage(&h, &store, &["daily"]);
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "No usage found.\n");
    // A session whose second response's usage cannot be read, and a model without a
    // price.
    let good = serde_json::json!({"input_tokens": 10, "output_tokens": 20,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let bad = serde_json::json!({"input_tokens": "ten", "output_tokens": 20});
    write_lines(
        &project.join(format!("{s2}.jsonl")),
        &[
            claude_line(s2, "m1", good.clone(), "claude-sonnet-4-5-20250929"),
            claude_line(s2, "m2", bad, "claude-sonnet-4-5-20250929"),
            claude_line(s2, "m3", good, "claude-nonesuch-9"),
        ],
    );
    let o = usage(&h, &store, &["model", "--json"]);
    let rows = lines(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning") && err.contains(s2) && err.contains("input_tokens"),
        "{err}"
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    let priced = rows
        .iter()
        .find(|r| r["model"] == "claude-sonnet-4-5-20250929")
        .unwrap();
    assert_eq!(priced["total_tokens"], 30);
    assert!(priced["cost_usd"].as_f64().unwrap() > 0.0);
    let unknown = rows
        .iter()
        .find(|r| r["model"] == "claude-nonesuch-9")
        .unwrap();
    assert_eq!(unknown["total_tokens"], 30);
    assert!(unknown["cost_usd"].is_null(), "never 0: {unknown}");
    // The day mixes both: its cost is unknown, what is known is said apart.
    let day = &lines(&usage(&h, &store, &["daily", "--json"]))[0];
    assert!(day["cost_usd"].is_null());
    assert_eq!(day["cost_usd_priced"], priced["cost_usd"]);
    assert_eq!(
        day["unpriced_models"],
        serde_json::json!(["claude-nonesuch-9"])
    );
    let text = String::from_utf8(usage(&h, &store, &["daily"]).stdout).unwrap();
    assert!(text.contains("+?"), "{text}");
    // --prices FILE: another table prices it.
    let prices = tmp.path().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"claude-nonesuch-9": {"input_cost_per_token": 0.001, "output_cost_per_token": 0.002}}"#,
    )
    .unwrap();
    let rows = lines(&usage(
        &h,
        &store,
        &["model", "--json", "--prices", prices.to_str().unwrap()],
    ));
    let r = rows
        .iter()
        .find(|r| r["model"] == "claude-nonesuch-9")
        .unwrap();
    assert!(
        (r["cost_usd"].as_f64().unwrap() - (10.0 * 0.001 + 20.0 * 0.002)).abs() < 1e-9,
        "{r}"
    );
    let o = usage(
        &h,
        &store,
        &["daily", "--prices", "/nonexistent/prices.json"],
    );
    assert!(!o.status.success());
}
