//! Qwen Code's `conversation.json` messages (`{role, parts}`: the Gemini API's
//! `Content`, as Qwen keeps its history) as neutral messages: Gemini CLI's conversion,
//! which reads the same parts (text, thoughts, `functionCall`, `functionResponse`,
//! inline data).

/// One `{role, parts}` item (`None`: not a message object).
pub fn to_neutral(v: &serde_json::Value) -> Option<crate::neutral::Message> {
    crate::sources::gemini::to_neutral(v)
}
