//! Cursor's composers in `globalStorage/state.vscdb` and the older chats of its
//! workspaces, as rows (`db_units.rs`). Cursor is closed source: what is read here is
//! what the public readers of these databases read (see `mod.rs`).
//!
//! **Composers** (table `cursorDiskKV`): `composerData:<composerId>` is a chat's JSON
//! (its name, times, `modelConfig`, and either `fullConversationHeadersOnly`, the
//! ordered `{bubbleId, type}` of its messages, or, before, an inline `conversation`
//! array); `bubbleId:<composerId>:<bubbleId>` is one message of it. Cursor 3 also
//! keeps a header per composer in `ItemTable` `composer.composerHeaders`
//! (`{allComposers: [{composerId, name, lastUpdatedAt, isArchived,
//! workspaceIdentifier: {id, uri}}]}`), which names the composer's workspace.
//!
//! One composer's dump: a header line `{"cursor_ide": "composer", "id", "cwd",
//! "workspace", "conversation_from", "composer": <composerData without its inline
//! conversation and its encryption keys>, "header": <its composerHeaders entry>}`,
//! then each message as stored: the bubbles its header list names in that order, then
//! the other stored bubbles of the composer (by row id), or the inline conversation's
//! items.
//!
//! **Older chats** (a workspace's `state.vscdb`, `ItemTable`
//! `workbench.panel.aichat.view.aichat.chatdata`: `{tabs: [{tabId, chatTitle,
//! lastSendTime, bubbles: [{type: "user" | "ai", text, …}]}]}`): one session per tab,
//! dumped as `{"cursor_ide": "chat_tab", "id", "cwd", "workspace", "tab": <the tab
//! without its bubbles>}` and each bubble as stored.
//!
//! Signatures come from the keys' index (`vscdb.rs`: a key written again has a new row
//! id), the composer row's size, its header entry and its cwd: a listing never reads
//! a message.

use crate::json::RawObject;
use crate::sources::db_units::{RowDump, RowEntry, SessionRows};
use crate::sources::json_text::{ObjectWriter, minify};
use crate::sources::units::Signature;
use crate::sources::vscdb::{self, ITEM_TABLE};
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// Cursor's own key/value table.
pub const DISK_KV: &str = "cursorDiskKV";
const COMPOSER_PREFIX: &str = "composerData:";
const BUBBLE_PREFIX: &str = "bubbleId:";
/// The global list of composer headers (Cursor 3).
pub const HEADERS_KEY: &str = "composer.composerHeaders";
/// A workspace's list of its composers (before Cursor 3).
pub const WORKSPACE_COMPOSERS_KEY: &str = "composer.composerData";
/// A workspace's chats before composers.
pub const CHATDATA_KEY: &str = "workbench.panel.aichat.view.aichat.chatdata";

/// Which workspace each composer belongs to, from the workspaces' own databases, and
/// each workspace's folder.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct WorkspaceMap {
    /// Workspace storage folder name (its hash) → the folder it is for.
    pub folders: HashMap<String, String>,
    /// Composer id → the workspace whose `composer.composerData` lists it.
    pub composers: HashMap<String, String>,
}

/// What the composer's header entry says.
#[derive(Clone)]
struct HeaderEntry {
    raw: String,
    hash: u64,
    uri_path: Option<String>,
    workspace: Option<String>,
    updated_ms: Option<i64>,
}

