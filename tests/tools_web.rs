//! `web_fetch` and `web_search` against local servers only: a raw HTTP/1.1
//! server on 127.0.0.1 (listed in `tools.web.allow_hosts`) that can answer
//! slowly, endlessly, with odd types and charsets, and with redirects to
//! places the address policy must refuse.

use crate::support;
use crate::support::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use grace::Config;
use grace::confidence::Factor;
use grace::tools::{ToolErrorKind, ToolOutput, ToolRegistry, ToolResult};
use serde_json::{Value, json};

/// What the server does for one request.
enum Reply {
    /// Status, content type, body.
    Page(u16, &'static str, Vec<u8>),
    /// A 302 to this location.
    Redirect(String),
    /// Headers, then bytes until the client goes away (or 1 GiB).
    Endless,
    /// Waits this long before answering.
    Slow(Duration),
}

type Handler = dyn Fn(&str, u16) -> Reply + Send + Sync;

/// A local server; `requests` lists the paths asked, `streamed` counts the
/// bytes an endless body managed to write.
struct Server {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
    streamed: Arc<AtomicUsize>,
}

impl Server {
    fn start(handler: impl Fn(&str, u16) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let streamed = Arc::new(AtomicUsize::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let (r, s) = (requests.clone(), streamed.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (handler, r, s) = (handler.clone(), r.clone(), s.clone());
                std::thread::spawn(move || answer(stream, port, &*handler, &r, &s));
            }
        });
        Self {
            port,
            requests,
            streamed,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn allow(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn asked(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

fn answer(
    stream: TcpStream,
    port: u16,
    handler: &Handler,
    requests: &Mutex<Vec<String>>,
    streamed: &AtomicUsize,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let path = first.split(' ').nth(1).unwrap_or("/").to_string();
    requests.lock().unwrap().push(path.clone());
    let mut out = stream;
    let head = |status: u16, extra: &str| {
        format!("HTTP/1.1 {status} X\r\nConnection: close\r\n{extra}\r\n")
    };
    let reply = handler(&path, port);
    match reply {
        Reply::Page(status, ctype, body) => {
            let h = head(
                status,
                &format!(
                    "Content-Type: {ctype}\r\nContent-Length: {}\r\n",
                    body.len()
                ),
            );
            let _ = out.write_all(h.as_bytes());
            let _ = out.write_all(&body);
        }
        Reply::Redirect(location) => {
            let h = head(
                302,
                &format!("Location: {location}\r\nContent-Length: 0\r\n"),
            );
            let _ = out.write_all(h.as_bytes());
        }
        Reply::Endless => {
            let _ = out.write_all(head(200, "Content-Type: text/plain\r\n").as_bytes());
            let chunk = "lorem ipsum dolor sit amet ".repeat(2_500);
            while streamed.load(Ordering::SeqCst) < 1 << 30 {
                if out.write_all(chunk.as_bytes()).is_err() {
                    break;
                }
                streamed.fetch_add(chunk.len(), Ordering::SeqCst);
            }
        }
        Reply::Slow(wait) => {
            std::thread::sleep(wait);
            let body = "late";
            let h = head(
                200,
                &format!(
                    "Content-Type: text/plain\r\nContent-Length: {}\r\n",
                    body.len()
                ),
            );
            let _ = out.write_all(h.as_bytes());
            let _ = out.write_all(body.as_bytes());
        }
    }
    let _ = out.flush();
    // Drain what the client still sends so the close is clean.
    let _ = reader.read(&mut [0; 64]);
}

/// Pages most tests read; `/robots.txt` is absent (404) unless a test's
/// handler says otherwise.
fn site(path: &str, port: u16) -> Reply {
    match path.split('?').next().unwrap_or(path) {
        "/page.html" => Reply::Page(200, "text/html; charset=utf-8", PAGE.as_bytes().to_vec()),
        "/notes.md" => Reply::Page(200, "text/markdown", NOTES.as_bytes().to_vec()),
        "/latin1.html" => Reply::Page(
            200,
            "text/html; charset=iso-8859-1",
            b"<html><body><h1>Desserts</h1><p>La cr\xe8me br\xfbl\xe9e du chef est servie ti\xe8de.</p></body></html>"
                .to_vec(),
        ),
        "/binary" => Reply::Page(200, "application/octet-stream", vec![0, 1, 2, 3]),
        "/huge" => Reply::Endless,
        "/slow" => Reply::Slow(Duration::from_secs(5)),
        "/to-private" => Reply::Redirect("http://10.0.0.1/".into()),
        "/to-metadata" => Reply::Redirect("http://169.254.169.254/latest/meta-data".into()),
        "/to-page" => Reply::Redirect("/page.html".into()),
        "/to-file" => Reply::Redirect("file:///etc/passwd".into()),
        p if p.starts_with("/loop/") => {
            let n: u32 = p["/loop/".len()..].parse().unwrap_or(0);
            Reply::Redirect(format!("http://127.0.0.1:{port}/loop/{}", n + 1))
        }
        _ => Reply::Page(404, "text/plain", b"not found".to_vec()),
    }
}

const PAGE: &str = "<html><head><title>Zephyr valve manual</title></head><body>\
<h1>Zephyr valve</h1><p>The Zephyr pressure valve is made of brass.</p>\
<h2>Opening pressure</h2><p>The Zephyr valve opens at 42 bar and closes again at 38 bar.</p>\
<h2>Maintenance</h2><p>Grease the stem every six months with silicone grease.</p>\
</body></html>";

const NOTES: &str = "# Field notes\n\nGeneral remarks about the site.\n\n\
## Tide tables\n\nHigh tide at the north pier is at 06:40 on Mondays.\n";

/// A registry with only the web tools, `web_fetch` (and `web_search` when
/// `endpoint` is given) allowed to reach `allow`.
fn registry(
    data: &std::path::Path,
    allow: &[String],
    tweak: impl FnOnce(&mut Config),
) -> ToolRegistry {
    let mut config = common::config(data);
    config.tools.enabled = vec!["rag_search".into()];
    config.tools.web.allow_hosts = allow.to_vec();
    config.tools.web.fetch.enabled = true;
    config.tools.web.fetch.retry_count = 0;
    tweak(&mut config);
    let kb = Arc::new(common::open(config.clone()));
    ToolRegistry::from_config_with(&config, kb, None).unwrap()
}

fn fetch(registry: &ToolRegistry, url: &str, question: Option<&str>) -> ToolResult {
    let mut input = json!({ "url": url });
    if let Some(q) = question {
        input["question"] = json!(q);
    }
    registry.call("web_fetch", &input, &grace::access::ReadScope::All)
}

fn passages(r: &ToolResult) -> &[grace::search::Passage] {
    assert!(r.success, "{r:?}");
    let ToolOutput::Passages(p) = &r.output else {
        panic!("{:?}", r.output)
    };
    p
}

fn refused(r: &ToolResult, kind: ToolErrorKind, words: &[&str]) {
    assert!(!r.success, "{r:?}");
    assert_eq!(r.error_kind, Some(kind), "{r:?}");
    let error = r.error.as_deref().unwrap();
    for w in words {
        assert!(error.contains(w), "`{w}` not in: {error}");
    }
}

#[test]
fn an_html_page_becomes_passages_that_cite_its_url() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let registry = registry(data.path(), &[server.allow()], |_| {});
    let url = server.url("/page.html");
    let r = fetch(
        &registry,
        &url,
        Some("At what pressure does the Zephyr valve open?"),
    );
    let found = passages(&r);
    assert!(!found.is_empty());
    assert!(found.iter().all(|p| p.source == url), "{found:?}");
    assert!(found[0].text.contains("42 bar"), "{found:?}");
    assert!(found[0].section.contains("Opening pressure"), "{found:?}");
    assert_eq!(r.sources, vec![url.clone()]);
    // The factors a search has, so confidence applies as to any search.
    assert_eq!(r.factors.get(Factor::ResultCount), Some(found.len() as f64));
    let max = r.factors.get(Factor::MaxScore).unwrap();
    assert!(max > 0.3 && max <= 1.0, "{max}");
    assert!(r.factors.get(Factor::QueryCoverage).unwrap() > 0.5);
    // robots.txt was asked first (absent: allowed).
    assert_eq!(server.asked(), vec!["/robots.txt", "/page.html"]);

    // A redirect inside the allowed host is followed; the final URL is cited.
    let r = fetch(
        &registry,
        &server.url("/to-page"),
        Some("valve maintenance"),
    );
    assert_eq!(passages(&r)[0].source, url);
    assert!(passages(&r)[0].text.contains("silicone"), "{r:?}");

    // Without a question: the page's start, unscored, and a hint.
    let r = fetch(&registry, &url, None);
    assert!(passages(&r)[0].text.contains("brass"));
    assert!(r.suggestions.iter().any(|s| s.contains("question")));
}

#[test]
fn a_markdown_page_is_read_by_the_markdown_loader() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let registry = registry(data.path(), &[server.allow()], |_| {});
    let r = fetch(
        &registry,
        &server.url("/notes.md"),
        Some("When is high tide at the north pier?"),
    );
    let p = &passages(&r)[0];
    assert_eq!(p.section, "Field notes > Tide tables");
    assert!(p.text.contains("06:40"));
}

#[test]
fn latin1_pages_are_decoded_by_their_charset() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let registry = registry(data.path(), &[server.allow()], |_| {});
    let r = fetch(&registry, &server.url("/latin1.html"), Some("crème brûlée"));
    assert!(
        passages(&r)[0]
            .text
            .contains("La crème brûlée du chef est servie tiède."),
        "{r:?}"
    );
}

#[test]
fn redirects_to_private_and_metadata_addresses_are_refused() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let other_port = other.local_addr().unwrap().port();
    let registry = registry(data.path(), &[server.allow()], |_| {});
    let r = fetch(&registry, &server.url("/to-private"), Some("x"));
    refused(
        &r,
        ToolErrorKind::Failed,
        &["10.0.0.1", "private", "tools.web.allow_hosts"],
    );
    assert_eq!(r.attempts, 1, "a refusal is not retried");
    let r = fetch(&registry, &server.url("/to-metadata"), Some("x"));
    refused(&r, ToolErrorKind::Failed, &["169.254.169.254", "metadata"]);
    let r = fetch(&registry, &server.url("/to-file"), Some("x"));
    refused(&r, ToolErrorKind::Failed, &["only http and https"]);

