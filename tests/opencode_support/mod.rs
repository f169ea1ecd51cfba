//! OpenCode databases and storage folders made by the tests, with the tables and
//! columns OpenCode 1.18.33 creates (the DDL below is what its database holds, less
//! the tables fen-fs never reads), so the reader meets what OpenCode writes.
#![allow(dead_code)]

use rusqlite::{Connection, params};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub const DDL: &str = "
CREATE TABLE `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `sandboxes` text NOT NULL);
CREATE TABLE `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
  `version` text NOT NULL, `share_url` text, `summary_additions` integer, `summary_deletions` integer,
  `summary_files` integer, `summary_diffs` text, `metadata` text, `cost` real DEFAULT 0 NOT NULL,
  `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL,
  `tokens_reasoning` integer DEFAULT 0 NOT NULL, `tokens_cache_read` integer DEFAULT 0 NOT NULL,
  `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text, `permission` text, `agent` text,
  `model` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `session_message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,
  `type` text NOT NULL, `seq` integer NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `event_sequence` (`aggregate_id` text PRIMARY KEY, `seq` integer NOT NULL, `owner_id` text);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
";

/// An OpenCode database being written: WAL mode, no automatic checkpoint (so the rows
/// stay in the `-wal` as in a live OpenCode), and its writer connection.
pub struct Db {
    pub path: PathBuf,
    pub conn: Connection,
    clock: i64,
}

impl Db {
    pub fn create(path: &Path) -> Db {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0;",
        )
        .unwrap();
        conn.execute_batch(DDL).unwrap();
        conn.execute(
            "INSERT INTO project VALUES ('global', '/', NULL, NULL, 0, 0, '[]')",
            [],
        )
        .unwrap();
        Db {
            path: path.to_path_buf(),
            conn,
            clock: 1_790_000_000_000,
        }
    }

    pub fn tick(&mut self) -> i64 {
        self.clock += 1000;
        self.clock
    }

    /// Bumps the session's sync-event sequence, as OpenCode does on every write.
    fn bump(&self, session: &str) {
        self.conn
            .execute(
                "INSERT INTO event_sequence (aggregate_id, seq) VALUES (?1, 0)
                 ON CONFLICT(aggregate_id) DO UPDATE SET seq = seq + 1",
                [session],
            )
            .unwrap();
    }

    pub fn session(&mut self, id: &str, dir: &str, title: &str) {
        let t = self.tick();
        self.conn
            .execute(
                "INSERT INTO session (id, project_id, slug, directory, path, title, version,
                 time_created, time_updated) VALUES (?1, 'global', 'calm-cactus', ?2, '', ?3,
                 '1.18.33', ?4, ?4)",
                params![id, dir, title, t],
            )
            .unwrap();
        self.bump(id);
    }

    pub fn set(&mut self, session: &str, column: &str, value: Option<&str>) {
        self.conn
            .execute(
                &format!("UPDATE session SET {column} = ?2 WHERE id = ?1"),
                params![session, value],
            )
            .unwrap();
        self.bump(session);
    }

    /// A message row; `info` is its data (without id and sessionID).
    pub fn message(&mut self, session: &str, id: &str, info: Value) -> i64 {
        let t = self.tick();
        self.conn
            .execute(
                "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
                params![id, session, t, info.to_string()],
            )
            .unwrap();
        self.bump(session);
        t
    }

    pub fn part(&mut self, session: &str, message: &str, id: &str, data: Value) {
        let t = self.tick();
        self.conn
            .execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                params![id, message, session, t, data.to_string()],
            )
            .unwrap();
        self.bump(session);
    }

    /// A user message with one text part.
    pub fn user(&mut self, session: &str, id: &str, text: &str) {
        let t = self.clock + 1000;
        self.message(
            session,
            id,
            json!({"role": "user", "time": {"created": t}, "agent": "build",
                   "model": {"providerID": "mock", "modelID": "m"}}),
        );
        self.part(
            session,
            id,
            &format!("prt_{id}_1"),
            json!({"type": "text", "text": text}),
        );
    }

    /// An assistant message answering `parent` with one text part.
    pub fn assistant(&mut self, session: &str, id: &str, parent: &str, text: &str) {
        let t = self.clock + 1000;
        self.message(
            session,
            id,
            json!({"parentID": parent, "role": "assistant", "mode": "build", "agent": "build",
                   "cost": 0, "modelID": "m", "providerID": "mock",
                   "time": {"created": t, "completed": t}, "finish": "stop"}),
        );
        self.part(
            session,
            id,
            &format!("prt_{id}_1"),
            json!({"type": "text", "text": text}),
        );
    }

    /// A finished compaction: the user message with its part and the summary.
    pub fn compaction(&mut self, session: &str, user: &str, summary: &str, tail: Option<&str>) {
        let t = self.clock + 1000;
        self.message(
            session,
            user,
            json!({"role": "user", "time": {"created": t}, "agent": "build",
                   "model": {"providerID": "mock", "modelID": "m"}}),
        );
        let mut part = json!({"type": "compaction", "auto": false});
        if let Some(tail) = tail {
            part["tail_start_id"] = json!(tail);
        }
        self.part(session, user, &format!("prt_{user}_1"), part);
        let t = self.clock + 1000;
        self.message(
            session,
            summary,
            json!({"parentID": user, "role": "assistant", "mode": "compaction",
                   "agent": "compaction", "summary": true, "cost": 0, "modelID": "m",
                   "providerID": "mock", "time": {"created": t, "completed": t},
                   "finish": "stop"}),
        );
        self.part(
            session,
            summary,
            &format!("prt_{summary}_1"),
            json!({"type": "text", "text": "the summary"}),
        );
    }
}

/// A JSON-files session of OpenCode < 1.2 under `data/storage`, pretty-printed as
/// OpenCode writes them.
pub struct Storage {
    pub data: PathBuf,
}

impl Storage {
    pub fn new(data: &Path) -> Storage {
        std::fs::create_dir_all(data.join("storage")).unwrap();
        std::fs::write(data.join("storage/migration"), "2").unwrap();
        Storage {
            data: data.to_path_buf(),
        }
    }

    fn write(&self, rel: &str, v: &Value) -> PathBuf {
        let path = self.data.join("storage").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(v).unwrap()).unwrap();
        path
    }

    pub fn session(&self, id: &str, dir: &str, title: &str) -> PathBuf {
        self.write(
            &format!("session/global/{id}.json"),
            &json!({"id": id, "slug": "calm", "version": "1.1.65", "projectID": "global",
                    "directory": dir, "title": title,
                    "time": {"created": 1_780_000_000_000_i64, "updated": 1_780_000_001_000_i64}}),
        )
    }

    pub fn message(&self, session: &str, id: &str, role: &str, text: &str) -> (PathBuf, PathBuf) {
        let mut info = json!({"id": id, "sessionID": session, "role": role,
                              "time": {"created": 1_780_000_000_500_i64}});
        if role == "assistant" {
            info["finish"] = json!("stop");
        }
        let m = self.write(&format!("message/{session}/{id}.json"), &info);
        let p = self.write(
            &format!("part/{id}/prt_{id}.json"),
            &json!({"id": format!("prt_{id}"), "sessionID": session, "messageID": id,
                    "type": "text", "text": text}),
        );
        (m, p)
    }
}
