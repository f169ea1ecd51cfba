//! A real Syncthing for tests, reachable on 127.0.0.1 only: its home is generated,
//! then its config.xml is edited (listen and GUI addresses on loopback; global and
//! local discovery, relays, NAT, usage and crash reporting, upgrades off) BEFORE its
//! first start; it is stopped by its pid. Without the `syncthing` binary a test says
//! SKIPPED loudly, unless FEN_FS_REQUIRE_SYNCTHING=1 (CI), where it fails.

use quick_xml::events::{BytesText, Event};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub struct Syncthing {
    pub home: PathBuf,
    pub gui_port: u16,
    pub listen_port: u16,
    pub device_id: String,
    pub api_key: String,
    child: Option<Child>,
}

/// Whether `syncthing` can run here; if not, SKIPPED (or a panic when required).
pub fn available(test: &str) -> bool {
    let ok = Command::new("syncthing")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("FEN_FS_REQUIRE_SYNCTHING").as_deref() == Ok("1") {
            panic!("{test}: syncthing is required (FEN_FS_REQUIRE_SYNCTHING=1) but not installed");
        }
        eprintln!(
            "\n*** SKIPPED {test}: syncthing not installed (apt-get install syncthing) ***\n"
        );
    }
    ok
}

/// A port free on 127.0.0.1 now.
pub fn free_port() -> u16 {
    free_ports::<1>()[0]
}

/// `N` different ports free on 127.0.0.1 now (held together while chosen, so that
/// the system cannot hand out one twice).
pub fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<_> = (0..N)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    std::array::from_fn(|i| held[i].local_addr().unwrap().port())
}

/// What every test Syncthing's `<options>` must say before it starts.
fn loopback_options(listen_port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("listenAddress", format!("tcp://127.0.0.1:{listen_port}")),
        ("globalAnnounceEnabled", "false".into()),
        ("localAnnounceEnabled", "false".into()),
        ("relaysEnabled", "false".into()),
        ("natEnabled", "false".into()),
        ("urAccepted", "-1".into()),
        ("crashReportingEnabled", "false".into()),
        ("autoUpgradeIntervalH", "0".into()),
        ("startBrowser", "false".into()),
        ("announceLANAddresses", "false".into()),
    ]
}

/// Rewrites `config.xml` with `options` (children of `<options>`) and the GUI address
/// set; panics unless every one of them was found and set.
pub fn edit_config(path: &Path, options: &[(&str, String)], gui_address: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut writer = quick_xml::Writer::new(Vec::new());
    let mut stack: Vec<String> = Vec::new();
    let mut set: Vec<String> = Vec::new();
    // Inside an element whose text we replace: its events are dropped until its end.
    let mut skipping: Option<usize> = None;
    loop {
        let ev = reader.read_event().unwrap();
        match &ev {
            Event::Eof => break,
            Event::Start(e) => {
                let name = AsRef::<str>::as_ref(&e.name()).to_string();
                stack.push(name.clone());
                if skipping.is_some() {
                    continue;
                }
                let parent = stack.len().checked_sub(2).map(|i| stack[i].as_str());
                let value = match (parent, name.as_str()) {
                    (Some("options"), n) => options
                        .iter()
                        .find(|(k, _)| *k == n)
                        .map(|(_, v)| v.clone()),
                    (Some("gui"), "address") => Some(gui_address.to_string()),
                    _ => None,
                };
                writer.write_event(ev.clone()).unwrap();
                if let Some(v) = value {
                    let key = format!("{}/{name}", parent.unwrap());
                    if set.contains(&key) {
                        // A second listenAddress: its value is the same loopback one.
                    }
                    set.push(key);
                    writer.write_event(Event::Text(BytesText::new(&v))).unwrap();
                    skipping = Some(stack.len());
                }
                continue;
            }
            Event::End(_) => {
                if skipping == Some(stack.len()) {
                    skipping = None;
                }
                stack.pop();
                if skipping.is_some() {
                    continue;
                }
            }
            _ if skipping.is_some() => continue,
            _ => {}
        }
        writer.write_event(ev).unwrap();
    }
    for (k, _) in options {
        assert!(
            set.contains(&format!("options/{k}")),
            "{}: <options><{k}> not found: the test Syncthing is not started",
            path.display()
        );
    }
    assert!(
        set.contains(&"gui/address".to_string()),
        "no <gui><address>"
    );
    std::fs::write(path, writer.into_inner()).unwrap();
}

