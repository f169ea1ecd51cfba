//! Kimi CLI as a kind of agent: `sessions/<md5 of the cwd>/<id>/context.jsonl` under
//! `$KIMI_SHARE_DIR`, else `~/.kimi` (`src/kimi_cli/share.py`, `metadata.py`).

use super::KimiReader;
use crate::agent::Agent;
use crate::sources::foreign::{ForeignReader, ForeignSummary};
use crate::sources::kind::{AgentKind, OwnResume, SessionsFolder, env_or_home, files_below};
use crate::usage_record::{UnitFacts, UsageReader};
use std::path::{Path, PathBuf};

pub struct Kimi;

/// The session's file: `<id>/context.jsonl` (level 2 below a work dir's folder), or
/// the older `<id>.jsonl` Kimi moves there when it opens the session (level 1).
const CONTEXT: &str = "context.jsonl";

/// The session id of the file at `path`.
fn session_id(path: &Path) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let id = if name == CONTEXT {
        path.parent().and_then(Path::file_name)
    } else {
        path.file_stem()
    };
    id.map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The work dir's folder (`sessions/<md5>`) a session file or its `wire.jsonl` is in.
fn work_dir_folder(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root.join("sessions")).ok()?;
    let first = rel.components().next()?;
    Some(first.as_os_str().to_string_lossy().into_owned())
}

/// The work dir whose folder is `folder`, by `kimi.json`'s list: the md5 of its path,
/// prefixed `<kaos>_` for a work dir that is not local (`WorkDirMeta.sessions_dir`).
pub fn cwd_of_folder(root: &Path, folder: &str) -> Option<String> {
    use md5::{Digest, Md5};
    let bytes = crate::store::open::read_small(&root.join("kimi.json"), 16 << 20)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v["work_dirs"].as_array()?.iter().find_map(|wd| {
        let path = wd["path"].as_str()?;
        let hex: String = Md5::digest(path.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let name = match wd["kaos"].as_str() {
            None | Some("local") => hex,
            Some(kaos) => format!("{kaos}_{hex}"),
        };
        (name == folder).then(|| path.to_string())
    })
}

/// The time of a `wire.jsonl`'s first record (RFC 3339), from its first kilobytes.
fn wire_start(wire: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(wire).ok()?;
    let mut head = Vec::new();
    f.take(16 << 10).read_to_end(&mut head).ok()?;
    head.split(|b| *b == b'\n').find_map(|line| {
        let v: serde_json::Value = serde_json::from_slice(line).ok()?;
        let secs = v["timestamp"].as_f64()?;
        let t = chrono::DateTime::from_timestamp_millis((secs * 1000.0) as i64)?;
        Some(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    })
}

impl AgentKind for Kimi {
    fn agent(&self) -> Agent {
        Agent::Kimi
    }

    fn display_name(&self) -> &'static str {
        "Kimi CLI"
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x1f, 0x6f, 0xeb)
    }

    fn default_root(&self) -> Option<PathBuf> {
        env_or_home("KIMI_SHARE_DIR", ".kimi")
    }

    fn root_hint(&self) -> &'static str {
        "$KIMI_SHARE_DIR, else ~/.kimi"
    }

    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "sessions", 3)]
    }

    /// Into work dirs' folders and their sessions' folders, not further (a session's
    /// `subagents/` are its own).
    fn enters_folder(&self, level: usize, _name: &str) -> bool {
        level <= 2
    }

    fn is_session_entry(
        &self,
        _folder: &SessionsFolder,
        level: usize,
        _parent: &str,
        name: &str,
    ) -> bool {
        match level {
            3 => name == CONTEXT,
            2 => name.ends_with(".jsonl") && name.len() > ".jsonl".len(),
            _ => false,
        }
    }

    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        let id = file_name.strip_suffix(".jsonl").unwrap_or(file_name);
        Box::new(KimiReader::new(id))
    }

    fn reader_for_path(&self, path: &Path) -> Box<dyn ForeignReader> {
        Box::new(KimiReader::new(&session_id(path)))
    }

    /// The cwd from `kimi.json`; the title (a rename or Kimi's generated one) and the
    /// archive mark from `state.json` beside (`session_state.py`).
    fn complete_summary(&self, root: &Path, path: &Path, s: &mut ForeignSummary) {
        if s.cwd.is_none() {
            s.cwd = self.cwd_hint(root, path);
        }
        if path.file_name().is_some_and(|n| n == CONTEXT) {
            let state = path
                .parent()
                .map(|d| d.join("state.json"))
                .and_then(|p| crate::store::open::read_small(&p, 16 << 20))
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
            // context.jsonl holds no time: the session's start is `wire.jsonl`'s first
            // record's (a name that stays while the file grows).
            if s.created_at.is_none() {
                s.created_at = path
                    .parent()
                    .and_then(|d| wire_start(&d.join("wire.jsonl")));
            }
            if let Some(state) = state {
                if let Some(t) = state["custom_title"].as_str().filter(|t| !t.is_empty()) {
                    s.title = Some(t.to_string());
                }
                s.archived |= state["archived"] == true;
            }
        }
    }

    fn cwd_hint(&self, root: &Path, path: &Path) -> Option<String> {
        cwd_of_folder(root, &work_dir_folder(root, path)?)
    }

    fn folders_are_projects(&self) -> bool {
        true
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::to_neutral(message)
    }

    fn usage_reader(&self, path: &Path, facts: UnitFacts) -> Option<Box<dyn UsageReader>> {
        Some(Box::new(super::usage::KimiUsage::new(facts, path)))
    }

    /// Each session's `wire.jsonl` (its subagents' too), where Kimi records the tokens
    /// of each step.
    fn usage_files(&self, root: &Path) -> Option<Vec<PathBuf>> {
        let mut out = Vec::new();
        files_below(
            &root.join("sessions"),
            &|depth, name| depth >= 2 && name == "wire.jsonl",
            &mut out,
        );
        out.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
        Some(out)
    }

    fn usage_cwd(&self, root: &Path, path: &Path) -> Option<String> {
        cwd_of_folder(root, &work_dir_folder(root, path)?)
    }

    fn usage_cwd_from_place(&self) -> bool {
        true
    }

    fn resume_command(&self, id: &str) -> Option<OwnResume> {
        Some(OwnResume {
            program: "kimi",
            args: vec!["--session".into(), id.into()],
        })
    }
}
