//! The index's folder as Tantivy sees it: its files mapped, as Tantivy does, except
//! the document stores (`.store`), read a block at a time.
//!
//! A mapped page counts in the process's memory for as long as its mapping lives
//! (the segment's, often the process's), and the documents shown with hits are
//! spread over the whole store: the web server's search-as-you-type kept 37 MB of
//! `.store` pages mapped at its peak of 180 MB (`/proc/PID/smaps`, bench row W5).
//! Read with `pread`, a block is in memory while Tantivy decompresses it (it keeps a
//! few decompressed blocks), and the page cache keeps the file, as it did.

use crate::store::open::Dir;
use crate::store::write_gate;
use std::io;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use tantivy::HasLen;
use tantivy::directory::error::{DeleteError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes,
    TerminatingWrite, WatchCallback, WatchHandle, WritePtr,
};

/// The index's folder: `mapped` for everything but the document stores, read through
/// `folder` (opened without following links, regular files only).
#[derive(Clone)]
pub struct IndexFolder {
    mapped: MmapDirectory,
    folder: Arc<Dir>,
}

impl std::fmt::Debug for IndexFolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IndexFolder({})", self.folder.path().display())
    }
}

impl IndexFolder {
    pub fn open(folder: &Dir) -> Result<IndexFolder, OpenDirectoryError> {
        let mapped = MmapDirectory::open(folder.path())?;
        let folder = folder
            .try_clone()
            .map_err(|e| OpenDirectoryError::IoError {
                io_error: Arc::new(e),
                directory_path: folder.path().to_path_buf(),
            })?;
        Ok(IndexFolder {
            mapped,
            folder: Arc::new(folder),
        })
    }
}

fn is_document_store(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "store")
}

/// A file read with `pread`, a range at a time.
#[derive(Debug)]
struct ReadFile {
    file: std::fs::File,
    len: usize,
}

impl HasLen for ReadFile {
    fn len(&self) -> usize {
        self.len
    }
}

impl FileHandle for ReadFile {
    fn read_bytes(&self, range: Range<usize>) -> io::Result<OwnedBytes> {
        use std::os::unix::fs::FileExt;
        let mut bytes = vec![0u8; range.len()];
        self.file.read_exact_at(&mut bytes, range.start as u64)?;
        Ok(OwnedBytes::new(bytes))
    }
}

/// A file Tantivy writes, each write through the store's write gate: the writer's
/// threads (idle during a big pass) must not write after the daemon unmounted. It
/// holds the file's own writer, unbuffered: bytes buffered below the gate would
/// still reach the file when a refused writer is dropped.
struct GatedWrite(Box<dyn TerminatingWrite + Send + Sync>);

impl io::Write for GatedWrite {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_gate::pass(|| self.0.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        write_gate::pass(|| self.0.flush())
    }
}

impl TerminatingWrite for GatedWrite {
    fn terminate_ref(&mut self, token: AntiCallToken) -> io::Result<()> {
        write_gate::pass(|| self.0.terminate_ref(token))
    }
}

/// Runs `op` inside the store's write gate; `shut` makes its error when the gate is
/// closed.
fn gated<T, E>(
    op: impl FnOnce() -> Result<T, E>,
    shut: impl FnOnce(io::Error) -> E,
) -> Result<T, E> {
    let _passing = write_gate::enter().map_err(shut)?;
    op()
}

impl Directory for IndexFolder {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        if !is_document_store(path) {
            return self.mapped.get_file_handle(path);
        }
        let error = |e: io::Error| {
            if e.kind() == io::ErrorKind::NotFound {
                OpenReadError::FileDoesNotExist(path.to_path_buf())
            } else {
                OpenReadError::wrap_io_error(e, path.to_path_buf())
            }
        };
        let (file, meta) = self.folder.open_file(path).map_err(error)?;
        Ok(Arc::new(ReadFile {
            file,
            len: meta.len() as usize,
        }))
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        gated(
            || self.mapped.delete(path),
            |e| DeleteError::IoError {
                io_error: Arc::new(e),
                filepath: path.to_path_buf(),
            },
        )
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.mapped.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let buffered = gated(
            || self.mapped.open_write(path),
            |e| OpenWriteError::wrap_io_error(e, path.to_path_buf()),
        )?;
        // Nothing written yet: taking its writer out writes nothing.
        let inner = buffered
            .into_inner()
            .map_err(|e| OpenWriteError::wrap_io_error(e.into_error(), path.to_path_buf()))?;
        Ok(io::BufWriter::new(Box::new(GatedWrite(inner))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.mapped.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        write_gate::pass(|| self.mapped.atomic_write(path, data))
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.mapped.sync_directory()
    }

    fn acquire_lock(
        &self,
        lock: &Lock,
    ) -> Result<DirectoryLock, tantivy::directory::error::LockError> {
        gated(
            || self.mapped.acquire_lock(lock),
            tantivy::directory::error::LockError::wrap_io_error,
        )
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.mapped.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{STORED, Schema, TEXT, Value};

    /// The files of `dir` this process has mapped now, by extension.
    fn mapped_here(dir: &Path) -> Vec<String> {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut out: Vec<String> = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .filter(|p| Path::new(p).starts_with(dir))
            .filter_map(|p| {
                Path::new(p)
                    .extension()
                    .map(|e| e.to_string_lossy().into_owned())
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn documents_are_read_from_the_store_unmapped_and_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(tmp.path()).unwrap();
        let mut schema = Schema::builder();
        let text = schema.add_text_field("text", TEXT | STORED);
        let index = tantivy::Index::create(
            IndexFolder::open(&dir).unwrap(),
            schema.build(),
            tantivy::IndexSettings::default(),
        )
        .unwrap();
        let mut writer: tantivy::IndexWriter = index.writer_with_num_threads(1, 15 << 20).unwrap();
        let long = "needle ".repeat(5000);
        for body in ["a needle in a haystack", long.as_str(), "no match here"] {
            let mut d = tantivy::TantivyDocument::default();
            d.add_text(text, body);
            writer.add_document(d).unwrap();
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let q = tantivy::query::TermQuery::new(
            tantivy::Term::from_field_text(text, "needle"),
            tantivy::schema::IndexRecordOption::Basic,
        );
        let hits = searcher
            .search(
                &q,
                &tantivy::collector::TopDocs::with_limit(10).order_by_score(),
            )
            .unwrap();
        let mut bodies: Vec<String> = hits
            .iter()
            .map(|(_, addr)| {
                let d: tantivy::TantivyDocument = searcher.doc(*addr).unwrap();
                d.get_first(text).unwrap().as_str().unwrap().to_string()
            })
            .collect();
        bodies.sort();
        assert!(
            bodies == ["a needle in a haystack", long.as_str()],
            "{} documents",
            bodies.len()
        );
        // The postings are mapped (the check sees mappings), the store is not.
        let mapped = mapped_here(tmp.path());
        assert!(mapped.contains(&"idx".to_string()), "{mapped:?}");
        assert!(!mapped.contains(&"store".to_string()), "{mapped:?}");
    }
}
