//! Putting a new session file in another agent's folder without ever changing
//! anything there: the bytes go into an unnamed file in the target folder
//! (O_TMPFILE), are synced, read back from the disk and checked, and only then get
//! their name, with a link that fails rather than replace an existing file. A crash
//! or a failed check at any point leaves nothing behind: the unnamed file goes with
//! its descriptor. Only the session's own folders are created, inside a root that
//! exists; folders made for a session that then failed are removed again.

use crate::error::{Error, Result};
use crate::store::open::Dir;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Set (to anything) by tests: fail after the file is written and checked, just
/// before it would get its name.
pub const FAIL_BEFORE_LINK_ENV: &str = "FEN_FS_TEST_RESUME_FAIL_BEFORE_LINK";

/// Creates `root/<folders...>/<name>` holding exactly `bytes`, or nothing. `check`
/// gets the bytes as read back from the disk and refuses them with an error.
pub fn publish(
    root: &Path,
    folders: &[String],
    name: &str,
    bytes: &[u8],
    check: impl FnOnce(&[u8]) -> Result<()>,
) -> Result<PathBuf> {
    if bytes.is_empty() || !bytes.ends_with(b"\n") {
        return Err(Error::invalid("a session file must end with a newline"));
    }
    publish_exact(root, folders, name, bytes, check)
}

/// `publish`, for bytes that are to be written exactly as they are (`fen-fs restore`
/// of a kept copy, whose last line may have been cut where its agent stopped).
pub fn publish_exact(
    root: &Path,
    folders: &[String],
    name: &str,
    bytes: &[u8],
    check: impl FnOnce(&[u8]) -> Result<()>,
) -> Result<PathBuf> {
    let top = Dir::open_root(root).map_err(|e| Error::io(root.display(), &e))?;
    // Walk down, creating what is missing; remember what we made.
    let mut made: Vec<(usize, String)> = Vec::new();
    let mut chain: Vec<Dir> = vec![top];
    for (depth, f) in folders.iter().enumerate() {
        let here = chain.last().expect("the root at least");
        let existed = here.stat(f).is_ok();
        match here.create_dir(f) {
            Ok(d) => {
                if !existed {
                    made.push((depth, f.clone()));
                }
                chain.push(d);
            }
            Err(e) => {
                let path = here.path().join(f);
                let is_link = here
                    .stat(f)
                    .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK);
                let err = if is_link {
                    Error::new(
                        libc::ELOOP,
                        format!(
                            "{} is a symbolic link: fen-fs does not follow links inside an agent's folder",
                            path.display()
                        ),
                    )
                } else {
                    Error::io(path.display(), &e)
                };
                undo(&chain, &made);
                return Err(err);
            }
        }
    }
    let dir = chain.last().expect("the session's folder");
    let path = dir.path().join(name);
    let result = write_named(dir, name, bytes, check);
    match result {
        Ok(()) => {
            // The new name, and any folder made for it, must survive power loss too.
            let _ = dir.sync();
            for (depth, _) in &made {
                let _ = chain[*depth].sync();
            }
            Ok(path)
        }
        Err(e) => {
            undo(&chain, &made);
            Err(e)
        }
    }
}

/// Removes the folders `publish` made (deepest first), if they are still empty.
fn undo(chain: &[Dir], made: &[(usize, String)]) {
    for (depth, name) in made.iter().rev() {
        if let Some(parent) = chain.get(*depth) {
            let _ = parent.rmdir(name);
        }
    }
}

fn write_and_check(
    file: &File,
    bytes: &[u8],
    check: impl FnOnce(&[u8]) -> Result<()>,
) -> Result<()> {
    let mut w = file;
    w.write_all(bytes)
        .map_err(|e| Error::io("writing the new session", &e))?;
    file.sync_all()
        .map_err(|e| Error::io("syncing the new session", &e))?;
    let mut back = vec![0u8; bytes.len()];
    file.read_exact_at(&mut back, 0)
        .map_err(|e| Error::io("reading the new session back", &e))?;
    check(&back)?;
    if std::env::var_os(FAIL_BEFORE_LINK_ENV).is_some() {
        return Err(Error::new(
            libc::EIO,
            "failing before the new session gets its name (test)",
        ));
    }
    Ok(())
}

