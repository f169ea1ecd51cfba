//! `fen-fs usage` against its oracle, ccusage 20.0.24 itself (scripts/install-agents
//! ccusage), on one generated Claude Code + Codex + Gemini CLI history
//! (tests/usage_support): the same tokens per day (and month) and model, and costs
//! within 1% wherever both know the price. ccusage is pointed at temporary folders
//! only and runs offline.

mod support;
mod usage_support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use usage_support::History;

/// (period, model) → [input, output, cache write, cache read], cost.
type Table = BTreeMap<(String, String), ([u64; 4], Option<f64>)>;

fn ccusage(
    bin: &Path,
    h: &History,
    tmp: &Path,
    report: &str,
    zone: Option<&str>,
    tz: &str,
) -> Table {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &h.gemini_home)
        .env("XDG_CONFIG_HOME", tmp.join("xdg-config"))
        .env("XDG_DATA_HOME", tmp.join("xdg-data"))
        .env("XDG_CACHE_HOME", tmp.join("xdg-cache"))
        .env("CLAUDE_CONFIG_DIR", &h.claude)
        .env("CODEX_HOME", &h.codex)
        .env("TZ", tz)
        .args([report, "--offline", "--json", "--no-color"]);
    if let Some(z) = zone {
        cmd.args(["--timezone", z]);
    }
    let out = cmd.output().expect("run ccusage");
    assert!(
        out.status.success(),
        "ccusage failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("ccusage --json");
    let mut t = Table::new();
    for row in v[report].as_array().expect("rows") {
        let period = row["period"].as_str().unwrap().to_string();
        for m in row["modelBreakdowns"].as_array().unwrap() {
            let n = |k: &str| m[k].as_u64().unwrap();
            let tokens = [
                n("inputTokens"),
                n("outputTokens"),
                n("cacheCreationTokens"),
                n("cacheReadTokens"),
            ];
            let key = (period.clone(), m["modelName"].as_str().unwrap().to_string());
            let prev = t.insert(key.clone(), (tokens, m["cost"].as_f64()));
            assert!(prev.is_none(), "ccusage lists {key:?} twice");
        }
    }
    t
}

fn fen(h: &History, store: &Path, report: &str, zone: Option<&str>, tz: &str) -> Table {
    let mut cmd = support::fen_fs();
    cmd.arg("usage")
        .arg(report)
        .args(["--json", "--breakdown", "--store"])
        .arg(store)
        .args(h.source_args())
        .env("TZ", tz);
    if let Some(z) = zone {
        cmd.args(["--timezone", z]);
    }
    let out = cmd.output().expect("run fen-fs usage");
    assert!(
        out.status.success(),
        "fen-fs usage failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut t = Table::new();
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(l).expect("a JSON line");
        let n = |k: &str| v[k].as_u64().unwrap();
        let tokens = [
            n("input_tokens"),
            n("output_tokens"),
            n("cache_write_tokens"),
            n("cache_read_tokens"),
        ];
        let key = (
            v["period"].as_str().unwrap().to_string(),
            v["model"].as_str().unwrap().to_string(),
        );
        t.insert(key, (tokens, v["cost_usd"].as_f64()));
    }
    t
}

/// Both tables' rows that count any token (Claude Code's `<synthetic>` messages count
/// none) must be the same, with costs within 1% where both price them.
fn compare(label: &str, ours: &Table, theirs: &Table) -> usize {
    let counted = |t: &Table| -> Table {
        t.iter()
            .filter(|(_, (n, _))| n.iter().any(|&x| x > 0))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    };
    let (ours, theirs) = (counted(ours), counted(theirs));
    let keys = |t: &Table| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&ours),
        keys(&theirs),
        "{label}: (period, model) rows differ"
    );
    let mut priced = 0;
    for (k, (n, cost)) in &ours {
        let (m, their_cost) = &theirs[k];
        assert_eq!(
            n, m,
            "{label}: tokens of {k:?} (input, output, cache write, cache read)"
        );
        match (cost, their_cost) {
            (Some(a), Some(b)) if *b > 0.0 => {
                assert!(
                    (a - b).abs() <= 0.01 * b,
                    "{label}: cost of {k:?}: fen-fs {a}, ccusage {b}"
                );
                priced += 1;
            }
            (None, Some(b)) if *b > 0.0 => {
                panic!("{label}: {k:?}: ccusage prices it ({b}), fen-fs does not")
            }
            _ => {}
        }
    }
    priced
}

#[test]
fn tokens_and_costs_per_day_and_model_match_ccusage() {
    let Some(bin) = support::agent_bin("usage_ccusage", "ccusage") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let h = usage_support::write_history(&tmp.path().join("history"));
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    // Days in New York named by --timezone (the history crosses its midnights and the
    // switch to summer time), then in Tokyo by $TZ; months too.
    let zone = Some("America/New_York");
    let ours = fen(&h, &store, "daily", zone, "UTC");
    let theirs = ccusage(&bin, &h, tmp.path(), "daily", zone, "UTC");
    let priced = compare("daily, America/New_York", &ours, &theirs);
    let days: std::collections::BTreeSet<&String> = ours.keys().map(|(d, _)| d).collect();
    assert!(days.len() >= 10, "{days:?}");
    assert!(priced >= 30, "only {priced} rows priced by both");
    // Each agent and the cases that matter are in what was compared.
    for model in [
        "claude-opus-4-6-fast",
        "gpt-5.3-codex",
        "gpt-5.2-codex",
        "gpt-5.1",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "claude-haiku-4-5",
        "claude-opus-4-7",
    ] {
        assert!(ours.keys().any(|(_, m)| m == model), "{model} not counted");
    }
    let ours = fen(&h, &store, "daily", None, "Asia/Tokyo");
    let theirs = ccusage(&bin, &h, tmp.path(), "daily", None, "Asia/Tokyo");
    compare("daily, TZ=Asia/Tokyo", &ours, &theirs);
    let ours = fen(&h, &store, "monthly", None, "Asia/Tokyo");
    let theirs = ccusage(&bin, &h, tmp.path(), "monthly", None, "Asia/Tokyo");
    compare("monthly, TZ=Asia/Tokyo", &ours, &theirs);
}
