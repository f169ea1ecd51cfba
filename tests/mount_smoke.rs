mod support;

#[test]
fn echo_then_cat() {
    let Some(m) = support::Mount::new("echo_then_cat") else {
        return;
    };
    let s = m.create_session("/home/u/proj", "hi");
    let out = m.sh(&format!("echo '{{\"role\":\"assistant\",\"content\":\"yo\"}}' >> '{}/ctl' && cat '{}/conversation.json'", s.display(), s.display()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[\n{\"role\":\"user\",\"content\":\"hi\"},\n{\"role\":\"assistant\",\"content\":\"yo\"}\n]\n"
    );
}
