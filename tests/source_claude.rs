use fen_fs::sources::{claude::ClaudeReader, foreign::*};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/agent-fixtures/claude/projects")
}

#[test]
fn dump() {
    let mut files = vec![];
    let mut stack = vec![root()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() { stack.push(p) } else if p.extension().is_some_and(|x| x == "jsonl") { files.push(p) }
        }
    }
    files.sort();
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let name = f.file_name().unwrap().to_str().unwrap();
        let mut r = ClaudeReader::new(name);
        let tail = feed_all(&mut r, &bytes);
        let s = r.summary(tail);
        println!("=== {}\n{:?}", f.display(), s);
        for m in r.conversation(tail) {
            let t = String::from_utf8(render_message(&m, &bytes)).unwrap();
            let v: serde_json::Value = serde_json::from_str(&t).expect(&t);
            let c: String = t.chars().take(160).collect();
            let _ = v;
            println!("  {c}");
        }
    }
}
