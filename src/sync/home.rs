//! Syncthing's home folder and what fen-fs needs from its `config.xml`: the GUI's
//! address and API key (read with quick-xml, never edited by fen-fs).

use crate::error::{Error, Result};
use quick_xml::events::Event;
use std::path::{Path, PathBuf};

/// The GUI (REST) endpoint of a local Syncthing, as its config says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gui {
    /// `host:port` as configured.
    pub address: String,
    pub api_key: String,
    /// `<gui tls="true">`: HTTPS only.
    pub tls: bool,
    /// The file these came from (every error names it).
    pub config: PathBuf,
}

/// Where Syncthing keeps its config: `--syncthing-home DIR`, else
/// `${XDG_STATE_HOME:-~/.local/state}/syncthing` (Syncthing 1.27 and later), else
/// `${XDG_CONFIG_HOME:-~/.config}/syncthing` (earlier ones, Debian 12's 1.19).
pub fn candidates(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(dir) = explicit {
        return vec![dir.to_path_buf()];
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/".into());
    let xdg = |var: &str, default: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(default))
    };
    vec![
        xdg("XDG_STATE_HOME", ".local/state").join("syncthing"),
        xdg("XDG_CONFIG_HOME", ".config").join("syncthing"),
    ]
}

/// The GUI settings of the first of `candidates` that holds a `config.xml`.
pub fn find(explicit: Option<&Path>) -> Result<Gui> {
    let dirs = candidates(explicit);
    for d in &dirs {
        let config = d.join("config.xml");
        if config.is_file() {
            return read_gui(&config);
        }
    }
    let looked: Vec<String> = dirs
        .iter()
        .map(|d| d.join("config.xml").display().to_string())
        .collect();
    Err(Error::not_found(format!(
        "no Syncthing configuration found (looked for {}): is Syncthing installed and started once? (or name its home with --syncthing-home DIR)",
        looked.join(", ")
    )))
}

/// The `<gui>` element's `<address>`, `<apikey>` and `tls` of the config at `path`.
pub fn read_gui(path: &Path) -> Result<Gui> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path.display(), &e))?;
    let bad = |why: String| Error::invalid(format!("{}: {why}", path.display()));
    let mut reader = quick_xml::Reader::from_str(&text);
    let (mut depth, mut in_gui, mut field) = (0usize, false, None::<String>);
    let (mut address, mut api_key, mut tls) = (None, None, false);
    loop {
        match reader.read_event() {
            Err(e) => return Err(bad(format!("not readable XML: {e}"))),
            Ok(Event::Eof) => break,
            Ok(Event::Start(e)) => {
                depth += 1;
                let name = AsRef::<str>::as_ref(&e.name()).to_string();
                if depth == 2 && name == "gui" {
                    in_gui = true;
                    for a in e.attributes().flatten() {
                        if AsRef::<str>::as_ref(&a.key) == "tls" {
                            tls = a.value.as_ref() == "true";
                        }
                    }
                } else if in_gui && depth == 3 {
                    field = Some(name);
                }
            }
            Ok(Event::End(_)) => {
                if depth == 2 {
                    in_gui = false;
                }
                field = None;
                depth = depth.saturating_sub(1);
            }
            Ok(Event::Text(t)) => {
                if let Some(f) = &field {
                    let value = t.xml10_content().trim().to_string();
                    match f.as_str() {
                        "address" => address = Some(value),
                        "apikey" => api_key = Some(value),
                        _ => {}
                    }
                }
            }
            Ok(_) => {}
        }
    }
    let address = address
        .filter(|a| !a.is_empty())
        .ok_or_else(|| bad("no <gui><address>".into()))?;
    let api_key = api_key
        .filter(|k| !k.is_empty())
        .ok_or_else(|| bad("no <gui><apikey>: set an API key in Syncthing's settings".into()))?;
    Ok(Gui {
        address,
        api_key,
        tls,
        config: path.to_path_buf(),
    })
}

impl Gui {
    /// The base URL on this machine: an address on every interface is reached on
    /// loopback.
    pub fn base_url(&self) -> Result<String> {
        let a = self.address.trim();
        if a.starts_with("unix://") || a.starts_with('/') {
            return Err(Error::invalid(format!(
                "{}: the GUI listens on a Unix socket ({a}); fen-fs needs a TCP address",
                self.config.display()
            )));
        }
        let a = a
            .trim_start_matches("http://")
            .trim_start_matches("https://");
        let a = a
            .strip_prefix("0.0.0.0:")
            .map(|p| format!("127.0.0.1:{p}"))
            .or_else(|| a.strip_prefix("[::]:").map(|p| format!("[::1]:{p}")))
            .or_else(|| a.strip_prefix(':').map(|p| format!("127.0.0.1:{p}")))
            .unwrap_or_else(|| a.to_string());
        Ok(format!("{}://{a}", if self.tls { "https" } else { "http" }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gui_block_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.xml");
        std::fs::write(
            &p,
            r#"<configuration version="37">
    <device id="X" name="a"><address>dynamic</address></device>
    <gui enabled="true" tls="false" debugging="false">
        <address>0.0.0.0:8385</address>
        <apikey>k3y</apikey>
        <theme>default</theme>
    </gui>
    <options><listenAddress>default</listenAddress></options>
</configuration>"#,
        )
        .unwrap();
        let g = read_gui(&p).unwrap();
        assert_eq!(
            (g.address.as_str(), g.api_key.as_str(), g.tls),
            ("0.0.0.0:8385", "k3y", false)
        );
        assert_eq!(g.base_url().unwrap(), "http://127.0.0.1:8385");
        std::fs::write(
            &p,
            "<configuration><gui><address>x</address></gui></configuration>",
        )
        .unwrap();
        assert!(read_gui(&p).unwrap_err().reason.contains("apikey"));
        assert!(
            find(Some(dir.path().join("none").as_path()))
                .unwrap_err()
                .reason
                .contains("none")
        );
    }
}
