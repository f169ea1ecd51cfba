//! What `fen-fs sync init | add | remove | status` do, through Syncthing's REST API: this
//! store shared send-only as folder `fen-<short id>`; each peer's store received
//! receive-only into `peers/<name>/`. One writer per tree: no conflicts by
//! construction. Every call first checks that Syncthing runs and takes the key, so a
//! command that fails there has changed nothing.

use super::rest::{Client, urlencode};
use super::{folder_id, is_device_id, short_id, stignore};
use crate::error::{Error, Result};
use crate::store::Store;
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// What `init` did.
#[derive(Debug, Clone, Serialize)]
pub struct Initialized {
    pub device_id: String,
    pub folder_id: String,
    pub store: PathBuf,
    pub wrote_stignore: bool,
    pub created_folder: bool,
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn same_path(a: &str, b: &Path) -> bool {
    Path::new(a) == b
        || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
            && std::fs::canonicalize(b).is_ok()
}

/// Shares the store at `store_root` send-only (creating the store and its
/// `.stignore`); `delay`: the folder's watcher delay in seconds (Syncthing's default
/// otherwise).
pub fn init(client: &Client, store_root: &Path, delay: Option<u32>) -> Result<Initialized> {
    let me = client.my_id()?;
    let id = folder_id(&me);
    let root = absolute(store_root);
    let existing = client.folder(&id)?;
    if let Some(f) = &existing
        && let Some(p) = f["path"].as_str()
        && !same_path(p, &root)
    {
        return Err(Error::invalid(format!(
            "Syncthing's folder {id} already shares {p}, not {}: one store per machine (remove that folder in Syncthing first, or pass --store {p})",
            root.display()
        )));
    }
    Store::open(&root, Default::default())?;
    let wrote_stignore = stignore::write(&root)?;
    let mut f = existing.clone().unwrap_or_else(|| {
        json!({
            "id": id,
            "label": format!("fen sessions of {}", crate::host::this_host()),
            "devices": [{"deviceID": me}],
        })
    });
    f["path"] = json!(root);
    f["type"] = json!("sendonly");
    f["fsWatcherEnabled"] = json!(true);
    if let Some(d) = delay {
        f["fsWatcherDelayS"] = json!(d);
    }
    if existing.as_ref() != Some(&f) {
        client.put_folder(&f)?;
    }
    Ok(Initialized {
        device_id: me,
        folder_id: id,
        store: root,
        wrote_stignore,
        created_folder: existing.is_none(),
    })
}

/// What `add` did.
#[derive(Debug, Clone, Serialize)]
pub struct Added {
    pub device_id: String,
    pub name: String,
    pub folder_id: String,
    pub path: PathBuf,
}

/// Adds peer `device_id` as `name`: shares this store with it and receives its store
/// receive-only into `<peers_dir>/<name>/`.
pub fn add(
    client: &Client,
    store_root: &Path,
    peers_dir: &Path,
    device_id: &str,
    name: &str,
    address: Option<&str>,
    delay: Option<u32>,
) -> Result<Added> {
    if !is_device_id(device_id) {
        return Err(Error::invalid(format!(
            "{device_id:?} is not a Syncthing device id (8 groups of 7 letters and digits, as `fen-fs sync init` prints on the other machine)"
        )));
    }
    if !crate::host::is_valid_host_name(name) {
        return Err(Error::invalid(format!(
            "--name {name:?}: 1-64 of A-Za-z0-9._- (not starting with . or -)"
        )));
    }
    if let Some(a) = address
        && !(a.starts_with("tcp://") || a.starts_with("quic://") || a == "dynamic")
    {
        return Err(Error::invalid(format!(
            "--address {a:?}: tcp://HOST:PORT (or quic://HOST:PORT)"
        )));
    }
    let device_id = device_id.to_uppercase();
    let me = client.my_id()?;
    if device_id == me {
        return Err(Error::invalid(format!(
            "{device_id} is this machine's own device id: give the other machine's"
        )));
    }
    let path = absolute(peers_dir).join(name);
    let peer_folder = folder_id(&device_id);
    for f in client.folders()? {
        let (id, p) = (
            f["id"].as_str().unwrap_or(""),
            f["path"].as_str().unwrap_or(""),
        );
        if id == peer_folder && !same_path(p, &path) {
            return Err(Error::invalid(format!(
                "device {} is already received into {p} (folder {id}): one name per machine",
                short_id(&device_id)
            )));
        }
        if id != peer_folder && same_path(p, &path) {
            return Err(Error::invalid(format!(
                "{} already receives Syncthing folder {id}: choose another --name",
                path.display()
            )));
        }
    }
    let ours = init(client, store_root, delay)?;
    let mut device = client
        .devices()?
        .into_iter()
        .find(|d| d["deviceID"] == device_id.as_str())
        .unwrap_or_else(|| json!({"deviceID": device_id, "addresses": ["dynamic"]}));
    device["name"] = json!(name);
    if let Some(a) = address {
        device["addresses"] = json!([a]);
    }
    client.put_device(&device)?;
    // This store, shared with the peer.
    let mut f = client
        .folder(&ours.folder_id)?
        .ok_or_else(|| Error::new(libc::EIO, "Syncthing lost the folder just made"))?;
    let listed = f["devices"]
        .as_array()
        .is_some_and(|a| a.iter().any(|d| d["deviceID"] == device_id.as_str()));
    if !listed {
        let mut devices = f["devices"].as_array().cloned().unwrap_or_default();
        devices.push(json!({"deviceID": device_id}));
        f["devices"] = json!(devices);
        client.put_folder(&f)?;
    }
    // Its store, received here. Syncthing makes the folder (and its marker) itself;
    // fen-fs makes only `peers/` (0700), never anything inside a peer's folder.
    make_private_dir(peers_dir)?;
    let mut pf = client.folder(&peer_folder)?.unwrap_or_else(|| {
        json!({
            "id": peer_folder,
            "label": format!("fen sessions of {name}"),
            "devices": [{"deviceID": device_id}, {"deviceID": me}],
        })
    });
    pf["path"] = json!(path);
    pf["type"] = json!("receiveonly");
    if let Some(d) = delay {
        pf["fsWatcherDelayS"] = json!(d);
    }
    client.put_folder(&pf)?;
    Ok(Added {
        device_id,
        name: name.to_string(),
        folder_id: peer_folder,
        path,
    })
}

/// What `remove` did.
#[derive(Debug, Clone, Serialize)]
pub struct Removed {
    pub name: String,
    /// The peer's device, if Syncthing knew it.
    pub device_id: Option<String>,
    /// Its store's folder in Syncthing, taken out.
    pub folder_id: Option<String>,
    /// Syncthing still knows the device: it shares other folders with this machine.
    pub device_kept: bool,
    /// Its copy here, deleted (the sessions stay on that machine).
    pub path: PathBuf,
    pub deleted_copy: bool,
    pub sessions: u64,
}

/// Removes peer `name` (what `add` did, undone): its store is no longer received
/// (Syncthing's folder taken out first, so nothing writes the copy any more), this
/// store no longer shared with it, the device forgotten unless it shares other
/// folders; then its copy `<peers_dir>/<name>/` is deleted, and this machine's caches
/// of it. A running mount sees the folder go and drops the peer's sessions.
pub fn remove(client: &Client, store_root: &Path, peers_dir: &Path, name: &str) -> Result<Removed> {
    if !crate::host::is_valid_host_name(name) {
        return Err(Error::invalid(format!(
            "{name:?} is not a peer's name (1-64 of A-Za-z0-9._-, not starting with . or -)"
        )));
    }
    let me = client.my_id()?;
    let path = absolute(peers_dir).join(name);
    let folders = client.folders()?;
    let received = folders.iter().find(|f| {
        f["path"].as_str().is_some_and(|p| same_path(p, &path)) && f["type"] == "receiveonly"
    });
    let device_id = match received {
        Some(f) => f["devices"].as_array().and_then(|a| {
            a.iter()
                .filter_map(|d| d["deviceID"].as_str())
                .find(|d| *d != me)
                .map(String::from)
        }),
        None => client
            .devices()?
            .into_iter()
            .find(|d| d["name"] == name && d["deviceID"] != me.as_str())
            .and_then(|d| d["deviceID"].as_str().map(String::from)),
    };
    let copy = std::fs::symlink_metadata(&path).ok();
    if received.is_none() && device_id.is_none() && copy.is_none() {
        return Err(Error::not_found(format!(
            "no peer {name}: Syncthing receives nothing into {} and knows no device of that name (fen-fs sync status lists the peers)",
            path.display()
        )));
    }
    let folder_id = received.and_then(|f| f["id"].as_str().map(String::from));
    if let Some(id) = &folder_id {
        client.delete(&format!("/rest/config/folders/{}", urlencode(id)))?;
    }
    let mut device_kept = false;
    if let Some(dev) = &device_id {
        // This store, no longer shared with it.
        let ours = super::folder_id(&me);
        for f in client.folders()? {
            let lists = f["devices"]
                .as_array()
                .is_some_and(|a| a.iter().any(|d| d["deviceID"] == dev.as_str()));
            if !lists {
                continue;
            }
            if f["id"] == ours.as_str() {
                let mut f = f.clone();
                let devices: Vec<Value> = f["devices"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter(|d| d["deviceID"] != dev.as_str())
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default();
                f["devices"] = json!(devices);
                client.put_folder(&f)?;
            } else {
                // A folder fen-fs did not make: the device stays for it.
                device_kept = true;
            }
        }
        if !device_kept {
            client.delete(&format!("/rest/config/devices/{}", urlencode(dev)))?;
        }
    }
    let sessions = if copy.as_ref().is_some_and(|m| m.is_dir()) {
        count_sessions(&path)
    } else {
        0
    };
    let mut deleted_copy = false;
    if let Some(m) = copy {
        // Not followed if it is a link: only the link goes.
        let gone = if m.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        gone.map_err(|e| Error::io(path.display(), &e))?;
        deleted_copy = true;
    }
    let caches = crate::store::layout::cache_dir(store_root)
        .join(crate::store::layout::PEERS_CACHE_DIR)
        .join(name);
    if std::fs::symlink_metadata(&caches).is_ok_and(|m| m.is_dir()) {
        let _ = std::fs::remove_dir_all(&caches);
    }
    Ok(Removed {
        name: name.to_string(),
        device_id,
        folder_id,
        device_kept,
        path,
        deleted_copy,
        sessions,
    })
}

fn make_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io(dir.display(), &e))
}

