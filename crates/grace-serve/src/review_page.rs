//! The reviewer page at `/review`: escalations, the gap report and the
//! reliability diagram over the review endpoints. Plain HTML, CSS and
//! JavaScript, embedded in the binary and served from this server only;
//! like the asker's page, its policy runs only its own script and style
//! files (no `'unsafe-inline'`): the page shows every asker's question to
//! the reviewers, and an injected script there would read them.

use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;

/// The page.
const HTML: &str = include_str!("review_page/index.html");
/// Its script.
const SCRIPT: &str = include_str!("review_page/review.js");
/// Its style.
const STYLE: &str = include_str!("review_page/review.css");

/// Where the page is.
pub const PAGE_PATH: &str = "/review";
/// Where the page loads its script from.
const SCRIPT_PATH: &str = "/assets/review.js";
/// Where the page loads its style from.
const STYLE_PATH: &str = "/assets/review.css";
/// The paths the page is made of (open to anyone: they hold no data; the
/// page sends the reviewer's token with each request).
pub const PATHS: [&str; 3] = [PAGE_PATH, SCRIPT_PATH, STYLE_PATH];

/// The content security policy of `/review`: as the asker's page's, its
/// own script and style files only, requests to this server only.
pub const POLICY: &str = super::ask_page::POLICY;

/// `GET /review` and its two files.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let file = |kind: &'static str, body: &'static str| {
        get(move || async move { ([(header::CONTENT_TYPE, kind)], body).into_response() })
    };
    Router::new()
        .route(PAGE_PATH, get(|| async { Html(HTML) }))
        .route(SCRIPT_PATH, file("text/javascript; charset=utf-8", SCRIPT))
        .route(STYLE_PATH, file("text/css; charset=utf-8", STYLE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_its_own_files_and_runs_nothing_inline() {
        assert!(HTML.contains(&format!("src=\"{SCRIPT_PATH}\"")));
        assert!(HTML.contains(&format!("href=\"{STYLE_PATH}\"")));
        assert!(HTML.contains(&format!(
            "src=\"{}\"",
            super::super::ask_page::MARKDOWN_PATH
        )));
        assert!(HTML.contains(&format!("src=\"{}\"", super::super::ask_page::FACTORS_PATH)));
        for part in [HTML, SCRIPT, STYLE] {
            assert!(!part.contains("http://") && !part.contains("https://"));
        }
        // Nothing inline for a policy to allow: no script or style
        // element with content, no style attribute, no event handler.
        assert!(!HTML.contains("<script>") && !HTML.contains("<style"));
        assert!(!HTML.contains(" style="));
        let handlers = HTML
            .split(|c: char| c.is_whitespace())
            .filter(|w| w.starts_with("on") && w.contains('='))
            .count();
        assert_eq!(handlers, 0);
        assert!(!POLICY.contains("unsafe-inline"));
        // The script writes text, never markup.
        assert!(!SCRIPT.contains("innerHTML") && !SCRIPT.contains("outerHTML"));
        assert!(!SCRIPT.contains("insertAdjacentHTML") && !SCRIPT.contains("document.write"));
        assert!(!SCRIPT.contains("setAttribute(\"style\""));
    }
}
