//! Nothing half-written is ever left in another agent's folder: with a failure
//! injected after the new file is written and checked but before it gets its name,
//! every target's root is left exactly as it was (no file, no temporary file, no
//! folder made for it) and the ledger records nothing. Alone in its test binary: it
//! sets the process's environment.

mod resume_support;
mod support;

use fen_fs::agent::Agent;
use fen_fs::resume::ledger::Ledger;
use fen_fs::resume::publish::FAIL_BEFORE_LINK_ENV;
use fen_fs::resume::{Target, make};
use resume_support::sample;

fn tree(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in walk(dir) {
        out.push(e.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
    }
    out.sort();
    out
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        out.push(e.path());
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

#[test]
fn a_failure_before_the_rename_leaves_every_agents_folder_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    let store = tmp.path().join("store");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&store).unwrap();
    let source = tmp.path().join("source.jsonl");
    std::fs::write(&source, "{}\n").unwrap();
    let cwd = project.to_string_lossy().into_owned();
    let ledger = Ledger::for_store(&store);
    // SAFETY: this binary's only test; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var(FAIL_BEFORE_LINK_ENV, "1") };
    for agent in [Agent::Claude, Agent::Codex, Agent::Pi] {
        let root = tmp.path().join(agent.name());
        std::fs::create_dir_all(&root).unwrap();
        // One folder the agent already has: kept, and nothing added inside it.
        let existing = match agent {
            Agent::Claude => "projects",
            _ => "sessions",
        };
        std::fs::create_dir(root.join(existing)).unwrap();
        std::fs::write(root.join("config.toml"), "x = 1\n").unwrap();
        let before = tree(&root);
        let session = sample(Agent::Claude, &source, &cwd, true);
        let target = Target::Agent {
            agent,
            root: root.clone(),
        };
        let err = make(&session, &target, &cwd, &ledger).unwrap_err();
        assert!(
            err.reason.contains("before the new session gets its name"),
            "{}",
            err.reason
        );
        assert_eq!(tree(&root), before, "{agent:?} left something behind");
    }
    assert!(ledger.records().is_empty());
    // SAFETY: as above.
    unsafe { std::env::remove_var(FAIL_BEFORE_LINK_ENV) };
    let root = tmp.path().join("claude");
    let made = make(
        &sample(Agent::Claude, &source, &cwd, true),
        &Target::Agent {
            agent: Agent::Claude,
            root,
        },
        &cwd,
        &ledger,
    )
    .unwrap();
    assert!(made.path.is_file());
}
