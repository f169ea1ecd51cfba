//! The keeper's queue of sessions to copy. Taking one also says which of the next
//! ones to ask the disk for: a worker that waited on each new file's first read left
//! its core idle, and a first keep is bound by the CPU, not the disk
//! (docs/performance.md, "What bounds K1"). Only sessions read whole are asked for:
//! a session that grew is read from where its copy ends.

use crate::sources::foreign_source::ToKeep;
use std::sync::Mutex;

/// How many bytes of sessions not yet taken the disk is asked to read ahead.
const AHEAD: u64 = 32 << 20;

pub struct ReadQueue<'a> {
    state: Mutex<State<'a>>,
}

struct State<'a> {
    items: Vec<&'a ToKeep>,
    /// Whether each item is read whole (a new copy), and so worth asking for.
    whole: Vec<bool>,
    /// The next item to take.
    next: usize,
    /// Items before this one were asked for, or skipped: not read whole, or a
    /// database session (its bytes are a dump made when it is opened).
    asked: usize,
    /// Bytes asked for and not taken yet.
    asked_bytes: u64,
}

impl<'a> ReadQueue<'a> {
    /// `items` in the order they are taken; `whole` says which are read whole.
    pub fn new(items: Vec<&'a ToKeep>, whole: impl Fn(&ToKeep) -> bool) -> Self {
        ReadQueue {
            state: Mutex::new(State {
                whole: items.iter().map(|i| !i.unit && whole(i)).collect(),
                items,
                next: 0,
                asked: 0,
                asked_bytes: 0,
            }),
        }
    }

    /// The next session, and the sessions after it to ask the disk for now.
    pub fn take(&self) -> Option<(&'a ToKeep, Vec<&'a ToKeep>)> {
        let mut s = self.state.lock().unwrap();
        let item = *s.items.get(s.next)?;
        if s.next < s.asked && s.whole[s.next] {
            s.asked_bytes -= item.stamp.size;
        }
        s.next += 1;
        s.asked = s.asked.max(s.next);
        let mut ask = Vec::new();
        while s.asked < s.items.len() && s.asked_bytes < AHEAD {
            let it = s.items[s.asked];
            let whole = s.whole[s.asked];
            s.asked += 1;
            if whole {
                s.asked_bytes += it.stamp.size;
                ask.push(it);
            }
        }
        Some((item, ask))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::index::FileStamp;
    use std::path::PathBuf;

    fn item(name: &str, size: u64, unit: bool) -> ToKeep {
        ToKeep {
            key: PathBuf::from(name),
            stamp: FileStamp {
                size,
                ..FileStamp::default()
            },
            unit,
            appends: true,
            id: name.to_string(),
            facts: Default::default(),
        }
    }

    fn names(v: &[&ToKeep]) -> Vec<String> {
        v.iter().map(|i| i.id.clone()).collect()
    }

    #[test]
    fn each_item_is_taken_once_and_only_whole_reads_are_asked_for_before_they_are_taken() {
        const M: u64 = 1 << 20;
        let items = [
            item("big", 100 * M, false),
            item("a", 20 * M, false),
            item("db", 50 * M, true),
            item("b", 20 * M, false),
            item("grew", 10 * M, false),
            item("c", M, false),
        ];
        let q = ReadQueue::new(items.iter().collect(), |i| i.id != "grew");
        let mut taken = Vec::new();
        let mut asked = Vec::new();
        while let Some((it, ask)) = q.take() {
            // What is asked for is always ahead of what is taken.
            for a in &ask {
                assert!(
                    !taken.contains(&a.id),
                    "{} asked for after it was taken",
                    a.id
                );
            }
            taken.push(it.id.clone());
            asked.extend(names(&ask));
            if it.id == "big" {
                // 32 MiB ahead: a and b (a database session is not read ahead).
                assert_eq!(names(&ask), ["a", "b"]);
            }
        }
        assert_eq!(taken, ["big", "a", "db", "b", "grew", "c"]);
        assert_eq!(asked, ["a", "b", "c"]);
        assert_eq!(q.state.lock().unwrap().asked_bytes, 0);
    }
}
