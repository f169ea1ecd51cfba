//! Agents that keep their history inside each project, not in a store of their own:
//! Aider's `<project>/.aider.chat.history.md`, Crush's `<project>/.crush/crush.db`.
//! fen-fs finds them in every folder it knows as some session's cwd (any agent's:
//! every source notes the cwds its sessions name, [`note_cwd`]) and in the project
//! roots a user names (`--source aider=DIR` searches DIR and the folders below it).
//!
//! Cheap by design: [`ProjectFiles::files`] costs one `stat` per known folder, and
//! the walk of the named roots runs only at the first call and then at most once a
//! minute, bounded in depth and in folders (hidden folders, `node_modules` and
//! `target` are skipped); a newly noted cwd is looked at on the next call.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Every cwd some session names, and a count that grows with each new one.
struct Known {
    cwds: Vec<String>,
    seen: HashSet<String>,
}

fn known() -> &'static Mutex<Known> {
    static KNOWN: OnceLock<Mutex<Known>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        Mutex::new(Known {
            cwds: Vec::new(),
            seen: HashSet::new(),
        })
    })
}

/// Notes a working directory some session names (any agent's): a folder where a
/// project-scoped history may be.
pub fn note_cwd(cwd: &str) {
    if !cwd.starts_with('/') {
        return;
    }
    if let Ok(mut k) = known().lock()
        && !k.seen.contains(cwd)
    {
        k.seen.insert(cwd.to_string());
        k.cwds.push(cwd.to_string());
    }
}

/// The cwds noted from the `from`-th on, and how many there are now.
fn noted_since(from: usize) -> (Vec<String>, usize) {
    let k = known().lock().unwrap();
    (
        k.cwds.get(from..).unwrap_or_default().to_vec(),
        k.cwds.len(),
    )
}

/// How often a check for changes (`UnitSource::changed`) looks for history files
/// that appeared in known project folders; the files it knows are `stat`ed each time.
pub const LOOK_FOR_NEW: Duration = Duration::from_secs(1);

/// How often the named roots are walked again.
const RESCAN: Duration = Duration::from_secs(60);
/// How deep below a named root a project may be, and how many folders one walk looks
/// at, at most.
const WALK_DEPTH: usize = 6;
const WALK_FOLDERS: usize = 20_000;

/// Where one kind of project-scoped file is: `relative` under each candidate folder.
pub struct ProjectFiles {
    relative: &'static str,
    roots: Vec<PathBuf>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Candidate project folders: noted cwds and what the walks found.
    folders: BTreeSet<PathBuf>,
    /// How many noted cwds were taken in.
    noted: usize,
    walked: Option<Instant>,
    /// When `files` last looked.
    listed: Option<Instant>,
}

impl ProjectFiles {
    /// Files at `relative` (`.aider.chat.history.md`) under known cwds and under
    /// `roots` (searched); `detect`: whether noted cwds count (off with
    /// `--no-detect`, where only the named roots are searched).
    pub fn new(relative: &'static str, roots: Vec<PathBuf>, detect: bool) -> Self {
        ProjectFiles {
            relative,
            roots,
            state: Mutex::new(State {
                noted: if detect { 0 } else { usize::MAX },
                ..State::default()
            }),
        }
    }

    /// The named roots searched.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Whether `files` may give another list than at its last call: a cwd was noted
    /// since, the named roots are due for a walk, or it last looked `every` ago or
    /// more. (A caller checking for changes on every request stats the files it knows
    /// each time, and looks for new ones in every known folder at most this often.)
    pub fn due(&self, every: Duration) -> bool {
        let st = self.state.lock().unwrap();
        st.listed.is_none_or(|t| t.elapsed() >= every)
            || (!self.roots.is_empty() && st.walked.is_none_or(|t| t.elapsed() >= RESCAN))
            || (st.noted != usize::MAX && known().lock().unwrap().cwds.len() != st.noted)
    }

    /// The files that exist now (regular files, not links), sorted.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut st = self.state.lock().unwrap();
        st.listed = Some(Instant::now());
        if st.noted != usize::MAX {
            let (new, now) = noted_since(st.noted);
            st.noted = now;
            for cwd in new {
                let cwd = PathBuf::from(cwd);
                // Aider keeps its history at the git root, which may be above the cwd.
                if let Some(root) = git_root(&cwd) {
                    st.folders.insert(root);
                }
                st.folders.insert(cwd);
            }
        }
        if !self.roots.is_empty() && st.walked.is_none_or(|t| t.elapsed() >= RESCAN) {
            st.walked = Some(Instant::now());
            for root in &self.roots {
                let mut found = Vec::new();
                walk(root, self.relative, &mut found);
                st.folders.extend(found);
            }
        }
        st.folders
            .iter()
            .map(|d| d.join(self.relative))
            .filter(|f| is_file(f))
            .collect()
    }
}

/// The nearest folder at or above `dir` holding `.git` (at most 8 levels up).
fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .take(8)
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

fn is_file(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())
}

/// The folders under `root` (itself included) holding `relative`.
fn walk(root: &Path, relative: &str, found: &mut Vec<PathBuf>) {
    let mut queue = vec![(root.to_path_buf(), 0usize)];
    let mut visited = 0usize;
    while let Some((dir, depth)) = queue.pop() {
        visited += 1;
        if visited > WALK_FOLDERS {
            log::warn!(
                "{}: stopped looking for {relative} after {WALK_FOLDERS} folders",
                root.display()
            );
            return;
        }
        if is_file(&dir.join(relative)) {
            found.push(dir.clone());
        }
        if depth >= WALK_DEPTH {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "node_modules" || name == "target" {
                continue;
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push((e.path(), depth + 1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_found_under_noted_cwds_and_named_roots() {
        let tmp = tempfile::tempdir().unwrap();
        let noted = tmp.path().join("noted");
        let named = tmp.path().join("named/deep/proj");
        let hidden = tmp.path().join("named/.cache/proj");
        for d in [&noted, &named, &hidden] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join(".hist.md"), "x").unwrap();
        }
        let p = ProjectFiles::new(".hist.md", vec![tmp.path().join("named")], true);
        assert_eq!(p.files(), vec![named.join(".hist.md")]);
        note_cwd(noted.to_str().unwrap());
        let mut want = vec![named.join(".hist.md"), noted.join(".hist.md")];
        want.sort();
        assert_eq!(p.files(), want, "a noted cwd is looked at on the next call");
        // A cwd below a git root: the root is looked at too.
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(repo.join(".hist.md"), "x").unwrap();
        note_cwd(repo.join("src/deep").to_str().unwrap());
        assert!(p.files().contains(&repo.join(".hist.md")));
        std::fs::remove_file(repo.join(".hist.md")).unwrap();
        std::fs::remove_file(noted.join(".hist.md")).unwrap();
        assert_eq!(p.files(), vec![named.join(".hist.md")]);
        let off = ProjectFiles::new(".hist.md", Vec::new(), false);
        std::fs::write(noted.join(".hist.md"), "x").unwrap();
        assert!(off.files().is_empty(), "no detection: only named roots");
    }
}
