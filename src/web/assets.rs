//! The files every page loads, compiled into the binary (`include_str!`): the page
//! works offline, with no CDN and no build step. `session.css` is the Session
//! renderer's (shared with `fen-fs export`, which inlines it).

/// The script of every page.
pub const APP_JS: &str = include_str!("assets/app.js");
/// The pages' own styles.
pub const APP_CSS: &str = include_str!("assets/app.css");
/// The tab's icon.
pub const ICON_SVG: &str = include_str!("assets/icon.svg");

/// The file `name` and its content type.
pub fn get(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "app.js" => (APP_JS, "text/javascript; charset=utf-8"),
        "app.css" => (APP_CSS, "text/css; charset=utf-8"),
        "session.css" => (crate::views::html::CSS, "text/css; charset=utf-8"),
        "icon.svg" => (ICON_SVG, "image/svg+xml"),
        _ => return None,
    })
}
