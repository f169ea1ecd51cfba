//! A message's Markdown as HTML that can hold nothing active.
//!
//! Two guards, each enough alone: (1) pulldown-cmark's events are turned into HTML
//! here, where raw HTML (`Event::Html`, `Event::InlineHtml`) is written as escaped
//! text, a link keeps its target only for `http:`, `https:` and `mailto:`, an image
//! is never loaded (it becomes a link, or text), and every text is escaped; (2) the
//! result goes through ammonia with an allow-list of exactly the tags and attributes
//! written here, so a mistake in (1) still cannot let a script, an event handler, a
//! frame or another scheme through.

use super::escape_into;
use super::highlight::{highlight, language_class};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// Text larger than this is shown as preformatted text, not parsed as Markdown (a
/// pasted log of megabytes reads better as it is, and costs little).
const MAX_MARKDOWN_BYTES: usize = 1 << 20;

/// The tags this renderer writes, and nothing else.
const TAGS: &[&str] = &[
    "p",
    "br",
    "em",
    "strong",
    "del",
    "sup",
    "sub",
    "a",
    "code",
    "pre",
    "span",
    "ul",
    "ol",
    "li",
    "blockquote",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "dl",
    "dt",
    "dd",
];

static SANITIZER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let mut b = ammonia::Builder::empty();
    b.tags(TAGS.iter().copied().collect())
        .generic_attributes(["class"].into_iter().collect())
        .tag_attributes(HashMap::from([
            ("a", HashSet::from(["href", "title"])),
            ("ol", HashSet::from(["start"])),
        ]))
        .url_schemes(HashSet::from(["http", "https", "mailto"]))
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some("noopener noreferrer nofollow"))
        .strip_comments(true);
    b
});

/// `text` (Markdown) as safe HTML, appended to `out`.
pub fn render(text: &str, out: &mut String) {
    if text.len() > MAX_MARKDOWN_BYTES {
        out.push_str("<pre class=\"plain\">");
        super::escape_text_into(out, text);
        out.push_str("</pre>");
        return;
    }
    let mut html = String::with_capacity(text.len() + text.len() / 4 + 16);
    to_html(text, &mut html);
    out.push_str(&SANITIZER.clean(&html).to_string());
}

/// The scheme-checked target of a link, or `None` when it may not be followed
/// (`javascript:`, `data:`, `vbscript:`, `file:`, relative paths, ...). Browsers
/// ignore ASCII tabs, newlines and leading control characters in a scheme
/// (`java\tscript:`); they are dropped before the check.
pub fn safe_href(url: &str) -> Option<String> {
    let clean: String = url
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let clean = clean.trim_start_matches(|c: char| c <= ' ').trim_end();
    let lower = clean.get(..8).unwrap_or(clean).to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:"))
        .then(|| clean.to_string())
}

struct State {
    /// Inside a table's head (cells are `th`).
    in_head: bool,
    alignments: Vec<Alignment>,
    cell: usize,
    /// Code block being collected: its language and text.
    code: Option<(String, String)>,
    /// Inside an image: its alt text is written as text; `true` when it opened a link.
    image: Vec<bool>,
    /// Links opened (whether each wrote an `<a>`).
    links: Vec<bool>,
}

