//! `fen-fs status`: the active fen-fs mounts.

use crate::mount_table::fen_mounts;
use crate::store::Store;
use std::process::ExitCode;

pub fn run(json: bool) -> crate::Result<ExitCode> {
    let mut rows = Vec::new();
    for m in fen_mounts() {
        let sessions = m
            .store
            .as_ref()
            .and_then(|s| Store::open_existing(s).all_sessions().ok())
            .map(|s| s.len());
        rows.push(serde_json::json!({
            "mountpoint": m.mountpoint,
            "store": m.store,
            "pid": m.pid,
            "sessions": sessions,
            "fsync": m.fsync,
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
        "{:<30}  {:>7}  {:>8}  {:<8}  STORE",
        "MOUNTPOINT", "PID", "SESSIONS", "FSYNC"
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
        println!(
            "{:<30}  {:>7}  {:>8}  {:<8}  {}",
            text("mountpoint"),
            pid,
            text("sessions"),
            text("fsync"),
            text("store")
        );
    }
    Ok(ExitCode::SUCCESS)
}
