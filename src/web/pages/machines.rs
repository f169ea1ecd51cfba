//! The Machines page (`/machines`): this machine and every peer whose store is synced
//! here (§12): its sessions, its newest session, and Syncthing's connection state
//! where the local Syncthing answers (as `fen-fs sync status`).

use super::chrome::{self, Tab, count, esc, when};
use crate::web::app::App;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

#[derive(Default)]
struct Machine<'a> {
    sessions: u64,
    newest: Option<&'a str>,
    agents: BTreeMap<&'static str, u64>,
}

pub fn page(app: &Arc<App>) -> String {
    let mut out = chrome::start("Machines", Tab::Machines, "");
    out.push_str("<h1>Machines</h1>\n");
    let all = match app.listing() {
        Ok(l) => l,
        Err(e) => {
            chrome::note(
                &mut out,
                "error",
                &format!("the sessions could not be listed: {}", e.reason),
            );
            return chrome::end(out);
        }
    };
    let me = crate::host::this_host();
    let mut machines: BTreeMap<&str, Machine> = BTreeMap::new();
    machines.entry(me).or_default();
    for l in all.iter() {
        let m = machines.entry(l.host.as_deref().unwrap_or(me)).or_default();
        m.sessions += 1;
        if m.newest
            .is_none_or(|n| l.updated_at.as_deref().is_some_and(|u| u > n))
        {
            m.newest = l.updated_at.as_deref();
        }
        *m.agents.entry(l.agent.name()).or_default() += 1;
    }
    let syncthing_state = app.syncthing();
    let syncthing: &crate::web::app::SyncthingState = &syncthing_state;
    out.push_str("<table class=\"machines\"><thead><tr><th>Host</th><th class=\"num\">Sessions</th><th>Agents</th><th>Newest session</th><th>Syncthing</th><th>Last arrival</th></tr></thead><tbody>\n");
    for (host, m) in &machines {
        let peer = syncthing
            .as_ref()
            .ok()
            .and_then(|peers| peers.iter().find(|p| p.host.eq_ignore_ascii_case(host)));
        let state = if *host == me {
            "this machine".to_string()
        } else {
            match (peer, syncthing.as_ref()) {
                (Some(p), _) => format!(
                    "{}{}{}",
                    if p.connected {
                        "connected"
                    } else {
                        "not connected"
                    },
                    p.address
                        .as_deref()
                        .map(|a| format!(" ({a})"))
                        .unwrap_or_default(),
                    p.state
                        .as_deref()
                        .map(|s| format!(", folder {s}"))
                        .unwrap_or_default()
                ),
                (None, Ok(_)) => "not a Syncthing peer here".into(),
                (None, Err(_)) => "Syncthing does not answer".into(),
            }
        };
        let agents: Vec<String> = m
            .agents
            .iter()
            .map(|(a, n)| format!("{a} {}", count(*n)))
            .collect();
        let _ = writeln!(
            out,
            "<tr><td>{}{}</td><td class=\"num\"><a href=\"/?host={}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(host),
            if *host == me {
                " <span class=\"badge\">here</span>"
            } else {
                ""
            },
            chrome::url_part(host),
            count(m.sessions),
            esc(&agents.join(", ")),
            when(m.newest),
            esc(&state),
            when(peer.and_then(|p| p.last_synced.as_deref())),
        );
    }
    out.push_str("</tbody></table>\n");
    // Peers Syncthing knows that have no session here yet.
    if let Ok(peers) = syncthing.as_ref() {
        for p in peers
            .iter()
            .filter(|p| !machines.contains_key(p.host.as_str()))
        {
            chrome::note(
                &mut out,
                "",
                &format!(
                    "Syncthing peer {} ({}): no session of it here yet",
                    p.host,
                    if p.connected {
                        "connected"
                    } else {
                        "not connected"
                    }
                ),
            );
        }
    }
    if let Err(why) = syncthing.as_ref() {
        chrome::note(
            &mut out,
            "",
            &format!(
                "Syncthing's state is not shown: {why} (`fen-fs sync` sets it up: docs/sync.md)"
            ),
        );
    }
    chrome::end(out)
}
