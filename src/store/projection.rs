//! The conversation projection of §3 as a plan over the index: which compaction
//! applies, what goes before the kept messages, and which messages are kept. Sizes
//! and token counts come from running totals, so they cost O(1) in session size.

use super::index::{CompactionForm, MessageRec, SessionIndex};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Projection {
    /// Index into `SessionIndex::compactions` of the latest valid compaction.
    pub compaction: Option<usize>,
    pub head_items: usize,
    pub head_bytes: u64,
    pub head_tokens: u64,
    /// Kept message entries: `messages[from..to]`.
    pub from: usize,
    pub to: usize,
}

impl Projection {
    pub fn of(index: &SessionIndex) -> Self {
        let to = index.message_count();
        let Some(ci) = index.latest_valid_compaction else {
            return Projection {
                compaction: None,
                head_items: 0,
                head_bytes: 0,
                head_tokens: 0,
                from: 0,
                to,
            };
        };
        let c = &index.compactions[ci];
        let from = match c.validity {
            Ok(CompactionForm::FirstKept(Some(k))) => k,
            _ => c.msgs_before,
        };
        Projection {
            compaction: Some(ci),
            head_items: c.head_items,
            head_bytes: c.head_bytes,
            head_tokens: c.head_tokens,
            from,
            to,
        }
    }

    pub fn message_count(&self) -> usize {
        self.head_items + (self.to - self.from)
    }

    fn totals(table: &[MessageRec], from: usize, to: usize) -> (u64, u64) {
        if to <= from {
            return (0, 0);
        }
        let (o0, t0) = if from == 0 {
            (0, 0)
        } else {
            (table[from - 1].out_end, table[from - 1].tokens_end)
        };
        (table[to - 1].out_end - o0, table[to - 1].tokens_end - t0)
    }

    /// Bytes of `conversation.json`: `[\n` + items joined by `,\n` + `\n]\n`, or `[]\n`.
    pub fn size(&self, table: &[MessageRec]) -> u64 {
        let n = self.message_count() as u64;
        if n == 0 {
            return 3;
        }
        let (kept, _) = Self::totals(table, self.from, self.to);
        // Every item is followed by 2 bytes except the last (1): kept totals count 2 each.
        2 + self.head_bytes + 2 * self.head_items as u64 + kept - 1 + 2
    }

    pub fn context_tokens(&self, table: &[MessageRec]) -> u64 {
        self.head_tokens + Self::totals(table, self.from, self.to).1
    }
}
