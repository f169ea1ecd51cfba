//! Redaction (SPEC §16): every text of a session scanned for secrets, each replaced
//! by `[REDACTED:<kind>]`, with a count per kind. The rules are data (`rules.rs`);
//! this module runs them: each rule's regex finds its candidates (the regex crate
//! skips to each rule's literal — a prefix such as `ghp_`, or a keyword — with its
//! own prefilter, so a text without one is passed over at memchr's speed), its check
//! keeps the real finds, and overlapping finds are merged so that nothing of a
//! secret is left. One `RegexSet` over all the rules was tried first: it must run
//! every pattern's automaton over every byte, and scanned about four times slower
//! than the rules one by one. Optionally (`--redact-paths`) the home folder becomes
//! `~` and the user name `user`.
//!
//! Only what leaves through `fen-fs export` (and the web page's Export button) is
//! redacted: the mount, `fen-fs mcp` and the web page show the owner's data as it is.

pub mod rules;

use crate::neutral::{Message, Part, SessionFacts};
use regex::Regex;
use rules::{Check, RULES, Rule};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Each rule's pattern, compiled once.
static COMPILED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|r| {
            regex::RegexBuilder::new(r.pattern)
                .size_limit(64 << 20)
                .build()
                .unwrap_or_else(|e| panic!("redaction rule {}: {e}", r.kind))
        })
        .collect()
});

/// What was replaced, per kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub secrets: BTreeMap<&'static str, u64>,
    /// Home folders replaced by `~`, user names by `user` (`--redact-paths`).
    pub home: u64,
    pub user: u64,
}

impl Counts {
    pub fn total(&self) -> u64 {
        self.secrets.values().sum()
    }

    /// `2 anthropic-key, 1 private-key`: each kind found, most first.
    pub fn kinds(&self) -> String {
        let mut kinds: Vec<(&str, u64)> = self.secrets.iter().map(|(k, n)| (*k, *n)).collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let list: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        list.join(", ")
    }

    /// `redacted 3: 2 anthropic-key, 1 private-key` (most first), or `redacted 0`.
    pub fn summary(&self) -> String {
        if self.total() == 0 {
            "redacted 0".into()
        } else {
            format!("redacted {}: {}", self.total(), self.kinds())
        }
    }

    pub fn add(&mut self, other: &Counts) {
        for (k, n) in &other.secrets {
            *self.secrets.entry(k).or_default() += n;
        }
        self.home += other.home;
        self.user += other.user;
    }
}

/// Whose paths `--redact-paths` hides.
#[derive(Debug, Clone, Default)]
pub struct PathNames {
    /// Home folders (`/home/ada`), replaced by `~`.
    pub homes: Vec<String>,
    /// User names, replaced by `user` where they stand as a word.
    pub users: Vec<String>,
}

/// User names too common as words to replace everywhere they occur ("root cause").
const COMMON_NAMES: &[&str] = &[
    "root", "user", "admin", "dev", "test", "ubuntu", "debian", "runner", "build", "app", "home",
    "node", "git", "guest", "www", "data", "main", "work", "code",
];

impl PathNames {
    /// This machine's: `$HOME` and the user name (`$USER`, `$LOGNAME`, else the
    /// password database's), plus the homes a session's recorded folders show
    /// (`/home/NAME/…`, `/Users/NAME/…`: another machine's, for a peer's session).
    pub fn of_this_user<S: AsRef<str>>(recorded: &[S]) -> PathNames {
        let mut names = PathNames::default();
        if let Some(h) = std::env::var_os("HOME").and_then(|h| h.into_string().ok()) {
            let h = h.trim_end_matches('/').to_string();
            if h.len() > 1 {
                names.homes.push(h);
            }
        }
        let user = ["USER", "LOGNAME"]
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
            .or_else(login_name);
        if let Some(u) = user {
            names.users.push(u);
        }
        for path in recorded {
            let mut parts = path.as_ref().split('/');
            if let (Some(""), Some(top @ ("home" | "Users")), Some(name)) =
                (parts.next(), parts.next(), parts.next())
                && !name.is_empty()
            {
                names.homes.push(format!("/{top}/{name}"));
                names.users.push(name.to_string());
            }
        }
        names.homes.sort_by_key(|h| std::cmp::Reverse(h.len()));
        names.homes.dedup();
        names.users.sort();
        names.users.dedup();
        names
    }
}

