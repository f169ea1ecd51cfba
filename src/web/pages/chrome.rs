//! What every page has around its content: the head (this server's stylesheet and
//! script, nothing inline), the bar with the pages and the search box, and the
//! escaping every text of a session goes through.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use std::fmt::Write as _;

/// Which page is shown (its tab in the bar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Sessions,
    Search,
    Session,
    Usage,
    Machines,
}

/// `s` as HTML text (or an attribute's value in double quotes).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` as one component of a URL (RFC 3986 unreserved characters kept).
pub fn url_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The Session page of the session in folder `dir`.
pub fn session_href(dir: &str) -> String {
    format!("/s/{}", url_part(dir))
}

/// The page's start: head, bar, search box (holding `query`), and `<main>`.
pub fn start(title: &str, tab: Tab, query: &str) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"referrer\" content=\"no-referrer\">\
<title>{} · fen-fs</title>\
<link rel=\"stylesheet\" href=\"/assets/app.css\">\
<link rel=\"icon\" href=\"/assets/icon.svg\" type=\"image/svg+xml\">\
<script src=\"/assets/app.js\" defer></script></head>\n<body>",
        esc(title)
    );
    out.push_str(&bar(tab, query));
    out.push_str("<main id=\"main\">\n");
    out
}

/// The bar: the pages, and the search box (results as you type: `app.js`).
pub fn bar(tab: Tab, query: &str) -> String {
    let link = |t: Tab, href: &str, label: &str| {
        format!(
            "<a href=\"{href}\"{}>{label}</a>",
            if t == tab {
                " aria-current=\"page\""
            } else {
                ""
            }
        )
    };
    format!(
        "<header class=\"bar\"><nav><a class=\"brand\" href=\"/\">fen-fs</a>{}{}{}</nav>\
<form class=\"search\" action=\"/search\" method=\"get\" role=\"search\">\
<input type=\"search\" name=\"q\" id=\"q\" value=\"{}\" autocomplete=\"off\" spellcheck=\"false\" \
placeholder=\"Search: words, &quot;a phrase&quot;, -word, prefix*, agent:claude, cwd:/dir, since:7d\" aria-label=\"Search every session\">\
<div id=\"live\" class=\"live\" hidden></div></form></header>\n",
        link(Tab::Sessions, "/", "Sessions"),
        link(Tab::Usage, "/usage", "Usage"),
        link(Tab::Machines, "/machines", "Machines"),
        esc(query),
    )
}

/// The page's end.
pub fn end(mut out: String) -> String {
    out.push_str("</main>\n</body></html>\n");
    out
}

/// A page as an answer.
pub fn html(body: String) -> Response {
    let mut resp = body.into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    resp
}

/// A note above a page's content (what is partial, and why).
pub fn note(out: &mut String, class: &str, text: &str) {
    let _ = writeln!(
        out,
        "<p class=\"note {class}\" role=\"status\">{}</p>",
        esc(text)
    );
}

/// A number with thousands separators.
pub fn count(n: u64) -> String {
    crate::views::html::thousands(n)
}

/// A cost in dollars (`<$0.01` when it is less but not nothing), or "unknown" (a
/// model without a price: never shown as 0).
pub fn dollars(cost: Option<f64>) -> String {
    crate::views::html::dollars(cost)
}

/// An RFC 3339 time as local time, minutes only (the full time in `title`).
pub fn when(rfc3339: Option<&str>) -> String {
    match rfc3339.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()) {
        Some(t) => {
            let local = t.with_timezone(&chrono::Local);
            format!(
                "<time datetime=\"{}\" title=\"{}\">{}</time>",
                esc(&t.to_rfc3339()),
                esc(&local.format("%Y-%m-%d %H:%M:%S %Z").to_string()),
                local.format("%Y-%m-%d %H:%M")
            )
        }
        None => esc(rfc3339.unwrap_or("")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_never_becomes_markup() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(url_part("a b/é?&#"), "a%20b%2F%C3%A9%3F%26%23");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(dollars(None), "unknown");
        // A cost that is not nothing is never shown as nothing.
        assert_eq!(dollars(Some(0.003)), "<$0.01");
        assert_eq!(dollars(Some(0.0)), "$0.00");
        assert_eq!(dollars(Some(0.25)), "$0.25");
        assert_eq!(dollars(Some(1234.4)), "$1,234");
    }
}
