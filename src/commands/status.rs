//! `fen-fs status`: the active fen-fs mounts, with every source's session count and
//! whether transcripts are read through FUSE passthrough.

use crate::daemon::MountStatus;
use crate::mount_table::fen_mounts;
use crate::sources::agents::AgentRoot;
use crate::sources::foreign_source::ForeignSource;
use crate::store::Store;
use std::collections::BTreeMap;
use std::process::ExitCode;

/// Sessions per agent of a mount: fen's store, and the other agents' stores its daemon
/// said it shows (their session files, found as the daemon finds them).
fn sessions_by_agent(
    store: &std::path::Path,
    status: Option<&MountStatus>,
) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    if let Ok(fen) = Store::open_existing(store).all_sessions() {
        out.insert("fen".to_string(), fen.len());
    }
    for (agent, root) in status.map(|s| s.sources.as_slice()).unwrap_or_default() {
        let source = ForeignSource::new(
            &AgentRoot {
                agent: *agent,
                root: root.clone(),
            },
            None,
        );
        *out.entry(agent.name().to_string()).or_insert(0) += source.session_files();
    }
    out
}

pub fn run(json: bool) -> crate::Result<ExitCode> {
    let mut rows = Vec::new();
    for m in fen_mounts() {
        let status = m
            .store
            .as_deref()
            .zip(m.pid)
            .and_then(|(store, pid)| MountStatus::of(store, pid));
        let by_agent = m
            .store
            .as_deref()
            .map(|s| sessions_by_agent(s, status.as_ref()));
        rows.push(serde_json::json!({
            "mountpoint": m.mountpoint,
            "store": m.store,
            "pid": m.pid,
            "sessions": by_agent.as_ref().map(|b| b.values().sum::<usize>()),
            "sessions_by_agent": by_agent,
            "fsync": m.fsync,
            "passthrough": status.as_ref().map(|s| s.passthrough.clone()),
            "keeping": status.as_ref().map(|s| s.keeping.clone()).filter(|k| !k.is_empty()),
            "stale": m.pid.is_none(),
        }));
    }
    if json {
        for r in &rows {
            println!("{r}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        println!("no fen-fs mounts");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<30}  {:>7}  {:>8}  {:<8}  {:<11}  {:<8}  STORE",
        "MOUNTPOINT", "PID", "SESSIONS", "FSYNC", "PASSTHROUGH", "KEEPING"
    );
    for r in &rows {
        let text = |k: &str| match &r[k] {
            serde_json::Value::Null => "-".to_string(),
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        let pid = if r["stale"] == true {
            "stale".to_string()
        } else {
            text("pid")
        };
        // `off (why)`: the reason is in the log; the table says on or off.
        let passthrough = text("passthrough");
        let passthrough = passthrough.split(" (").next().unwrap_or("-");
        // `paused: disk full since ...`: the table says paused; --json says why.
        let keeping = text("keeping");
        let keeping = keeping
            .split([' ', ':'])
            .next()
            .filter(|k| !k.is_empty())
            .unwrap_or("-");
        println!(
            "{:<30}  {:>7}  {:>8}  {:<8}  {:<11}  {:<8}  {}",
            text("mountpoint"),
            pid,
            text("sessions"),
            text("fsync"),
            passthrough,
            keeping,
            text("store")
        );
    }
    Ok(ExitCode::SUCCESS)
}
