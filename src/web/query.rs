//! The search box's text: §8's query language (words, `"a phrase"`, `-word`,
//! `prefix*`) with the command line's filters written as words: `agent:KIND`,
//! `cwd:DIR`, `host:NAME`, `since:DATE` (`2026-11-01`, `7d`). A filter inside a
//! phrase is part of the phrase.

use crate::search::Request;

/// Words at most per query page.
pub const MAX_LIMIT: usize = 100;

/// The request the box's `text` asks, or what is wrong with it (one line).
pub fn request(text: &str, limit: usize) -> Result<Request, String> {
    let mut words = Vec::new();
    let mut agent = None;
    let mut cwd = None;
    let mut host = None;
    let mut since_ms = None;
    for word in split(text) {
        let filter = |name: &str| word.strip_prefix(name).filter(|v| !v.is_empty());
        if let Some(v) = filter("agent:") {
            agent = Some(crate::agent::Agent::parse(v).map_err(|e| format!("agent:{v}: {e}"))?);
        } else if let Some(v) = filter("cwd:") {
            if !v.starts_with('/') {
                return Err(format!("cwd:{v}: give an absolute directory (/home/…)"));
            }
            cwd = Some(crate::store::naming::normalize_cwd(v));
        } else if let Some(v) = filter("host:") {
            host = Some(v.to_string());
        } else if let Some(v) = filter("since:") {
            since_ms = Some(crate::dates::parse_since(v).map_err(|e| format!("since:{v}: {e}"))?);
        } else {
            words.push(word);
        }
    }
    let text = words.join(" ");
    let query = crate::search::query::parse(&text).map_err(|e| e.reason)?;
    Ok(Request {
        query,
        agent,
        cwd,
        since_ms,
        limit: limit.clamp(1, MAX_LIMIT),
        host,
    })
}

/// The words of `text`, a quoted phrase (with its quotes) one word.
fn split(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_taken_out_of_the_words() {
        let r = request(
            "flaky agent:claude cwd:/home/u/p since:7d host:box test",
            20,
        )
        .unwrap();
        assert_eq!(r.agent, Some(crate::agent::Agent::Claude));
        assert_eq!(r.cwd.as_deref(), Some("/home/u/p"));
        assert_eq!(r.host.as_deref(), Some("box"));
        assert!(r.since_ms.is_some());
        assert_eq!(r.query.positive().count(), 2);
    }

    #[test]
    fn a_filter_inside_a_phrase_is_words() {
        let r = request("\"see agent:claude here\"", 20).unwrap();
        assert_eq!(r.agent, None);
    }

    #[test]
    fn bad_filters_say_why() {
        assert!(
            request("x agent:nobody", 20)
                .unwrap_err()
                .contains("agent:nobody")
        );
        assert!(request("x cwd:rel", 20).unwrap_err().contains("absolute"));
        assert!(request("x since:whenever", 20).is_err());
    }
}
