//! `summary.txt` (§2.2): a digest for people, at most ~80 columns.

use super::conversation::latest_summary;
use super::local_time;
use crate::store::index::{SessionIndex, message_text};
use crate::store::projection::Projection;
use crate::store::session::Session;
use std::fs::File;
use std::os::unix::fs::FileExt;

const WIDTH: usize = 78;

pub fn render(session: &Session, idx: &SessionIndex, file: &File) -> Vec<u8> {
    let mut s = String::new();
    let heading = idx
        .title
        .as_deref()
        .or(idx.preview.as_deref())
        .unwrap_or("(no messages yet)");
    s.push_str(&wrap(heading, WIDTH, ""));
    s.push_str(&"=".repeat(heading.chars().count().clamp(3, WIDTH)));
    s.push('\n');
    let id = super::meta::session_id(session, idx);
    s.push_str(&field("id", &id));
    s.push_str(&field("cwd", idx.cwd().unwrap_or("(unknown)")));
    s.push_str(&format!(
        "created   {}\n",
        idx.created_at().map(local_time).unwrap_or_default()
    ));
    let updated = idx.updated_at.as_deref().or(idx.created_at());
    s.push_str(&format!(
        "updated   {}\n",
        updated.map(local_time).unwrap_or_default()
    ));
    let roles: Vec<String> = idx.roles.iter().map(|(r, n)| format!("{r} {n}")).collect();
    let table = idx.messages.read().unwrap();
    s.push_str(&format!(
        "messages  {}{}\n",
        table.len(),
        if roles.is_empty() {
            String::new()
        } else {
            format!(" ({})", roles.join(", "))
        }
    ));
    let custom: u64 = idx.custom_entries.values().sum();
    s.push_str(&format!(
        "entries   {} ({} custom, {} compactions, {} malformed lines)\n",
        idx.entries,
        custom,
        idx.compactions.len(),
        idx.malformed_total()
    ));
    let context = Projection::of(idx).context_tokens(&table);
    drop(table);
    s.push_str(&format!(
        "tokens    ~{context} in context, ~{} in the transcript\n",
        idx.transcript_tokens
    ));
    if let Some(ci) = idx.latest_valid_compaction {
        let c = &idx.compactions[ci];
        let num = |n: Option<u64>| n.map_or("?".to_string(), |n| n.to_string());
        s.push_str(&format!(
            "\nLast compaction: {} ({}), {} -> {} tokens\n",
            c.timestamp.as_deref().map(local_time).unwrap_or_default(),
            c.trigger.as_deref().unwrap_or("manual"),
            num(c.tokens_before),
            num(c.tokens_after)
        ));
        if let Ok(Some(summary)) = latest_summary(idx, file) {
            s.push_str(&wrap_lines(&summary, 20));
        }
    }
    if let Some((start, len)) = idx.first_user_message {
        let mut buf = vec![0u8; len as usize];
        if file.read_exact_at(&mut buf, start).is_ok() {
            s.push_str("\nFirst request:\n");
            s.push_str(&wrap_lines(
                &message_text(&String::from_utf8_lossy(&buf)),
                10,
            ));
        }
    }
    s.into_bytes()
}

/// `label     value`, the value wrapped (long paths split) under its own column.
fn field(label: &str, value: &str) -> String {
    const COL: usize = 10;
    let wrapped = wrap(value, WIDTH - COL, &" ".repeat(COL));
    let wrapped = if wrapped.is_empty() {
        format!("{}\n", " ".repeat(COL))
    } else {
        wrapped
    };
    format!("{label:<COL$}{}", &wrapped[COL..])
}

/// Indented, wrapped paragraphs, at most `max_lines` lines.
fn wrap_lines(text: &str, max_lines: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for para in text.lines() {
        let w = wrap(para, WIDTH - 2, "  ");
        lines.extend(w.lines().map(String::from));
        if para.trim().is_empty() {
            lines.push(String::new());
        }
    }
    let cut = lines.len() > max_lines;
    lines.truncate(max_lines);
    if cut {
        lines.push("  […]".into());
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Greedy word wrap; words longer than the width are split.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: String = word.to_string();
        while word.chars().count() > width {
            if !line.is_empty() {
                out.push_str(&format!("{indent}{line}\n"));
                line.clear();
            }
            let head: String = word.chars().take(width).collect();
            out.push_str(&format!("{indent}{head}\n"));
            word = word.chars().skip(width).collect();
        }
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&format!("{indent}{line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() {
        out.push_str(&format!("{indent}{line}\n"));
    }
    out
}
