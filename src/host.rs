//! Which machine a session was recorded on (§12). This machine's sessions carry its
//! name (`$FEN_FS_HOST`, else the system's host name); another machine's carry the name
//! it was given here (its folder under `peers/`).

use std::sync::OnceLock;

/// This machine's name as sessions show it: `$FEN_FS_HOST`, else the host name.
pub fn this_host() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        if let Some(name) = std::env::var("FEN_FS_HOST").ok().filter(|v| !v.is_empty()) {
            return name;
        }
        let mut buf = [0u8; 256];
        // SAFETY: `buf` is writable for its length; the name is NUL-terminated within it.
        let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) } == 0;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(0);
        match std::str::from_utf8(&buf[..end]) {
            Ok(name) if ok && !name.is_empty() => name.to_string(),
            _ => "localhost".to_string(),
        }
    })
}

/// Whether `name` can name a host: 1-64 of `A-Za-z0-9._-`, not starting with `.` or
/// `-` (it is a folder under `peers/` and the suffix of its sessions' folders).
pub fn is_valid_host_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with(['.', '-'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// What a peer's session folder names end with here (`<dir>@host`).
pub fn dir_suffix(host: &str) -> String {
    format!("@{host}")
}