/// The heads of a list of composers: `{"allComposers": [...]}`, or (as some readers
/// saw it) the bare array; empty when it is neither.
fn heads(text: &str) -> Vec<&RawValue> {
    #[derive(Deserialize)]
    struct List<'a> {
        #[serde(default, borrow, rename = "allComposers")]
        all: Vec<&'a RawValue>,
    }
    if text.trim_start().starts_with('[') {
        serde_json::from_str(text).unwrap_or_default()
    } else {
        serde_json::from_str::<List>(text)
            .map(|l| l.all)
            .unwrap_or_default()
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct HeaderFields {
    #[serde(rename = "composerId")]
    composer_id: Option<String>,
    #[serde(rename = "lastUpdatedAt")]
    last_updated_at: Option<serde_json::Value>,
    #[serde(rename = "workspaceIdentifier")]
    workspace: Option<WorkspaceIdentifier>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WorkspaceIdentifier {
    id: Option<String>,
    uri: Option<serde_json::Value>,
}

/// A time Cursor stores as ms since the epoch or as RFC 3339 text.
pub fn time_ms(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        serde_json::Value::String(s) => crate::usage_record::parse_time_ms(s),
        _ => None,
    }
}

/// The path of a workspace identifier's `uri` (a VS Code `UriComponents`: `fsPath`,
/// else `path` of a `file` or remote URI, else its `external` text).
fn uri_path(uri: &serde_json::Value) -> Option<String> {
    let s = |k: &str| {
        uri.get(k)
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
    };
    if let Some(p) = s("fsPath") {
        return Some(p.to_string());
    }
    if let Some(p) = s("path")
        && matches!(s("scheme"), None | Some("file") | Some("vscode-remote"))
        && p.starts_with('/')
    {
        return Some(p.to_string());
    }
    vscdb::path_of_uri(s("external")?)
}

fn parse_headers(bytes: &[u8]) -> HashMap<String, HeaderEntry> {
    let mut out = HashMap::new();
    let Ok(text) = std::str::from_utf8(bytes) else {
        return out;
    };
    for raw in heads(text) {
        let Ok(f) = serde_json::from_str::<HeaderFields>(raw.get()) else {
            continue;
        };
        let Some(id) = f.composer_id.filter(|i| !i.is_empty()) else {
            continue;
        };
        let raw = minify(raw.get()).unwrap_or_else(|| raw.get().to_string());
        let ws = f.workspace.unwrap_or_default();
        out.insert(
            id,
            HeaderEntry {
                hash: crate::store::atomic::checksum(&[raw.as_bytes()]),
                raw,
                uri_path: ws.uri.as_ref().and_then(uri_path),
                workspace: ws.id.filter(|i| !i.is_empty()),
                updated_ms: f.last_updated_at.as_ref().and_then(time_ms),
            },
        );
    }
    out
}

/// The headers as last read, by the stamp of their row.
#[derive(Default)]
struct Headers {
    stamp: Option<(i64, i64)>,
    entries: Arc<HashMap<String, HeaderEntry>>,
}

/// What a composer's row says beyond its key, read (by SQLite's JSON functions) only
/// when its row changed.
#[derive(Clone, Copy, Default)]
struct ComposerFacts {
    stamp: (i64, i64),
    json: bool,
    updated_ms: Option<i64>,
    created_ms: Option<i64>,
    inline: i64,
}

fn json_time(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Integer(i) => Some(i),
        ValueRef::Real(f) => Some(f as i64),
        ValueRef::Text(t) => crate::usage_record::parse_time_ms(std::str::from_utf8(t).ok()?),
        _ => None,
    }
}

fn composer_facts(
    conn: &Connection,
    key: &str,
    stamp: (i64, i64),
) -> rusqlite::Result<ComposerFacts> {
    let mut stmt = conn.prepare_cached(
        "SELECT json_valid(v),
                CASE WHEN json_valid(v) THEN json_extract(v, '$.lastUpdatedAt') END,
                CASE WHEN json_valid(v) THEN json_extract(v, '$.createdAt') END,
                CASE WHEN json_valid(v) AND json_type(v, '$.conversation') = 'array'
                     THEN json_array_length(v, '$.conversation') ELSE 0 END
         FROM (SELECT CAST(value AS TEXT) AS v FROM cursorDiskKV WHERE key = ?1)",
    )?;
    let mut rows = stmt.query([key])?;
    let Some(r) = rows.next()? else {
        return Ok(ComposerFacts {
            stamp,
            ..ComposerFacts::default()
        });
    };
    Ok(ComposerFacts {
        stamp,
        json: r.get::<_, Option<i64>>(0)?.unwrap_or(0) != 0,
        updated_ms: json_time(r.get_ref(1)?),
        created_ms: json_time(r.get_ref(2)?),
        inline: r.get::<_, Option<i64>>(3)?.unwrap_or(0),
    })
}

/// The composers of Cursor's global database.
pub struct ComposerRows {
    workspaces: Arc<RwLock<WorkspaceMap>>,
    headers: Mutex<Headers>,
    facts: Mutex<HashMap<String, ComposerFacts>>,
}

