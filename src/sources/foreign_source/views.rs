//! `meta.json` and `summary.txt` of another agent's session.

use super::ForeignSource;
use super::index::FileEntry;
use crate::agent::Agent;
use crate::error::Result;
use crate::store::index::tokens_of;
use crate::store::naming;
use crate::views::local_time;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

impl ForeignSource {
    pub(super) fn meta(&self, ns: &str, dir: &str, path: &Path, e: &FileEntry) -> Result<Vec<u8>> {
        let context_tokens = match e.context_tokens {
            Some(t) => t,
            None => self.conversation(path)?.2,
        };
        let (listing, links) = self.listing_and_links(path, e, ns);
        let s = &e.summary;
        let subagents: Vec<&str> = links
            .subagents
            .iter()
            .filter_map(|l| l.dir.as_deref())
            .collect();
        let meta = ForeignMeta {
            id: &s.id,
            dir,
            namespace: naming::mount_name(ns),
            cwd: s.cwd.as_deref(),
            host: self.host_shown(),
            cwd_on_host: s.cwd.as_deref(),
            title: listing.as_ref().and_then(|l| l.title.as_deref()),
            preview: s.preview.as_deref(),
            created_at: listing.as_ref().and_then(|l| l.created_at.as_deref()),
            updated_at: listing.as_ref().and_then(|l| l.updated_at.as_deref()),
            entries: s.entries,
            messages: s.messages,
            roles: &s.roles,
            compactions: s.compactions,
            malformed_lines: s.malformed_lines,
            transcript_tokens: tokens_of(e.stamp.size),
            context_tokens,
            size_bytes: e.stamp.size,
            writers: 0,
            agent: self.agent,
            source_path: &self.source_path_of(path),
            resumable: s.resumable,
            not_resumable_reason: s.not_resumable_reason.as_deref(),
            resume_rules: s.resume_rules.as_deref(),
            listed_by_agent: s.listed,
            archived: s.archived,
            parent_id: s.parent_id.as_deref(),
            parent: links.parent.as_deref(),
            agent_id: s.subagent.as_ref().map(|a| a.agent_id.as_str()),
            subagent: s.subagent.as_ref(),
            subagents,
            kept: self.kept_facts(path).map(|f| KeptMeta::of(&f, path)),
        };
        let mut out = serde_json::to_vec_pretty(&meta).expect("meta serializes");
        out.push(b'\n');
        Ok(out)
    }

    pub(super) fn summary_text(&self, ns: &str, path: &Path, e: &FileEntry) -> Vec<u8> {
        let s = &e.summary;
        let (listing, links) = self.listing_and_links(path, e, ns);
        let mut out = String::new();
        let heading = listing
            .as_ref()
            .and_then(|l| l.title.clone().or_else(|| l.preview.clone()))
            .unwrap_or_else(|| "(no messages)".into());
        out.push_str(&crate::store::index::one_line(&heading, 78));
        out.push_str("\n\n");
        let mut field = |label: &str, value: &str| {
            out.push_str(&format!("{label:<10} {value}\n"));
        };
        field("agent", self.agent.name());
        field("id", &s.id);
        field("cwd", s.cwd.as_deref().unwrap_or("(unknown)"));
        field("file", &self.source_path_of(path).to_string_lossy());
        if let Some(l) = &listing {
            field(
                "created",
                &l.created_at.as_deref().map(local_time).unwrap_or_default(),
            );
            field(
                "updated",
                &l.updated_at.as_deref().map(local_time).unwrap_or_default(),
            );
        }
        let roles: Vec<String> = s.roles.iter().map(|(r, n)| format!("{n} {r}")).collect();
        let roles = if roles.is_empty() {
            String::new()
        } else {
            format!(" ({})", roles.join(", "))
        };
        field("messages", &format!("{}{roles}", s.messages));
        field(
            "entries",
            &format!("{} ({} malformed lines)", s.entries, s.malformed_lines),
        );
        match (&s.resumable, &s.not_resumable_reason) {
            (true, _) if s.resume_rules.is_some() => field(
                "resumable",
                &format!("yes ({})", s.resume_rules.as_deref().unwrap_or_default()),
            ),
            (true, _) => field("resumable", "yes"),
            (false, Some(why)) => field("resumable", &format!("no: {why}")),
            (false, None) => field("resumable", "no"),
        }
        if let Some(rules) = &s.resume_rules {
            field("rebuilt", rules);
        }
        if let Some(parent) = &s.parent_id {
            match &links.parent {
                Some(dir) => field("parent", &format!("{dir} ({parent})")),
                None => field("parent", parent),
            }
        }
        if let Some(sub) = &s.subagent {
            let kind = sub.agent_type.as_deref().unwrap_or("subagent");
            field("subagent", &format!("{} ({kind})", sub.agent_id));
        }
        for l in &links.subagents {
            match (&l.dir, l.inline) {
                (_, true) => field("spawned", &format!("inline, from entry {}", l.id)),
                (Some(dir), _) => field("spawned", &format!("{} {dir}", l.id)),
                (None, _) => field("spawned", &format!("{} (no transcript shown)", l.id)),
            }
        }
        if s.archived {
            field("archived", "yes");
        }
        if let Some(f) = self.kept_facts(path) {
            let r = &f.record;
            let state = if f.source_deleted {
                "its source is gone"
            } else {
                "its source is still there"
            };
            field("kept", &format!("yes, fen-fs's copy ({state})"));
            if let Some(host) = &f.host {
                field("host", host);
            }
            field(
                "last seen",
                &format!("{} at its source", local_time(&r.last_seen)),
            );
            if let Some(n) = f.version {
                let g = &f.generation;
                field(
                    "version",
                    &format!(
                        "{n} of {}, kept {} until {}{}",
                        r.generations.len(),
                        local_time(&g.started),
                        g.ended.as_deref().map(local_time).unwrap_or_default(),
                        g.why
                            .as_deref()
                            .map(|w| format!(" ({w})"))
                            .unwrap_or_default()
                    ),
                );
            }
            if let Some(why) = &f.damaged {
                field("damaged", why);
            }
        }
        if let Some(p) = &s.preview {
            out.push_str(&format!(
                "\nfirst request:\n  {}\n",
                crate::store::index::one_line(p, 76)
            ));
        }
        out.into_bytes()
    }
}

