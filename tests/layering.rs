//! The layering rules of docs/architecture.md, checked on the source:
//! no import cycle between the crate's top-level modules, `fuser` named only in
//! `src/fuse/`, `clap` only in `src/main.rs` and `src/commands/`, each server's
//! crate only in its server (`rmcp` in `src/mcp/`, `axum` in `src/web/`: both thin
//! servers over `src/history/`, which names neither); and that a new agent is one
//! folder: no code outside `src/sources/<agent>/` names an agent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Code without comments (line comments and doc comments), so prose that names a
/// module or a crate is not an import.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// (file relative to src/, its code) for every source file.
fn sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(src())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, code_of(&std::fs::read_to_string(&p).unwrap()))
        })
        .collect()
}

fn top_module(rel: &str) -> String {
    rel.split('/')
        .next()
        .unwrap()
        .trim_end_matches(".rs")
        .to_string()
}

/// Top-level modules a file's code names through `crate::X` or `use crate::{X, …}`.
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = ident(item.trim());
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let files = sources();
    let modules: BTreeSet<String> = files.iter().map(|(rel, _)| top_module(rel)).collect();
    for (rel, code) in &files {
        let from = top_module(rel);
        if from == "main" || from == "lib" {
            continue;
        }
        for to in crate_refs(code) {
            if to != from && modules.contains(&to) {
                graph.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    // Depth-first search for a back edge; report the cycle found.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|n| n == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(cycle) = visit(node, &graph, &mut Vec::new(), &mut done) {
            panic!(
                "import cycle between modules: {}\nmodule graph: {graph:#?}",
                cycle.join(" -> ")
            );
        }
    }
}