/// One composer as the listing and the dump both see it.
struct Seen {
    header: Option<HeaderEntry>,
    workspace: Option<String>,
    cwd: Option<String>,
    signature: Signature,
}

impl ComposerRows {
    pub fn new(workspaces: Arc<RwLock<WorkspaceMap>>) -> Self {
        ComposerRows {
            workspaces,
            headers: Mutex::new(Headers::default()),
            facts: Mutex::new(HashMap::new()),
        }
    }

    fn headers(&self, conn: &Connection) -> rusqlite::Result<Arc<HashMap<String, HeaderEntry>>> {
        if !vscdb::has_table(conn, ITEM_TABLE)? {
            return Ok(Arc::default());
        }
        let stamp = vscdb::stamp(conn, ITEM_TABLE, HEADERS_KEY)?;
        let mut h = self.headers.lock().unwrap();
        if h.stamp != stamp || stamp.is_none() {
            h.entries = Arc::new(match stamp {
                Some(_) => vscdb::value(conn, ITEM_TABLE, HEADERS_KEY)?
                    .map(|b| parse_headers(&b))
                    .unwrap_or_default(),
                None => HashMap::new(),
            });
            h.stamp = stamp;
        }
        Ok(h.entries.clone())
    }

    fn facts(
        &self,
        conn: &Connection,
        id: &str,
        stamp: (i64, i64),
    ) -> rusqlite::Result<ComposerFacts> {
        if let Some(f) = self.facts.lock().unwrap().get(id)
            && f.stamp == stamp
        {
            return Ok(*f);
        }
        let f = composer_facts(conn, &format!("{COMPOSER_PREFIX}{id}"), stamp)?;
        self.facts.lock().unwrap().insert(id.to_string(), f);
        Ok(f)
    }

    /// What the listing shows of composer `id` (the same whether listing or dumping).
    fn seen(
        &self,
        id: &str,
        stamp: (i64, i64),
        facts: &ComposerFacts,
        headers: &HashMap<String, HeaderEntry>,
        bubbles: &[u8],
    ) -> Seen {
        let header = headers.get(id).cloned();
        let map = self.workspaces.read().unwrap();
        let workspace = header
            .as_ref()
            .and_then(|h| h.workspace.clone())
            .or_else(|| map.composers.get(id).cloned());
        let cwd = header
            .as_ref()
            .and_then(|h| h.uri_path.clone())
            .or_else(|| workspace.as_ref().and_then(|w| map.folders.get(w).cloned()));
        let hash = crate::store::atomic::checksum(&[
            id.as_bytes(),
            &stamp.0.to_le_bytes(),
            &stamp.1.to_le_bytes(),
            &header.as_ref().map(|h| h.hash).unwrap_or(0).to_le_bytes(),
            workspace.as_deref().unwrap_or("").as_bytes(),
            cwd.as_deref().unwrap_or("").as_bytes(),
            bubbles,
        ]);
        let updated_ms = facts
            .updated_ms
            .or(header.as_ref().and_then(|h| h.updated_ms))
            .or(facts.created_ms)
            .unwrap_or(0);
        Seen {
            header,
            workspace,
            cwd,
            signature: Signature { hash, updated_ms },
        }
    }
}

/// Appends a key and row id to a signature's bytes.
fn note_key(into: &mut Vec<u8>, key: &str, rowid: i64) {
    into.extend_from_slice(key.as_bytes());
    into.push(0);
    into.extend_from_slice(&rowid.to_le_bytes());
}

/// A stored JSON value as one line (pretty-printed text made compact; `None`: not
/// UTF-8 JSON).
fn one_line(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
        return minify(text);
    }
    serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
    Some(text.trim().to_string())
}

/// Keys of a composer never copied into its dump: keys that decrypt its blobs.
fn is_secret(key: &str) -> bool {
    key.ends_with("EncryptionKey") || key.ends_with("encryptionKey")
}

