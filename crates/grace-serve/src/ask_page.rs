//! The asker's page at `/`: a chat over `/v1/ask` (server-sent events),
//! `/v1/sessions`, `/v1/runs/{id}/reply` and `/v1/escalations/{id}`.
//! Plain HTML, CSS and JavaScript, embedded in the binary and served from
//! this server only: no build step, no CDN, no external fonts. The page's
//! policy (see [`super::gate::security_headers`]) runs only these files'
//! script and style; the page writes every text from the API as text,
//! never as markup.

use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;

/// The page.
const HTML: &str = include_str!("ask_page/index.html");
/// Its script: streaming, sessions, escalations, the texts in English and
/// Japanese.
const SCRIPT: &str = include_str!("ask_page/ask.js");
/// Its style.
const STYLE: &str = include_str!("ask_page/ask.css");
/// The answer's Markdown as elements, for this page and the reviewer's.
const MARKDOWN: &str = include_str!("ask_page/markdown.js");

/// Where the page loads its script from.
const SCRIPT_PATH: &str = "/assets/ask.js";
/// Where the page loads its style from.
const STYLE_PATH: &str = "/assets/ask.css";
/// Where both pages load the Markdown renderer from.
pub const MARKDOWN_PATH: &str = "/assets/markdown.js";
/// Where both pages load the confidence factors' plain words from
/// ([`grace::lang::factor_words_json`], written once in Rust).
pub const FACTORS_PATH: &str = "/assets/factors.js";
/// The paths the page is made of (open to anyone, like the reviewer page:
/// they hold no data).
pub const PATHS: [&str; 5] = ["/", SCRIPT_PATH, STYLE_PATH, MARKDOWN_PATH, FACTORS_PATH];

/// What both pages do with the factors' words (`factors.js`).
const FACTOR_HELPERS: &str = include_str!("ask_page/factors.js");

/// `factors.js`: the global `FACTOR_WORDS` from the server's own texts,
/// and the helpers both pages' scripts use with it; made once.
fn factors_script() -> &'static str {
    static SCRIPT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SCRIPT.get_or_init(|| {
        format!(
            "// The confidence factors in plain words, from the server's own texts.\n\
             const FACTOR_WORDS = {};\n\n{FACTOR_HELPERS}",
            grace::lang::factor_words_json()
        )
    })
}

/// The content security policy of `/`: its own script and style only,
/// requests to this server only.
pub const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// `GET /` and its three files.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let file = |kind: &'static str, body: &'static str| {
        get(move || async move { ([(header::CONTENT_TYPE, kind)], body).into_response() })
    };
    Router::new()
        .route("/", get(|| async { Html(HTML) }))
        .route(SCRIPT_PATH, file("text/javascript; charset=utf-8", SCRIPT))
        .route(STYLE_PATH, file("text/css; charset=utf-8", STYLE))
        .route(
            MARKDOWN_PATH,
            file("text/javascript; charset=utf-8", MARKDOWN),
        )
        .route(
            FACTORS_PATH,
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    factors_script(),
                )
                    .into_response()
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_its_own_files() {
        assert!(HTML.contains(&format!("src=\"{SCRIPT_PATH}\"")));
        assert!(HTML.contains(&format!("src=\"{MARKDOWN_PATH}\"")));
        assert!(HTML.contains(&format!("src=\"{FACTORS_PATH}\"")));
        assert!(HTML.contains(&format!("href=\"{STYLE_PATH}\"")));
        // Nothing from elsewhere, nothing inline for the policy to allow.
        for page in [HTML, SCRIPT, STYLE, MARKDOWN, FACTOR_HELPERS] {
            assert!(!page.contains("http://") && !page.contains("https://"));
        }
        assert!(!HTML.contains("<script>") && !HTML.contains("<style>"));
        // No inline event handlers (`onclick=` and the like).
        let handlers = HTML
            .split(|c: char| c.is_whitespace())
            .filter(|w| w.starts_with("on") && w.contains('='))
            .count();
        assert_eq!(handlers, 0);
        // The scripts write text, never markup.
        for script in [SCRIPT, MARKDOWN, FACTOR_HELPERS] {
            assert!(!script.contains("innerHTML") && !script.contains("outerHTML"));
            assert!(!script.contains("insertAdjacentHTML") && !script.contains("document.write"));
        }
    }

    #[test]
    fn the_factor_words_are_a_script_the_pages_can_load() {
        let script = factors_script();
        assert!(script.contains("const FACTOR_WORDS = {\"en\":"));
        assert!(script.contains("\"max_score\":[\"The passage the answer cites"));
        assert!(script.contains("function factorText(code, c, raised)"));
    }
}
