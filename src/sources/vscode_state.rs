//! What agents living in VS Code or one of its forks share: the editor's user folder
//! (`~/.config/Code/User`, `~/.config/Cursor/User`, ...), each workspace's folder in
//! `workspaceStorage/<hash>/` with its `workspace.json` (the folder it was opened
//! on), and the `state.vscdb` SQLite key/value stores (`ItemTable`, and Cursor's
//! `cursorDiskKV`: `key TEXT, value BLOB`), read strictly read-only through
//! `sqlite_ro` (no `-shm`, lock or checkpoint in the editor's folder).

use super::sqlite_ro::{self, ReadError};
use std::path::{Path, PathBuf};

fn env_path(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The user folder of a VS Code build named `product` ("Code", "Cursor"): on macOS
/// `~/Library/Application Support/<product>/User` when it exists, else Electron's
/// appData on Linux, `$XDG_CONFIG_HOME` (else `~/.config`), then `<product>/User`.
pub fn user_dir(product: &str) -> Option<PathBuf> {
    let home = env_path("HOME");
    if let Some(mac) = home.as_ref().map(|h| {
        h.join("Library/Application Support")
            .join(product)
            .join("User")
    }) && std::fs::symlink_metadata(&mac).is_ok_and(|m| m.is_dir())
    {
        return Some(mac);
    }
    env_path("XDG_CONFIG_HOME")
        .or_else(|| home.map(|h| h.join(".config")))
        .map(|c| c.join(product).join("User"))
}

/// A `file://` URI's path, percent-decoded (`None` for any other scheme: a remote
/// or virtual workspace names no folder of this machine).
pub fn file_uri_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let path = &rest[rest.find('/')?..];
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            let b = (h * 16 + l) as u8;
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The folder a workspace's storage folder was opened on: `workspace.json`'s
/// `folder` (a `file://` URI), else the folder holding its `.code-workspace` file.
pub fn workspace_folder(workspace_storage: &Path) -> Option<String> {
    let bytes = crate::store::open::read_small(&workspace_storage.join("workspace.json"), 1 << 20)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    if let Some(folder) = v.get("folder").and_then(|f| f.as_str()) {
        return file_uri_path(folder);
    }
    let file = file_uri_path(v.get("workspace")?.as_str()?)?;
    Path::new(&file)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
}

/// The values of `keys` in `table` of the `state.vscdb` at `db` (text or blob, as
/// UTF-8; a key absent is left out), read read-only.
pub fn items(db: &Path, table: &str, keys: &[&str]) -> Result<Vec<(String, String)>, String> {
    let sql = format!("SELECT key, value FROM \"{table}\" WHERE key = ?1");
    let read = sqlite_ro::read(db, |conn| {
        let mut stmt = conn.prepare(&sql)?;
        let mut out = Vec::new();
        for k in keys {
            let mut rows = stmt.query([k])?;
            while let Some(r) = rows.next()? {
                if let (Ok(key), Some(value)) = (r.get::<_, String>(0), text(r, 1)) {
                    out.push((key, value));
                }
            }
        }
        Ok(out)
    });
    flatten(read)
}

/// Every key of `table` starting with `prefix`, with its value, in key order.
pub fn items_with_prefix(
    db: &Path,
    table: &str,
    prefix: &str,
) -> Result<Vec<(String, String)>, String> {
    // A range on the key's index: keys from `prefix` to `prefix` + U+10FFFF.
    let sql =
        format!("SELECT key, value FROM \"{table}\" WHERE key >= ?1 AND key < ?2 ORDER BY key");
    let upper = format!("{prefix}\u{10ffff}");
    let read = sqlite_ro::read(db, |conn| {
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query([prefix, upper.as_str()])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            if let (Ok(key), Some(value)) = (r.get::<_, String>(0), text(r, 1)) {
                out.push((key, value));
            }
        }
        Ok(out)
    });
    flatten(read)
}

fn text(r: &rusqlite::Row, i: usize) -> Option<String> {
    use rusqlite::types::ValueRef;
    match r.get_ref(i).ok()? {
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    }
}

fn flatten<T>(r: Result<T, ReadError>) -> Result<T, String> {
    r.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths_and_others_none() {
        assert_eq!(
            file_uri_path("file:///home/u/my%20proj").as_deref(),
            Some("/home/u/my proj")
        );
        assert_eq!(file_uri_path("file:///c%3A/x").as_deref(), Some("/c:/x"));
        assert_eq!(file_uri_path("vscode-remote://ssh-remote%2Bh/home/u"), None);
    }

    #[test]
    fn a_state_vscdb_is_read_without_touching_its_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("state.vscdb");
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
             INSERT INTO ItemTable VALUES ('a', 'x'), ('b:1', '1'), ('b:2', '2'), ('c', 'z');",
        )
        .unwrap();
        drop(c);
        let before: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(
            items(&db, "ItemTable", &["a", "none"]).unwrap(),
            [("a".into(), "x".into())]
        );
        let b = items_with_prefix(&db, "ItemTable", "b:").unwrap();
        assert_eq!(b.len(), 2);
        let after: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(before, after, "no -shm, -wal or journal made");
    }
}
