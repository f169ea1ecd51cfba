//! The query language of `fen-fs search` and `search/<query>/` (SPEC §8), parsed by
//! hand into clauses of analyzed words; `engine` turns them into Tantivy queries.
//!
//! - `word`: the message must contain it (case and accents do not matter);
//! - `"a phrase"`: these words, next to each other, in this order;
//! - `-word`, `-"a phrase"`, `-word*`: the message must not contain it;
//! - `word*`: a word beginning with `word`.
//!
//! Every positive clause must match one message (or a session's title). A word is cut
//! into words the way text is (`flaky_test` and `src/main.rs` are phrases of two and
//! three words); a `-` starts an exclusion only at the beginning of a word, so search
//! for `--verbose` as `"--verbose"`.

use super::schema::analyze;
use crate::error::{Error, Result};

/// Longest query accepted, in bytes, and most clauses: a query is typed by a person.
pub const MAX_QUERY_BYTES: usize = 1000;
pub const MAX_CLAUSES: usize = 32;

/// One clause: a sequence of analyzed words (one word, or a phrase).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// The message must not match it.
    pub negated: bool,
    /// The analyzed words, in order (at least one).
    pub words: Vec<String>,
    /// The last word is a prefix (`word*`).
    pub prefix: bool,
}

/// A parsed query: at least one positive clause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub clauses: Vec<Clause>,
}

impl Query {
    /// The clauses that must match.
    pub fn positive(&self) -> impl Iterator<Item = &Clause> {
        self.clauses.iter().filter(|c| !c.negated)
    }
}

fn bad(why: impl Into<String>) -> Error {
    Error::invalid(why)
}

/// Parses `text` (the command line's words joined by spaces, or a folder name).
pub fn parse(text: &str) -> Result<Query> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(bad(format!(
            "the query is {} bytes long; at most {MAX_QUERY_BYTES} are accepted",
            text.len()
        )));
    }
    let mut clauses = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let (negated, body) = match rest.strip_prefix('-') {
            Some(b) if !b.is_empty() && !b.starts_with(char::is_whitespace) => (true, b),
            Some(_) => {
                return Err(bad(
                    "a lone '-' excludes nothing: write -word to leave out messages with word",
                ));
            }
            None => (false, rest),
        };
        let (raw, after, quoted) = if let Some(inner) = body.strip_prefix('"') {
            let Some(end) = inner.find('"') else {
                return Err(bad(format!(
                    "unbalanced '\"' in the query: the phrase {} is not closed",
                    body.trim_end()
                )));
            };
            let after = &inner[end + 1..];
            if after.starts_with(|c: char| !c.is_whitespace()) {
                return Err(bad(format!(
                    "put a space after the closing '\"' of \"{}\"",
                    &inner[..end]
                )));
            }
            (&inner[..end], after, true)
        } else {
            let end = body.find(char::is_whitespace).unwrap_or(body.len());
            let word = &body[..end];
            if word.contains('"') {
                return Err(bad(format!(
                    "'\"' inside {word}: a phrase starts with '\"' at the beginning of a word"
                )));
            }
            (word, &body[end..], false)
        };
        clauses.push(clause(raw, negated, quoted)?);
        rest = after.trim_start();
    }
    if clauses.is_empty() {
        return Err(bad(
            "the query is empty: give at least one word to look for",
        ));
    }
    if clauses.len() > MAX_CLAUSES {
        return Err(bad(format!(
            "the query has {} words and phrases; at most {MAX_CLAUSES} are accepted",
            clauses.len()
        )));
    }
    if clauses.iter().all(|c| c.negated) {
        return Err(bad(
            "the query only excludes words: give at least one word to look for",
        ));
    }
    Ok(Query { clauses })
}

fn clause(raw: &str, negated: bool, quoted: bool) -> Result<Clause> {
    let shown = if quoted {
        format!("\"{raw}\"")
    } else {
        raw.to_string()
    };
    let (body, prefix) = if quoted {
        (raw, false)
    } else {
        match raw.strip_suffix('*') {
            Some(b) => (b, true),
            None => (raw, false),
        }
    };
    if !quoted && body.contains('*') {
        return Err(bad(format!(
            "'*' in {shown}: it may only end a word (word* finds words beginning with word)"
        )));
    }
    let words = analyze(body);
    if words.is_empty() {
        return Err(bad(if prefix {
            format!("{shown}: a prefix needs a letter or digit before '*'")
        } else {
            format!("{shown} has no letter or digit to look for")
        }));
    }
    // `foo-*`: the last word is whole, not a prefix of something after the dash.
    let prefix = prefix && body.ends_with(|c: char| c.is_alphanumeric());
    Ok(Clause {
        negated,
        words,
        prefix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(q: &str) -> Vec<(bool, Vec<&'static str>, bool)> {
        parse(q)
            .unwrap()
            .clauses
            .into_iter()
            .map(|c| {
                let w: Vec<&'static str> = c
                    .words
                    .into_iter()
                    .map(|s| &*Box::leak(s.into_boxed_str()))
                    .collect();
                (c.negated, w, c.prefix)
            })
            .collect()
    }

    #[test]
    fn words_phrases_exclusions_and_prefixes() {
        assert_eq!(
            words("Flaky  \"Test suite\" -Windows deplo*"),
            vec![
                (false, vec!["flaky"], false),
                (false, vec!["test", "suite"], false),
                (true, vec!["windows"], false),
                (false, vec!["deplo"], true),
            ]
        );
        assert_eq!(words("x -\"a b\"")[1], (true, vec!["a", "b"], false));
    }

    #[test]
    fn accents_and_case_fold() {
        assert_eq!(
            words("Café NAÏVE"),
            vec![(false, vec!["cafe"], false), (false, vec!["naive"], false)]
        );
    }

    #[test]
    fn punctuation_makes_phrases() {
        assert_eq!(
            words("src/main.rs"),
            vec![(false, vec!["src", "main", "rs"], false)]
        );
        assert_eq!(
            words("\"--verbose\""),
            vec![(false, vec!["verbose"], false)]
        );
        assert_eq!(words("foo-*"), vec![(false, vec!["foo"], false)]);
    }

    #[test]
    fn bad_queries_say_what_is_wrong() {
        for (q, says) in [
            ("", "empty"),
            ("   ", "empty"),
            ("\"open", "unbalanced"),
            ("a \"b c", "unbalanced"),
            ("-x", "only excludes"),
            ("- x", "lone"),
            ("*", "prefix"),
            ("fo*o", "may only end"),
            ("!!!", "no letter"),
            ("a\"b", "inside"),
            ("\"a\"b", "space after"),
        ] {
            let e = parse(q).unwrap_err();
            assert_eq!(e.errno, libc::EINVAL);
            assert!(e.reason.contains(says), "{q:?}: {}", e.reason);
        }
        assert!(parse(&"a ".repeat(40)).is_err());
        assert!(parse(&"a".repeat(2000)).is_err());
    }
}