fn login_name() -> Option<String> {
    // getpwuid_r: the name of the user this process runs as.
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: buf and pwd outlive the call; result points into them or is null.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name is a NUL-terminated string inside buf.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    name.to_str().ok().map(str::to_string)
}

/// The compiled path rules.
struct PathRules {
    home: Option<Regex>,
    user: Option<Regex>,
}

impl PathRules {
    fn new(names: &PathNames) -> PathRules {
        let homes: Vec<String> = names.homes.iter().map(|h| regex::escape(h)).collect();
        let users: Vec<String> = names
            .users
            .iter()
            .filter(|u| u.len() >= 3 && !COMMON_NAMES.contains(&u.to_ascii_lowercase().as_str()))
            .map(|u| regex::escape(u))
            .collect();
        PathRules {
            home: (!homes.is_empty()).then(|| {
                Regex::new(&format!(
                    r"(?:{})(?P<end>/|[^A-Za-z0-9._-]|$)",
                    homes.join("|")
                ))
                .expect("home folder pattern")
            }),
            user: (!users.is_empty()).then(|| {
                Regex::new(&format!(r"(?-u:\b)(?:{})(?-u:\b)", users.join("|")))
                    .expect("user name pattern")
            }),
        }
    }
}

/// What to redact.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Also hide these homes and user names (`--redact-paths`).
    pub paths: Option<PathNames>,
}

/// Runs the rules over texts, counting what it replaces.
pub struct Redactor {
    paths: Option<PathRules>,
}

/// One secret found: its byte range and rule.
#[derive(Debug, Clone, Copy)]
struct Find {
    start: usize,
    end: usize,
    rule: usize,
}

impl Redactor {
    pub fn new(options: &Options) -> Redactor {
        LazyLock::force(&COMPILED);
        Redactor {
            paths: options.paths.as_ref().map(PathRules::new),
        }
    }

    /// `text` redacted, or `None` when nothing in it is.
    pub fn text(&self, text: &str, counts: &mut Counts) -> Option<String> {
        let secrets = redact_secrets(text, counts);
        let Some(paths) = &self.paths else {
            return secrets;
        };
        let base = secrets.as_deref().unwrap_or(text);
        let mut changed: Option<String> = None;
        if let Some(home) = &paths.home {
            let mut n = 0;
            let out = home.replace_all(base, |c: &regex::Captures| {
                n += 1;
                format!("~{}", &c["end"])
            });
            if n > 0 {
                counts.home += n;
                changed = Some(out.into_owned());
            }
        }
        if let Some(user) = &paths.user {
            let now = changed.as_deref().unwrap_or(base);
            let mut n = 0;
            let out = user.replace_all(now, |_: &regex::Captures| {
                n += 1;
                "user"
            });
            if n > 0 {
                counts.user += n;
                changed = Some(out.into_owned());
            }
        }
        changed.or(secrets)
    }

    /// Redacts `s` in place.
    pub fn string(&self, s: &mut String, counts: &mut Counts) {
        if let Some(r) = self.text(s, counts) {
            *s = r;
        }
    }

    /// Every string of a JSON value, keys included.
    pub fn value(&self, v: &mut Value, counts: &mut Counts) {
        match v {
            Value::String(s) => self.string(s, counts),
            Value::Array(a) => a.iter_mut().for_each(|x| self.value(x, counts)),
            Value::Object(o) => {
                let renamed: Vec<(String, String)> = o
                    .keys()
                    .filter_map(|k| self.text(k, counts).map(|r| (k.clone(), r)))
                    .collect();
                for (old, new) in renamed {
                    if let Some(x) = o.remove(&old) {
                        o.insert(new, x);
                    }
                }
                o.values_mut().for_each(|x| self.value(x, counts));
            }
            _ => {}
        }
    }