/// One peer as `sync status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PeerStatus {
    /// Its name here (its folder under `peers/`), else Syncthing's name of it.
    pub host: String,
    pub device_id: String,
    pub connected: bool,
    /// Where it is connected from, or the addresses it is dialed at.
    pub address: Option<String>,
    /// Its store received here: Syncthing's folder id, state and what is missing.
    pub folder: Option<String>,
    pub path: Option<PathBuf>,
    pub state: Option<String>,
    pub need_files: u64,
    /// When a file of it last arrived (RFC 3339), if ever.
    pub last_synced: Option<String>,
    /// Its sessions here now.
    pub sessions: u64,
    /// How much of this store it has (percent), as Syncthing knows.
    pub has_ours_percent: Option<f64>,
}

/// Every device but this one, with its store's state here.
pub fn status(client: &Client) -> Result<Vec<PeerStatus>> {
    let me = client.my_id()?;
    let ours = folder_id(&me);
    let connections = client.get("/rest/system/connections")?;
    let folders = client.folders()?;
    let stats = client.get("/rest/stats/folder").unwrap_or(Value::Null);
    let mut out = Vec::new();
    for d in client.devices()? {
        let Some(id) = d["deviceID"].as_str().map(String::from) else {
            continue;
        };
        if id == me {
            continue;
        }
        let c = &connections["connections"][&id];
        let connected = c["connected"].as_bool().unwrap_or(false);
        let address = c["address"]
            .as_str()
            .filter(|a| connected && !a.is_empty())
            .map(String::from)
            .or_else(|| {
                d["addresses"].as_array().map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                })
            });
        let fid = folder_id(&id);
        let folder = folders.iter().find(|f| f["id"] == fid.as_str());
        let path = folder.and_then(|f| f["path"].as_str()).map(PathBuf::from);
        let host = path
            .as_deref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .or_else(|| d["name"].as_str().map(String::from))
            .unwrap_or_else(|| short_id(&id));
        let db = match folder {
            Some(_) => client.get(&format!("/rest/db/status?folder={}", urlencode(&fid)))?,
            None => Value::Null,
        };
        let last_synced = stats[&fid]["lastFile"]["at"]
            .as_str()
            .filter(|t| !t.starts_with("0001-") && !t.starts_with("1970-"))
            .map(String::from);
        let has_ours = client
            .get(&format!(
                "/rest/db/completion?folder={}&device={}",
                urlencode(&ours),
                urlencode(&id)
            ))
            .ok()
            .and_then(|v| v["completion"].as_f64());
        out.push(PeerStatus {
            host,
            device_id: id,
            connected,
            address,
            folder: folder.map(|_| fid),
            sessions: path.as_deref().map_or(0, count_sessions),
            path,
            state: db["state"].as_str().map(String::from),
            need_files: db["needFiles"].as_u64().unwrap_or(0),
            last_synced,
            has_ours_percent: has_ours,
        });
    }
    out.sort_by(|a, b| a.host.cmp(&b.host));
    Ok(out)
}