fn exists(path: &Path) -> Error {
    Error::new(
        libc::EEXIST,
        format!("{} already exists; not overwriting it", path.display()),
    )
}

fn write_named(
    dir: &Dir,
    name: &str,
    bytes: &[u8],
    check: impl FnOnce(&[u8]) -> Result<()>,
) -> Result<()> {
    let path = dir.path().join(name);
    if dir.stat(name).is_ok() {
        return Err(exists(&path));
    }
    match dir.tmpfile_rw() {
        Ok(file) => {
            write_and_check(&file, bytes, check)?;
            dir.link_as(&file, name)
                .map_err(|e| match e.raw_os_error() {
                    Some(libc::EEXIST) => exists(&path),
                    _ => Error::io(path.display(), &e),
                })
        }
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) =>
        {
            // No O_TMPFILE here: a dot-named temporary file (no agent lists it: not
            // `*.jsonl`), linked into place once checked, then removed.
            let tmp = format!(".{name}.fen-fs-{}.tmp", std::process::id());
            let (file, _) = dir
                .open_file_with(&tmp, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600)
                .map_err(|e| Error::io(dir.path().join(&tmp).display(), &e))?;
            let result = write_and_check(&file, bytes, check).and_then(|_| {
                dir.link(&tmp, name).map_err(|e| match e.raw_os_error() {
                    Some(libc::EEXIST) => exists(&path),
                    _ => Error::io(path.display(), &e),
                })
            });
            let _ = dir.unlink(&tmp);
            result
        }
        Err(e) => Err(Error::io(dir.path().display(), &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    #[test]
    fn a_file_is_made_with_its_folders_and_read_back_first() {
        let t = tempfile::tempdir().unwrap();
        let mut seen = Vec::new();
        let p = publish(
            t.path(),
            &["a".into(), "b".into()],
            "s.jsonl",
            b"{}\n",
            |b| {
                seen.extend_from_slice(b);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, b"{}\n");
        assert_eq!(std::fs::read(&p).unwrap(), b"{}\n");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn a_failed_check_leaves_nothing_not_even_the_folders_it_made() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("a")).unwrap();
        let err = publish(
            t.path(),
            &["a".into(), "b".into()],
            "s.jsonl",
            b"{}\n",
            |_| Err(Error::invalid("does not read back")),
        )
        .unwrap_err();
        assert!(err.reason.contains("does not read back"));
        assert_eq!(names(t.path()), ["a"]);
        assert!(names(&t.path().join("a")).is_empty());
    }

    #[test]
    fn an_existing_file_is_never_replaced() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("s.jsonl"), "mine\n").unwrap();
        let err = publish(t.path(), &[], "s.jsonl", b"{}\n", |_| Ok(())).unwrap_err();
        assert_eq!(err.errno, libc::EEXIST);
        assert_eq!(std::fs::read(t.path().join("s.jsonl")).unwrap(), b"mine\n");
        assert_eq!(names(t.path()), ["s.jsonl"]);
    }

    #[test]
    fn a_link_where_a_folder_goes_is_refused_by_name_and_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let elsewhere = t.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let root = t.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("a")).unwrap();
        let err = publish(&root, &["a".into(), "b".into()], "s.jsonl", b"{}\n", |_| {
            Ok(())
        })
        .unwrap_err();
        assert!(
            err.reason.contains("is a symbolic link") && err.reason.contains("root/a"),
            "{}",
            err.reason
        );
        assert!(names(&elsewhere).is_empty());
    }

    #[test]
    fn a_missing_root_is_an_error_and_is_not_created() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("nope");
        assert!(publish(&root, &["x".into()], "s.jsonl", b"{}\n", |_| Ok(())).is_err());
        assert!(!root.exists());
        assert!(publish(t.path(), &[], "s.jsonl", b"{}", |_| Ok(())).is_err());
    }
}
