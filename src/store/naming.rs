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
    fit_name(&format!("--{mapped}--"))
}

/// The longest namespace name fen-fs makes: NAME_MAX (255) less the room that the
/// cache files named after a namespace need (`<ns>.index` and its temporary name
/// `.<ns>.index.<pid>.<seq>.tmp`, 43 bytes more at most).
pub const MAX_NAME_BYTES: usize = 200;

/// `name` if it is at most `MAX_NAME_BYTES` long; else its first bytes (cut on a
/// character boundary) and `-` and 16 hex digits of its FNV-1a hash, inside the same
/// `--` wrapping if it has one: `--home-u-…-1f0e2d3c4b5a6978--`. The hash is of the
/// whole name, fixed by this code (not std's `DefaultHasher`), so a long cwd gets the
/// same namespace in every run and every version.
pub fn fit_name(name: &str) -> String {
    if name.len() <= MAX_NAME_BYTES {
        return name.to_string();
    }
    let hash = format!("{:016x}", fnv1a64(name.as_bytes()));
    let (wrap, body) = match name.strip_prefix("--").and_then(|b| b.strip_suffix("--")) {
        Some(body) => ("--", body),
        None => ("", name),
    };
    let mut cut = MAX_NAME_BYTES - 2 * wrap.len() - 1 - hash.len();
    while !body.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{wrap}{}-{hash}{wrap}", &body[..cut])
}

/// A file name as text on one line: UTF-8 as it is, every other byte (and control
/// characters) as `\xNN`, and `\` as `\\`, so the bytes can be told back exactly.
pub fn escape_name(name: &std::ffi::OsStr) -> String {
    use std::fmt::Write;
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in name.as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                c if c.is_ascii_control() => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// 64-bit FNV-1a: tiny, fixed for good (names on disk depend on it).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
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
/// mapping can be undone: `----` → `_`, `---x--` → `_-x`, `--_x--` → `__x`. So does a
/// name the mount root itself uses (`ctl`, `search`, `usage`: the cwds `/ctl`,
/// `/search` and `/usage` show as `_ctl`, `_search` and `_usage`). The store on disk
/// keeps the slug.
pub fn mount_name(ns: &str) -> String {
    let body = match ns.strip_prefix("--").and_then(|b| b.strip_suffix("--")) {
        Some(body) if ns.len() >= 4 => body,
        // Not a slug (a folder fen-fs did not make): shown as it is, escaped the same way.
        _ => ns,
    };
    if body.is_empty()
        || body.starts_with('-')
        || body.starts_with('_')
        || ROOT_NAMES.contains(&body)
    {
        format!("_{body}")
    } else {
        body.to_string()
    }
}

/// Names in the mount's root that are not namespaces.
pub const ROOT_NAMES: [&str; 3] = ["ctl", "search", "usage"];

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
    use chrono::{Datelike, Timelike};
    // Written digit by digit: chrono's `format` parses its pattern on every call, and
    // this runs twice per append (the entry and the ctl log line).
    let year = t.year();
    if !(0..=9999).contains(&year) {
        return t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    }
    let ms = t.timestamp_subsec_millis().min(999);
    let mut out = [0u8; 24];
    let mut put = |at: usize, value: u32, width: usize| {
        let mut v = value;
        for i in (0..width).rev() {
            out[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, year as u32, 4);
    put(5, t.month(), 2);
    put(8, t.day(), 2);
    put(11, t.hour(), 2);
    put(14, t.minute(), 2);
    put(17, t.second().min(59), 2);
    put(20, ms, 3);
    for (at, sep) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ] {
        out[at] = sep;
    }
    String::from_utf8_lossy(&out).into_owned()
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

/// `dir` as the absolute path a session's header would record: relative to the
/// current directory, normalized lexically (no trailing `/`, no `.` or `..`).
pub fn absolute_cwd(dir: &std::path::Path) -> String {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    normalize_cwd(&abs.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_match_chronos_format() {
        let mut ns: i64 = 0;
        for step in 0..20_000i64 {
            // Spread over 0000..9999 with varying milliseconds.
            ns = ns
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407 + step);
            let secs = (ns.rem_euclid(253_402_300_799)) - 62_167_219_200;
            let t = DateTime::<Utc>::from_timestamp(secs, (ns.rem_euclid(1_000_000_000)) as u32)
                .unwrap();
            assert_eq!(timestamp(t), t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string());
        }
    }

    #[test]
    fn mount_names_never_begin_with_a_dash_and_map_back() {
        for (cwd, name) in [
            ("/home/u/proj", "home-u-proj"),
            ("/", "_"),
            ("/-x", "_-x"),
            ("/_x", "__x"),
            ("/a:b", "a-b"),
            ("/search", "_search"),
            ("/usage", "_usage"),
            ("/ctl", "_ctl"),
            ("/search/x", "search-x"),
        ] {
            let ns = slug(cwd);
            assert_eq!(mount_name(&ns), name, "{cwd}");
            assert!(!mount_name(&ns).starts_with('-'));
            assert_eq!(namespaces_of_mount_name(name)[0], ns, "{cwd}");
        }
    }

    #[test]
    fn long_slugs_are_cut_with_a_stable_hash() {
        // Known FNV-1a values: the function must never change.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        let cwd = format!("/home/u/{}", "é".repeat(150));
        let ns = slug(&cwd);
        assert!(
            ns.len() <= MAX_NAME_BYTES && ns.len() > MAX_NAME_BYTES - 4,
            "{ns}"
        );
        assert!(ns.starts_with("--home-u-é") && ns.ends_with("--"), "{ns}");
        // Pinned: the same cwd names the same folder in every run and version.
        let hash = format!(
            "{:016x}",
            fnv1a64(format!("--{}--", &cwd[1..].replace('/', "-")).as_bytes())
        );
        assert!(ns.ends_with(&format!("-{hash}--")), "{ns}");
        assert_eq!(slug(&cwd), ns);
        assert_eq!(
            slug(&format!("/{}", "x".repeat(300))),
            format!("--{}-{}--", "x".repeat(179), "5b577ff9a71e6601")
        );
        // A different long cwd with the same first bytes gets another name.
        assert_ne!(slug(&format!("{cwd}x")), ns);
        // The mount name maps back to it.
        let name = mount_name(&ns);
        assert_eq!(namespaces_of_mount_name(&name)[0], ns);
        // Short names are untouched; a 4000-byte cwd fits too.
        assert_eq!(slug("/a"), "--a--");
        assert!(slug(&"/x".repeat(2000)).len() <= MAX_NAME_BYTES);
        assert_eq!(fit_name(&"y".repeat(201)).len(), MAX_NAME_BYTES);
    }

    #[test]
    fn names_that_are_not_utf8_are_escaped() {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"a\\b\xff\xe9t\xc3\xa9\n.jsonl");
        assert_eq!(escape_name(name), r"a\\b\xff\xe9té\x0a.jsonl");
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