impl SessionRows for ComposerRows {
    fn agent(&self) -> &'static str {
        "cursor-ide"
    }

    fn list(&self, conn: &Connection) -> rusqlite::Result<Result<Vec<RowEntry>, String>> {
        if !vscdb::has_table(conn, DISK_KV)? {
            if vscdb::has_table(conn, ITEM_TABLE)? {
                // A state database of a Cursor without composers.
                return Ok(Ok(Vec::new()));
            }
            return Ok(Err(
                "not a VS Code state database: no ItemTable or cursorDiskKV table".into(),
            ));
        }
        let headers = self.headers(conn)?;
        let mut composers: Vec<(String, (i64, i64))> = Vec::new();
        {
            let end = vscdb::prefix_end(COMPOSER_PREFIX);
            let mut stmt = conn.prepare_cached(
                "SELECT key, rowid, COALESCE(octet_length(value), -1) FROM cursorDiskKV
                 WHERE key >= ?1 AND key < ?2",
            )?;
            let mut rows = stmt.query([COMPOSER_PREFIX, end.as_str()])?;
            while let Some(r) = rows.next()? {
                if let ValueRef::Text(k) = r.get_ref(0)? {
                    let key = String::from_utf8_lossy(k);
                    let id = key[COMPOSER_PREFIX.len()..].to_string();
                    if !id.is_empty() {
                        composers.push((id, (r.get(1)?, r.get(2)?)));
                    }
                }
            }
        }
        let mut bubbles: HashMap<String, Vec<u8>> = HashMap::new();
        for (key, rowid) in vscdb::keys_with_prefix(conn, DISK_KV, BUBBLE_PREFIX)? {
            let rest = &key[BUBBLE_PREFIX.len()..];
            let Some((composer, _)) = rest.split_once(':') else {
                continue;
            };
            note_key(
                bubbles.entry(composer.to_string()).or_default(),
                &key,
                rowid,
            );
        }
        let mut out = Vec::new();
        let mut present = std::collections::HashSet::new();
        for (id, stamp) in composers {
            let facts = self.facts(conn, &id, stamp)?;
            present.insert(id.clone());
            let own = bubbles.get(&id);
            if own.is_none() && facts.json && facts.inline == 0 {
                // A composer opened and left without a message: nothing to show.
                continue;
            }
            let seen = self.seen(
                &id,
                stamp,
                &facts,
                &headers,
                own.map(Vec::as_slice).unwrap_or(&[]),
            );
            out.push(RowEntry {
                id,
                cwd: seen.cwd,
                signature: seen.signature,
            });
        }
        self.facts
            .lock()
            .unwrap()
            .retain(|k, _| present.contains(k));
        out.sort_by(|a, b| {
            a.signature
                .updated_ms
                .cmp(&b.signature.updated_ms)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(Ok(out))
    }

    fn dump(
        &self,
        conn: &Connection,
        id: &str,
    ) -> rusqlite::Result<Result<Option<RowDump>, String>> {
        if !vscdb::has_table(conn, DISK_KV)? {
            return Ok(Ok(None));
        }
        let key = format!("{COMPOSER_PREFIX}{id}");
        let Some(stamp) = vscdb::stamp(conn, DISK_KV, &key)? else {
            return Ok(Ok(None));
        };
        let headers = self.headers(conn)?;
        let facts = self.facts(conn, id, stamp)?;
        let prefix = format!("{BUBBLE_PREFIX}{id}:");
        let mut sig = Vec::new();
        for (k, rowid) in vscdb::keys_with_prefix(conn, DISK_KV, &prefix)? {
            note_key(&mut sig, &k, rowid);
        }
        let seen = self.seen(id, stamp, &facts, &headers, &sig);
        let Some(value) = vscdb::value(conn, DISK_KV, &key)? else {
            return Ok(Err("its composerData row holds no text".into()));
        };
        let Ok(text) = std::str::from_utf8(&value) else {
            return Ok(Err("its composerData is not UTF-8 text".into()));
        };
        let composer = match RawObject::parse(text) {
            Ok(o) => o,
            Err(e) => return Ok(Err(format!("its composerData is not a JSON object: {e}"))),
        };
        // The composer without its inline conversation (its items follow as lines) and
        // without the keys that decrypt its blobs.
        let mut c = ObjectWriter::default();
        for (k, v) in &composer.fields {
            if k == "conversation" || is_secret(k) {
                continue;
            }
            let v = v.get();
            match memchr::memchr2(b'\n', b'\r', v.as_bytes()) {
                Some(_) => c.raw(k, &minify(v).unwrap_or_else(|| "null".into())),
                None => c.raw(k, v),
            };
        }
        let order: Option<Vec<String>> = composer
            .get("fullConversationHeadersOnly")
            .and_then(|h| serde_json::from_str::<Vec<BubbleHeader>>(h.get()).ok())
            .map(|h| h.into_iter().filter_map(|b| b.bubble_id).collect());
        let inline: Option<Vec<&RawValue>> = composer
            .get("conversation")
            .and_then(|c| serde_json::from_str(c.get()).ok());
        let from = if order.is_some() {
            "\"fullConversationHeadersOnly\""
        } else if inline.is_some() {
            "\"conversation\""
        } else {
            "null"
        };
        let mut h = ObjectWriter::default();
        h.string("cursor_ide", "composer").string("id", id);
        if let Some(cwd) = &seen.cwd {
            h.string("cwd", cwd);
        }
        if let Some(w) = &seen.workspace {
            h.string("workspace", w);
        }
        h.raw("conversation_from", from)
            .raw("composer", &c.finish());
        if let Some(e) = &seen.header {
            h.raw("header", &e.raw);
        }
        let mut out = h.finish().into_bytes();
        out.push(b'\n');
        let line = |out: &mut Vec<u8>, what: &str, bytes: &[u8]| {
            if bytes.trim_ascii() == b"null" {
                return;
            }
            match one_line(bytes) {
                Some(l) => out.extend_from_slice(l.as_bytes()),
                None => {
                    let mut w = ObjectWriter::default();
                    w.string("fen_skipped", what)
                        .string("why", "not UTF-8 JSON");
                    out.extend_from_slice(w.finish().as_bytes());
                }
            }
            out.push(b'\n');
        };
        let stored = vscdb::rows_with_prefix(conn, DISK_KV, &prefix)?;
        let mut by_id: HashMap<&str, usize> = HashMap::new();
        for (i, (k, _, _)) in stored.iter().enumerate() {
            by_id.insert(&k[prefix.len()..], i);
        }
        let mut written = vec![false; stored.len()];
        for b in order.iter().flatten() {
            if let Some(&i) = by_id.get(b.as_str())
                && !written[i]
            {
                written[i] = true;
                line(&mut out, &stored[i].0, &stored[i].2);
            }
        }
        for (i, (k, _, v)) in stored.iter().enumerate() {
            if !written[i] {
                line(&mut out, k, v);
            }
        }
        for (n, item) in inline.iter().flatten().enumerate() {
            line(
                &mut out,
                &format!("conversation[{n}]"),
                item.get().as_bytes(),
            );
        }
        Ok(Ok(Some((out, seen.signature))))
    }

    fn identity_line(&self, entry: &RowEntry) -> String {
        let mut w = ObjectWriter::default();
        w.string("cursor_ide", "composer").string("id", &entry.id);
        if let Some(cwd) = &entry.cwd {
            w.string("cwd", cwd);
        }
        w.finish()
    }
}

#[derive(Deserialize)]
struct BubbleHeader {
    #[serde(rename = "bubbleId")]
    bubble_id: Option<String>,
}

/// The composer ids a workspace's `composer.composerData` lists (before Cursor 3).
pub fn workspace_composers(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Head {
        #[serde(rename = "composerId")]
        composer_id: Option<String>,
    }
    if !vscdb::has_table(conn, ITEM_TABLE)? {
        return Ok(Vec::new());
    }
    let Some(bytes) = vscdb::value(conn, ITEM_TABLE, WORKSPACE_COMPOSERS_KEY)? else {
        return Ok(Vec::new());
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Ok(Vec::new());
    };
    Ok(heads(text)
        .into_iter()
        .filter_map(|h| serde_json::from_str::<Head>(h.get()).ok()?.composer_id)
        .collect())
}

/// The chats of one workspace's database before composers.
pub struct ChatTabs {
    pub workspace: String,
    pub cwd: Option<String>,
}

#[derive(Deserialize)]
struct ChatData<'a> {
    #[serde(default, borrow)]
    tabs: Vec<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TabFields {
    #[serde(rename = "tabId")]
    tab_id: Option<String>,
    #[serde(rename = "lastSendTime")]
    last_send_time: Option<serde_json::Value>,
    bubbles: Vec<serde::de::IgnoredAny>,
}

impl ChatTabs {
    fn tabs<'a>(&self, bytes: &'a [u8]) -> Result<Vec<(String, &'a RawValue, TabFields)>, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "its chat data is not UTF-8 text")?;
        let data: ChatData = serde_json::from_str(text)
            .map_err(|e| format!("its chat data ({CHATDATA_KEY}) is not JSON: {e}"))?;
        Ok(data
            .tabs
            .into_iter()
            .filter_map(|raw| {
                let f: TabFields = serde_json::from_str(raw.get()).ok()?;
                let id = f.tab_id.clone().filter(|i| !i.is_empty())?;
                Some((id, raw, f))
            })
            .collect())
    }

    fn signature(&self, raw: &RawValue, f: &TabFields) -> Signature {
        Signature {
            hash: crate::store::atomic::checksum(&[
                raw.get().as_bytes(),
                self.cwd.as_deref().unwrap_or("").as_bytes(),
            ]),
            updated_ms: f.last_send_time.as_ref().and_then(time_ms).unwrap_or(0),
        }
    }

    fn data(&self, conn: &Connection) -> rusqlite::Result<Option<Vec<u8>>> {
        if !vscdb::has_table(conn, ITEM_TABLE)? {
            return Ok(None);
        }
        vscdb::value(conn, ITEM_TABLE, CHATDATA_KEY)
    }
}