    // Loopback on a port that allow_hosts does not list.
    let server2 =
        Server::start(move |_, _| Reply::Redirect(format!("http://127.0.0.1:{other_port}/")));
    let registry = registry_for(data.path(), &[server.allow(), server2.allow()]);
    let r = fetch(&registry, &server2.url("/anything"), Some("x"));
    refused(
        &r,
        ToolErrorKind::Failed,
        &["loopback", "tools.web.allow_hosts"],
    );
    drop(other);
}

fn registry_for(data: &std::path::Path, allow: &[String]) -> ToolRegistry {
    let sub = data.join(format!("r{}", allow.len()));
    std::fs::create_dir_all(&sub).unwrap();
    registry(&sub, allow, |_| {})
}

#[test]
fn localhost_is_refused_after_dns_when_not_allowed() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let registry = registry(data.path(), &[server.allow()], |_| {});
    let r = fetch(
        &registry,
        &format!("http://localhost:{}/page.html", server.port),
        Some("x"),
    );
    refused(
        &r,
        ToolErrorKind::Failed,
        &[
            "localhost",
            "resolves to",
            "loopback",
            "tools.web.allow_hosts",
        ],
    );
    assert!(server.asked().is_empty());
    // Listed by name, it is fetched.
    let registry = registry_for(
        data.path(),
        &[format!("localhost:{}", server.port), server.allow()],
    );
    let r = fetch(
        &registry,
        &format!("http://localhost:{}/page.html", server.port),
        Some("valve"),
    );
    assert!(!passages(&r).is_empty());
}

