//! `fen-fs sync` (§12): setting up Syncthing, which moves the files; fen-fs only
//! reads what it delivers. `home` finds Syncthing's `config.xml` (GUI address, API
//! key), `rest` talks to its REST API, `stignore` is the store's ignore file, `setup`
//! is what `init`, `add` and `status` do with them.

pub mod home;
pub mod rest;
pub mod setup;
pub mod stignore;

/// The Syncthing folder id of the store of the device `device_id`: `fen-` and the
/// device id's first 7 characters (Syncthing's own short id).
pub fn folder_id(device_id: &str) -> String {
    format!("fen-{}", short_id(device_id))
}

/// A device id's first group (Syncthing shows it as the short id).
pub fn short_id(device_id: &str) -> String {
    device_id.chars().filter(|c| *c != '-').take(7).collect()
}

/// Whether `id` looks like a Syncthing device id: 8 groups of 7 of `A-Z2-7`, with
/// dashes (or 56 characters without).
pub fn is_device_id(id: &str) -> bool {
    let body: String = id.chars().filter(|c| *c != '-').collect();
    let groups_ok = !id.contains('-') || id.split('-').all(|g| g.len() == 7);
    body.len() == 56
        && groups_ok
        && body
            .chars()
            .all(|c| c.is_ascii_uppercase() || ('2'..='7').contains(&c))
}

#[cfg(test)]
mod tests {
    #[test]
    fn device_ids_and_folder_ids() {
        let id = "MFZWI3D-BONSGYC-YLTMRWG-C43ENR5-QXGZDMM-FZWI3DP-BONSGYY-LTMRWAD";
        assert!(super::is_device_id(id));
        assert!(super::is_device_id(&id.replace('-', "")));
        assert!(!super::is_device_id("MFZWI3D-BONSGYC"));
        assert!(!super::is_device_id(&id.to_lowercase()));
        assert_eq!(super::folder_id(id), "fen-MFZWI3D");
    }
}
