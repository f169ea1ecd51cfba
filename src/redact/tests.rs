//! Every rule's samples, the decoys, and the redactor over messages, facts and
//! conversation.json lines.

use super::*;
use crate::neutral::{Role, Vendor};
use serde_json::json;

fn red() -> Redactor {
    Redactor::new(&Options::default())
}

#[test]
fn every_rule_finds_its_samples() {
    let r = red();
    for rule in RULES {
        for (text, secret) in rule.finds {
            assert!(
                text.contains(secret),
                "{}: the sample holds its secret",
                rule.kind
            );
            let mut counts = Counts::default();
            let out = r
                .text(text, &mut counts)
                .unwrap_or_else(|| panic!("{}: nothing found in {text:?}", rule.kind));
            assert!(
                !out.contains(secret),
                "{}: {secret:?} left in {out:?}",
                rule.kind
            );
            let tag = format!("[REDACTED:{}]", rule.kind);
            assert!(out.contains(&tag), "{}: {out:?} has no {tag}", rule.kind);
            assert!(counts.secrets.get(rule.kind).is_some_and(|n| *n >= 1));
        }
    }
}

#[test]
fn no_rule_finds_anything_in_the_ignored_samples_or_decoys() {
    let r = red();
    let ignored = RULES
        .iter()
        .flat_map(|rule| rule.ignores.iter().map(move |t| (rule.kind, *t)));
    let decoys = rules::DECOYS.iter().map(|t| ("decoy", *t));
    for (kind, text) in ignored.chain(decoys) {
        let mut counts = Counts::default();
        assert_eq!(
            r.text(text, &mut counts),
            None,
            "{kind}: {text:?} ({counts:?})"
        );
    }
}

#[test]
fn every_rule_has_samples_and_a_source() {
    for rule in RULES {
        assert!(!rule.finds.is_empty(), "{}", rule.kind);
        assert!(!rule.source.is_empty(), "{}", rule.kind);
        assert!(
            rule.kind
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'-'),
            "{}",
            rule.kind
        );
    }
    assert_eq!(COMPILED.len(), RULES.len());
}

#[test]
fn overlapping_finds_are_one_secret_named_by_the_first_rule() {
    let r = red();
    let key = "sk-ant-api03-6YYZYn9ZhyiA4uoRgnatmUdjAWtGSU8po_799NksnRH9ucAUsdMlHUvTCQCyEZDz-TddJ8HyS5SUkCnD8zRA9a9SkpXz9AA";
    let mut c = Counts::default();
    let out = r
        .text(&format!("export ANTHROPIC_API_KEY={key}\n"), &mut c)
        .unwrap();
    assert_eq!(out, "export ANTHROPIC_API_KEY=[REDACTED:anthropic-key]\n");
    assert_eq!(c.summary(), "redacted 1: 1 anthropic-key");
    // A hyphenated key is taken whole (a rule stopping at a hyphen would leave its tail).
    let out = r.text(&format!("a {key}-tail b"), &mut c).unwrap();
    assert_eq!(out, "a [REDACTED:anthropic-key] b");
    let mut c = Counts::default();
    let ghs = "https://x-access-token:ghs_IBXuDL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7@github.com/o/r";
    assert_eq!(
        r.text(ghs, &mut c).unwrap(),
        "https://x-access-token:[REDACTED:github-token]@github.com/o/r"
    );
    assert_eq!(c.total(), 1);
}

#[test]
fn a_private_key_goes_whole_with_its_body() {
    let r = red();
    let mut c = Counts::default();
    let pem = "before\n-----BEGIN RSA PRIVATE KEY-----\nKvCiSGuPJ6sG9AHEOVezxZuJPWvHogU5nGYVHWVsUQk4DwgLGNOaeCtL31Ugq+Df\ncgaTMnTC0MrAU8urbFt5misIZHbhS4/FvafhdZxEuhnbzs0z1wNiMg9aW37k5wCn\n-----END RSA PRIVATE KEY-----\nafter";
    assert_eq!(
        r.text(pem, &mut c).unwrap(),
        "before\n[REDACTED:private-key]\nafter"
    );
    // In a JSON string, with literal \n escapes (a service-account file a tool printed).
    let json = r#"{"private_key_id": "74ae7689447ab57a683536c4499d863386ce10cd", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----\n", "x": 1}"#;
    let out = r.text(json, &mut c).unwrap();
    assert_eq!(
        out,
        r#"{"private_key_id": "[REDACTED:gcp-service-account]", "private_key": "[REDACTED:private-key]\n", "x": 1}"#
    );
    // Cut before its END: up to its last line of base64, the text after it stays.
    let cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n... (truncated)";
    assert_eq!(
        r.text(cut, &mut c).unwrap(),
        "[REDACTED:private-key]\n... (truncated)"
    );
}

#[test]
fn counts_say_most_first() {
    let mut c = Counts::default();
    c.secrets.insert("private-key", 1);
    c.secrets.insert("anthropic-key", 2);
    assert_eq!(c.summary(), "redacted 3: 2 anthropic-key, 1 private-key");
    assert_eq!(Counts::default().summary(), "redacted 0");
}