fn to_html(text: &str, out: &mut String) {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut s = State {
        in_head: false,
        alignments: Vec::new(),
        cell: 0,
        code: None,
        image: Vec::new(),
        links: Vec::new(),
    };
    for event in Parser::new_ext(text, options) {
        if let Some((_, code)) = &mut s.code {
            match event {
                Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => {
                    code.push_str(&t);
                    continue;
                }
                Event::End(TagEnd::CodeBlock) => {}
                _ => continue,
            }
        }
        match event {
            Event::Start(tag) => start(tag, &mut s, out),
            Event::End(tag) => end(tag, &mut s, out),
            Event::Text(t) => escape_into(out, &t),
            Event::Code(t) => {
                out.push_str("<code>");
                escape_into(out, &t);
                out.push_str("</code>");
            }
            // Raw HTML is shown as the characters it is.
            Event::Html(t) | Event::InlineHtml(t) => {
                out.push_str("<span class=\"raw-html\">");
                escape_into(out, &t);
                out.push_str("</span>");
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                out.push_str("<code>");
                escape_into(out, &t);
                out.push_str("</code>");
            }
            Event::FootnoteReference(t) => {
                out.push_str("[^");
                escape_into(out, &t);
                out.push(']');
            }
            // Line breaks as written: prompts and answers are read as typed.
            Event::SoftBreak | Event::HardBreak => out.push_str("<br>\n"),
            Event::Rule => out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => out.push_str(if done {
                "<span class=\"task\">☑</span> "
            } else {
                "<span class=\"task\">☐</span> "
            }),
        }
    }
}

fn heading(level: HeadingLevel) -> &'static str {
    // A message's headings sit below the page's and the message's own.
    match level {
        HeadingLevel::H1 => "h3",
        HeadingLevel::H2 => "h4",
        HeadingLevel::H3 => "h5",
        _ => "h6",
    }
}

fn align_class(a: Option<&Alignment>) -> &'static str {
    match a {
        Some(Alignment::Left) => " class=\"al-l\"",
        Some(Alignment::Center) => " class=\"al-c\"",
        Some(Alignment::Right) => " class=\"al-r\"",
        _ => "",
    }
}

fn start(tag: Tag<'_>, s: &mut State, out: &mut String) {
    match tag {
        Tag::Paragraph => out.push_str("<p>"),
        Tag::Heading { level, .. } => {
            out.push('<');
            out.push_str(heading(level));
            out.push('>');
        }
        Tag::BlockQuote(_) => out.push_str("<blockquote>\n"),
        Tag::CodeBlock(kind) => {
            let lang = match kind {
                CodeBlockKind::Fenced(info) => {
                    info.split_whitespace().next().unwrap_or("").to_string()
                }
                CodeBlockKind::Indented => String::new(),
            };
            s.code = Some((lang, String::new()));
        }
        // Its text comes as `Event::Html`, written escaped.
        Tag::HtmlBlock => out.push_str("<pre class=\"raw-html\">"),
        Tag::List(Some(first)) => {
            if first == 1 {
                out.push_str("<ol>\n");
            } else {
                out.push_str(&format!("<ol start=\"{first}\">\n"));
            }
        }
        Tag::List(None) => out.push_str("<ul>\n"),
        Tag::Item => out.push_str("<li>"),
        Tag::FootnoteDefinition(name) => {
            out.push_str("<p class=\"footnote\">[^");
            escape_into(out, &name);
            out.push_str("]: ");
        }
        Tag::DefinitionList => out.push_str("<dl>"),
        Tag::DefinitionListTitle => out.push_str("<dt>"),
        Tag::DefinitionListDefinition => out.push_str("<dd>"),
        Tag::Table(alignments) => {
            s.alignments = alignments;
            out.push_str("<table>");
        }
        Tag::TableHead => {
            s.in_head = true;
            s.cell = 0;
            out.push_str("<thead><tr>");
        }
        Tag::TableRow => {
            s.cell = 0;
            out.push_str("<tr>");
        }
        Tag::TableCell => {
            out.push_str(if s.in_head { "<th" } else { "<td" });
            out.push_str(align_class(s.alignments.get(s.cell)));
            out.push('>');
        }
        Tag::Emphasis => out.push_str("<em>"),
        Tag::Strong => out.push_str("<strong>"),
        Tag::Strikethrough => out.push_str("<del>"),
        Tag::Superscript => out.push_str("<sup>"),
        Tag::Subscript => out.push_str("<sub>"),
        Tag::Link {
            dest_url, title, ..
        } => match safe_href(&dest_url) {
            Some(href) => {
                out.push_str("<a href=\"");
                escape_into(out, &href);
                if !title.is_empty() {
                    out.push_str("\" title=\"");
                    escape_into(out, &title);
                }
                out.push_str("\">");
                s.links.push(true);
            }
            None => {
                out.push_str("<span class=\"link-off\">");
                s.links.push(false);
            }
        },
        // Never loaded: a link to it (when its scheme may be followed), else text.
        Tag::Image { dest_url, .. } => match safe_href(&dest_url) {
            Some(href) => {
                out.push_str("<a class=\"image-link\" href=\"");
                escape_into(out, &href);
                out.push_str("\">[image: ");
                s.image.push(true);
            }
            None => {
                out.push_str("<span class=\"image-link\">[image: ");
                s.image.push(false);
            }
        },
        Tag::MetadataBlock(_) => out.push_str("<pre>"),
    }
}

