//! Code highlighting for the session's HTML: a CSS class per language on the block
//! (`language-rust`) and one small pass that wraps comments, strings, numbers and
//! keywords in `<span class="tok-…">`. A crate such as syntect would bring its grammar
//! sets and regex engine into the binary for colours; this pass knows the few token
//! kinds a reader's eye needs, for the languages agents mostly show. Everything it
//! writes is escaped text inside spans it makes itself.

use super::escape_text_into as escape_into;

/// Code larger than this is shown escaped but not tokenised (a huge block reads
/// the same without colours, and costs nothing to render).
const MAX_HIGHLIGHT_BYTES: usize = 256 * 1024;

/// How a language's tokens look.
struct Syntax {
    line_comments: &'static [&'static str],
    block_comment: Option<(&'static str, &'static str)>,
    /// Quote characters that open a string; backtick strings may span lines.
    quotes: &'static [char],
    keywords: &'static [&'static str],
    /// SQL's keywords are written in either case.
    keywords_any_case: bool,
}

const RUST_KW: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "Some", "None", "Ok", "Err",
];
const C_KW: &[&str] = &[
    "auto",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "continue",
    "default",
    "delete",
    "do",
    "double",
    "else",
    "enum",
    "extends",
    "extern",
    "false",
    "final",
    "finally",
    "float",
    "for",
    "if",
    "implements",
    "import",
    "include",
    "int",
    "interface",
    "long",
    "namespace",
    "new",
    "null",
    "nullptr",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "template",
    "this",
    "throw",
    "throws",
    "true",
    "try",
    "typedef",
    "union",
    "unsigned",
    "using",
    "var",
    "virtual",
    "void",
    "volatile",
    "while",
    "fun",
    "val",
    "when",
    "override",
    "func",
    "let",
    "guard",
];
const JS_KW: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "from",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "of",
    "private",
    "public",
    "readonly",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "type",
    "typeof",
    "undefined",
    "var",
    "void",
    "while",
    "yield",
];
const GO_KW: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "false",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "nil",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "true",
    "type",
    "var",
];
const PY_KW: &[&str] = &[
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif",
    "else", "except", "False", "finally", "for", "from", "global", "if", "import", "in", "is",
    "lambda", "None", "nonlocal", "not", "or", "pass", "raise", "return", "self", "True", "try",
    "while", "with", "yield",
];
const RUBY_KW: &[&str] = &[
    "begin", "class", "def", "do", "else", "elsif", "end", "ensure", "false", "if", "module",
    "nil", "require", "rescue", "return", "self", "then", "true", "unless", "until", "when",
    "while", "yield",
];
const SH_KW: &[&str] = &[
    "case", "do", "done", "elif", "else", "esac", "export", "fi", "for", "function", "if", "in",
    "local", "return", "then", "until", "while", "echo", "cd", "set", "unset",
];
const SQL_KW: &[&str] = &[
    "select", "from", "where", "and", "or", "not", "insert", "into", "values", "update", "set",
    "delete", "create", "table", "index", "view", "drop", "alter", "join", "left", "right",
    "inner", "outer", "on", "group", "by", "order", "having", "limit", "as", "null", "is", "in",
    "like", "distinct", "union", "all", "primary", "key", "begin", "commit", "with", "case",
    "when", "then", "else", "end", "asc", "desc",
];
const JSON_KW: &[&str] = &["true", "false", "null"];
const YAML_KW: &[&str] = &["true", "false", "null", "yes", "no", "on", "off"];

const C_LIKE: Syntax = Syntax {
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '\''],
    keywords: C_KW,
    keywords_any_case: false,
};