#[test]
fn the_cycle_check_sees_imports() {
    // The parser the check relies on: grouped, nested and plain paths.
    let refs = crate_refs("use crate::{store::x, views};\nfn f() { crate::tree::Tree::new(); }");
    assert_eq!(
        refs,
        ["store", "tree", "views"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    assert!(crate_refs("// see crate::tree\n").contains("tree"));
    assert!(!crate_refs(&code_of("// see crate::tree\n")).contains("tree"));
}

fn files_naming(krate: &str) -> Vec<String> {
    let use_it = format!("use {krate}");
    let path_it = format!("{krate}::");
    sources()
        .into_iter()
        .filter(|(_, code)| {
            code.contains(&use_it)
                || code
                    .match_indices(&path_it)
                    .any(|(i, _)| !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        })
        .map(|(rel, _)| rel)
        .collect()
}

#[test]
fn only_the_fuse_adapter_names_fuser() {
    let outside: Vec<String> = files_naming("fuser")
        .into_iter()
        .filter(|f| !f.starts_with("fuse/"))
        .collect();
    assert!(
        outside.is_empty(),
        "fuser named outside src/fuse/: {outside:?}"
    );
}

#[test]
fn only_main_and_commands_name_clap() {
    let outside: Vec<String> = files_naming("clap")
        .into_iter()
        .filter(|f| f != "main.rs" && !f.starts_with("commands/"))
        .collect();
    assert!(
        outside.is_empty(),
        "clap named outside main.rs and src/commands/: {outside:?}"
    );
    assert!(
        !files_naming("clap").is_empty(),
        "the check found no use of clap at all: it is not looking"
    );
    assert!(!files_naming("fuser").is_empty(), "no use of fuser found");
}

/// A file's code before its `#[cfg(test)]` module (the crate's tests sit last in
/// their files), so that unit tests may name any agent.
fn without_tests(code: &str) -> &str {
    code.find("#[cfg(test)]").map_or(code, |i| &code[..i])
}

/// The module an agent's code lives in (`cursor-ide` → `cursor_ide`).
fn module_of(name: &str) -> String {
    name.replace('-', "_")
}

/// Whether `rel` (relative to src/) is one agent's own place: `sources/<m>.rs`,
/// `sources/<m>/…`, or a module of its beside them (`sources/<m>_store.rs`, …).
fn agents_own_place(rel: &str) -> bool {
    let Some(rest) = rel.strip_prefix("sources/") else {
        return false;
    };
    let top = rest.split('/').next().unwrap().trim_end_matches(".rs");
    fen_fs::agent::Agent::ALL.iter().any(|a| {
        let m = module_of(a.name());
        top == m || top.starts_with(&format!("{m}_"))
    })
}

/// Where code outside an agent's folder may still name one agent, and why: the list
/// is the seam's whole exception.
const MAY_NAME_AN_AGENT: &[(&str, &str)] = &[
    ("agent.rs", "declares each agent and its name"),
    ("sources/registry.rs", "lists each agent's kind"),
    // fen-fs writes sessions for these agents (SPEC §10): the writers, their
    // dispatch and the conversion's rules are about the target agents by name.
    (
        "resume/mod.rs",
        "resume --in: the targets and their writers",
    ),
    (
        "resume/convert.rs",
        "the conversion's rules per source and target",
    ),
    ("resume/claude.rs", "the writer of Claude Code sessions"),
    ("resume/codex.rs", "the writer of Codex sessions"),
    ("resume/pi.rs", "the writer of pi sessions"),
    ("resume/fen.rs", "the writer of fen sessions"),
];

/// Names that are something else where they stand: (file, what it names).
const NOT_THE_AGENT: &[(&str, &str)] = &[
    // LiteLLM's provider `gemini` (Google's models), not Gemini CLI.
    ("usage/prices.rs", "\"gemini\""),
    // The programming languages' keyword `continue`, not Continue's CLI.
    ("views/html/highlight.rs", "\"continue\""),
];

/// What names agent `name` (variant `variant`) in `code`: `Agent::Variant`, a path
/// into its module (`sources::m::`, `super::m::`, `sources::{…, m, …}`), or its name
/// as a string literal.
fn names_agent(code: &str, name: &str, variant: &str) -> Option<String> {
    let word_end = |s: &str| !s.starts_with(|c: char| c.is_alphanumeric() || c == '_');
    let word_start = |before: &str| !before.ends_with(|c: char| c.is_alphanumeric() || c == '_');
    let m = module_of(name);
    let variant_pat = format!("Agent::{variant}");
    for (i, _) in code.match_indices(&variant_pat) {
        if word_start(&code[..i]) && word_end(&code[i + variant_pat.len()..]) {
            return Some(variant_pat);
        }
    }
    for prefix in ["sources::", "super::"] {
        for (i, _) in code.match_indices(prefix) {
            let rest = &code[i + prefix.len()..];
            let items: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(str::trim)
                    .collect(),
                None => vec![rest],
            };
            for item in items {
                let module: String = item
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if module == m || module.starts_with(&format!("{m}_")) {
                    return Some(format!("{prefix}{module}"));
                }
            }
        }
    }
    let literal = format!("\"{name}\"");
    code.contains(&literal).then_some(literal)
}

#[test]
fn a_new_agent_is_one_folder() {
    let mut found = Vec::new();
    for (rel, code) in sources() {
        if agents_own_place(&rel) || MAY_NAME_AN_AGENT.iter().any(|(f, _)| *f == rel) {
            continue;
        }
        let code = without_tests(&code);
        for a in fen_fs::agent::Agent::ALL {
            if a == fen_fs::agent::Agent::Fen {
                // fen is the writable store: fen-specific code names it anywhere.
                continue;
            }
            if let Some(how) = names_agent(code, a.name(), &format!("{a:?}"))
                && !NOT_THE_AGENT.contains(&(rel.as_str(), how.as_str()))
            {
                found.push(format!("{rel}: {how}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "code outside an agent's folder (src/sources/<agent>/) names that agent; ask its \
         kind (src/sources/kind.rs) instead, or say in MAY_NAME_AN_AGENT why not: {found:#?}"
    );
}

#[test]
fn the_seam_check_sees_agents_named() {
    let named = |code: &str| names_agent(code, "cursor-ide", "CursorIde");
    assert!(named("if a == Agent::CursorIde {").is_some());
    assert!(named("Agent::CursorIdeX").is_none());
    assert!(named("crate::sources::cursor_ide::read(x)").is_some());
    assert!(named("use super::{pi, cursor_ide};").is_some());
    assert!(named("super::cursor_ide_store::X").is_some());
    assert!(named("let k = \"cursor-ide\";").is_some());
    assert!(named("crate::sources::registry::kind(agent)").is_none());
    assert!(agents_own_place("sources/claude/kind.rs"));
    assert!(agents_own_place("sources/cursor_store/reader.rs"));
    assert!(!agents_own_place("sources/foreign_source/usage.rs"));
    assert!(without_tests("a\n#[cfg(test)]\nAgent::Claude").ends_with("a\n"));
}

#[test]
fn each_server_names_its_crate_alone_over_one_history() {
    for (krate, home) in [("rmcp", "mcp/"), ("axum", "web/")] {
        let named = files_naming(krate);
        assert!(
            !named.is_empty(),
            "no use of {krate} found: the check is not looking"
        );
        let outside: Vec<&String> = named.iter().filter(|f| !f.starts_with(home)).collect();
        assert!(
            outside.is_empty(),
            "{krate} named outside src/{home}: {outside:?}"
        );
    }
    // The history both serve is its own module, and each server reads it.
    let files = sources();
    let uses_history = |dir: &str| {
        files
            .iter()
            .any(|(rel, code)| rel.starts_with(dir) && crate_refs(code).contains("history"))
    };
    assert!(uses_history("mcp/") && uses_history("web/"));
    assert!(
        !files.iter().any(|(rel, code)| rel.starts_with("history/")
            && (crate_refs(code).contains("mcp") || crate_refs(code).contains("web"))),
        "history/ must not know its servers"
    );
}