#[test]
fn a_huge_body_is_cut_at_max_bytes_and_the_reader_stops() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let registry = registry(data.path(), &[server.allow()], |c| {
        c.tools.web.fetch.max_bytes = 65_536;
    });
    let r = fetch(&registry, &server.url("/huge"), Some("lorem"));
    assert!(!passages(&r).is_empty());
    assert!(
        r.suggestions
            .iter()
            .any(|s| s.contains("cut at 65536 bytes") && s.contains("tools.web.fetch.max_bytes")),
        "{r:?}"
    );
    // The server could write only what the socket buffers hold beyond the
    // 64 KiB read: the client stopped reading and closed.
    let started = Instant::now();
    let mut last = usize::MAX;
    while started.elapsed() < Duration::from_secs(5) {
        let now = server.streamed.load(Ordering::SeqCst);
        if now == last {
            break;
        }
        last = now;
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(last < 32 << 20, "the server wrote {last} bytes");
}

#[test]
fn a_slow_server_times_out() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let registry = registry(data.path(), &[server.allow()], |c| {
        c.tools.web.fetch.timeout_seconds = 1.0;
    });
    let started = Instant::now();
    let r = fetch(&registry, &server.url("/slow"), Some("x"));
    refused(&r, ToolErrorKind::Timeout, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn other_content_types_are_refused() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let registry = registry(data.path(), &[server.allow()], |_| {});
    let r = fetch(&registry, &server.url("/binary"), Some("x"));
    refused(
        &r,
        ToolErrorKind::Failed,
        &["application/octet-stream", "tools.web.fetch.content_types"],
    );
}