    /// Every text of a message: its parts (text, tool names, inputs and outputs,
    /// thinking, other parts), ids, timestamp and model. An image cannot be scanned:
    /// it is replaced by a line saying what it was. A vendor's sealed reasoning is
    /// dropped (nothing shows it, and it may hold anything).
    pub fn message(&self, m: &mut Message, counts: &mut Counts) {
        for p in &mut m.parts {
            self.part(p, counts);
        }
        for s in [&mut m.entry, &mut m.timestamp].into_iter().flatten() {
            self.string(s, counts);
        }
        if let Some(model) = &mut m.model {
            self.string(&mut model.model, counts);
        }
        if let crate::neutral::Role::Other(r) = &mut m.role {
            self.string(r, counts);
        }
    }

    fn part(&self, p: &mut Part, counts: &mut Counts) {
        match p {
            Part::Text { text } => self.string(text, counts),
            Part::Image { .. } => {
                let what = crate::views::markdown::image(p);
                *p = Part::Other {
                    what: "image".into(),
                    text: format!(
                        "{what} left out of the export: images are not scanned for secrets"
                    ),
                };
            }
            Part::ToolCall { id, name, input } => {
                self.string(id, counts);
                self.string(name, counts);
                self.value(input, counts);
            }
            Part::ToolResult {
                call_id,
                name,
                content,
                ..
            } => {
                self.string(call_id, counts);
                if let Some(n) = name {
                    self.string(n, counts);
                }
                for c in content {
                    self.part(c, counts);
                }
            }
            Part::Reasoning { text, opaque, .. } => {
                self.string(text, counts);
                *opaque = None;
            }
            Part::Other { what, text } => {
                self.string(what, counts);
                self.string(text, counts);
            }
        }
    }

    /// Every text of a session's facts: title, preview, folders, file path, names.
    pub fn facts(&self, f: &mut SessionFacts, counts: &mut Counts) {
        for s in [
            &mut f.title,
            &mut f.preview,
            &mut f.cwd,
            &mut f.cwd_on_host,
            &mut f.created_at,
            &mut f.updated_at,
            &mut f.not_resumable_reason,
            &mut f.host,
        ]
        .into_iter()
        .flatten()
        {
            self.string(s, counts);
        }
        for s in [&mut f.id, &mut f.namespace, &mut f.dir] {
            self.string(s, counts);
        }
        let path = f.source_path.to_string_lossy().into_owned();
        if let Some(p) = self.text(&path, counts) {
            f.source_path = p.into();
        }
    }

    /// One line of `conversation.json` (a JSON value, or `[`/`]`) with every string
    /// in it redacted; `None` when nothing is. Strings are replaced where they stand,
    /// so the rest of the line keeps its bytes. A line that is not JSON is redacted
    /// as text.
    pub fn json_line(&self, line: &str, counts: &mut Counts) -> Option<String> {
        let body = line.trim_end_matches([',', '\n', '\r', ' ']);
        if body.is_empty() || body == "[" || body == "]" || body == "[]" {
            return None;
        }
        let Ok(raw) = serde_json::from_str::<&serde_json::value::RawValue>(body) else {
            return self.text(line, counts);
        };
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        let mut local = Counts::default();
        if !self.raw(line, raw, &mut edits, &mut local) {
            // A key held a secret: the line is rebuilt from its parsed value.
            let mut v: Value = serde_json::from_str(body).ok()?;
            let mut again = Counts::default();
            self.value(&mut v, &mut again);
            counts.add(&again);
            let tail = &line[body.len()..];
            return Some(format!("{}{tail}", serde_json::to_string(&v).ok()?));
        }
        counts.add(&local);
        if edits.is_empty() {
            return None;
        }
        edits.sort_by_key(|e| e.0);
        let mut out = String::with_capacity(line.len());
        let mut at = 0;
        for (start, len, new) in edits {
            out.push_str(&line[at..start]);
            out.push_str(&new);
            at = start + len;
        }
        out.push_str(&line[at..]);
        Some(out)
    }

