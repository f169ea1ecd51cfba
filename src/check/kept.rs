//! `fen-fs fsck` of the kept copies (§11): every copy's record must be readable and
//! every generation it names whole, as long as it says and with its CRC-32 (a
//! compressed one is decompressed to check). Nothing is changed: what a crash left
//! (an unfinished copy, bytes past a record) is the keeper's to undo, and said here.

use crate::store::kept::{self, KeptStore};
use std::path::Path;

/// One copy's result: its label (`.kept/<agent>/<folder>`) and what is wrong with it
/// (`Err`), or notes about it (`Ok`, empty when there is nothing to say).
pub type CopyCheck = (String, std::result::Result<Vec<String>, String>);

/// Checks every kept copy of the store at `root`.
pub fn check_kept(root: &Path) -> Vec<CopyCheck> {
    let mut out = Vec::new();
    let Ok(Some(store)) = KeptStore::open(root, false) else {
        return out;
    };
    for agent in store.agents() {
        let Ok(dir) = store.dir().open_dir(&agent) else {
            continue;
        };
        let mut names: Vec<(String, bool)> = dir
            .read_dir()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(n, k)| Some((n.to_str()?.to_string(), k.is_dir())))
            .collect();
        names.sort();
        for (name, is_dir) in names {
            let label = format!("{}/{agent}/{name}", kept::KEPT_DIR);
            if !is_dir {
                continue;
            }
            if name.starts_with('.') {
                out.push((
                    label,
                    Ok(vec!["an unfinished copy (a keeper stopped while making it; the next keeper removes it)".into()]),
                ));
                continue;
            }
            let Ok(folder) = dir.open_dir(&name) else {
                out.push((label, Err("cannot be opened".into())));
                continue;
            };
            let Some(record) = kept::read_record(&folder) else {
                out.push((label, Err(format!("no readable {}", kept::RECORD))));
                continue;
            };
            let mut notes = Vec::new();
            let mut bad = Vec::new();
            for g in &record.generations {
                if let Err(e) = kept::verify_generation(&folder, g) {
                    bad.push(format!("generation {}: {}", g.n, e.reason));
                    continue;
                }
                if let Ok(st) = folder.stat(&g.file)
                    && st.st_size as u64 > g.stored
                {
                    notes.push(format!(
                        "{}: {} bytes past its record (a write cut short; the keeper cuts them off)",
                        g.file,
                        st.st_size as u64 - g.stored
                    ));
                }
            }
            out.push((
                label,
                if bad.is_empty() {
                    Ok(notes)
                } else {
                    Err(bad.join("; "))
                },
            ));
        }
    }
    out
}
