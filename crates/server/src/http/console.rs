//! The web console (issue 19): hand-written HTML, CSS and ES modules under
//! `crates/server/ui/`, compiled into the binary and served under `/ui/`
//! when `http.web_ui` is on.
//!
//! The console needs no credential to load; every API call it makes does.
//! Each answer carries `Content-Security-Policy: default-src 'self'`, so
//! the pages run no inline script or style and load nothing from elsewhere,
//! and the console renders every server value as text (never as HTML).

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{
    ALLOW, CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, HeaderValue, LOCATION,
    REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use hyper::{Method, Response, StatusCode};

use super::HttpResponse;

/// Where the console lives on the HTTP listener.
pub const PREFIX: &str = "/ui";

/// The policy on every console answer: scripts, styles, images and API
/// calls come from this origin only, and never from inline text.
pub const CSP: &str = "default-src 'self'";

/// One embedded file: its path under `/ui/`, its media type and bytes.
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub bytes: &'static [u8],
}

macro_rules! assets {
    ($(($path:literal, $content_type:expr)),* $(,)?) => {
        &[$(Asset {
            path: $path,
            content_type: $content_type,
            bytes: include_bytes!(concat!("../../ui/", $path)),
        }),*]
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of `crates/server/ui/` (a unit test keeps this list whole).
pub const ASSETS: &[Asset] = assets![
    ("index.html", "text/html; charset=utf-8"),
    ("style.css", "text/css; charset=utf-8"),
    ("favicon.svg", "image/svg+xml"),
    ("js/api.js", JS),
    ("js/app.js", JS),
    ("js/dialogs.js", JS),
    ("js/dom.js", JS),
    ("js/format.js", JS),
    ("js/pages/overview.js", JS),
    ("js/pages/streams.js", JS),
    ("js/pages/topic.js", JS),
    ("js/pages/groups.js", JS),
    ("js/pages/messages.js", JS),
    ("js/pages/send.js", JS),
    ("js/pages/users.js", JS),
    ("js/pages/tokens.js", JS),
];

/// The answer for a console path, or `None` when the path is not the
/// console's (or the console is off: the API then answers 404 as for any
/// unknown path).
pub fn serve(enabled: bool, method: &Method, path: &str) -> Option<HttpResponse> {
    if !enabled {
        return None;
    }
    let rest = path.strip_prefix(PREFIX)?;
    if !rest.is_empty() && !rest.starts_with('/') {
        return None;
    }
    if method != Method::GET && method != Method::HEAD {
        let mut response = answer(StatusCode::METHOD_NOT_ALLOWED, None, &[]);
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Some(response);
    }
    if rest.is_empty() {
        let mut response = answer(StatusCode::PERMANENT_REDIRECT, None, &[]);
        response
            .headers_mut()
            .insert(LOCATION, HeaderValue::from_static("/ui/"));
        return Some(response);
    }
    let file = match &rest[1..] {
        "" => "index.html",
        other => other,
    };
    Some(match find(file) {
        Some(asset) => answer(StatusCode::OK, Some(asset.content_type), asset.bytes),
        None => answer(StatusCode::NOT_FOUND, None, &[]),
    })
}

/// The asset at `path` (relative to `/ui/`), if embedded.
pub fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.path == path)
}

fn answer(status: StatusCode, content_type: Option<&str>, body: &'static [u8]) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from_static(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    if let Some(content_type) = content_type.and_then(|t| HeaderValue::from_str(t).ok()) {
        headers.insert(CONTENT_TYPE, content_type);
    }
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    // The assets change with the binary; a browser asks again each time.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_under(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("the ui directory is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                files_under(&path, base, out);
            } else {
                let relative = path.strip_prefix(base).expect("under the base");
                out.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }

    #[test]
    fn given_the_ui_directory_when_listing_assets_should_embed_every_file() {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui");
        let mut files = Vec::new();
        files_under(&base, &base, &mut files);
        for file in &files {
            assert!(find(file).is_some(), "{file} is not in console::ASSETS");
        }
        assert_eq!(files.len(), ASSETS.len());
    }

    #[test]
    fn given_the_console_off_when_asked_should_leave_the_path_to_the_api() {
        assert!(serve(false, &Method::GET, "/ui/").is_none());
        assert!(serve(true, &Method::GET, "/uix").is_none());
        assert!(serve(true, &Method::GET, "/streams").is_none());
    }

    #[test]
    fn given_console_paths_when_served_should_answer_with_policy_and_type() {
        let index = serve(true, &Method::GET, "/ui/").expect("a console path");
        assert_eq!(index.status(), StatusCode::OK);
        assert_eq!(index.headers()[CONTENT_SECURITY_POLICY], CSP);
        let missing = serve(true, &Method::GET, "/ui/nope.js").expect("a console path");
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        let bare = serve(true, &Method::GET, "/ui").expect("a console path");
        assert_eq!(bare.status(), StatusCode::PERMANENT_REDIRECT);
        let post = serve(true, &Method::POST, "/ui/").expect("a console path");
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    }
}
