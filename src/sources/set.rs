//! The sources a mount shows, shared by everything that reads them (the tree, the
//! search indexer, the usage counter): a list that can change while the mount runs
//! (another machine's store arriving in `peers/`, or leaving it, §12). Readers take
//! the current list as one value (`current`), so a request or an indexing pass sees
//! one list from its start to its end; a change makes a new list, and bumps the
//! generation, which tells those who keep something per source to look again.

use super::SessionSource;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// A shared, changeable list of sources (cheap to clone: every clone is the same set).
#[derive(Clone, Default)]
pub struct SourceSet(Arc<Inner>);

#[derive(Default)]
struct Inner {
    list: RwLock<Arc<Vec<Arc<dyn SessionSource>>>>,
    generation: AtomicU64,
}

impl SourceSet {
    pub fn new(sources: Vec<Arc<dyn SessionSource>>) -> SourceSet {
        SourceSet(Arc::new(Inner {
            list: RwLock::new(Arc::new(sources)),
            generation: AtomicU64::new(0),
        }))
    }

    /// The sources now, in order (the writable one first, if any).
    pub fn current(&self) -> Arc<Vec<Arc<dyn SessionSource>>> {
        self.0.list.read().unwrap().clone()
    }

    /// Bumped by every change of the list.
    pub fn generation(&self) -> u64 {
        self.0.generation.load(Ordering::Acquire)
    }

    /// Adds `source` at the end.
    pub fn add(&self, source: Arc<dyn SessionSource>) {
        let mut list = self.0.list.write().unwrap();
        let mut next = list.as_ref().clone();
        next.push(source);
        *list = Arc::new(next);
        self.0.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Takes out every source `gone` says, and returns them.
    pub fn remove(
        &self,
        gone: impl Fn(&Arc<dyn SessionSource>) -> bool,
    ) -> Vec<Arc<dyn SessionSource>> {
        let mut list = self.0.list.write().unwrap();
        let (out, kept): (Vec<_>, Vec<_>) = list.iter().cloned().partition(|s| gone(s));
        if !out.is_empty() {
            *list = Arc::new(kept);
            self.0.generation.fetch_add(1, Ordering::AcqRel);
        }
        out
    }
}

impl From<Vec<Arc<dyn SessionSource>>> for SourceSet {
    fn from(sources: Vec<Arc<dyn SessionSource>>) -> SourceSet {
        SourceSet::new(sources)
    }
}
