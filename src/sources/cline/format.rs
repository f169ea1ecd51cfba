//! Cline's text rules, as its SDK has them (cline/cline 21cb8d25,
//! `sdk/packages/shared/src/prompt/format.ts` and
//! `sdk/packages/core/src/session/models/session-compaction.ts`): a stored prompt is
//! wrapped (`<user_input mode="act">…</user_input>`, `<user_command slash="…">`) and
//! what people read is `formatDisplayUserInput` of it; a compaction applies to the
//! stored history only while the SHA-256 of the history's first messages, as Cline
//! serializes them, is the one it recorded.

use crate::json::RawObject;
use crate::sources::json_text::spread;

/// `<tag\b[^>]*>` at `at` in `s`: the end of the opening tag, if one starts there.
fn open_tag_at(s: &str, at: usize, tag: &str, word_boundary: bool) -> Option<usize> {
    let rest = s[at..].strip_prefix('<')?.strip_prefix(tag)?;
    let after = rest;
    if word_boundary
        && after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let gt = after.find('>')?;
    Some(s.len() - after.len() + gt + 1)
}

/// `input.replace(/<tag\b[^>]*>([\s\S]*?)<\/tag>/g, "$1")`.
fn xml_tags_removal(input: &str, tag: &str) -> String {
    if input.trim().is_empty() {
        return String::new();
    }
    let close = format!("</{tag}>");
    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        if input.as_bytes()[i] == b'<'
            && let Some(body) = open_tag_at(input, i, tag, true)
            && let Some(end) = input[body..].find(&close)
        {
            out.push_str(&input[body..body + end]);
            i = body + end + close.len();
            continue;
        }
        let c = input[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// `input.replace(/<tag[^>]*>/g, "")`.
fn remove_open_tags(input: &str, tag: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        if input.as_bytes()[i] == b'<'
            && let Some(end) = open_tag_at(input, i, tag, false)
        {
            i = end;
            continue;
        }
        let c = input[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// JavaScript's `String.prototype.trim` (its whitespace, not only ASCII).
fn js_trim(s: &str) -> &str {
    s.trim_matches(crate::sources::json_text::is_js_ws)
}

/// `normalizeUserInput`: the prompt without Cline's wrappers.
pub fn normalize_user_input(input: &str) -> String {
    if js_trim(input).is_empty() {
        return String::new();
    }
    let mut next = js_trim(input).to_string();
    for tag in ["user_input", "user_command"] {
        let extracted = xml_tags_removal(&next, tag);
        next = if extracted != next {
            js_trim(&extracted).to_string()
        } else {
            js_trim(&remove_open_tags(&next, tag)).to_string()
        };
    }
    next
}

/// `stripModeNotices`: `<mode_notice>…</mode_notice>` elements removed.
fn strip_mode_notices(input: &str) -> String {
    if js_trim(input).is_empty() {
        return String::new();
    }
    let (open, close) = ("<mode_notice>", "</mode_notice>");
    let mut result = input.to_string();
    let mut start = result.find(open);
    while let Some(s) = start {
        let Some(e) = result[s + open.len()..].find(close) else {
            break;
        };
        let end = s + open.len() + e + close.len();
        result.replace_range(s..end, "");
        start = result[s..].find(open).map(|i| s + i);
    }
    js_trim(&result).to_string()
}

/// The `slash` of a prompt that is wholly one `<user_command slash="…">…</user_command>`.
fn user_command_slash(input: &str) -> Option<String> {
    let t = js_trim(input);
    let lower = t.to_ascii_lowercase();
    let body = open_tag_at(&lower, 0, "user_command", true)?;
    if !lower.ends_with("</user_command>") || body > t.len() - "</user_command>".len() {
        return None;
    }
    let attrs = &t["<user_command".len()..body - 1];
    let at = attrs.to_ascii_lowercase().find("slash=\"")? + "slash=\"".len();
    let value = &attrs[at..];
    let value = js_trim(&value[..value.find('"')?]);
    (!value.is_empty()).then(|| value.to_string())
}

/// `formatDisplayUserInput`: what Cline shows (and hashes) of a stored prompt.
pub fn display_user_input(input: &str) -> String {
    let normalized = strip_mode_notices(&normalize_user_input(input));
    let Some(slash) = user_command_slash(input) else {
        return normalized;
    };
    if slash.eq_ignore_ascii_case("team") {
        let prefix = "spawn a team of agents for the following task:";
        let stripped = if normalized.to_lowercase().starts_with(prefix) {
            js_trim(&normalized[prefix.len()..]).to_string()
        } else {
            normalized
        };
        return if stripped.is_empty() {
            "/team".into()
        } else {
            format!("/team {stripped}")
        };
    }
    if normalized.is_empty() {
        format!("/{slash}")
    } else {
        format!("/{slash} {normalized}")
    }
}

/// `JSON.stringify(sourceMessageHashInput(message))` of one stored message (one
/// minified JSON object, as a dump line holds it): its role, content (a user's text
/// as `formatDisplayUserInput` gives it), agent, sessionId, metadata, modelInfo and
/// metrics, in that order. `None`: not a message object.
pub fn hash_input(message: &str) -> Option<String> {
    let obj = RawObject::parse(message).ok()?;
    let raw = |k: &str| {
        obj.get(k)
            .map_or("null".to_string(), |v| v.get().to_string())
    };
    let role = obj.get("role").and_then(crate::json::as_string)?;
    let mut content = raw("content");
    if role == "user"
        && let Some(c) = obj.get("content")
    {
        if let Some(s) = crate::json::as_string(c) {
            content = crate::json::quote(&display_user_input(&s));
        } else if let Ok(parts) = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(c.get())
        {
            let parts: Vec<String> = parts
                .into_iter()
                .map(|p| {
                    let part = RawObject::parse(p.get()).ok();
                    let is_text = part
                        .as_ref()
                        .and_then(|o| o.get("type"))
                        .and_then(crate::json::as_string)
                        .is_some_and(|t| t == "text");
                    if !is_text {
                        return p.get().to_string();
                    }
                    let text = part
                        .as_ref()
                        .and_then(|o| o.get("text"))
                        .and_then(crate::json::as_string)
                        .unwrap_or_default();
                    let shown = crate::json::quote(&display_user_input(&text));
                    spread(p.get(), &[("text", shown)]).unwrap_or_else(|| p.get().to_string())
                })
                .collect();
            content = format!("[{}]", parts.join(","));
        }
    }
    Some(format!(
        "[[\"role\",{}],[\"content\",{content}],[\"agent\",{}],[\"sessionId\",{}],[\"metadata\",{}],[\"modelInfo\",{}],[\"metrics\",{}]]",
        crate::json::quote(&role),
        raw("agent"),
        raw("sessionId"),
        raw("metadata"),
        raw("modelInfo"),
        raw("metrics"),
    ))
}

/// `sourcePrefixHash` of messages whose hash inputs are `inputs` (the first `count`).
pub fn prefix_hash(inputs: &[String], count: usize) -> String {
    let mut all = format!("cline-session-compaction-source-v2\n{count}\n");
    for i in inputs.iter().take(count) {
        all.push_str(i);
        all.push('\n');
    }
    format!(
        "sha256:{}",
        crate::sources::digest::sha256_hex(all.as_bytes())
    )
}

/// `messageBoundaryKey` of one stored message: `id:<id>`, `ts:<role>:<ts>`, or
/// `content:<role>:<content>`.
pub fn boundary_key(message: &str) -> Option<String> {
    let obj = RawObject::parse(message).ok()?;
    if let Some(id) = obj.get("id").and_then(crate::json::as_string)
        && !js_trim(&id).is_empty()
    {
        return Some(format!("id:{}", js_trim(&id)));
    }
    let role = obj.get("role").and_then(crate::json::as_string)?;
    if let Some(ts) = obj.get("ts")
        && let Ok(n) = ts.get().parse::<f64>()
        && n.is_finite()
    {
        return Some(format!("ts:{role}:{}", ts.get()));
    }
    hash_input(message)?;
    Some(format!(
        "content:{role}:{}",
        obj.get("content").map_or("", |c| c.get())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_lose_clines_wrappers_as_its_display_does() {
        assert_eq!(
            display_user_input("<user_input mode=\"act\">first prompt</user_input>"),
            "first prompt"
        );
        assert_eq!(display_user_input("  plain  "), "plain");
        assert_eq!(display_user_input(""), "");
        assert_eq!(
            display_user_input(
                "<user_input mode=\"plan\"><mode_notice>switched</mode_notice>\nplan it</user_input>"
            ),
            "plan it"
        );
        assert_eq!(
            display_user_input("<user_command slash=\"compact\">keep x</user_command>"),
            "/compact keep x"
        );
        assert_eq!(
            // As JavaScript's `/<user_input[^>]*>/g` reads it (checked with node).
            display_user_input("<user_input mode=\"act\">a <user_inputs> b"),
            "a  b"
        );
        assert_eq!(display_user_input("<user_input mode=\"act\">cut"), "cut");
    }

    #[test]
    fn the_prefix_hash_is_clines() {
        // A session Cline 3.0.65 compacted: its recorded hash of the first six
        // messages (tests/fixtures/cline holds the whole session).
        let messages = [
            r#"{"id":"805f4972-51e7-404a-ae6c-a75f6881eedc","role":"user","content":[{"type":"text","text":"<user_input mode=\"act\">RUNTOOL second</user_input>"}],"ts":1795792384197}"#,
            r#"{"id":"msg_-zZXlcDa","role":"assistant","content":[{"type":"tool_use","id":"call_mock_1","name":"run_commands","input":{"commands":["echo hi"]}}],"ts":1795792384607,"modelInfo":{"id":"mock-model","provider":"openai-compatible"},"metrics":{"inputTokens":10,"outputTokens":5,"cacheReadTokens":0,"cacheWriteTokens":0}}"#,
            r#"{"id":"msg_TDxAFzgj","role":"user","content":[{"type":"tool_result","tool_use_id":"call_mock_1","name":"run_commands","content":[{"query":"echo hi","result":"hi\n","success":true}]}],"ts":1795792384670}"#,
            r#"{"id":"msg_PTSMFg7Y","role":"assistant","content":[{"type":"text","text":"Mock reply"}],"ts":1795792384883,"modelInfo":{"id":"mock-model","provider":"openai-compatible"},"metrics":{"inputTokens":10,"outputTokens":5,"cacheReadTokens":0,"cacheWriteTokens":0}}"#,
            r#"{"id":"4a71e7a4-ca39-4ab6-bbbe-685d1c9bfb36","role":"user","content":[{"type":"text","text":"<user_input mode=\"act\">third</user_input>"}],"ts":1795792415459}"#,
            r#"{"id":"msg_IgKS9KFj","role":"assistant","content":[{"type":"text","text":"Mock reply"}],"ts":1795792415700,"modelInfo":{"id":"mock-model","provider":"openai-compatible"},"metrics":{"inputTokens":10,"outputTokens":5,"cacheReadTokens":0,"cacheWriteTokens":0}}"#,
        ];
        let inputs: Vec<String> = messages.iter().map(|m| hash_input(m).unwrap()).collect();
        assert_eq!(
            prefix_hash(&inputs, 6),
            "sha256:dc6faf2ae2feb9b3bb12349db84e215115e81d13c7716d7e3f7ac3d15df73b82"
        );
        assert_eq!(
            boundary_key(messages[5]).as_deref(),
            Some("id:msg_IgKS9KFj")
        );
    }
}
