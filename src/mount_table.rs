//! The active fen-fs mounts, from the kernel's mount table and the daemons' command
//! lines (`fen-fs status`, `fen-fs path`, and the checks `mount` and `umount` make).

use std::path::{Path, PathBuf};

/// The source (fsname) every fen-fs mount has; its type is `fuse` when root mounts
/// directly, `fuse.fen-fs` through fusermount3.
pub const FS_NAME: &str = "fen-fs";

fn is_fen(fstype: &str, source: &str) -> bool {
    fstype == "fuse.fen-fs" || (fstype == "fuse" && source == FS_NAME)
}

/// One active fen-fs mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenMount {
    pub mountpoint: PathBuf,
    /// The daemon serving it, if found (a killed daemon leaves a stale mount).
    pub pid: Option<u32>,
    pub store: Option<PathBuf>,
    pub fsync: Option<String>,
}

/// `\040`-style escapes of /proc/self/mountinfo undone.
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && let Ok(v) = u8::from_str_radix(&field[i + 1..i + 4], 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// The mount's id: never reused while the mount exists, so with `dev` it tells
    /// one mount at a path from a later one there.
    pub id: u64,
    /// The file system's device (`MAJ:MIN`); for FUSE, one per connection.
    pub dev: String,
    pub mountpoint: PathBuf,
    pub fstype: String,
    pub fen: bool,
}

fn parse_line(line: &str) -> Option<MountEntry> {
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
    let fields: Vec<&str> = line.split(' ').collect();
    let id = fields.first()?.parse().ok()?;
    let dev = fields.get(2)?.to_string();
    let mp = fields.get(4)?;
    let dash = fields.iter().position(|f| *f == "-")?;
    let fstype = fields.get(dash + 1)?;
    let source = fields.get(dash + 2).copied().unwrap_or("");
    Some(MountEntry {
        id,
        dev,
        mountpoint: PathBuf::from(unescape(mp)),
        fstype: unescape(fstype),
        fen: is_fen(fstype, source),
    })
}

/// Every mount in the table, in mount order (a later one hides an earlier one at the
/// same path).
pub fn entries() -> Vec<MountEntry> {
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    table.lines().filter_map(parse_line).collect()
}

/// Every mount point in the table, and whether it is a fen-fs mount.
pub fn mounts() -> Vec<(PathBuf, bool)> {
    entries()
        .into_iter()
        .map(|e| (e.mountpoint, e.fen))
        .collect()
}

/// `path` made absolute and `.`/`..` resolved lexically, as mountinfo spells it
/// (symbolic links are not followed: that would ask the file system mounted there).
pub fn normalize(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The mount visible at exactly `path` (the topmost one), if any.
pub fn entry_at(path: &Path) -> Option<MountEntry> {
    let path = normalize(path);
    entries().into_iter().rev().find(|e| e.mountpoint == path)
}

/// Whether a file system is mounted exactly at `path` (`Some`), and if it is fen-fs.
pub fn mounted_at(path: &Path) -> Option<bool> {
    entry_at(path).map(|e| e.fen)
}

/// The command line of process `pid` if it is a fen-fs daemon:
/// `fen-fs mount MP --foreground --store S ...`.
fn daemon_args(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let is_daemon = args.get(1).map(String::as_str) == Some("mount")
        && args.iter().any(|a| a == "--foreground")
        && args
            .first()
            .is_some_and(|a| Path::new(a).file_name().is_some_and(|n| n == "fen-fs"));
    is_daemon.then_some(args)
}

/// The fen-fs daemons' command lines.
fn daemons() -> Vec<(u32, Vec<String>)> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((pid, daemon_args(pid)?))
        })
        .collect()
}

/// Where process `pid` serves `store_root`, if it is a fen-fs daemon of that store
/// and its fen-fs mount is there now. Asks one process, where `live_mount_of` reads
/// every process's command line.
pub fn daemon_mount(pid: u32, store_root: &Path) -> Option<PathBuf> {
    let args = daemon_args(pid)?;
    // Its arguments are relative to its own working folder.
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
    let mp = normalize(&cwd.join(args.get(2)?));
    let store = std::fs::canonicalize(cwd.join(flag(&args, "--store")?)).ok()?;
    if store != std::fs::canonicalize(store_root).ok()? {
        return None;
    }
    entry_at(&mp).filter(|e| e.fen)?;
    Some(mp)
}

fn flag(args: &[String], name: &str) -> Option<String> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).cloned()
}

/// The active fen-fs mounts, with their daemons where found.
pub fn fen_mounts() -> Vec<FenMount> {
    let daemons = daemons();
    mounts()
        .into_iter()
        .filter(|(_, fen)| *fen)
        .map(|(mountpoint, _)| {
            let daemon = daemons.iter().find(|(_, args)| {
                args.get(2)
                    .is_some_and(|mp| std::path::absolute(mp).ok().as_ref() == Some(&mountpoint))
            });
            FenMount {
                pid: daemon.map(|(pid, _)| *pid),
                store: daemon
                    .and_then(|(_, a)| flag(a, "--store"))
                    .map(PathBuf::from),
                fsync: daemon.and_then(|(_, a)| flag(a, "--fsync")),
                mountpoint,
            }
        })
        .collect()
}

/// The mount point of the store at `store_root` where a live daemon serves it.
pub fn live_mount_of(store_root: &Path) -> Option<PathBuf> {
    let canon = std::fs::canonicalize(store_root).ok()?;
    fen_mounts()
        .into_iter()
        .find(|m| {
            m.pid.is_some()
                && m.store
                    .as_deref()
                    .is_some_and(|s| std::fs::canonicalize(s).ok().as_ref() == Some(&canon))
        })
        .map(|m| m.mountpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_undone() {
        assert_eq!(unescape(r"/tmp/a\040b"), "/tmp/a b");
        assert_eq!(unescape(r"/x\134y"), r"/x\y");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[test]
    fn a_line_parses_into_its_fields() {
        let e = parse_line(
            "612 29 0:77 / /tmp/a\\040b rw,nosuid,nodev,noatime shared:1 - fuse fen-fs rw,user_id=0",
        )
        .unwrap();
        assert_eq!(e.id, 612);
        assert_eq!(e.dev, "0:77");
        assert_eq!(e.mountpoint, Path::new("/tmp/a b"));
        assert!(e.fen);
        assert_eq!(normalize(Path::new("/a/./b/../c/")), Path::new("/a/c"));
    }
}
