//! The mount's `usage/` folder with real tools: `jq` parses every JSON file, an XML
//! parser `daily.svg`, `stat` gives the bytes `cat` reads, and an agent's append is
//! in the next `cat` (daily.json and daily.svg change).

mod support;
mod usage_support;

use std::process::Command;

#[test]
fn usage_files_parse_and_change_after_an_append() {
    let tmp = tempfile::tempdir().unwrap();
    let h = usage_support::write_history(&tmp.path().join("history"));
    let args = h.source_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(m) = support::Mount::with_args("usage_mount", &args) else {
        return;
    };
    let usage = m.path("usage");
    let names: Vec<String> = std::fs::read_dir(&usage)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for f in [
        "daily.json",
        "monthly.json",
        "by-project.json",
        "by-model.json",
        "by-agent.json",
        "daily.svg",
    ] {
        assert!(names.contains(&f.to_string()), "{names:?}");
    }
    let jq = |file: &str, filter: &str| {
        let o = Command::new("jq")
            .args(["-c", filter])
            .arg(usage.join(file))
            .output()
            .expect("run jq");
        assert!(
            o.status.success(),
            "jq {filter} {file}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    for f in [
        "daily.json",
        "monthly.json",
        "by-project.json",
        "by-model.json",
        "by-agent.json",
    ] {
        assert_eq!(jq(f, "type"), "\"array\"", "{f}");
        assert_ne!(jq(f, "length"), "0", "{f}");
    }
    assert_eq!(
        jq("by-agent.json", "[.[].agent] | sort"),
        r#"["claude","codex","gemini"]"#
    );
    // stat's size is what cat reads.
    let daily = std::fs::read(usage.join("daily.json")).unwrap();
    assert_eq!(
        std::fs::metadata(usage.join("daily.json")).unwrap().len(),
        daily.len() as u64
    );
    let svg = std::fs::read_to_string(usage.join("daily.svg")).unwrap();
    roxmltree::Document::parse(&svg).expect("daily.svg is well-formed XML");
    // An agent appends a response today: the next cat has it.
    let now = chrono::Utc::now();
    usage_support::append_claude_response(
        &h,
        &now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        4321,
    );
    let after = std::fs::read(usage.join("daily.json")).unwrap();
    assert_ne!(after, daily);
    let today = jq("daily.json", ".[-1].period");
    // The daemon's days are local (its TZ); the test's is the same machine's.
    let local = chrono::Local::now().format("%Y-%m-%d").to_string();
    assert_eq!(today, format!("\"{local}\""));
    let svg2 = std::fs::read_to_string(usage.join("daily.svg")).unwrap();
    roxmltree::Document::parse(&svg2).expect("daily.svg is well-formed XML");
    assert_ne!(svg2, svg, "today's bar is drawn");
    // Read-only.
    let e = std::fs::OpenOptions::new()
        .write(true)
        .open(usage.join("daily.json"))
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EACCES));
    drop(m);
}
