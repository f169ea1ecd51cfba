//! The store's write gate, closed as a daemon closes it before it unmounts on a
//! signal: no write of any kind changes the store after that, whether it started
//! before (a file Tantivy has open) or after. Its own test binary: the gate is the
//! process's, and closing it would fail every other test beside it.

use fen_fs::search::folder::IndexFolder;
use fen_fs::store::open::Dir;
use fen_fs::store::write_gate;
use std::io::Write;
use std::path::Path;
use std::time::Duration;
use tantivy::directory::Directory;

/// Every file and folder under `dir`, with its size (what any write would change).
fn tree(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            out.push((e.path().display().to_string(), m.len()));
            if m.is_dir() {
                todo.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn shut(e: std::io::Error) {
    assert_eq!(e.raw_os_error(), Some(libc::ESHUTDOWN), "{e}");
}

#[test]
fn once_the_gate_is_closed_nothing_changes_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Dir::open_root(tmp.path()).unwrap();
    let sub = store.create_dir("sub").unwrap();
    sub.replace_file("old", b"old").unwrap();
    let index = store.create_dir("index").unwrap();
    let folder = IndexFolder::open(&index).unwrap();
    // A file Tantivy is writing when the gate closes.
    let mut open = folder.open_write(Path::new("segment.idx")).unwrap();
    open.write_all(b"before").unwrap();
    open.flush().unwrap();
    folder.atomic_write(Path::new("meta.json"), b"{}").unwrap();
    let before = tree(tmp.path());

    assert!(write_gate::STORE.close(Duration::from_secs(1)));

    shut(store.create_dir("new").err().unwrap());
    shut(sub.replace_file("old", b"new").unwrap_err());
    shut(sub.rename("old", "moved").unwrap_err());
    shut(sub.unlink("old").unwrap_err());
    shut(sub.tmpfile().unwrap_err());
    shut(
        sub.open_file_with("made", libc::O_WRONLY | libc::O_CREAT, 0o600)
            .err()
            .unwrap(),
    );
    // Reading still works.
    assert_eq!(sub.read_file("old", 100).unwrap(), b"old");
    // Tantivy's writes: the open file, a new one, an atomic write, a delete, its lock.
    open.write_all(&[7u8; 20_000]).unwrap_err();
    assert!(open.flush().is_err());
    assert!(folder.open_write(Path::new("other.idx")).is_err());
    shut(
        folder
            .atomic_write(Path::new("meta.json"), b"{\"x\":1}")
            .unwrap_err(),
    );
    assert!(folder.delete(Path::new("meta.json")).is_err());
    assert!(
        folder
            .acquire_lock(&tantivy::directory::Lock {
                filepath: "writer.lock".into(),
                is_blocking: false,
            })
            .is_err()
    );
    drop(open);
    assert_eq!(
        tree(tmp.path()),
        before,
        "the store changed after the gate closed"
    );
}