#[test]
fn paths_hide_the_home_folder_and_the_user_name() {
    let r = Redactor::new(&Options {
        paths: Some(PathNames {
            homes: vec!["/home/ada".into()],
            users: vec!["ada".into(), "root".into()],
        }),
    });
    let mut c = Counts::default();
    let out = r
        .text(
            "cd /home/ada/src && ls /home/ada2 /home/ada; ada wrote it, adams too; root cause",
            &mut c,
        )
        .unwrap();
    assert_eq!(
        out,
        "cd ~/src && ls /home/ada2 ~; user wrote it, adams too; root cause"
    );
    assert_eq!((c.home, c.user), (2, 1));
    assert_eq!(c.total(), 0, "paths are not secrets");
    let n = PathNames::of_this_user(&["/Users/bob/proj", "/home/carol", "/srv/x"]);
    assert!(
        n.homes.contains(&"/Users/bob".to_string()) && n.homes.contains(&"/home/carol".to_string())
    );
    assert!(n.users.contains(&"bob".to_string()) && n.users.contains(&"carol".to_string()));
}

#[test]
fn every_text_of_a_message_is_scanned() {
    let r = red();
    let gh = "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d";
    let mut m = Message::new(
        Role::Assistant,
        vec![
            Part::Text {
                text: format!("t {gh}"),
            },
            Part::Reasoning {
                vendor: Vendor::Anthropic,
                text: format!("thinking {gh}"),
                opaque: Some(json!({"signature": gh})),
            },
            Part::ToolCall {
                id: "c1".into(),
                name: "Bash".into(),
                input: json!({"command": format!("echo {gh}"), "env": {gh: gh}, "list": [gh]}),
            },
            Part::ToolResult {
                call_id: "c1".into(),
                name: Some("Bash".into()),
                content: vec![
                    Part::Text { text: gh.into() },
                    Part::Image {
                        mime: "image/png".into(),
                        data: Some("iVBORw0KGgo=".into()),
                        url: None,
                    },
                ],
                is_error: false,
            },
            Part::Other {
                what: "x".into(),
                text: gh.into(),
            },
        ],
    );
    m.entry = Some(gh.into());
    let mut c = Counts::default();
    r.message(&mut m, &mut c);
    let all = serde_json::to_string(&m).unwrap();
    assert!(!all.contains(gh), "{all}");
    assert!(!all.contains("iVBOR"), "images are left out");
    assert!(all.contains("images are not scanned for secrets"));
    assert_eq!(c.secrets["github-token"], 9);
}

#[test]
fn facts_are_scanned() {
    let r = Redactor::new(&Options {
        paths: Some(PathNames {
            homes: vec!["/home/ada".into()],
            users: vec![],
        }),
    });
    let gh = "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d";
    let mut f = SessionFacts {
        title: Some(format!("use {gh}")),
        preview: Some(gh.into()),
        cwd: Some("/home/ada/p".into()),
        source_path: "/home/ada/.claude/projects/x.jsonl".into(),
        ..SessionFacts::default()
    };
    let mut c = Counts::default();
    r.facts(&mut f, &mut c);
    assert_eq!(f.title.as_deref(), Some("use [REDACTED:github-token]"));
    assert_eq!(f.cwd.as_deref(), Some("~/p"));
    assert_eq!(
        f.source_path,
        std::path::PathBuf::from("~/.claude/projects/x.jsonl")
    );
    assert_eq!(c.total(), 2);
}

#[test]
fn conversation_json_lines_keep_their_bytes_but_the_secrets() {
    let r = red();
    let mut c = Counts::default();
    let line = "{\"role\":\"user\",  \"content\":[{\"type\":\"text\",\"text\":\"key ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d\\nok \\u00e9\"}],\"n\":1.50},\n";
    let out = r.json_line(line, &mut c).unwrap();
    assert_eq!(
        out,
        "{\"role\":\"user\",  \"content\":[{\"type\":\"text\",\"text\":\"key [REDACTED:github-token]\\nok é\"}],\"n\":1.50},\n"
    );
    assert_eq!(r.json_line("{\"a\": \"plain\" }\n", &mut c), None);
    assert_eq!(r.json_line("[\n", &mut c), None);
    // A secret spelled with JSON escapes is found once decoded.
    let escaped = "{\"t\":\"\\u0067hp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d\"}\n";
    assert_eq!(
        r.json_line(escaped, &mut c).unwrap(),
        "{\"t\":\"[REDACTED:github-token]\"}\n"
    );
    // A secret as a key: the line is rebuilt.
    let keyed = "{\"ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d\":1}";
    assert_eq!(
        r.json_line(keyed, &mut c).unwrap(),
        "{\"[REDACTED:github-token]\":1}"
    );
    assert_eq!(c.total(), 3);
}

#[test]
fn words_of_names() {
    assert_eq!(words("apiKey"), ["api", "key"]);
    assert_eq!(words("API_KEY"), ["api", "key"]);
    assert_eq!(words("x-api-key"), ["x", "api", "key"]);
    assert_eq!(words("AWSSecretKey"), ["awssecret", "key"]);
    assert!(entropy("aaaa") == 0.0 && entropy("abcd") == 2.0);
}
