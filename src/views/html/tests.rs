//! The renderer's tests: what each part looks like, and a hostile session planted in
//! every place a session's text reaches, which must come out as characters.

use super::*;
use crate::agent::Agent;
use crate::neutral::{ModelRef, Vendor};
use serde_json::json;

fn doc(header: &HtmlHeader, messages: &[Message], mode: Mode) -> String {
    let mut out = Vec::new();
    write_document_start(&mut out, header, mode).unwrap();
    for (i, m) in messages.iter().enumerate() {
        write_message(&mut out, i, m).unwrap();
    }
    write_document_end(&mut out, mode).unwrap();
    String::from_utf8(out).unwrap()
}

fn msg(role: Role, parts: Vec<Part>) -> Message {
    Message::new(role, parts)
}

fn text(t: &str) -> Part {
    Part::Text { text: t.into() }
}

fn header() -> HtmlHeader {
    HtmlHeader::from_facts(&SessionFacts {
        agent: Agent::Fen,
        id: "abc-123".into(),
        cwd: Some("/home/u/p".into()),
        title: Some("Fix the flag".into()),
        created_at: Some("2026-01-02T03:04:05Z".into()),
        updated_at: Some("2026-01-02T04:05:06Z".into()),
        ..SessionFacts::default()
    })
}