#[test]
fn too_many_redirects_are_refused() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let registry = registry(data.path(), &[server.allow()], |c| {
        c.tools.web.fetch.max_redirects = 3;
    });
    let r = fetch(&registry, &server.url("/loop/0"), Some("x"));
    refused(
        &r,
        ToolErrorKind::Failed,
        &["more than 3 times", "tools.web.fetch.max_redirects"],
    );
    let loops = server
        .asked()
        .iter()
        .filter(|p| p.starts_with("/loop/"))
        .count();
    assert_eq!(loops, 4);
}

#[test]
fn robots_txt_disallow_is_obeyed_and_allow_respected() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(|path, port| match path {
        "/robots.txt" => Reply::Page(
            200,
            "text/plain",
            b"User-agent: *\nDisallow: /private\nAllow: /private/open\n".to_vec(),
        ),
        "/private/x" | "/private/open/x" => site("/page.html", port),
        "/go-private" => Reply::Redirect("/private/x".into()),
        _ => site(path, port),
    });
    let registry = registry(data.path(), &[server.allow()], |_| {});
    let r = fetch(&registry, &server.url("/private/x"), Some("valve"));
    refused(
        &r,
        ToolErrorKind::Failed,
        &[
            "disallowed by",
            "robots.txt",
            "tools.web.fetch.respect_robots",
        ],
    );
    assert!(!server.asked().contains(&"/private/x".to_string()));
    assert!(
        !passages(&fetch(
            &registry,
            &server.url("/private/open/x"),
            Some("valve")
        ))
        .is_empty()
    );
    // A redirect into a disallowed path is refused too.
    let r = fetch(&registry, &server.url("/go-private"), Some("valve"));
    refused(&r, ToolErrorKind::Failed, &["/private/x", "disallowed by"]);
    // Switched off, robots.txt is not read.
    let sub = data.path().join("off");
    let registry = self::registry(&sub, &[server.allow()], |c| {
        c.tools.web.fetch.respect_robots = false;
    });
    let before = server.asked().len();
    assert!(!passages(&fetch(&registry, &server.url("/private/x"), Some("valve"))).is_empty());
    assert_eq!(server.asked()[before..], ["/private/x".to_string()]);
}

#[test]
fn an_unreadable_robots_txt_refuses_the_page() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(|path, port| match path {
        "/robots.txt" => Reply::Page(503, "text/plain", b"down".to_vec()),
        _ => site(path, port),
    });
    let registry = registry(data.path(), &[server.allow()], |_| {});
    let r = fetch(&registry, &server.url("/page.html"), Some("valve"));
    refused(
        &r,
        ToolErrorKind::Transient,
        &["robots.txt", "HTTP 503", "RFC 9309"],
    );
    assert!(!server.asked().contains(&"/page.html".to_string()));
}

