//! Names made from values: the namespace slug of a working directory, the creation
//! stamp and timestamps, session ids. Paths are `layout`'s.

use chrono::{DateTime, Utc};

/// Namespace of a working directory (§1): strip one leading `/`, map `/`, `\`, `:` to
/// `-`, wrap in `--`. Lossy by design; the header keeps the real cwd.
pub fn slug(cwd: &str) -> String {
    let body = cwd.strip_prefix('/').unwrap_or(cwd);
    let mapped: String = body
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{mapped}--")
}

/// A working directory made canonical without looking at the file system: no `.`
/// segments, `..` taken lexically (never above `/`), no repeated or trailing `/`.
/// `/home/u/proj/`, `/home/u/./proj` and `/home/u/x/../proj` all name `/home/u/proj`;
/// symbolic links are not resolved (the agent's cwd is what it said).
pub fn normalize_cwd(cwd: &str) -> String {
    let absolute = cwd.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in cwd.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// The folder name the mount shows for namespace `ns`: the slug without its `--`
/// wrapping, so that no name in the mount begins with `-` (which `cd`, `ls`, `jq` and
/// tab completion take for an option). `--home-u-proj--` → `home-u-proj`. A name that
/// would be empty (the cwd `/`) or begin with `-` or `_` gets a `_` in front, so the
/// mapping can be undone: `----` → `_`, `---x--` → `_-x`, `--_x--` → `__x`. The store
/// on disk keeps the slug.
pub fn mount_name(ns: &str) -> String {
    let body = match ns.strip_prefix("--").and_then(|b| b.strip_suffix("--")) {
        Some(body) if ns.len() >= 4 => body,
        // Not a slug (a folder fen-fs did not make): shown as it is, escaped the same way.
        _ => ns,
    };
    if body.is_empty() || body.starts_with('-') || body.starts_with('_') {
        format!("_{body}")
    } else {
        body.to_string()
    }
}

/// The namespaces a mount folder name may stand for, most likely first: the slug it
/// was made from, else a folder of that very name.
pub fn namespaces_of_mount_name(name: &str) -> Vec<String> {
    let body = name.strip_prefix('_').unwrap_or(name);
    let mut out = vec![format!("--{body}--")];
    if !name.starts_with('-') {
        out.push(body.to_string());
    }
    out
}

/// Filename-safe creation stamp, `YYYY-MM-DDTHH-MM-SS-mmmZ`; sorts by time.
pub fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H-%M-%S-%3fZ").to_string()
}

/// The time a `stamp` names, if `s` is one.
pub fn parse_stamp(s: &str) -> Option<DateTime<Utc>> {
    chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H-%M-%S-%3fZ")
        .ok()
        .map(|t| t.and_utc())
}

/// RFC 3339 UTC with millisecond precision and a `Z` suffix, as entries carry.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// `1–64 of A-Za-z0-9_-`: safe as a path component, no `..`, no `/`.
pub fn is_valid_session_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The session id in a file stem `<stamp>_<id>`, if the stem has that shape.
pub fn session_id_of_dir(dir: &str) -> &str {
    match dir.split_once('_') {
        Some((_, id)) if !id.is_empty() => id,
        _ => dir,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_names_never_begin_with_a_dash_and_map_back() {
        for (cwd, name) in [
            ("/home/u/proj", "home-u-proj"),
            ("/", "_"),
            ("/-x", "_-x"),
            ("/_x", "__x"),
            ("/a:b", "a-b"),
        ] {
            let ns = slug(cwd);
            assert_eq!(mount_name(&ns), name, "{cwd}");
            assert!(!mount_name(&ns).starts_with('-'));
            assert_eq!(namespaces_of_mount_name(name)[0], ns, "{cwd}");
        }
    }

    #[test]
    fn cwds_are_normalized_lexically() {
        for (given, want) in [
            ("/home/u/proj/", "/home/u/proj"),
            ("/home/u/./proj", "/home/u/proj"),
            ("/home/u/x/../proj", "/home/u/proj"),
            ("//home//u/proj", "/home/u/proj"),
            ("/..", "/"),
            ("/", "/"),
            ("/a/../..", "/"),
            ("rel/../x", "x"),
        ] {
            assert_eq!(normalize_cwd(given), want, "{given}");
        }
    }

    #[test]
    fn slug_follows_the_spec() {
        assert_eq!(slug("/home/u/proj"), "--home-u-proj--");
        assert_eq!(slug("/"), "----");
        assert_eq!(slug("/a-b"), slug("/a/b"));
        assert_eq!(slug("C:\\work\\x"), "--C--work-x--");
    }

    #[test]
    fn stamp_is_filename_safe_and_sortable() {
        let t = DateTime::parse_from_rfc3339("2026-11-21T14:03:11.123Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(stamp(t), "2026-11-21T14-03-11-123Z");
        assert_eq!(timestamp(t), "2026-11-21T14:03:11.123Z");
        assert_eq!(parse_stamp(&stamp(t)), Some(t));
        assert_eq!(parse_stamp("2026-11-21"), None);
    }

    #[test]
    fn session_ids() {
        assert!(is_valid_session_id("abc_DEF-09"));
        assert!(!is_valid_session_id(""));
        assert!(!is_valid_session_id("a/b"));
        assert!(!is_valid_session_id(".."));
        assert!(!is_valid_session_id(&"x".repeat(65)));
        assert!(is_valid_session_id(&"x".repeat(64)));
        assert_eq!(session_id_of_dir("2026-11-21T14-03-11-123Z_ab_c"), "ab_c");
    }
}
