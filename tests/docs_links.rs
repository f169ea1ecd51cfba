//! Every relative link in README.md and docs/*.md points to a file that exists, and
//! every `#anchor` to a heading of that file, named as GitHub names headings (lower
//! case; letters, digits, spaces, `-` and `_` kept, the rest dropped; spaces become
//! `-`; a repeated name gets `-1`, `-2`, …). Links in code (fenced or indented blocks,
//! `inline spans`) are not links. A second test shows the checker fails on a broken
//! link and on a missing anchor.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The lines of `text` that are prose, not code: fenced blocks and indented blocks
/// (four spaces after a blank line) are left out.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut fenced = false;
    let mut indented = false;
    let mut blank_before = true;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            blank_before = false;
            continue;
        }
        if fenced {
            continue;
        }
        let code = line.starts_with("    ") || line.starts_with('\t');
        indented = code && (indented || blank_before);
        blank_before = line.trim().is_empty();
        if !indented {
            out.push((n + 1, line));
        }
    }
    out
}

/// `line` without its `code spans`.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                out.push_str(&rest[start..]);
                return out;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links `[text](target)` and images in `line`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut out = Vec::new();
    let mut rest = line.as_str();
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        // A title after the target: `[t](path "title")`.
        let target = after[..end].split_whitespace().next().unwrap_or("");
        let target = target.trim_start_matches('<').trim_end_matches('>');
        if !target.is_empty() {
            out.push(target.to_string());
        }
        rest = &after[end..];
    }
    out
}

/// GitHub's anchor of a heading's text.
fn slug(heading: &str) -> String {
    // A link in a heading counts by its text.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(i) = rest.find("](") {
        text.push_str(&rest[..i]);
        rest = rest[i + 2..].split_once(')').map_or("", |(_, r)| r);
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of `text`'s headings (ATX headings outside code), repeats numbered.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim().trim_end_matches('#'));
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The broken links of the Markdown files `files` (paths relative to their folder),
/// each as `file:line: target: why`.
fn broken_links(files: &[PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let at = format!("{}:{n}: {target}", file.display());
                let dest = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().unwrap().join(path)
                };
                if !dest.exists() {
                    broken.push(format!("{at}: no file {}", dest.display()));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if dest.extension().is_none_or(|e| e != "md") {
                    broken.push(format!("{at}: an anchor into a file that is not Markdown"));
                    continue;
                }
                let text = std::fs::read_to_string(&dest).unwrap();
                if !anchors(&text).iter().any(|a| a == anchor) {
                    broken.push(format!("{at}: no heading #{anchor} in {}", dest.display()));
                }
            }
        }
    }
    broken
}

/// README.md and docs/*.md of this checkout.
fn docs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    files.extend(more);
    files
}

#[test]
fn every_link_of_the_readme_and_the_docs_points_somewhere() {
    let files = docs();
    assert!(files.len() > 1, "no docs/*.md");
    let broken = broken_links(&files);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_checker_finds_a_broken_link_and_a_missing_anchor() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.md"), tmp.path().join("b.md"));
    std::fs::write(
        &b,
        "# B\n\n## Mounting with mount(8) and /etc/fstab\n\n## `--in fen|pi`\n\n## B\n",
    )
    .unwrap();
    std::fs::write(
        &a,
        "# A\n\n[ok](b.md) [ok](b.md#mounting-with-mount8-and-etcfstab) [ok](b.md#--in-fenpi)\n\
         [ok](b.md#b-1) [ok](#a) [web](https://example.org/x.md)\n\
         `[code](nowhere.md)`\n\n    [indented code](nowhere.md)\n\n\
         ```\n[fenced](nowhere.md)\n```\n\
         [gone](missing.md) [no heading](b.md#nothing-here) [self](#b)\n",
    )
    .unwrap();
    let broken = broken_links(&[a]);
    assert_eq!(broken.len(), 3, "{broken:#?}");
    assert!(broken[0].contains("missing.md: no file"), "{broken:#?}");
    assert!(
        broken[1].contains("no heading #nothing-here"),
        "{broken:#?}"
    );
    assert!(broken[2].contains("no heading #b"), "{broken:#?}");
}