#[derive(Serialize)]
struct ForeignMeta<'a> {
    id: &'a str,
    dir: &'a str,
    /// The namespace folder as the mount shows it.
    namespace: String,
    cwd: Option<&'a str>,
    /// The machine it was recorded on, and its cwd there (§12).
    host: &'a str,
    cwd_on_host: Option<&'a str>,
    title: Option<&'a str>,
    preview: Option<&'a str>,
    created_at: Option<&'a str>,
    updated_at: Option<&'a str>,
    entries: u64,
    messages: u64,
    roles: &'a BTreeMap<String, u64>,
    compactions: u64,
    malformed_lines: u64,
    transcript_tokens: u64,
    context_tokens: u64,
    size_bytes: u64,
    writers: u64,
    agent: Agent,
    source_path: &'a Path,
    resumable: bool,
    not_resumable_reason: Option<&'a str>,
    /// How far `conversation.json` is a guess at the agent's rebuild (`"best effort"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    resume_rules: Option<&'a str>,
    /// Whether the agent's own session picker lists it.
    listed_by_agent: bool,
    /// Whether the agent keeps it archived.
    archived: bool,
    /// The session it was spawned from (a subagent's), if any: its id, and its folder
    /// relative to this namespace's folder when it is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<&'a str>,
    /// A subagent's id among its parent's subagents, and what its agent recorded of
    /// it (type, the parent's call that started it, depth, finished, workflow run).
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subagent: Option<&'a crate::sources::foreign::SubagentFacts>,
    /// The folders of the subagents it started (relative to its namespace's folder).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    subagents: Vec<&'a str>,
    /// Shown from fen's kept copy (§11).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    kept: Option<KeptMeta>,
}

/// `meta.json`'s keys for a session shown from its kept copy.
#[derive(Serialize)]
struct KeptMeta {
    kept: bool,
    source_deleted: bool,
    /// When the keeper first and last saw the session at its source.
    first_seen_at: String,
    last_seen_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    deleted_noticed_at: Option<String>,
    /// An earlier version (1: the oldest), and when and why it was replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version_kept_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version_replaced_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version_why: Option<String>,
    /// Versions of the session kept, the current one included.
    versions: usize,
    /// The generation file the bytes come from.
    kept_path: std::path::PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    kept_damaged: Option<String>,
}

impl KeptMeta {
    fn of(f: &crate::sources::kept::CopyFacts, path: &Path) -> KeptMeta {
        let r = &f.record;
        let g = &f.generation;
        KeptMeta {
            kept: true,
            source_deleted: f.source_deleted,
            first_seen_at: r.first_seen.clone(),
            last_seen_at: r.last_seen.clone(),
            deleted_noticed_at: r.deleted_noticed.clone(),
            version: f.version,
            version_kept_at: f.version.map(|_| g.started.clone()),
            version_replaced_at: f.version.and(g.ended.clone()),
            version_why: f.version.and(g.why.clone()),
            versions: r.generations.len(),
            kept_path: path.to_path_buf(),
            kept_damaged: f.damaged.clone(),
        }
    }
}
