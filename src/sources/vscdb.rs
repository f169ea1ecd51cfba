//! VS Code's storage as the editors built on it keep it (VS Code itself, Cursor, their
//! forks): a user folder (`~/.config/Code/User`, `~/.config/Cursor/User`) whose
//! `globalStorage/state.vscdb` and `workspaceStorage/<hash>/state.vscdb` are SQLite
//! key/value tables, and whose `workspaceStorage/<hash>/workspace.json` names the
//! folder each workspace is.
//!
//! The tables (VS Code `src/vs/base/parts/storage/node/storage.ts`): `ItemTable (key
//! TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)`, and in Cursor also `cursorDiskKV` of
//! the same shape. VS Code writes a key with a plain `INSERT`, which the conflict
//! clause turns into a delete and an insert: a key written again gets a new `rowid`,
//! so `(key, rowid)` from the key's index says whether it changed without reading a
//! value. Values are read as bytes whether stored as TEXT or BLOB.
//!
//! The databases are read only through `sqlite_ro` (nothing created or locked in the
//! editor's folder); these helpers take its connection. Only keys asked for by name
//! or by a known prefix are read: the global table also holds the editor's login
//! tokens, which nothing here ever selects.

use rusqlite::Connection;
use rusqlite::types::ValueRef;
use std::path::{Path, PathBuf};

/// VS Code's key/value table.
pub const ITEM_TABLE: &str = "ItemTable";

/// The end of the key range of `prefix`: every key starting with `prefix` sorts at or
/// after it and before this (`key >= prefix AND key < end`, which the key's index
/// answers).
pub fn prefix_end(prefix: &str) -> String {
    let mut end = prefix.to_string();
    match end.pop() {
        Some(last) => match char::from_u32(last as u32 + 1) {
            Some(next) => end.push(next),
            None => {
                end.push(last);
                end.push(char::MAX);
            }
        },
        None => end.push(char::MAX),
    }
    end
}

/// Whether `table` is a key/value table (has `key` and `value` columns).
pub fn has_table(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    let cols = super::db_units::columns(conn, table)?;
    Ok(super::db_units::has_all(&cols, &["key", "value"]))
}

fn bytes_of(v: ValueRef<'_>) -> Option<Vec<u8>> {
    match v {
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(t.to_vec()),
        _ => None,
    }
}

/// The value of `key` in `table` as bytes (`None`: no such key, or a NULL or number).
pub fn value(conn: &Connection, table: &str, key: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT value FROM \"{table}\" WHERE key = ?1"))?;
    let mut rows = stmt.query([key])?;
    match rows.next()? {
        Some(r) => Ok(bytes_of(r.get_ref(0)?)),
        None => Ok(None),
    }
}

/// `key`'s row id and value size in bytes, without reading the value (`None`: no
/// such key). Together they change whenever the key is written again.
pub fn stamp(conn: &Connection, table: &str, key: &str) -> rusqlite::Result<Option<(i64, i64)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT rowid, COALESCE(octet_length(value), -1) FROM \"{table}\" WHERE key = ?1"
    ))?;
    let mut rows = stmt.query([key])?;
    match rows.next()? {
        Some(r) => Ok(Some((r.get(0)?, r.get(1)?))),
        None => Ok(None),
    }
}

/// Every key starting with `prefix`, with its row id, in key order: read from the
/// key's index alone (no value is touched).
pub fn keys_with_prefix(
    conn: &Connection,
    table: &str,
    prefix: &str,
) -> rusqlite::Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT key, rowid FROM \"{table}\" WHERE key >= ?1 AND key < ?2 ORDER BY key"
    ))?;
    let end = prefix_end(prefix);
    let mut rows = stmt.query([prefix, end.as_str()])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        if let ValueRef::Text(k) = r.get_ref(0)? {
            out.push((String::from_utf8_lossy(k).into_owned(), r.get(1)?));
        }
    }
    Ok(out)
}

/// Every key starting with `prefix` with its row id and value, in row id order.
pub fn rows_with_prefix(
    conn: &Connection,
    table: &str,
    prefix: &str,
) -> rusqlite::Result<Vec<(String, i64, Vec<u8>)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT key, rowid, value FROM \"{table}\" WHERE key >= ?1 AND key < ?2 ORDER BY rowid"
    ))?;
    let end = prefix_end(prefix);
    let mut rows = stmt.query([prefix, end.as_str()])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        if let (ValueRef::Text(k), Some(v)) = (r.get_ref(0)?, bytes_of(r.get_ref(2)?)) {
            out.push((String::from_utf8_lossy(k).into_owned(), r.get(1)?, v));
        }
    }
    Ok(out)
}

