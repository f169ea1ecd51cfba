//! A one-line snippet of a message around its match, the matched words marked
//! `**like this**`.

use super::query::Query;
use super::schema::analyzer;

/// About how long a snippet is, in bytes of the message (marks and `…` come on top).
pub const SNIPPET_BYTES: usize = 160;
/// How much comes before the first match in it.
const LEAD: usize = 40;

pub const MARK: &str = "**";

struct Word {
    from: usize,
    to: usize,
    text: String,
}

/// The snippet of `text` for `query`.
pub fn snippet(text: &str, query: &Query) -> String {
    let clauses: Vec<_> = query.positive().collect();
    let mut words: Vec<Word> = Vec::new();
    let mut matches: Vec<(usize, usize, usize)> = Vec::new(); // (from, to, clause)
    let mut a = analyzer();
    let mut stream = a.token_stream(text);
    let mut seen = vec![false; clauses.len()];
    // Once every clause is found, a few more words give the window its context.
    let mut all_seen_at: Option<usize> = None;
    while stream.advance() {
        let t = stream.token();
        words.push(Word {
            from: t.offset_from,
            to: t.offset_to,
            text: t.text.clone(),
        });
        let n = words.len();
        for (ci, c) in clauses.iter().enumerate() {
            let k = c.words.len();
            if n < k {
                continue;
            }
            let start = n - k;
            let hit = c.words.iter().enumerate().all(|(i, w)| {
                let got = &words[start + i].text;
                if c.prefix && i + 1 == k {
                    got.starts_with(w.as_str())
                } else {
                    got == w
                }
            });
            if hit {
                matches.push((words[start].from, words[n - 1].to, ci));
                seen[ci] = true;
            }
        }
        if all_seen_at.is_none() && seen.iter().all(|s| *s) {
            all_seen_at = Some(n);
        }
        if matches.len() >= 64 || all_seen_at.is_some_and(|at| n > at + 40) {
            break;
        }
    }
    render(text, &matches)
}

fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn render(text: &str, matches: &[(usize, usize, usize)]) -> String {
    // The window holding the most different clauses, anchored before a match.
    let mut best: Option<(usize, usize)> = None; // (distinct clauses, start)
    for &(from, _, _) in matches {
        let start = from.saturating_sub(LEAD);
        let end = start + SNIPPET_BYTES;
        let mut distinct: Vec<usize> = matches
            .iter()
            .filter(|(f, t, _)| *f >= start && *t <= end)
            .map(|m| m.2)
            .collect();
        distinct.sort_unstable();
        distinct.dedup();
        if best.is_none_or(|(n, _)| distinct.len() > n) {
            best = Some((distinct.len(), start));
        }
    }
    let mut start = floor_char(text, best.map_or(0, |b| b.1));
    // Start at a word's beginning when one is near.
    if start > 0
        && let Some(sp) = text[start..ceil_char(text, start + 16)].find(char::is_whitespace)
        && matches.iter().all(|m| m.0 >= start + sp || m.1 <= start)
    {
        start += sp;
    }
    let mut end = ceil_char(text, start + SNIPPET_BYTES);
    // A match cut by the window's end is taken whole.
    for &(f, t, _) in matches {
        if f < end && t > end {
            end = t;
        }
    }
    if end < text.len()
        && let Some(sp) =
            text[floor_char(text, end.saturating_sub(16))..end].rfind(char::is_whitespace)
    {
        let at = floor_char(text, end.saturating_sub(16)) + sp;
        if matches.iter().all(|m| m.1 <= at || m.0 >= end) {
            end = at;
        }
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut pos = start;
    let mut inside: Vec<(usize, usize)> = matches
        .iter()
        .filter(|(f, t, _)| *f >= start && *t <= end)
        .map(|(f, t, _)| (*f, *t))
        .collect();
    inside.sort_unstable();
    inside.dedup();
    for (f, t) in inside {
        if f < pos {
            continue; // overlaps the previous mark
        }
        push_flat(&mut out, &text[pos..f]);
        out.push_str(MARK);
        push_flat(&mut out, &text[f..t]);
        out.push_str(MARK);
        pos = t;
    }
    push_flat(&mut out, &text[pos..end]);
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    if end < text.len() {
        out.push('…');
    }
    out
}

/// `s` on one line: every run of whitespace (newlines included) becomes one space.
fn push_flat(out: &mut String, s: &str) {
    let mut space = out.ends_with(' ') || out.is_empty() || out.ends_with('…');
    for c in s.chars() {
        if c.is_whitespace() || c.is_control() {
            if !space {
                out.push(' ');
                space = true;
            }
        } else {
            out.push(c);
            space = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::parse;

    #[test]
    fn marks_words_phrases_and_prefixes() {
        let q = parse("flaky \"test suite\" deplo*").unwrap();
        let s = snippet("The Flaky\ntest suite failed after the deployment.", &q);
        assert_eq!(
            s,
            "The **Flaky** **test suite** failed after the **deployment**."
        );
    }

    #[test]
    fn a_long_message_is_cut_around_the_match() {
        let text = format!("{} needle {}", "hay ".repeat(200), "straw ".repeat(200));
        let s = snippet(&text, &parse("needle").unwrap());
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("**needle**"), "{s}");
        assert!(s.len() < SNIPPET_BYTES + 20, "{}", s.len());
        assert!(!s.contains("  "));
    }

    #[test]
    fn the_window_with_most_clauses_wins() {
        let text = format!(
            "alpha {} alpha beta together {}",
            "x ".repeat(300),
            "y ".repeat(300)
        );
        let s = snippet(&text, &parse("alpha beta").unwrap());
        assert!(s.contains("**alpha** **beta**"), "{s}");
    }

    #[test]
    fn no_match_gives_the_start() {
        let s = snippet("A title only", &parse("zzz").unwrap());
        assert_eq!(s, "A title only");
    }
}
