//! The Claude Code writer (WRITING-FOR-RESUME §1, §5.2): one linear chain of lines
//! in `projects/<slug of realpath(cwd)>/<uuid>.jsonl`, each with the fields Claude
//! Code itself writes (minus the ids it owns) and a `fenSource` field saying where
//! the conversation came from; a compaction summary starts the chain as a
//! `compact_boundary` and an `isCompactSummary` user line; a `custom-title` line ends
//! the file.

use super::anthropic;
use super::convert::{Conversation, Item};
use super::draft::{Clock, Context, Draft, Obj, VERSION, iso, uuid_v4, value};
use std::path::Path;

/// How Claude Code introduces its compact summary to the model (fen-fs's Claude
/// reader takes it off again).
const SUMMARY_LEAD: &str = "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n";

/// Claude Code cuts longer project folder names (SDK `MAX_SANITIZED_LENGTH`).
const MAX_SANITIZED_LENGTH: usize = 200;

/// The JS `simpleHash` the SDK ports (`sessions.py` `_simple_hash`): a 32-bit
/// `h = h*31 + c` over the string's UTF-16 units (`charCodeAt`, as the CLI runs it),
/// its absolute value in base 36.
fn simple_hash(s: &str) -> String {
    let mut h: i32 = 0;
    for c in s.encode_utf16() {
        h = h.wrapping_shl(5).wrapping_sub(h).wrapping_add(i32::from(c));
    }
    let mut n = (h as i64).unsigned_abs();
    if n == 0 {
        return "0".into();
    }
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    while n > 0 {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
}

/// The project folder name of `dir` (already resolved): every UTF-16 unit that is not
/// `[A-Za-z0-9]` as `-` (Claude Code's regex runs over a JS string, so a character
/// outside the BMP, an emoji, gives two); past 200 of them, the first 200, `-` and a
/// hash.
pub fn project_folder(dir: &str) -> String {
    let mut sanitized = String::with_capacity(dir.len());
    for c in dir.chars() {
        if c.is_ascii_alphanumeric() {
            sanitized.push(c);
        } else {
            sanitized.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    // ASCII only from here: bytes are characters and UTF-16 units.
    if sanitized.len() <= MAX_SANITIZED_LENGTH {
        return sanitized;
    }
    format!(
        "{}-{}",
        &sanitized[..MAX_SANITIZED_LENGTH],
        simple_hash(dir)
    )
}

/// The project folder Claude Code uses for `cwd`: named after its real path (links
/// resolved; the path as given when it does not exist). For a name cut with a hash,
/// a folder the CLI already made with the same first 200 characters wins: Claude
/// Code, like the SDK, also looks a session up among the folders with that prefix.
pub fn project_folder_for(projects: &Path, cwd: &str) -> String {
    let name = project_folder(&super::draft::real_path(cwd));
    if name.chars().count() > MAX_SANITIZED_LENGTH {
        let head: String = name.chars().take(MAX_SANITIZED_LENGTH + 1).collect();
        if let Ok(rd) = std::fs::read_dir(projects) {
            let mut found: Vec<String> = rd
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().to_str().map(String::from))
                .filter(|n| n.starts_with(&head))
                .collect();
            found.sort();
            if let Some(existing) = found.into_iter().next() {
                return existing;
            }
        }
    }
    name
}

/// The new session: `folder` is the project folder's name.
pub fn write(conv: &Conversation, ctx: &Context, folder: String) -> Draft {
    let sid = uuid_v4();
    let mut clock = Clock::new(ctx.now);
    let mut out = String::new();
    let mut expected = Vec::new();
    let mut parent: Option<String> = None;
    let provenance = ctx.provenance();
    // The fields every conversation line carries, in Claude Code's own order.
    let head = |parent: &Option<String>| {
        Obj::new()
            .put("parentUuid", parent)
            .put("isSidechain", false)
            .put("userType", "external")
            .put("cwd", &ctx.cwd)
            .put("sessionId", &sid)
            .put("version", VERSION)
            // The branch is not known here: empty, as Claude Code writes outside git.
            .put("gitBranch", "")
    };
    let first_time = conv.items.first().and_then(Item::timestamp);
    if let Some(summary) = &conv.summary {
        let t = iso(clock.at(first_time));
        let boundary = uuid_v4();
        out.push_str(
            &Obj::new()
                .put("parentUuid", None::<String>)
                .put("logicalParentUuid", None::<String>)
                .put("isSidechain", false)
                .put("userType", "external")
                .put("cwd", &ctx.cwd)
                .put("sessionId", &sid)
                .put("version", VERSION)
                .put("type", "system")
                .put("subtype", "compact_boundary")
                .put("content", "Conversation compacted")
                .put("isMeta", false)
                .put("timestamp", &t)
                .put("uuid", &boundary)
                .put("level", "info")
                .put(
                    "compactMetadata",
                    serde_json::json!({"trigger": "manual", "preTokens": 0}),
                )
                .put("fenSource", &provenance)
                .line(),
        );
        let uuid = uuid_v4();
        let message = Obj::new()
            .put("role", "user")
            .put("content", format!("{SUMMARY_LEAD}{summary}"))
            .text();
        out.push_str(
            &head(&Some(boundary))
                .put("type", "user")
                .put_raw("message", &message)
                .put("isCompactSummary", true)
                .put("isVisibleInTranscriptOnly", true)
                .put("uuid", &uuid)
                .put("timestamp", &t)
                .put("fenSource", &provenance)
                .line(),
        );
        expected.push(value(&message));
        parent = Some(uuid);
    }
    for item in &conv.items {
        let Some(message) = anthropic::message(item, true) else {
            continue;
        };
        let kind = match item {
            Item::Assistant { .. } => "assistant",
            _ => "user",
        };
        let uuid = uuid_v4();
        out.push_str(
            &head(&parent)
                .put("type", kind)
                .put_raw("message", &message)
                .put("uuid", &uuid)
                .put("timestamp", iso(clock.at(item.timestamp())))
                .put("fenSource", &provenance)
                .line(),
        );
        expected.push(value(&message));
        parent = Some(uuid);
    }
    // The picker shows the last custom title (read from the file's tail).
    out.push_str(
        &Obj::new()
            .put("type", "custom-title")
            .put("customTitle", &ctx.title)
            .put("sessionId", &sid)
            .line(),
    );
    Draft {
        file_name: format!("{sid}.jsonl"),
        id: sid,
        folders: vec!["projects".into(), folder],
        bytes: out.into_bytes(),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_named_as_claude_code_names_them() {
        assert_eq!(project_folder("/home/u/my.proj"), "-home-u-my-proj");
        assert_eq!(project_folder("/tmp/é x"), "-tmp---x");
        // The SDK's port of the JS hash: "a"*300 → 300 code points of 97.
        let long = "/".to_string() + &"a".repeat(300);
        let f = project_folder(&long);
        assert!(f.starts_with(&format!("-{}", "a".repeat(199))));
        assert_eq!(f.chars().nth(200), Some('-'));
        assert_eq!(simple_hash("a"), "2p");
        assert_eq!(simple_hash(""), "0");
        // Java's "hello".hashCode() = 99162322 = "1n1e4y" in base 36.
        assert_eq!(simple_hash("hello"), "1n1e4y");
    }

    #[test]
    fn characters_outside_the_bmp_count_twice_as_in_claude_codes_utf16_strings() {
        // Folder names Claude Code 2.1.330 itself made when run in these folders: its
        // regex replaces each UTF-16 unit (an emoji is two), the hash sums the units.
        assert_eq!(
            project_folder("/tmp/rv1/pr oj.x/e\u{301}t\u{e9}-\u{1F600}"),
            "-tmp-rv1-pr-oj-x-e-t----"
        );
        let long = format!("/tmp/rv1/{}/{}", "a".repeat(120), "\u{1F600}b".repeat(50));
        let sanitized = format!("-tmp-rv1-{}-{}", "a".repeat(120), "--b".repeat(50));
        assert_eq!(
            project_folder(&long),
            format!("{}-tj0tcq", &sanitized[..200])
        );
        let long = format!("/tmp/rv1/{}/{}", "a".repeat(120), "b".repeat(100));
        let sanitized = format!("-tmp-rv1-{}-{}", "a".repeat(120), "b".repeat(100));
        assert_eq!(
            project_folder(&long),
            format!("{}-xa8see", &sanitized[..200])
        );
    }
}