/// Why Syncthing would send this store's changes late, if it would: the folder's
/// watcher is turned off, so a change waits for the folder's next full rescan (an
/// hour by default) while peers expect it within the watcher's delay (§12). `None`
/// when the watcher is on, or the store is not shared (`init` not run). A watcher
/// that is on but failed (the system's inotify limits) is not in the REST answers of
/// the Syncthing this is tested with (1.19): it shows in Syncthing's own log and GUI.
pub fn own_watch_problem(client: &Client) -> Result<Option<String>> {
    let id = folder_id(&client.my_id()?);
    let Some(f) = client.folder(&id)? else {
        return Ok(None);
    };
    if f["fsWatcherEnabled"].as_bool() != Some(false) {
        return Ok(None);
    }
    let rescan = match f["rescanIntervalS"].as_u64() {
        Some(0) => "only when Syncthing restarts (its full rescan is off too)".to_string(),
        Some(s) if s % 3600 == 0 => format!("only at its next full rescan (every {} h)", s / 3600),
        Some(s) if s % 60 == 0 => format!("only at its next full rescan (every {} min)", s / 60),
        Some(s) => format!("only at its next full rescan (every {s} s)"),
        None => "only at its next full rescan".to_string(),
    };
    Ok(Some(format!(
        "Syncthing does not watch this store (folder {id}: \"watch for changes\" is off), \
         so a new session or append reaches the peers {rescan}; `fen-fs sync init` turns \
         the watcher back on"
    )))
}

/// Session files in a peer's store (read only; nothing is created there).
fn count_sessions(root: &Path) -> u64 {
    let store = Store::open_read_only(root.to_path_buf(), PathBuf::from("/nonexistent"));
    store
        .namespaces()
        .unwrap_or_default()
        .iter()
        .map(|ns| store.session_dirs(ns).map_or(0, |d| d.len() as u64))
        .sum()
}