/// Every tag the renderer may write, and every attribute (`src` only as `data:`
/// on `img`, `href` only http(s), mailto or a `#m-` anchor): what the output holds
/// beyond these came from a session's text.
fn assert_only_our_markup(html: &str) {
    const TAGS: &[&str] = &[
        "html",
        "head",
        "meta",
        "title",
        "style",
        "link",
        "script",
        "body",
        "header",
        "h1",
        "div",
        "span",
        "dl",
        "dt",
        "dd",
        "code",
        "ul",
        "li",
        "details",
        "summary",
        "nav",
        "a",
        "p",
        "main",
        "footer",
        "article",
        "time",
        "pre",
        "img",
        "br",
        "em",
        "strong",
        "del",
        "sup",
        "sub",
        "ol",
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
    ];
    const ATTRS: &[&str] = &[
        "lang",
        "charset",
        "name",
        "content",
        "http-equiv",
        "class",
        "id",
        "href",
        "rel",
        "title",
        "start",
        "datetime",
        "data-entry",
        "data-session",
        "alt",
        "src",
        "download",
        "defer",
    ];
    let tag = regex::Regex::new(r"<(/?)([A-Za-z][A-Za-z0-9-]*)([^>]*)>").unwrap();
    let attr = regex::Regex::new(r#"([^\s=/]+)(?:="([^"]*)")?"#).unwrap();
    for c in tag.captures_iter(html) {
        let name = c[2].to_ascii_lowercase();
        assert!(TAGS.contains(&name.as_str()), "tag <{name}> in {}", &c[0]);
        if name == "script" && c[1].is_empty() {
            panic!("a script in a standalone or session text: {}", &c[0]);
        }
        for a in attr.captures_iter(&c[3]) {
            let an = a[1].to_ascii_lowercase();
            assert!(ATTRS.contains(&an.as_str()), "attribute {an} in {}", &c[0]);
            let v = a.get(2).map_or("", |v| v.as_str());
            if an == "href" {
                assert!(
                    v.starts_with("https://")
                        || v.starts_with("http://")
                        || v.starts_with("mailto:")
                        || v.starts_with("#m-"),
                    "href {v:?} in {}",
                    &c[0]
                );
            }
            if an == "src" {
                assert!(
                    name == "img" && v.starts_with("data:image/"),
                    "src in {}",
                    &c[0]
                );
            }
        }
    }
}

const HOSTILE: &[&str] = &[
    "<script>alert('x')</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<iframe src=\"https://evil.example/\"></iframe>",
    "[click](javascript:alert(1))",
    "<a href=\"javascript:alert(1)\">x</a>",
    "\"><script>alert(1)</script>",
    "' onmouseover='alert(1)",
    "</pre></details></article><script>alert(1)</script>",
    "<style>*{display:none}</style>",
    "<meta http-equiv=\"refresh\" content=\"0;url=https://evil.example\">",
    "<link rel=stylesheet href=https://evil.example/x.css>",
    "![t](https://evil.example/track.png)",
];

#[test]
fn a_hostile_session_is_text_everywhere() {
    let all = HOSTILE.join("\n");
    let mut h = header();
    h.title = all.clone();
    h.cwd = Some(all.clone());
    h.cwd_on_host = Some(all.clone());
    h.id = all.clone();
    h.host = Some(all.clone());
    h.agent = all.clone();
    h.note = Some(all.clone());
    h.created_at = Some(all.clone());
    h.parent = Some(SessionLink {
        label: all.clone(),
        id: all.clone(),
        href: Some("javascript:alert(1)".into()),
    });
    h.subagents = vec![SessionLink {
        label: all.clone(),
        id: all.clone(),
        href: None,
    }];
    h.resume = vec![ResumeLine {
        agent: all.clone(),
        command: all.clone(),
    }];
    let mut user = msg(Role::User, vec![text(&all)]);
    user.timestamp = Some(all.clone());
    user.entry = Some(all.clone());
    let mut assistant = msg(
        Role::Other(all.clone()),
        vec![
            Part::Reasoning {
                vendor: Vendor::Anthropic,
                text: all.clone(),
                opaque: None,
            },
            text(&format!("```{all}\n{all}\n```\n\n{all}")),
            Part::ToolCall {
                id: all.clone(),
                name: all.clone(),
                input: json!({"command": all, "file_path": all, "old_string": all, "new_string": format!("{all}!")}),
            },
            Part::ToolCall {
                id: "c".into(),
                name: "apply_patch".into(),
                input: json!(format!("*** Begin Patch\n+{all}\n-{all}")),
            },
            Part::ToolCall {
                id: "w".into(),
                name: "Write".into(),
                input: json!({"file_path": all, "content": all}),
            },
            Part::Image {
                mime: "image/svg+xml\" onload=\"alert(1)".into(),
                data: Some("PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+".into()),
                url: None,
            },
            Part::Image {
                mime: "image/png".into(),
                data: Some("\" onerror=\"alert(1)".into()),
                url: None,
            },
            Part::Image {
                mime: "image/png".into(),
                data: None,
                url: Some("javascript:alert(1)".into()),
            },
            Part::Other {
                what: all.clone(),
                text: all.clone(),
            },
        ],
    );
    assistant.model = Some(ModelRef {
        provider: None,
        api: None,
        model: all.clone(),
    });
    let result = msg(
        Role::Tool,
        vec![Part::ToolResult {
            call_id: all.clone(),
            name: Some(all.clone()),
            content: vec![text(&all)],
            is_error: true,
        }],
    );
    let mut summary = msg(Role::User, vec![text(&all)]);
    summary.summary = true;
    let mut injected = msg(Role::System, vec![text(&all)]);
    injected.injected = true;
    let messages = [user, assistant, result, summary, injected];
    for mode in [Mode::Standalone, Mode::Page] {
        let html = doc(&h, &messages, mode);
        assert_only_our_markup(&html);
        assert!(!html.contains("<script"), "no script at all");
        assert!(
            !html.contains("<a href=\"javascript"),
            "no javascript: link"
        );
        assert!(
            html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"),
            "shown as characters"
        );
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(html.contains("&lt;svg onload=alert(1)&gt;"));
        assert!(html.contains("&lt;iframe"));
    }
}

#[test]
fn standalone_is_self_contained_and_page_names_its_files() {
    let mut h = header();
    h.page = PageParts {
        stylesheets: vec!["/static/session.css".into()],
        scripts: vec!["/static/session.js".into()],
        actions: vec![Action {
            label: "conversation.md".into(),
            href: "/s/abc/conversation.md".into(),
            download: true,
        }],
    };
    h.parent = Some(SessionLink {
        label: "Parent".into(),
        id: "p1".into(),
        href: Some("/s/p1".into()),
    });
    let m = [msg(Role::User, vec![text("hi")])];
    let s = doc(&h, &m, Mode::Standalone);
    assert!(s.contains("<style>\n") && s.contains(CSS));
    assert!(s.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    assert!(!s.contains("<script") && !s.contains("<link") && !s.contains("/static/"));
    assert!(!s.contains("/s/p1") && s.contains("Parent <code>p1</code>"));
    assert!(!s.contains("conversation.md"), "actions are the page's");
    let p = doc(&h, &m, Mode::Page);
    assert!(p.contains("<link rel=\"stylesheet\" href=\"/static/session.css\">"));
    assert!(p.contains("<script defer src=\"/static/session.js\"></script>"));
    assert!(p.contains("<a href=\"/s/p1\">Parent</a>"));
    assert!(p.contains(
        "<a class=\"action\" href=\"/s/abc/conversation.md\" download>conversation.md</a>"
    ));
    assert!(!p.contains("<style>") && !p.contains("Content-Security-Policy"));
    for d in [&s, &p] {
        assert!(d.starts_with("<!DOCTYPE html>"));
        assert!(d.ends_with("</html>\n"));
        assert!(d.contains("<article id=\"m-0\" class=\"msg role-user\">"));
    }
}

#[test]
fn the_css_follows_the_reader_and_prints() {
    assert!(CSS.contains("@media (prefers-color-scheme: dark)"));
    assert!(CSS.contains("@media print"));
    assert!(!CSS.contains("url("), "the stylesheet fetches nothing");
    assert!(!CSS.contains("@import"));
}

#[test]
fn header_facts() {
    let mut h = header();
    h.host = Some("beta".into());
    h.cwd_on_host = Some("/Users/u/p".into());
    h.kept = true;
    h.source_deleted = true;
    h.tokens = Some(1234);
    h.cost_usd = Some(0.5);
    h.resume = vec![ResumeLine {
        agent: "fen".into(),
        command: "cd /p && agent --resume abc".into(),
    }];
    h.note = Some("redacted 2: 2 github-token".into());
    let d = doc(&h, &[], Mode::Standalone);
    assert!(d.contains("<h1>Fix the flag</h1>"));
    assert!(d.contains("<span class=\"badge agent\">fen</span><span class=\"badge host\">beta</span><span class=\"badge kept\">kept</span><span class=\"badge deleted\">"));
    assert!(d.contains("<dt>cwd</dt><dd><code>/home/u/p</code> <span class=\"muted\">(<code>/Users/u/p</code> there)</span>"));
    assert!(d.contains("<time datetime=\"2026-01-02T03:04:05Z\">"));
    assert!(
        d.contains("<dt>tokens</dt><dd>1,234</dd>") && d.contains("<dt>cost</dt><dd>$0.50</dd>")
    );
    assert!(d.contains("<code class=\"command\">cd /p &amp;&amp; agent --resume abc</code>"));
    assert!(d.contains("<p class=\"note\">redacted 2: 2 github-token</p>"));
}

#[test]
fn tool_calls_and_results_fold_to_one_line() {
    let call = Part::ToolCall {
        id: "t".into(),
        name: "Bash".into(),
        input: json!({"command": "ls -l", "timeout": 5}),
    };
    let result = Part::ToolResult {
        call_id: "t".into(),
        name: Some("Bash".into()),
        content: vec![text("total 8\nfile a\nfile b")],
        is_error: false,
    };
    let d = doc(
        &header(),
        &[
            msg(Role::Assistant, vec![call]),
            msg(Role::User, vec![result]),
        ],
        Mode::Standalone,
    );
    assert!(d.contains("<details class=\"tool call\"><summary><span class=\"tool-name\">Bash</span> <span class=\"tool-arg\">ls -l</span> <span class=\"size\">"), "{d}");
    assert!(d.contains("<pre class=\"tool-input\">{\n  \"command\": \"ls -l\""));
    assert!(
        d.contains("<article id=\"m-1\" class=\"msg role-tool\">"),
        "results only: a tool message"
    );
    assert!(d.contains("<details class=\"tool result\"><summary><span class=\"tool-name\">↳ Bash</span> <span class=\"tool-arg\">total 8</span> <span class=\"size\">3 lines · 21 B</span></summary>"), "{d}");
    assert!(d.contains("<pre class=\"tool-output\">total 8\nfile a\nfile b</pre>"));
}

#[test]
fn long_results_are_cut() {
    let big = "y".repeat(RESULT_SHOWN_BYTES + 5000);
    let r = Part::ToolResult {
        call_id: "t".into(),
        name: None,
        content: vec![text(&big)],
        is_error: true,
    };
    let d = doc(&header(), &[msg(Role::Tool, vec![r])], Mode::Page);
    assert!(d.contains("<details class=\"tool result error\"><summary><span class=\"tool-name\">↳ result (error)</span>"));
    assert!(
        d.contains("(5.0 KB more left out)"),
        "{}",
        &d[d.len() - 400..]
    );
}

#[test]
fn thinking_edits_compactions_and_injected_context() {
    let think = Part::Reasoning {
        vendor: Vendor::Anthropic,
        text: "I should *check* the flag".into(),
        opaque: Some(json!({"signature": "sig"})),
    };
    let sealed = Part::Reasoning {
        vendor: Vendor::OpenAi,
        text: String::new(),
        opaque: Some(json!({"encrypted_content": "zzz"})),
    };
    let edit = Part::ToolCall {
        id: "e".into(),
        name: "Edit".into(),
        input: json!({"file_path": "src/a.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
    };
    let mut summary = msg(Role::User, vec![text("We fixed **X**.")]);
    summary.summary = true;
    let mut ctx = msg(
        Role::User,
        vec![text("<environment_context>cwd</environment_context>")],
    );
    ctx.injected = true;
    let d = doc(
        &header(),
        &[
            summary,
            ctx,
            msg(Role::Assistant, vec![think, sealed, edit]),
        ],
        Mode::Standalone,
    );
    assert!(d.contains("<article id=\"m-0\" class=\"msg role-user compaction\">\n<div class=\"divider\"><span>Conversation compacted</span></div>"), "{d}");
    assert!(d.contains("<details class=\"summary\"><summary>Summary of the conversation before this point</summary>\n<div class=\"md\"><p>We fixed <strong>X</strong>.</p>"));
    assert!(d.contains("class=\"msg role-user injected\""));
    assert!(d.contains("<span class=\"badge injected\">injected by the agent</span>"));
    assert!(d.contains("<details class=\"injected-body\"><summary>Context the agent injected <span class=\"size\">46 characters</span>"));
    assert!(d.contains("&lt;environment_context&gt;"));
    assert!(d.contains("<details class=\"thinking\"><summary>Thinking <span class=\"size\">5 words</span></summary>\n<div class=\"md\"><p>I should <em>check</em> the flag</p>"));
    assert!(d.contains("Thinking <span class=\"size\">not readable"));
    assert!(
        !d.contains("zzz") && !d.contains("\"sig\""),
        "sealed forms are not shown"
    );
    assert!(d.contains("<details class=\"tool call edit\"><summary><span class=\"tool-name\">Edit</span> <span class=\"tool-arg\">src/a.rs</span>"));
    assert!(d.contains(
        "<span class=\"d-del\">-let x = 1;</span>\n<span class=\"d-add\">+let x = 2;</span>"
    ));
}

#[test]
fn images_inline_only_as_safe_data() {
    let png = Part::Image {
        mime: "image/png".into(),
        data: Some("iVBORw0KGgo=".into()),
        url: None,
    };
    let svg = Part::Image {
        mime: "image/svg+xml".into(),
        data: Some("PHN2Zz4=".into()),
        url: None,
    };
    let linked = Part::Image {
        mime: "image/png".into(),
        data: None,
        url: Some("https://x.example/y.png".into()),
    };
    let d = doc(
        &header(),
        &[msg(Role::User, vec![png, svg, linked])],
        Mode::Standalone,
    );
    assert!(d.contains("<img class=\"image\" alt=\"[image: image/png, 8 bytes]\" src=\"data:image/png;base64,iVBORw0KGgo=\">"));
    assert!(!d.contains("data:image/svg"));
    assert!(d.contains("<span class=\"image-ref\">[image: image/svg+xml, 5 bytes]</span>"));
    assert!(d.contains("[image: <a href=\"https://x.example/y.png\""));
    assert_eq!(d.matches("<img").count(), 1);
}

#[test]
fn messages_stream_one_article_each() {
    let mut m = msg(Role::Assistant, vec![text("one")]);
    m.timestamp = Some("2026-01-02T03:04:05Z".into());
    m.entry = Some("e1".into());
    m.model = Some(ModelRef {
        provider: Some("anthropic".into()),
        api: None,
        model: "claude-x".into(),
    });
    let mut out = Vec::new();
    write_message(&mut out, 41, &m).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(s.starts_with("<article id=\"m-41\" class=\"msg role-assistant\" data-entry=\"e1\">"));
    assert!(s.contains("<span class=\"model\">claude-x</span>"));
    assert!(s.contains("<a class=\"anchor\" href=\"#m-41\">#</a>"));
    assert!(s.ends_with("</article>\n"));
    assert_eq!(s.matches("<article").count(), 1);
}

/// Below the tool call that started a subagent, the page links to where it ran (its
/// session's page; an inline one's first message), never to a link that is not the
/// page's own; a standalone file names it by id as text and links nowhere; a hostile
/// id is text.
#[test]
fn where_a_subagent_ran_is_marked_below_its_call() {
    use crate::neutral::SubagentLink;
    let call = |id: &str| Part::ToolCall {
        id: id.into(),
        name: "Task".into(),
        input: json!({"prompt": "look"}),
    };
    let m = msg(
        Role::Assistant,
        vec![call("c1"), call("c2"), call("c3"), call("c4"), call("c5")],
    );
    let links = [
        SubagentLink {
            id: "a1".into(),
            call_id: Some("c1".into()),
            dir: Some("s.agent-a1".into()),
            inline: false,
        },
        SubagentLink {
            id: "e-9".into(),
            call_id: Some("c2".into()),
            dir: None,
            inline: true,
        },
        SubagentLink {
            id: "a3".into(),
            call_id: Some("c3".into()),
            dir: None,
            inline: false,
        },
        SubagentLink {
            id: "<b>x</b>".into(),
            call_id: Some("c4".into()),
            dir: Some("s.agent-x".into()),
            inline: false,
        },
        // No call: nothing to mark.
        SubagentLink {
            id: "a5".into(),
            call_id: None,
            dir: Some("s.agent-a5".into()),
            inline: false,
        },
    ];
    let render = |runs: &SubagentRuns| {
        let mut out = Vec::new();
        write_message_marked(&mut out, 0, &m, runs).unwrap();
        String::from_utf8(out).unwrap()
    };
    let page = render(&SubagentRuns::of(
        &links,
        Mode::Page,
        &|l| match l.id.as_str() {
            "a1" => Some("/s/s.agent-a1".into()),
            "e-9" => Some("/s/s?entry=e-9".into()),
            "<b>x</b>" => Some("javascript:alert(1)".into()),
            _ => None,
        },
    ));
    assert!(page.contains(
        "<p class=\"subagent-ran\">↳ subagent <a href=\"/s/s.agent-a1\"><code>a1</code></a> ran here</p>"
    ));
    assert!(page.contains(
        "from <a href=\"/s/s?entry=e-9\">entry <code>e-9</code></a>, not in its conversation"
    ));
    assert!(page.contains("subagent <code>a3</code> ran here (its transcript is not here)"));
    assert!(page.contains("subagent <code>&lt;b&gt;x&lt;/b&gt;</code> ran here</p>"));
    assert!(!page.contains("javascript:") && !page.contains("a5"));
    assert_eq!(page.matches("subagent-ran").count(), 4);
    // The marks come below their calls, in order.
    let at = |s: &str| page.find(s).unwrap();
    assert!(at("<code>a1</code>") < at("<code>e-9</code>"));
    let standalone = render(&SubagentRuns::of(&links, Mode::Standalone, &|_| {
        panic!("a standalone file asks for no link")
    }));
    // The message's own anchor is its only link.
    assert_eq!(standalone.matches("<a ").count(), 1, "{standalone}");
    assert!(
        standalone
            .contains("subagent <code>a1</code> ran here (a session of its own, not in this file)")
    );
    assert!(standalone.contains("from entry <code>e-9</code>, not in its conversation"));
    assert!(standalone.contains("subagent <code>a3</code> ran here (its transcript is not here)"));
    assert_only_our_markup(&standalone);
    // Without runs, as before.
    let mut plain = Vec::new();
    write_message(&mut plain, 0, &m).unwrap();
    assert!(!String::from_utf8(plain).unwrap().contains("subagent-ran"));
}
