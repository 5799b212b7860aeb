//! The front end, embedded in the binary.

/// `index.html`.
pub const INDEX_HTML: &str = include_str!("../assets/index.html");
/// `app.js`.
pub const APP_JS: &str = include_str!("../assets/app.js");
/// `app.css`.
pub const APP_CSS: &str = include_str!("../assets/app.css");

/// The embedded file served at `path` (`/`, `/index.html`, `/assets/app.js`,
/// `/assets/app.css`) as (content type, body).
pub fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/" | "/index.html" => Some(("text/html; charset=utf-8", INDEX_HTML)),
        "/assets/app.js" => Some(("text/javascript; charset=utf-8", APP_JS)),
        "/assets/app.css" => Some(("text/css; charset=utf-8", APP_CSS)),
        _ => None,
    }
}