/// The syntax of a fenced block's language (its info string's first word), if known.
fn syntax(lang: &str) -> Option<Syntax> {
    let l = lang.to_ascii_lowercase();
    Some(match l.as_str() {
        "rust" | "rs" => Syntax {
            keywords: RUST_KW,
            quotes: &['"'],
            ..C_LIKE
        },
        "c" | "h" | "cpp" | "c++" | "cc" | "hpp" | "cxx" | "java" | "kotlin" | "kt" | "swift"
        | "cs" | "csharp" | "c#" | "scala" | "dart" | "php" | "objc" | "zig" => C_LIKE,
        "js" | "javascript" | "jsx" | "ts" | "typescript" | "tsx" | "mjs" | "cjs" => Syntax {
            keywords: JS_KW,
            quotes: &['"', '\'', '`'],
            ..C_LIKE
        },
        "go" | "golang" => Syntax {
            keywords: GO_KW,
            quotes: &['"', '\'', '`'],
            ..C_LIKE
        },
        "css" | "scss" | "less" => Syntax {
            line_comments: &[],
            keywords: &[],
            ..C_LIKE
        },
        "python" | "py" | "python3" => Syntax {
            line_comments: &["#"],
            block_comment: None,
            quotes: &['"', '\''],
            keywords: PY_KW,
            keywords_any_case: false,
        },
        "ruby" | "rb" => Syntax {
            line_comments: &["#"],
            block_comment: None,
            quotes: &['"', '\''],
            keywords: RUBY_KW,
            keywords_any_case: false,
        },
        "sh" | "bash" | "zsh" | "shell" | "console" | "shellsession" | "fish" | "ps1"
        | "powershell" | "dockerfile" | "makefile" | "make" | "perl" | "pl" | "r" | "nix" => {
            Syntax {
                line_comments: &["#"],
                block_comment: None,
                quotes: &['"', '\''],
                keywords: SH_KW,
                keywords_any_case: false,
            }
        }
        "yaml" | "yml" | "toml" | "ini" | "conf" | "cfg" | "properties" | "env" | "dotenv" => {
            Syntax {
                line_comments: &["#"],
                block_comment: None,
                quotes: &['"', '\''],
                keywords: YAML_KW,
                keywords_any_case: false,
            }
        }
        "sql" | "psql" | "mysql" | "sqlite" => Syntax {
            line_comments: &["--"],
            block_comment: Some(("/*", "*/")),
            quotes: &['\''],
            keywords: SQL_KW,
            keywords_any_case: true,
        },
        "lua" | "haskell" | "hs" => Syntax {
            line_comments: &["--"],
            block_comment: None,
            quotes: &['"', '\''],
            keywords: &[],
            keywords_any_case: false,
        },
        "json" | "jsonl" | "json5" | "jsonc" => Syntax {
            line_comments: &[],
            block_comment: None,
            quotes: &['"'],
            keywords: JSON_KW,
            keywords_any_case: false,
        },
        _ => return None,
    })
}

/// A language name as a class name: lower case, `[a-z0-9+#_-]` only, at most 32
/// characters; empty when nothing is left.
pub fn language_class(lang: &str) -> String {
    lang.chars()
        .take(32)
        .filter_map(|c| {
            let c = c.to_ascii_lowercase();
            (c.is_ascii_alphanumeric() || matches!(c, '+' | '#' | '_' | '-')).then_some(c)
        })
        .collect()
}

/// Writes `code` escaped, with token spans when `lang` is known (`diff`/`patch`:
/// one span per added, removed or hunk line).
pub fn highlight(lang: &str, code: &str, out: &mut String) {
    let l = lang.to_ascii_lowercase();
    if matches!(l.as_str(), "diff" | "patch" | "udiff") {
        diff_lines(code, out);
        return;
    }
    match syntax(&l) {
        Some(s) if code.len() <= MAX_HIGHLIGHT_BYTES => tokens(&s, code, out),
        _ => escape_into(out, code),
    }
}

/// A patch or unified diff, one span per line that adds, removes, or heads a hunk
/// or file (`*** Update File:` lines of `apply_patch` too).
pub fn diff_lines(text: &str, out: &mut String) {
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        let class = if body.starts_with("+++")
            || body.starts_with("---")
            || body.starts_with("***")
            || body.starts_with("diff ")
            || body.starts_with("index ")
        {
            Some("d-file")
        } else if body.starts_with("@@") {
            Some("d-hunk")
        } else if body.starts_with('+') {
            Some("d-add")
        } else if body.starts_with('-') {
            Some("d-del")
        } else {
            None
        };
        match class {
            Some(c) => {
                out.push_str("<span class=\"");
                out.push_str(c);
                out.push_str("\">");
                escape_into(out, body);
                out.push_str("</span>");
            }
            None => escape_into(out, body),
        }
        if line.ends_with('\n') {
            out.push('\n');
        }
    }
}

fn span(out: &mut String, class: &str, text: &str) {
    out.push_str("<span class=\"tok-");
    out.push_str(class);
    out.push_str("\">");
    escape_into(out, text);
    out.push_str("</span>");
}