#[test]
fn a_search_result_feeds_web_fetch() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(|path, port| {
        if let Some(query) = path.strip_prefix("/search?") {
            if !(query.contains("format=json") && query.contains("q=zephyr+valve")) {
                return Reply::Page(400, "text/plain", b"bad query".to_vec());
            }
            let body = json!({"results": [
                {"title": "Zephyr valve manual", "url": format!("http://127.0.0.1:{port}/page.html"),
                 "content": "The Zephyr valve opens at 42 bar."},
                {"title": "local file", "url": "file:///etc/passwd", "content": "no"},
                {"title": "Other", "url": "https://example.com/other", "content": "other"},
            ]});
            return Reply::Page(200, "application/json", body.to_string().into_bytes());
        }
        site(path, port)
    });
    let endpoint = server.url("/search");
    let registry = registry(data.path(), &[server.allow()], |c| {
        c.tools.web.search.enabled = true;
        c.tools.web.search.endpoint = endpoint;
    });
    let r = registry.call(
        "web_search",
        &json!({"query": "zephyr valve", "limit": 5}),
        &grace::access::ReadScope::All,
    );
    assert!(r.success, "{r:?}");
    let ToolOutput::Data(data_out) = &r.output else {
        panic!("{:?}", r.output)
    };
    let results = data_out["results"].as_array().unwrap();
    // The file:// result was dropped.
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["snippet"], "The Zephyr valve opens at 42 bar.");
    let url = results[0]["url"].as_str().unwrap();
    let r = fetch(
        &registry,
        url,
        Some("At what pressure does the Zephyr valve open?"),
    );
    assert!(passages(&r)[0].text.contains("42 bar"));
    assert_eq!(r.sources, vec![url.to_string()]);

    // `limit` bounds the results.
    let r = registry.call(
        "web_search",
        &json!({"query": "zephyr valve", "limit": 1}),
        &grace::access::ReadScope::All,
    );
    let ToolOutput::Data(d) = &r.output else {
        panic!()
    };
    assert_eq!(d["results"].as_array().unwrap().len(), 1);
}

#[test]
fn a_search_endpoint_is_under_the_address_policy() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let endpoint = server.url("/search");
    // The endpoint's host is not in allow_hosts.
    let registry = registry(data.path(), &[], |c| {
        c.tools.web.search.enabled = true;
        c.tools.web.search.endpoint = endpoint;
    });
    let r = registry.call(
        "web_search",
        &json!({"query": "x"}),
        &grace::access::ReadScope::All,
    );
    refused(
        &r,
        ToolErrorKind::Failed,
        &["loopback", "tools.web.allow_hosts"],
    );
    assert!(server.asked().is_empty());
    // A page that is not JSON fails with advice.
    let endpoint = server.url("/page.html");
    let sub = data.path().join("json");
    let registry = self::registry(&sub, &[server.allow()], |c| {
        c.tools.web.search.enabled = true;
        c.tools.web.search.endpoint = endpoint;
    });
    let r = registry.call(
        "web_search",
        &json!({"query": "x"}),
        &grace::access::ReadScope::All,
    );
    refused(
        &r,
        ToolErrorKind::Failed,
        &["did not answer JSON", "format: json"],
    );
    for bad in [
        json!({}),
        json!({"query": ""}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "q".repeat(501)}),
    ] {
        let r = registry.call("web_search", &bad, &grace::access::ReadScope::All);
        refused(&r, ToolErrorKind::InvalidInput, &[]);
    }
}