/// The path a workspace URI names: a `file://` URI's path, percent escapes decoded;
/// a remote one's (`vscode-remote://ssh-remote+host/path`) path on its host. `None`
/// for any other scheme or a path that is not absolute.
pub fn path_of_uri(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://").or_else(|| {
        let after = uri.strip_prefix("vscode-remote://")?;
        after.find('/').map(|i| &after[i..])
    })?;
    // `file://host/path` names a host; VS Code writes `file:///path` for local ones.
    let path = if rest.starts_with('/') {
        rest
    } else {
        &rest[rest.find('/')?..]
    };
    let bytes = path.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h << 4 | l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    let s = String::from_utf8(out).ok()?;
    if s.len() > 1 && s.ends_with('/') {
        return Some(s.trim_end_matches('/').to_string()).filter(|s| !s.is_empty());
    }
    Some(s)
}

/// The largest `workspace.json` read (VS Code writes a line or two).
const MAX_WORKSPACE_JSON: u64 = 64 << 10;

/// The folder a workspace storage folder is for, from its `workspace.json`
/// (`{"folder": URI}`; a multi-root workspace `{"workspace": URI of its
/// .code-workspace file}` is the folder holding that file). `None`: no such file, or
/// it names nothing on a path (an empty window has no `workspace.json`).
pub fn workspace_folder(dir: &Path) -> Option<String> {
    use std::io::Read;
    let (file, meta) = crate::store::open::open_regular(&dir.join("workspace.json")).ok()?;
    if meta.len() > MAX_WORKSPACE_JSON {
        return None;
    }
    let mut text = String::new();
    (&file)
        .take(MAX_WORKSPACE_JSON)
        .read_to_string(&mut text)
        .ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    if let Some(folder) = v.get("folder").and_then(|f| f.as_str()) {
        return path_of_uri(folder);
    }
    let file = path_of_uri(v.get("workspace")?.as_str()?)?;
    Path::new(&file)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
}

/// The workspace storage folders under a user folder (`workspaceStorage/*`, folders
/// only, links not followed), sorted by name.
pub fn workspace_dirs(user: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(user.join("workspaceStorage")) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The user folder of the VS Code build named `product` ("Code" for VS Code): on
/// macOS `~/Library/Application Support/<product>/User` when it exists, else
/// Electron's appData on Linux, `$XDG_CONFIG_HOME` (an absolute one), else
/// `~/.config`, then `<product>/User`.
pub fn user_dir(product: &str) -> Option<PathBuf> {
    let env = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME");
    if let Some(mac) = home.as_ref().map(|h| {
        h.join("Library/Application Support")
            .join(product)
            .join("User")
    }) && std::fs::symlink_metadata(&mac).is_ok_and(|m| m.is_dir())
    {
        return Some(mac);
    }
    env("XDG_CONFIG_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| h.join(".config")))
        .map(|c| c.join(product).join("User"))
}

/// `state.vscdb` in `dir`.
pub fn state_db(dir: &Path) -> PathBuf {
    dir.join("state.vscdb")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ranges_end_after_every_key_of_the_prefix() {
        assert_eq!(prefix_end("bubbleId:"), "bubbleId;");
        assert_eq!(prefix_end("composerData:a"), "composerData:b");
    }

    #[test]
    fn workspace_uris_as_paths() {
        assert_eq!(
            path_of_uri("file:///home/u/my%20proj").as_deref(),
            Some("/home/u/my proj")
        );
        assert_eq!(
            path_of_uri("vscode-remote://ssh-remote%2Bbox/srv/app").as_deref(),
            Some("/srv/app")
        );
        assert_eq!(
            path_of_uri("file://server/share/x").as_deref(),
            Some("/share/x")
        );
        assert_eq!(path_of_uri("file:///p/").as_deref(), Some("/p"));
        assert_eq!(path_of_uri("untitled:Untitled-1"), None);
    }

    #[test]
    fn a_workspace_is_its_folder_or_the_folder_of_its_workspace_file() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        std::fs::create_dir(&a).unwrap();
        std::fs::write(a.join("workspace.json"), r#"{"folder":"file:///home/u/p"}"#).unwrap();
        assert_eq!(workspace_folder(&a).as_deref(), Some("/home/u/p"));
        let b = tmp.path().join("b");
        std::fs::create_dir(&b).unwrap();
        std::fs::write(
            b.join("workspace.json"),
            r#"{"workspace":"file:///home/u/multi/all.code-workspace"}"#,
        )
        .unwrap();
        assert_eq!(workspace_folder(&b).as_deref(), Some("/home/u/multi"));
        assert_eq!(workspace_folder(tmp.path()), None);
    }
}
