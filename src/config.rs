//! fen-fs's own settings file, `${XDG_CONFIG_HOME:-$HOME/.config}/fen/config.toml`
//! (read with the `toml` crate; a missing file is an empty config). Today it holds the
//! path maps of §12: how another machine's working directories read here.
//!
//! ```toml
//! [[path_map]]
//! host = "mac"              # optional: only that peer's sessions (else every peer's)
//! from = "/Users/alice"
//! to = "/home/alice"
//! ```

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The parsed file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub path_map: Vec<PathRule>,
}

/// One `[[path_map]]`: cwds under `from` (recorded on `host`, or on any peer) read as
/// under `to`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathRule {
    #[serde(default)]
    pub host: Option<String>,
    pub from: String,
    pub to: String,
}

/// `${XDG_CONFIG_HOME:-$HOME/.config}/fen/config.toml`.
pub fn default_path() -> PathBuf {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
            PathBuf::from(home).join(".config")
        })
        .join("fen/config.toml")
}

impl Config {
    /// The file at `path`; a missing file is the empty config, a bad one an error
    /// naming it.
    pub fn load(path: &Path) -> Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(Error::io(path.display(), &e)),
        };
        let config: Config = toml::from_str(&text)
            .map_err(|e| Error::invalid(format!("{}: {}", path.display(), e.message())))?;
        for r in &config.path_map {
            check_rule(r).map_err(|why| Error::invalid(format!("{}: {why}", path.display())))?;
        }
        Ok(config)
    }

    /// The default file's config.
    pub fn load_default() -> Result<Config> {
        Config::load(&default_path())
    }
}

fn check_rule(r: &PathRule) -> std::result::Result<(), String> {
    for (what, p) in [("from", &r.from), ("to", &r.to)] {
        if !p.starts_with('/') {
            return Err(format!("path_map {what} = {p:?} is not an absolute path"));
        }
    }
    Ok(())
}

/// `--map FROM=TO`: a rule for every peer.
pub fn parse_map(s: &str) -> std::result::Result<PathRule, String> {
    let (from, to) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not FROM=TO"))?;
    let r = PathRule {
        host: None,
        from: from.to_string(),
        to: to.to_string(),
    };
    check_rule(&r)?;
    Ok(r)
}

/// The rules that rewrite one host's cwds, longest `from` first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathMap {
    /// (from, to), both normalized, longest `from` first.
    rules: Vec<(String, String)>,
}

impl PathMap {
    /// The rules of `rules` that apply to `host` (those naming it, and those naming
    /// no host); on the same `from`, one naming the host wins.
    pub fn for_host(rules: &[PathRule], host: &str) -> PathMap {
        let norm = crate::store::naming::normalize_cwd;
        let mut chosen: Vec<(String, String, bool)> = Vec::new();
        for r in rules {
            let named = match r.host.as_deref() {
                Some(h) if h != host => continue,
                Some(_) => true,
                None => false,
            };
            let (from, to) = (norm(&r.from), norm(&r.to));
            match chosen.iter_mut().find(|c| c.0 == from) {
                Some(c) if named && !c.2 => *c = (from, to, named),
                Some(_) => {}
                None => chosen.push((from, to, named)),
            }
        }
        chosen.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        PathMap {
            rules: chosen.into_iter().map(|(f, t, _)| (f, t)).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `cwd` with its longest mapped prefix replaced (whole path components only);
    /// `None` when no rule applies.
    pub fn apply(&self, cwd: &str) -> Option<String> {
        for (from, to) in &self.rules {
            let rest = if from == "/" {
                cwd.strip_prefix('/')
                    .map(|r| if r.is_empty() { "" } else { r })
                    .map(|r| format!("/{r}"))
            } else {
                cwd.strip_prefix(from.as_str())
                    .filter(|r| r.is_empty() || r.starts_with('/'))
                    .map(str::to_string)
            };
            if let Some(rest) = rest {
                let joined = if to == "/" {
                    if rest.is_empty() { "/".into() } else { rest }
                } else if rest == "/" {
                    to.clone()
                } else {
                    format!("{to}{rest}")
                };
                return Some(crate::store::naming::normalize_cwd(&joined));
            }
        }
        None
    }

    /// Whether some rule may apply to a cwd whose namespace (slug) is `ns`: the slug
    /// of a path under `from` begins with `from`'s slug body and `-` (or is it). A
    /// namespace for which this is false maps to itself, with no header read.
    pub fn may_apply_to_namespace(&self, ns: &str) -> bool {
        self.rules.iter().any(|(from, _)| {
            let s = crate::store::naming::slug(from);
            let body = s.strip_suffix("--").unwrap_or(&s);
            from == "/" || ns == s || ns.starts_with(&format!("{body}-"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(host: Option<&str>, from: &str, to: &str) -> PathRule {
        PathRule {
            host: host.map(String::from),
            from: from.into(),
            to: to.into(),
        }
    }

    #[test]
    fn longest_prefix_whole_components_host_rules_first() {
        let rules = [
            rule(None, "/Users/alice", "/home/alice"),
            rule(None, "/Users/alice/code", "/srv/code"),
            rule(Some("mac"), "/Users/alice", "/home/a"),
            rule(Some("other"), "/Users", "/nowhere"),
        ];
        let m = PathMap::for_host(&rules, "mac");
        assert_eq!(
            m.apply("/Users/alice/proj").as_deref(),
            Some("/home/a/proj")
        );
        assert_eq!(
            m.apply("/Users/alice/code/x").as_deref(),
            Some("/srv/code/x")
        );
        assert_eq!(m.apply("/Users/alice").as_deref(), Some("/home/a"));
        assert_eq!(m.apply("/Users/alicex/p"), None);
        assert_eq!(m.apply("/Users/bob"), None);
        let any = PathMap::for_host(&rules, "laptop");
        assert_eq!(
            any.apply("/Users/alice/p").as_deref(),
            Some("/home/alice/p")
        );
    }

    #[test]
    fn namespace_prefilter_never_misses_a_mapped_cwd() {
        let m = PathMap::for_host(&[rule(None, "/Users/alice", "/home/alice")], "h");
        for cwd in ["/Users/alice", "/Users/alice/p", "/Users/alice/a-b/c:d"] {
            assert!(
                m.may_apply_to_namespace(&crate::store::naming::slug(cwd)),
                "{cwd}"
            );
        }
        assert!(!m.may_apply_to_namespace(&crate::store::naming::slug("/home/alice/p")));
    }

    #[test]
    fn maps_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_map("/a=/b").unwrap(), rule(None, "/a", "/b"));
        assert!(parse_map("/a").is_err());
        assert!(parse_map("a=/b").is_err());
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        assert!(Config::load(&p).unwrap().path_map.is_empty());
        std::fs::write(
            &p,
            "[[path_map]]\nhost = \"mac\"\nfrom = \"/Users/a\"\nto = \"/home/a\"\n",
        )
        .unwrap();
        assert_eq!(Config::load(&p).unwrap().path_map.len(), 1);
        std::fs::write(&p, "[[path_map]]\nfrom = \"rel\"\nto = \"/x\"\n").unwrap();
        assert!(Config::load(&p).unwrap_err().reason.contains("config.toml"));
        std::fs::write(&p, "[[path_mapp]]\n").unwrap();
        assert!(Config::load(&p).is_err());
    }
}