#[test]
fn hostile_urls_are_refused_before_any_request() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let registry = registry(data.path(), &[], |_| {});
    let port = server.port;
    let long = format!("http://example.com/{}", "a".repeat(5_000));
    let cases: Vec<(String, ToolErrorKind, &str)> = vec![
        (
            "file:///etc/passwd".into(),
            ToolErrorKind::InvalidInput,
            "only http and https",
        ),
        (
            "gopher://127.0.0.1:70/".into(),
            ToolErrorKind::InvalidInput,
            "only http and https",
        ),
        (
            "ftp://example.com/x".into(),
            ToolErrorKind::InvalidInput,
            "only http and https",
        ),
        (
            format!("http://user:secret@127.0.0.1:{port}/page.html"),
            ToolErrorKind::InvalidInput,
            "credentials",
        ),
        (long, ToolErrorKind::InvalidInput, "longer than"),
        ("http://".into(), ToolErrorKind::InvalidInput, "not a URL"),
        (
            format!("http://[::1]:{port}/page.html"),
            ToolErrorKind::Failed,
            "loopback",
        ),
        (
            format!("http://2130706433:{port}/page.html"),
            ToolErrorKind::Failed,
            "loopback",
        ),
        (
            format!("http://0x7f.1:{port}/page.html"),
            ToolErrorKind::Failed,
            "loopback",
        ),
        (
            format!("http://0177.0.0.1:{port}/page.html"),
            ToolErrorKind::Failed,
            "loopback",
        ),
        (
            format!("http://0:{port}/page.html"),
            ToolErrorKind::Failed,
            "unspecified",
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/page.html"),
            ToolErrorKind::Failed,
            "loopback",
        ),
        (
            format!("http://[::ffff:7f00:1]:{port}/"),
            ToolErrorKind::Failed,
            "loopback",
        ),
        (
            "http://[fd00:ec2::254]/latest/meta-data".into(),
            ToolErrorKind::Failed,
            "metadata",
        ),
        (
            "http://metadata.google.internal/computeMetadata/v1/".into(),
            ToolErrorKind::Failed,
            "metadata",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".into(),
            ToolErrorKind::Failed,
            "metadata",
        ),
        (
            "http://192.168.0.1/".into(),
            ToolErrorKind::Failed,
            "private",
        ),
        (
            "http://100.64.0.1/".into(),
            ToolErrorKind::Failed,
            "carrier-grade NAT",
        ),
        (
            "http://[fe80::1]/".into(),
            ToolErrorKind::Failed,
            "link-local",
        ),
        (
            "http://224.0.0.1/".into(),
            ToolErrorKind::Failed,
            "multicast",
        ),
        (
            "http://255.255.255.255/".into(),
            ToolErrorKind::Failed,
            "broadcast",
        ),
    ];
    for (url, kind, word) in cases {
        let r = fetch(&registry, &url, Some("x"));
        assert!(!r.success, "{url}: {r:?}");
        assert_eq!(r.error_kind, Some(kind), "{url}: {r:?}");
        assert!(r.error.as_deref().unwrap().contains(word), "{url}: {r:?}");
    }
    for input in [
        json!({}),
        json!({"url": 5}),
        json!({"url": ""}),
        json!({"url": "http://example.com/", "question": "q".repeat(3_000)}),
    ] {
        refused(
            &registry.call("web_fetch", &input, &grace::access::ReadScope::All),
            ToolErrorKind::InvalidInput,
            &[],
        );
    }
    assert!(server.asked().is_empty(), "{:?}", server.asked());
}

#[test]
fn web_tools_are_off_by_default_and_web_origin_when_on() {
    let data = tempfile::tempdir().unwrap();
    let config = common::config(data.path());
    let kb = Arc::new(common::open(config.clone()));
    let registry = ToolRegistry::from_config_with(
        &Config {
            tools: grace::config::ToolsConfig {
                enabled: vec!["rag_search".into()],
                ..config.tools.clone()
            },
            ..config.clone()
        },
        kb,
        None,
    )
    .unwrap();
    assert_eq!(registry.names(), vec!["rag_search"]);
    let sub = data.path().join("on");
    let registry = registry_with_both(&sub);
    let info: Vec<Value> = registry
        .describe()
        .into_iter()
        .filter(|t| t.name.starts_with("web_"))
        .map(|t| serde_json::to_value(&t.origin).unwrap())
        .collect();
    assert_eq!(info, vec![json!({"kind": "web"}), json!({"kind": "web"})]);
    // Only the agent sees them by default.
    assert!(registry.visible_to("web_fetch", grace::config::Caller::Agent));
    assert!(!registry.visible_to("web_fetch", grace::config::Caller::Http));
}

fn registry_with_both(data: &std::path::Path) -> ToolRegistry {
    registry(data, &[], |c| {
        c.tools.web.search.enabled = true;
        c.tools.web.search.endpoint = "http://127.0.0.1:9/search".into();
    })
}