fn end(tag: TagEnd, s: &mut State, out: &mut String) {
    match tag {
        TagEnd::Paragraph => out.push_str("</p>\n"),
        TagEnd::Heading(level) => {
            out.push_str("</");
            out.push_str(heading(level));
            out.push_str(">\n");
        }
        TagEnd::BlockQuote(_) => out.push_str("</blockquote>\n"),
        TagEnd::CodeBlock => {
            let (lang, code) = s.code.take().unwrap_or_default();
            let class = language_class(&lang);
            if class.is_empty() {
                out.push_str("<pre class=\"code\"><code>");
            } else {
                out.push_str("<pre class=\"code\"><code class=\"language-");
                out.push_str(&class);
                out.push_str("\">");
            }
            highlight(&lang, code.strip_suffix('\n').unwrap_or(&code), out);
            out.push_str("</code></pre>\n");
        }
        TagEnd::HtmlBlock => out.push_str("</pre>\n"),
        TagEnd::List(true) => out.push_str("</ol>\n"),
        TagEnd::List(false) => out.push_str("</ul>\n"),
        TagEnd::Item => out.push_str("</li>\n"),
        TagEnd::FootnoteDefinition => out.push_str("</p>\n"),
        TagEnd::DefinitionList => out.push_str("</dl>\n"),
        TagEnd::DefinitionListTitle => out.push_str("</dt>\n"),
        TagEnd::DefinitionListDefinition => out.push_str("</dd>\n"),
        TagEnd::Table => out.push_str("</tbody></table>\n"),
        TagEnd::TableHead => {
            s.in_head = false;
            out.push_str("</tr></thead><tbody>\n");
        }
        TagEnd::TableRow => out.push_str("</tr>\n"),
        TagEnd::TableCell => {
            s.cell += 1;
            out.push_str(if s.in_head { "</th>" } else { "</td>" });
        }
        TagEnd::Emphasis => out.push_str("</em>"),
        TagEnd::Strong => out.push_str("</strong>"),
        TagEnd::Strikethrough => out.push_str("</del>"),
        TagEnd::Superscript => out.push_str("</sup>"),
        TagEnd::Subscript => out.push_str("</sub>"),
        TagEnd::Link => out.push_str(if s.links.pop().unwrap_or(false) {
            "</a>"
        } else {
            "</span>"
        }),
        TagEnd::Image => out.push_str(if s.image.pop().unwrap_or(false) {
            "]</a>"
        } else {
            "]</span>"
        }),
        TagEnd::MetadataBlock(_) => out.push_str("</pre>\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(t: &str) -> String {
        let mut out = String::new();
        render(t, &mut out);
        out
    }

    #[test]
    fn markdown_renders() {
        let h = md("# Title\n\nSome *em* and **strong** and `code`.\n\n- a\n- b\n");
        assert!(h.contains("<h3>Title</h3>"), "{h}");
        assert!(h.contains("<em>em</em>") && h.contains("<strong>strong</strong>"));
        assert!(h.contains("<code>code</code>"));
        assert!(h.contains("<ul>") && h.contains("<li>a</li>"));
        let h = md("```rust\nfn x() {}\n```\n");
        assert!(h.contains("<pre class=\"code\"><code class=\"language-rust\"><span class=\"tok-k\">fn</span> x() {}</code></pre>"), "{h}");
        let h = md("| a | b |\n|:-|-:|\n| 1 | 2 |\n");
        assert!(
            h.contains("<th class=\"al-l\">a</th><th class=\"al-r\">b</th>"),
            "{h}"
        );
        assert!(h.contains("<td class=\"al-l\">1</td>"), "{h}");
        let h = md("line one\nline two");
        assert!(h.contains("line one<br>\nline two"), "{h}");
        let h = md("[site](https://example.com/a?b=1&c=2)");
        assert!(h.contains("<a href=\"https://example.com/a?b=1&amp;c=2\" rel=\"noopener noreferrer nofollow\">site</a>"), "{h}");
    }

    /// What a hostile session could write: every bit of it shows as characters.
    #[test]
    fn hostile_markdown_is_inert() {
        let cases = [
            "<script>alert(1)</script>",
            "<img src=x onerror=alert(1)>",
            "<svg onload=alert(1)>",
            "<iframe src=\"https://evil.example\"></iframe>",
            "text <b onclick=\"alert(1)\">bold</b> inline",
            "<a href=\"javascript:alert(1)\">x</a>",
            "<style>body{display:none}</style>",
            "<!-- comment --><object data=x></object>",
            "<details open ontoggle=alert(1)>",
            "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
        ];
        for c in cases {
            let h = md(c);
            for bad in [
                "<script",
                "<img",
                "<svg",
                "<iframe",
                "<b ",
                "<a href=\"javascript",
                "<style",
                "<object",
                "<details",
                "<math",
                "<!--",
            ] {
                assert!(!h.contains(bad), "{c:?} → {h}");
            }
            assert!(h.contains("&lt;"), "{c:?} shows its characters: {h}");
        }
        let links = [
            "[x](javascript:alert(1))",
            "[x](JaVaScRiPt:alert(1))",
            "[x](java\tscript:alert(1))",
            "[x](data:text/html;base64,PHNjcmlwdD4=)",
            "[x](vbscript:msgbox)",
            "[x](file:///etc/passwd)",
            "<javascript:alert(1)>",
            "[x][r]\n\n[r]: javascript:alert(1)",
            "![x](https://tracker.example/pixel.png)",
            "![x](javascript:alert(1))",
        ];
        for c in links {
            let h = md(c);
            assert!(
                !h.contains("javascript:") || !h.contains("href=\"javascript"),
                "{c:?} → {h}"
            );
            assert!(
                !h.contains("href=\"data:")
                    && !h.contains("href=\"vbscript")
                    && !h.contains("href=\"file:"),
                "{c:?} → {h}"
            );
            assert!(!h.contains("<img"), "{c:?} → {h}");
        }
        let h = md("![pixel](https://tracker.example/p.png)");
        assert!(h.contains("[image: pixel]") && !h.contains("<img"), "{h}");
        let h = md("```html\n<script>alert(1)</script>\n```");
        assert!(
            h.contains("&lt;script&gt;") && !h.contains("<script"),
            "{h}"
        );
        let h = md("```x\" onmouseover=\"alert(1)\nhi\n```");
        assert!(!h.contains("onmouseover=\""), "{h}");
    }

    #[test]
    fn huge_text_is_preformatted() {
        let big = format!("<b>{}</b>", "x".repeat(MAX_MARKDOWN_BYTES));
        let h = md(&big);
        assert!(h.starts_with("<pre class=\"plain\">&lt;b&gt;"));
    }

    #[test]
    fn safe_hrefs() {
        assert_eq!(safe_href(" https://a.b/c"), Some("https://a.b/c".into()));
        assert_eq!(safe_href("MAILTO:x@y"), Some("MAILTO:x@y".into()));
        assert_eq!(safe_href("\u{1}javascript:x"), None);
        assert_eq!(safe_href("/relative"), None);
        assert_eq!(safe_href("ht\ttps://x"), Some("https://x".into()));
    }
}
