//! `fen-fs sync init | add | remove | status`: printing what `crate::sync::setup` did.

use crate::error::Result;
use crate::sync::{home, rest::Client, setup};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

fn client(syncthing_home: Option<&Path>) -> Result<Client> {
    Client::new(home::find(syncthing_home)?)
}

pub fn init(syncthing_home: Option<&Path>, store: &Path, delay: Option<u32>) -> Result<ExitCode> {
    let c = client(syncthing_home)?;
    let done = setup::init(&c, store, delay)?;
    eprintln!(
        "fen-fs: {} {} send-only as Syncthing folder {}{}",
        if done.created_folder {
            "shared"
        } else {
            "shares"
        },
        done.store.display(),
        done.folder_id,
        if done.wrote_stignore {
            " (wrote its .stignore: sessions and kept copies only)"
        } else {
            ""
        }
    );
    eprintln!(
        "fen-fs: on each other machine: fen-fs sync add {} --name {}",
        done.device_id,
        crate::host::this_host()
    );
    println!("{}", done.device_id);
    Ok(ExitCode::SUCCESS)
}

#[allow(clippy::too_many_arguments)]
pub fn add(
    syncthing_home: Option<&Path>,
    store: &Path,
    peers: &Path,
    device_id: &str,
    name: &str,
    address: Option<&str>,
    delay: Option<u32>,
) -> Result<ExitCode> {
    let c = client(syncthing_home)?;
    let added = setup::add(&c, store, peers, device_id, name, address, delay)?;
    println!(
        "added {} as {}: this store is shared with it; its store arrives read-only in {}",
        added.device_id,
        added.name,
        added.path.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn remove(
    syncthing_home: Option<&Path>,
    store: &Path,
    peers: &Path,
    name: &str,
) -> Result<ExitCode> {
    let c = client(syncthing_home)?;
    let r = setup::remove(&c, store, peers, name)?;
    let mut said = format!("removed {}", r.name);
    if let Some(d) = &r.device_id {
        said.push_str(&format!(" ({})", crate::sync::short_id(d)));
    }
    if r.folder_id.is_some() {
        said.push_str(": its store is no longer received here");
    }
    if r.device_id.is_some() {
        said.push_str(if r.device_kept {
            "; this store is no longer shared with it (the device stays in Syncthing: it shares other folders)"
        } else {
            "; this store is no longer shared with it"
        });
    }
    if r.deleted_copy {
        said.push_str(&format!(
            "; deleted its copy {} ({} sessions: they stay on {})",
            r.path.display(),
            r.sessions,
            r.name
        ));
    }
    println!("{said}");
    Ok(ExitCode::SUCCESS)
}

pub fn status(syncthing_home: Option<&Path>, json: bool) -> Result<ExitCode> {
    let c = client(syncthing_home)?;
    let peers = setup::status(&c)?;
    // On stderr, in both forms: `--json` keeps one object per peer on stdout.
    if let Some(problem) = setup::own_watch_problem(&c)? {
        eprintln!("fen-fs: {problem}");
    }
    let mut out = std::io::stdout().lock();
    if json {
        for p in &peers {
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string(p).expect("status serializes")
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    if peers.is_empty() {
        let _ = writeln!(out, "no peers (fen-fs sync add DEVICE-ID --name NAME)");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 6]> = peers
        .iter()
        .map(|p| {
            [
                p.host.clone(),
                if p.connected {
                    "connected"
                } else {
                    "not connected"
                }
                .to_string(),
                match (&p.state, p.need_files) {
                    (None, _) => "no store received".into(),
                    (Some(s), 0) => s.clone(),
                    (Some(s), n) => format!("{s}, {n} files to come"),
                },
                p.last_synced
                    .as_deref()
                    .map(crate::views::local_time)
                    .unwrap_or_else(|| "never".into()),
                p.sessions.to_string(),
                crate::sync::short_id(&p.device_id),
            ]
        })
        .collect();
    let header = ["HOST", "LINK", "STATE", "LAST SYNCED", "SESSIONS", "DEVICE"].map(String::from);
    let mut w = [0usize; 6];
    for r in std::iter::once(&header).chain(&rows) {
        for (w, c) in w.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = r
            .iter()
            .zip(w)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    Ok(ExitCode::SUCCESS)
}
