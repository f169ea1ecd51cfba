//! Cursor's agent CLI as a kind of agent: transcripts under
//! `projects/<slug>/agent-transcripts/` and the `chats/**/store.db` databases it
//! resumes (`cursor_store.rs`), under `~/.cursor`; its files name no cwd.

use super::CursorReader;
use crate::agent::Agent;
use crate::sources::cursor_store::{self, CursorStoreReader, CursorStoreUnits, STORE_FILE};
use crate::sources::foreign::{ForeignReader, ForeignSummary};
use crate::sources::kind::{AgentKind, SessionsFolder, home, is_dir, later_then_first_name};
use crate::sources::units::Units;
use std::cmp::Ordering;
use std::path::{Path, PathBuf};

pub struct Cursor;

impl AgentKind for Cursor {
    fn agent(&self) -> Agent {
        Agent::Cursor
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x1a, 0xbc, 0x9c)
    }

    fn default_root(&self) -> Option<PathBuf> {
        home().map(|h| h.join(".cursor"))
    }

    fn root_hint(&self) -> &'static str {
        "~/.cursor"
    }

    fn sessions_folders(&self, root: &Path) -> Vec<SessionsFolder> {
        vec![SessionsFolder::new(root, "projects", 4)]
    }

    /// Or its `chats/` folder of `store.db` files.
    fn present(&self, root: &Path) -> bool {
        is_dir(&root.join("projects")) || is_dir(&root.join("chats"))
    }

    fn enters_folder(&self, level: usize, name: &str) -> bool {
        match level {
            2 => name == "agent-transcripts",
            // `<id>/subagents/` holds subagent transcripts, not sessions.
            3 => name != "subagents",
            _ => true,
        }
    }

    /// `agent-transcripts/<id>.jsonl` or `agent-transcripts/<id>/<id>.jsonl`.
    fn is_session_entry(&self, _: &SessionsFolder, level: usize, parent: &str, name: &str) -> bool {
        (level == 3 && name.ends_with(".jsonl") && name.len() > ".jsonl".len())
            || (level == 4 && name.strip_suffix(".jsonl") == Some(parent))
    }

    /// A `store.db` unit, else a transcript.
    fn reader_for(&self, file_name: &str) -> Box<dyn ForeignReader> {
        if file_name == STORE_FILE {
            Box::new(CursorStoreReader::new())
        } else {
            Box::new(CursorReader::new(file_name))
        }
    }

    fn complete_summary(&self, _root: &Path, path: &Path, s: &mut ForeignSummary) {
        super::complete_from_path(path, s)
    }

    fn cwd_hint(&self, _root: &Path, path: &Path) -> Option<String> {
        super::cwd_of_path(path)
    }

    fn folders_are_projects(&self) -> bool {
        true
    }

    /// A `store.db` message blob in the AI SDK's shape, else a transcript's message.
    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        if cursor_store::is_blob_shape(message) {
            cursor_store::to_neutral(message)
        } else {
            super::to_neutral(message)
        }
    }

    fn units(&self, root: &Path) -> Option<Units> {
        Some(Units::new(Box::new(CursorStoreUnits::new(root))))
    }

    /// A transcript and its `store.db` are one session.
    fn one_session_per_id(&self) -> bool {
        true
    }

    /// A `store.db` (what Cursor resumes) before a transcript.
    fn prefer(&self, a: (&Path, &ForeignSummary), b: (&Path, &ForeignSummary)) -> Ordering {
        let db = |p: &Path| p.file_name().is_some_and(|n| n == STORE_FILE);
        db(a.0)
            .cmp(&db(b.0))
            .then_with(|| later_then_first_name(a, b))
    }

    fn note_cwd(&self, cwd: &str) {
        cursor_store::note_cwd(cwd)
    }
}