/// The agent runs `script` (a `web_fetch` of the page with `input` extra,
/// then `answer`) for the valve question; the outcome and the model.
fn agent_on_the_page(
    extra: serde_json::Value,
    answer: &str,
) -> (grace::AskOutcome, String, support::mock_llm::ScriptedModel) {
    use grace::config::Strategy;
    use support::mock_llm::{Mode, Provider, ScriptedModel, Turn};

    let server = Server::start(site);
    let url = server.url("/page.html");
    let mut input = json!({ "url": url });
    if let (Some(i), Some(e)) = (input.as_object_mut(), extra.as_object()) {
        i.extend(e.clone());
    }
    let model = ScriptedModel::start(
        Provider::Ollama,
        Mode::Native,
        vec![Turn::call("web_fetch", input), Turn::answer(answer)],
    );
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.planner.strategy = Strategy::Agent;
    config.tools.web.fetch.enabled = true;
    config.tools.web.allow_hosts = vec![server.allow()];
    let grace = grace::Grace::builder(config)
        .embedder(common::embedder())
        .generator(model.client())
        .build()
        .unwrap();
    let outcome = grace
        .ask_blocking(
            "At what pressure does the Zephyr valve open?",
            &grace::AskOptions {
                queue: false,
                ..Default::default()
            },
            Arc::new(std::sync::atomic::AtomicBool::new(false)),
            &mut |_| {},
        )
        .unwrap();
    (outcome, url, model)
}

/// The agent calls `web_fetch` (with the asker's question, whatever the
/// model wrote), reads the page's passages and answers citing the URL; the
/// answer is scored on the page's passages, so a grounded one is answered.
#[test]
fn the_agent_reads_a_page_and_cites_its_url() {
    let question = "At what pressure does the Zephyr valve open?";
    let (outcome, url, model) = agent_on_the_page(
        json!({"question": "valve grease"}),
        "The Zephyr valve opens at 42 bar and closes again at 38 bar [1].",
    );
    // The web tool was offered, and called with the asker's question.
    assert!(model.offered_tools(0).contains(&"web_fetch".to_string()));
    let step = outcome
        .report
        .steps
        .iter()
        .find(|s| s.action == "web_fetch")
        .expect("a web_fetch step");
    assert!(step.result.success, "{:?}", step.result);
    assert_eq!(step.input["question"], question);
    // The model read the page's passage as the tool's response, with the
    // URL as its source.
    assert!(model.request(1).to_string().contains("42 bar"));
    assert!(model.request(1).to_string().contains(&url));
    let answer = outcome.report.answer.as_ref().expect("an answer");
    assert_eq!(answer.citations[0].number, 1);
    assert_eq!(answer.citations[0].source.as_deref(), Some(url.as_str()));
    assert_eq!(
        outcome.report.decision,
        grace::exec::Decision::Answer,
        "confidence {}",
        outcome.report.confidence
    );
}

/// A confident wrong answer is the worst outcome: an answer that cites the
/// page for what the page does not say is never answered.
#[test]
fn an_answer_the_page_does_not_support_is_not_answered() {
    let (outcome, _, _) = agent_on_the_page(
        json!({}),
        "The Zephyr valve opens at 90 bar once the reactor cools below freezing [1].",
    );
    // Groundedness is 0: the page does not say it. The page's passages are
    // on topic, so the run's confidence is not near 0, but it stays below
    // `notify` and goes to a reviewer instead of the asker.
    let answer_step = outcome.report.steps.last().unwrap();
    assert_eq!(
        answer_step.factors.get(Factor::Groundedness),
        Some(0.0),
        "{:?}",
        answer_step.factors
    );
    assert!(
        matches!(
            outcome.report.decision,
            grace::exec::Decision::Escalate | grace::exec::Decision::Decline
        ),
        "{:?}",
        outcome.report.decision
    );
    assert!(
        outcome.report.confidence < 0.7,
        "{}",
        outcome.report.confidence
    );
}

/// An application calling the tool itself from async code (inside a tokio
/// runtime) gets the page too: the tool's own runtime runs on a thread of
/// its own there.
#[tokio::test(flavor = "multi_thread")]
async fn a_direct_call_from_inside_a_runtime_works() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(site);
    let registry = registry(data.path(), &[server.allow()], |_| {});
    let tool = registry.get("web_fetch").unwrap();
    let r = tool
        .execute(
            &json!({"url": server.url("/page.html"), "question": "valve grease"}),
            &grace::access::ReadScope::All,
        )
        .unwrap();
    assert!(passages(&r)[0].text.contains("silicone"), "{r:?}");
}
