//! Syncthing's REST API (`/rest/...`, header `X-API-Key`), over plain HTTP on this
//! machine with `ureq`. Every failure says what it asked, where, and which
//! `config.xml` the address and key came from.

use super::home::Gui;
use crate::error::{Error, Result};
use serde_json::Value;
use std::time::Duration;

pub struct Client {
    base: String,
    gui: Gui,
    agent: ureq::Agent,
}

impl Client {
    pub fn new(gui: Gui) -> Result<Client> {
        let base = gui.base_url()?;
        if gui.tls {
            return Err(Error::invalid(format!(
                "Syncthing's GUI at {base} requires HTTPS (tls=\"true\" in {}); fen-fs talks to it over plain HTTP on this machine: turn \"Use HTTPS for GUI\" off",
                gui.config.display()
            )));
        }
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(3))
            .timeout(Duration::from_secs(30))
            .build();
        Ok(Client { base, gui, agent })
    }

    pub fn config_path(&self) -> &std::path::Path {
        &self.gui.config
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let url = format!("{}{path}", self.base);
        let req = self
            .agent
            .request(method, &url)
            .set("X-API-Key", &self.gui.api_key);
        let res = match body {
            Some(b) => req
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => req.call(),
        };
        let config = self.gui.config.display();
        match res {
            Ok(r) => {
                let text = r.into_string().unwrap_or_default();
                Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
            }
            Err(ureq::Error::Status(401 | 403, _)) => Err(Error::new(
                libc::EACCES,
                format!(
                    "Syncthing at {} refused the API key read from {config}: is that the config of the Syncthing that runs there?",
                    self.base
                ),
            )),
            Err(ureq::Error::Status(code, r)) => {
                let text = r.into_string().unwrap_or_default();
                Err(Error::new(
                    libc::EIO,
                    format!(
                        "Syncthing at {} answered {method} {path} with HTTP {code}: {}",
                        self.base,
                        text.trim()
                    ),
                ))
            }
            Err(ureq::Error::Transport(t)) => Err(Error::new(
                libc::ECONNREFUSED,
                format!(
                    "cannot reach Syncthing at {} (the GUI address in {config}): {}; is Syncthing running?",
                    self.base,
                    t.message()
                        .map(str::to_string)
                        .unwrap_or_else(|| t.kind().to_string())
                ),
            )),
        }
    }

    pub fn get(&self, path: &str) -> Result<Value> {
        self.call("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &Value) -> Result<Value> {
        self.call("POST", path, Some(body))
    }

    pub fn put(&self, path: &str, body: &Value) -> Result<Value> {
        self.call("PUT", path, Some(body))
    }

    pub fn delete(&self, path: &str) -> Result<Value> {
        self.call("DELETE", path, None)
    }

    /// Checks that Syncthing runs and takes the key; this device's id.
    pub fn my_id(&self) -> Result<String> {
        self.get("/rest/system/ping")?;
        self.get("/rest/system/status")?["myID"]
            .as_str()
            .map(String::from)
            .ok_or_else(|| Error::new(libc::EIO, "Syncthing's /rest/system/status names no myID"))
    }

    /// The folder `id`'s configuration, if it has one.
    pub fn folder(&self, id: &str) -> Result<Option<Value>> {
        let all = self.get("/rest/config/folders")?;
        Ok(all
            .as_array()
            .and_then(|a| a.iter().find(|f| f["id"] == id).cloned()))
    }

    pub fn folders(&self) -> Result<Vec<Value>> {
        Ok(self
            .get("/rest/config/folders")?
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    pub fn devices(&self) -> Result<Vec<Value>> {
        Ok(self
            .get("/rest/config/devices")?
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    /// Adds folder `f`, or replaces the one its `id` names (fields it leaves out take
    /// Syncthing's defaults).
    pub fn put_folder(&self, f: &Value) -> Result<()> {
        self.post("/rest/config/folders", f).map(|_| ())
    }

    /// Adds device `d`, or replaces the one its `deviceID` names.
    pub fn put_device(&self, d: &Value) -> Result<()> {
        self.post("/rest/config/devices", d).map(|_| ())
    }
}

/// `s` safe in a URL path or query (device and folder ids need none of this, but a
/// folder id is the user's to choose).
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