fn tokens(s: &Syntax, code: &str, out: &mut String) {
    let b = code.as_bytes();
    let mut i = 0;
    // Plain text is copied in runs, not character by character.
    let mut plain = 0;
    let flush = |out: &mut String, from: usize, to: usize| {
        if from < to {
            escape_into(out, &code[from..to]);
        }
    };
    while i < b.len() {
        let rest = &code[i..];
        if let Some(c) = s.line_comments.iter().find(|c| rest.starts_with(**c)) {
            let _ = c;
            flush(out, plain, i);
            let end = rest.find('\n').map_or(b.len(), |n| i + n);
            span(out, "c", &code[i..end]);
            i = end;
            plain = i;
            continue;
        }
        if let Some((open, close)) = s.block_comment
            && rest.starts_with(open)
        {
            flush(out, plain, i);
            let end = rest[open.len()..]
                .find(close)
                .map_or(b.len(), |n| i + open.len() + n + close.len());
            span(out, "c", &code[i..end]);
            i = end;
            plain = i;
            continue;
        }
        let c = b[i];
        if c.is_ascii() && s.quotes.contains(&(c as char)) {
            flush(out, plain, i);
            let end = string_end(b, i, c);
            span(out, "s", &code[i..end]);
            i = end;
            plain = i;
            continue;
        }
        if c.is_ascii_digit() && (i == 0 || !is_word(b[i - 1])) {
            flush(out, plain, i);
            let mut end = i + 1;
            while end < b.len() && (b[end].is_ascii_alphanumeric() || matches!(b[end], b'_' | b'.'))
            {
                end += 1;
            }
            span(out, "n", &code[i..end]);
            i = end;
            plain = i;
            continue;
        }
        if is_word(c) && !c.is_ascii_digit() && (i == 0 || !is_word(b[i - 1])) {
            let mut end = i + 1;
            while end < b.len() && is_word(b[end]) {
                end += 1;
            }
            let word = &code[i..end];
            let keyword = if s.keywords_any_case {
                s.keywords.iter().any(|k| k.eq_ignore_ascii_case(word))
            } else {
                s.keywords.contains(&word)
            };
            if keyword {
                flush(out, plain, i);
                span(out, "k", word);
                plain = end;
            }
            i = end;
            continue;
        }
        // Advance by one character (never into the middle of a UTF-8 sequence).
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    flush(out, plain, b.len());
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Where the string opened by `quote` at `start` ends (after its closing quote; at
/// the line's end for an unclosed `"` or `'`, the text's end for a backtick).
fn string_end(b: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\n' if quote != b'`' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hl(lang: &str, code: &str) -> String {
        let mut out = String::new();
        highlight(lang, code, &mut out);
        out
    }

    #[test]
    fn rust_tokens() {
        let h = hl(
            "rust",
            "fn main() { let x = 42; // done\n println!(\"<hi>\"); }",
        );
        assert!(h.contains("<span class=\"tok-k\">fn</span> main()"), "{h}");
        assert!(
            h.contains("<span class=\"tok-k\">let</span> x = <span class=\"tok-n\">42</span>;")
        );
        assert!(h.contains("<span class=\"tok-c\">// done</span>\n"));
        assert!(
            h.contains("<span class=\"tok-s\">\"&lt;hi&gt;\"</span>"),
            "{h}"
        );
    }

    #[test]
    fn unknown_languages_are_only_escaped() {
        assert_eq!(hl("brainfuck", "<b>&</b>"), "&lt;b&gt;&amp;&lt;/b&gt;");
        assert_eq!(hl("", "if x"), "if x");
    }

    #[test]
    fn sql_keywords_in_any_case_python_comments_and_unclosed_strings() {
        let h = hl("SQL", "SELECT id from t -- all\n");
        assert!(
            h.contains("<span class=\"tok-k\">SELECT</span> id <span class=\"tok-k\">from</span>")
        );
        assert!(h.contains("<span class=\"tok-c\">-- all</span>"));
        let h = hl("py", "x = 'open\ny = 1 # c");
        assert!(h.contains("<span class=\"tok-s\">'open</span>\ny"), "{h}");
        assert!(h.contains("<span class=\"tok-c\"># c</span>"));
    }

    #[test]
    fn words_with_digits_and_non_ascii_text_stay_whole() {
        let h = hl("rust", "let naïve_x2 = \"日本\"; v2");
        assert!(h.contains("naïve_x2"), "{h}");
        assert!(h.contains("v2") && !h.contains("tok-n\">2"));
    }

    #[test]
    fn diffs_mark_lines() {
        let h = hl("diff", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old <\n+new\n same");
        assert!(h.contains("<span class=\"d-file\">--- a/x</span>\n"));
        assert!(h.contains("<span class=\"d-hunk\">@@ -1 +1 @@</span>\n"));
        assert!(h.contains(
            "<span class=\"d-del\">-old &lt;</span>\n<span class=\"d-add\">+new</span>\n same"
        ));
    }

    #[test]
    fn language_classes_are_clean() {
        assert_eq!(language_class("C++"), "c++");
        assert_eq!(language_class("x\" onload=\"y"), "xonloady");
    }
}