impl SessionRows for ChatTabs {
    fn agent(&self) -> &'static str {
        "cursor-ide"
    }

    fn list(&self, conn: &Connection) -> rusqlite::Result<Result<Vec<RowEntry>, String>> {
        let Some(bytes) = self.data(conn)? else {
            return Ok(Ok(Vec::new()));
        };
        Ok(self.tabs(&bytes).map(|tabs| {
            tabs.into_iter()
                .filter(|(_, _, f)| !f.bubbles.is_empty())
                .map(|(id, raw, f)| RowEntry {
                    signature: self.signature(raw, &f),
                    id,
                    cwd: self.cwd.clone(),
                })
                .collect()
        }))
    }

    fn dump(
        &self,
        conn: &Connection,
        id: &str,
    ) -> rusqlite::Result<Result<Option<RowDump>, String>> {
        let Some(bytes) = self.data(conn)? else {
            return Ok(Ok(None));
        };
        let tabs = match self.tabs(&bytes) {
            Ok(t) => t,
            Err(why) => return Ok(Err(why)),
        };
        let Some((_, raw, f)) = tabs.into_iter().find(|(t, _, _)| t == id) else {
            return Ok(Ok(None));
        };
        let signature = self.signature(raw, &f);
        let tab = match RawObject::parse(raw.get()) {
            Ok(t) => t,
            Err(e) => return Ok(Err(format!("the chat tab is not a JSON object: {e}"))),
        };
        let mut t = ObjectWriter::default();
        for (k, v) in &tab.fields {
            if k != "bubbles" {
                t.raw(
                    k,
                    &one_line(v.get().as_bytes()).unwrap_or_else(|| "null".into()),
                );
            }
        }
        let mut h = ObjectWriter::default();
        h.string("cursor_ide", "chat_tab")
            .string("id", id)
            .string("workspace", &self.workspace);
        if let Some(cwd) = &self.cwd {
            h.string("cwd", cwd);
        }
        h.raw("conversation_from", "\"bubbles\"")
            .raw("tab", &t.finish());
        let mut out = h.finish().into_bytes();
        out.push(b'\n');
        let bubbles: Vec<&RawValue> = tab
            .get("bubbles")
            .and_then(|b| serde_json::from_str(b.get()).ok())
            .unwrap_or_default();
        for b in bubbles {
            if let Some(l) = one_line(b.get().as_bytes()).filter(|l| l != "null") {
                out.extend_from_slice(l.as_bytes());
                out.push(b'\n');
            }
        }
        Ok(Ok(Some((out, signature))))
    }

    fn identity_line(&self, entry: &RowEntry) -> String {
        let mut w = ObjectWriter::default();
        w.string("cursor_ide", "chat_tab").string("id", &entry.id);
        if let Some(cwd) = &entry.cwd {
            w.string("cwd", cwd);
        }
        w.finish()
    }
}