/// The text of the first element `tag` (a child of `parent`), or its attribute `attr`.
fn xml_value(path: &Path, parent: &str, tag: &str, attr: Option<&str>) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut stack: Vec<String> = Vec::new();
    loop {
        match reader.read_event().ok()? {
            Event::Eof => return None,
            Event::Start(e) => {
                let name = AsRef::<str>::as_ref(&e.name()).to_string();
                let is_parent = stack.last().is_some_and(|p| p == parent);
                stack.push(name.clone());
                if is_parent && name == tag {
                    if let Some(a) = attr {
                        return e
                            .attributes()
                            .flatten()
                            .find(|x| AsRef::<str>::as_ref(&x.key) == a)
                            .map(|x| x.value.to_string());
                    }
                    if let Ok(Event::Text(t)) = reader.read_event() {
                        return Some(t.xml10_content().trim().to_string());
                    }
                }
            }
            Event::End(_) => {
                stack.pop();
            }
            _ => {}
        }
    }
}

impl Syncthing {
    /// Generates a home in `home`, makes it loopback-only, starts it and waits until
    /// its REST API answers.
    pub fn start(home: &Path) -> Syncthing {
        std::fs::create_dir_all(home).unwrap();
        let out = Command::new("syncthing")
            .arg("generate")
            .arg(format!("--home={}", home.display()))
            .args(["--no-default-folder", "--skip-port-probing"])
            .env("STNOUPGRADE", "1")
            .env("HOME", home)
            .output()
            .unwrap();
        assert!(out.status.success(), "syncthing generate: {out:?}");
        let config = home.join("config.xml");
        let [gui_port, listen_port] = free_ports::<2>();
        edit_config(
            &config,
            &loopback_options(listen_port),
            &format!("127.0.0.1:{gui_port}"),
        );
        let device_id = xml_value(&config, "configuration", "device", Some("id")).unwrap();
        let api_key = xml_value(&config, "gui", "apikey", None).unwrap();
        let mut s = Syncthing {
            home: home.to_path_buf(),
            gui_port,
            listen_port,
            device_id,
            api_key,
            child: None,
        };
        s.run();
        s
    }

    /// Starts the (already configured) Syncthing and waits for its API.
    pub fn run(&mut self) {
        let log = std::fs::File::create(self.home.join("syncthing.log")).unwrap();
        let child = Command::new("syncthing")
            .arg("serve")
            .arg(format!("--home={}", self.home.display()))
            .args(["--no-browser", "--no-restart"])
            .env("STNOUPGRADE", "1")
            .env("STNODEFAULTFOLDER", "1")
            .env("HOME", &self.home)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.get("/rest/system/ping").is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("syncthing did not answer: {}", self.log());
    }

    /// Stops it (SIGTERM to its pid, then SIGKILL after 10 s).
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SAFETY: signalling the process this helper started.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.home.join("syncthing.log")).unwrap_or_default()
    }

    /// `GET path` of its REST API, parsed (None if it does not answer 200).
    pub fn get(&self, path: &str) -> Option<serde_json::Value> {
        let r = ureq::get(&format!("http://127.0.0.1:{}{path}", self.gui_port))
            .set("X-API-Key", &self.api_key)
            .timeout(Duration::from_secs(5))
            .call()
            .ok()?;
        serde_json::from_str(&r.into_string().ok()?).ok()
    }

    /// `POST path` of its REST API; whether it answered 200.
    pub fn post(&self, path: &str) -> bool {
        ureq::post(&format!("http://127.0.0.1:{}{path}", self.gui_port))
            .set("X-API-Key", &self.api_key)
            .timeout(Duration::from_secs(5))
            .call()
            .is_ok()
    }

    /// `PATCH path` of its REST API with `body`; whether it answered 200.
    pub fn patch(&self, path: &str, body: &serde_json::Value) -> bool {
        ureq::request(
            "PATCH",
            &format!("http://127.0.0.1:{}{path}", self.gui_port),
        )
        .set("X-API-Key", &self.api_key)
        .timeout(Duration::from_secs(5))
        .send_string(&body.to_string())
        .is_ok()
    }

    /// Whether every folder it has is idle (scanned, its watcher started after).
    pub fn folders_idle(&self) -> bool {
        let Some(folders) = self.get("/rest/config/folders") else {
            return false;
        };
        folders.as_array().is_some_and(|all| {
            all.iter().all(|f| {
                let id = f["id"].as_str().unwrap_or_default();
                self.get(&format!("/rest/db/status?folder={id}"))
                    .is_some_and(|s| s["state"] == "idle")
            })
        })
    }

    /// Whether it is connected to device `id`.
    pub fn connected_to(&self, id: &str) -> bool {
        self.get("/rest/system/connections")
            .is_some_and(|c| c["connections"][id]["connected"] == true)
    }
}

impl Drop for Syncthing {
    fn drop(&mut self) {
        self.stop();
    }
}