    /// Collects the replacements of the strings within `raw` (a slice of `line`);
    /// false when an object key would change.
    fn raw(
        &self,
        line: &str,
        raw: &serde_json::value::RawValue,
        edits: &mut Vec<(usize, usize, String)>,
        counts: &mut Counts,
    ) -> bool {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'"') => {
                if let Ok(s) = serde_json::from_str::<String>(text)
                    && let Some(r) = self.text(&s, counts)
                {
                    edits.push((
                        crate::json::offset_in(line, text),
                        text.len(),
                        crate::json::quote(&r),
                    ));
                }
                true
            }
            Some(b'{') => {
                let Ok(obj) = crate::json::RawObject::parse(text) else {
                    return true;
                };
                for (k, v) in &obj.fields {
                    if self.text(k, &mut Counts::default()).is_some() {
                        return false;
                    }
                    if !self.raw(line, v, edits, counts) {
                        return false;
                    }
                }
                true
            }
            Some(b'[') => {
                let Ok(items) = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(text)
                else {
                    return true;
                };
                items.iter().all(|v| self.raw(line, v, edits, counts))
            }
            _ => true,
        }
    }
}

/// The secrets of `text` replaced, or `None` when there are none.
fn redact_secrets(text: &str, counts: &mut Counts) -> Option<String> {
    let mut finds: Vec<Find> = Vec::new();
    for (i, (rule, re)) in RULES.iter().zip(COMPILED.iter()).enumerate() {
        for cap in re.captures_iter(text) {
            let whole = cap.get(0).expect("group 0");
            let secret = cap.name("s").unwrap_or(whole);
            if secret.is_empty() || !check(rule, text, &cap, secret.as_str()) {
                continue;
            }
            finds.push(Find {
                start: secret.start(),
                end: secret.end(),
                rule: i,
            });
        }
    }
    if finds.is_empty() {
        return None;
    }
    // Overlapping finds become one, named after the first rule among them.
    finds.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
    let mut merged: Vec<Find> = Vec::with_capacity(finds.len());
    for f in finds {
        match merged.last_mut() {
            Some(last) if f.start < last.end => {
                last.end = last.end.max(f.end);
                last.rule = last.rule.min(f.rule);
            }
            _ => merged.push(f),
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in &merged {
        out.push_str(&text[at..f.start]);
        out.push_str("[REDACTED:");
        out.push_str(RULES[f.rule].kind);
        out.push(']');
        at = f.end;
        *counts.secrets.entry(RULES[f.rule].kind).or_default() += 1;
    }
    out.push_str(&text[at..]);
    Some(out)
}

fn check(rule: &Rule, text: &str, cap: &regex::Captures, secret: &str) -> bool {
    match rule.check {
        Check::None => true,
        Check::Random { min_entropy } => {
            // The part after a known prefix (`sk-`) is what must look random.
            let body = secret.strip_prefix("sk-").unwrap_or(secret);
            random_enough(body, min_entropy)
        }
        Check::MixedCase => {
            secret.bytes().any(|b| b.is_ascii_uppercase())
                && secret.bytes().any(|b| b.is_ascii_lowercase())
        }
        Check::NotPlaceholder => !placeholder(secret),
        Check::Assignment => cap
            .name("kw")
            .is_some_and(|kw| assignment(&text[name_before(text, kw.start())..kw.end()], secret)),
    }
}

/// Where the identifier that goes on at `at` starts: back over letters, digits,
/// `_`, `-` and `.` (`API_KEY`, `x-api-key`, `db.password`).
fn name_before(text: &str, at: usize) -> usize {
    let b = text.as_bytes();
    let mut start = at;
    while start > 0
        && (b[start - 1].is_ascii_alphanumeric() || matches!(b[start - 1], b'_' | b'-' | b'.'))
    {
        start -= 1;
    }
    // A name begins with a letter or `_` (`.5token` is not one).
    while start < at && !(b[start].is_ascii_alphabetic() || b[start] == b'_') {
        start += 1;
    }
    start
}

/// Shannon entropy of `s`'s bytes, in bits per byte.
pub fn entropy(s: &str) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut freq = [0u32; 256];
    for b in s.bytes() {
        freq[b as usize] += 1;
    }
    let n = s.len() as f64;
    freq.iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

fn random_enough(s: &str, min_entropy: f64) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes().any(|b| b.is_ascii_alphabetic())
        && entropy(s) >= min_entropy
}

/// Values that stand for a secret rather than being one.
fn placeholder(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let first = v.as_bytes().first().copied().unwrap_or(b' ');
    matches!(first, b'$' | b'%' | b'<' | b'{' | b'&' | b'*' | b'[' | b'(')
        || v.bytes().all(|b| b == v.as_bytes()[0])
        || [
            "password",
            "passwd",
            "pass",
            "secret",
            "pwd",
            "changeme",
            "example",
            "your",
            "xxxx",
            "****",
            "....",
            "redacted",
            "placeholder",
            "dummy",
            "<",
            "...",
        ]
        .iter()
        .any(|p| lower == *p || (p.len() >= 4 && lower.contains(p)))
}

/// The words of an identifier, lower case: `apiKey`, `API_KEY`, `api-key` and
/// `api.key` are all `api`, `key`.
fn words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.') {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Words before `key`/`token` that make the name an ordinary one.
const NOT_SECRET_BEFORE: &[&str] = &[
    "public",
    "publishable",
    "primary",
    "foreign",
    "sort",
    "partition",
    "cache",
    "idempotency",
    "hash",
    "row",
    "range",
    "dedup",
    "lookup",
    "map",
    "dict",
    "object",
    "page",
    "next",
    "continuation",
    "max",
    "num",
    "total",
    "input",
    "output",
    "sync",
    "pagination",
    "bos",
    "eos",
    "pad",
    "unk",
    "sep",
    "cls",
    "mask",
    "prompt",
    "completion",
    "reasoning",
    "cached",
    "context",
    "sort",
    "group",
    "shard",
    "routing",
    "composite",
    "unique",
    "index",
    "keyboard",
    "hot",
    "short",
    "sign",
    "ssh",
];

/// A secret-named assignment whose value is a secret: see `Check::Assignment`.
fn assignment(name: &str, value: &str) -> bool {
    let w = words(name);
    let Some(last) = w.last() else {
        return false;
    };
    let before = w.len().checked_sub(2).map(|i| w[i].as_str());
    let joined = w.concat();
    if matches!(joined.as_str(), "pwd" | "oldpwd") {
        return false;
    }
    if before.is_some_and(|b| NOT_SECRET_BEFORE.contains(&b)) {
        return false;
    }
    let password = ["password", "passwd", "passphrase", "pwd", "pass"].contains(&last.as_str())
        || last.ends_with("password")
        || last.ends_with("passwd");
    let secret = ["secret", "token", "credential", "credentials"].contains(&last.as_str())
        || last.ends_with("secret")
        || last.ends_with("token")
        || (last == "key" && before.is_some())
        || ["apikey", "secretkey", "privatekey", "accesskey", "authkey"]
            .iter()
            .any(|k| last.ends_with(k));
    if !password && !secret {
        return false;
    }
    let v = value.trim_end_matches(['.', ',', ';']);
    if placeholder(v) || reference(v) {
        return false;
    }
    if password {
        let classes = [
            v.bytes().any(|b| b.is_ascii_lowercase()),
            v.bytes().any(|b| b.is_ascii_uppercase()),
            v.bytes().any(|b| b.is_ascii_digit()),
            v.bytes()
                .any(|b| !b.is_ascii_alphanumeric() && !matches!(b, b'_' | b'.' | b'-')),
        ]
        .iter()
        .filter(|x| **x)
        .count();
        v.len() >= 6 && classes >= 2 && entropy(v) >= 2.0
    } else {
        v.len() >= 16 && random_enough(v, 3.0)
    }
}

/// A value that names another value: `settings.SECRET_KEY`, `os.environ`,
/// `self.token`, `process.env.API_KEY`.
fn reference(v: &str) -> bool {
    v.contains('.')
        && v.split('.').all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !p.as_bytes()[0].is_ascii_digit()
        })
}

#[cfg(test)]
mod tests;
