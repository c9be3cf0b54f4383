//! Security review: with no `api_key` (the loopback default) every route
//! was open to any web page the operator visited: through DNS rebinding (the
//! page's own name resolving to 127.0.0.1) and through a plain cross-site
//! form POST, which needs no preflight. Now, without a key, only loopback
//! `Host` names are served; a state-changing request with a foreign
//! `Origin` is refused; and responses carry the browser security headers.

use crate::support::common;

use grace::Config;
use reqwest::StatusCode;
use serde_json::json;

struct Server {
    base: String,
    port: u16,
    http: reqwest::Client,
    server: common::TestServer,
    _dir: tempfile::TempDir,
}

async fn start(tweak: impl FnOnce(&mut Config)) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    tweak(&mut config);
    let server = common::serve(common::service(config)).await;
    Server {
        base: server.base.clone(),
        port: server.port,
        http: reqwest::Client::new(),
        server,
        _dir: dir,
    }
}

impl Server {
    async fn stop(self) {
        self.server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_only_loopback_host_names_are_served() {
    let s = start(|_| {}).await;
    let port = s.port;
    for (host, allowed) in [
        (format!("127.0.0.1:{port}"), true),
        (format!("localhost:{port}"), true),
        ("localhost".to_string(), true),
        (format!("[::1]:{port}"), true),
        // A page at attacker.example whose name now resolves to 127.0.0.1.
        (format!("attacker.example:{port}"), false),
        ("attacker.example".to_string(), false),
        (format!("localhost.attacker.example:{port}"), false),
        (format!("192.168.1.5:{port}"), false),
    ] {
        let r = s
            .http
            .get(format!("{}/v1/status", s.base))
            .header("host", &host)
            .send()
            .await
            .unwrap();
        let expected = if allowed {
            StatusCode::OK
        } else {
            StatusCode::FORBIDDEN
        };
        assert_eq!(r.status(), expected, "Host: {host}");
    }
    s.stop().await;

    // With a key, other names are the key's business.
    let s = start(|c| c.server.api_key = "k3y".into()).await;
    let r = s
        .http
        .get(format!("{}/v1/status", s.base))
        .header("host", "grace.internal.example")
        .bearer_auth("k3y")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_site_post_is_refused_and_a_same_origin_one_is_not() {
    let s = start(|_| {}).await;
    // A form on another site posting to the API (no preflight needed).
    let boundary = "xsite";
    let form = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.md\"\r\n\r\n# X\n\nInjected by a web page.\n\r\n--{boundary}--\r\n"
    );
    for origin in ["https://attacker.example", "null", "http://127.0.0.1:1"] {
        let r = s
            .http
            .post(format!("{}/v1/ingest", s.base))
            .header("origin", origin)
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(form.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "Origin: {origin}");
        let r = s
            .http
            .post(format!("{}/v1/search", s.base))
            .header("origin", origin)
            .json(&json!({"query": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "Origin: {origin}");
    }
    // The server's own page (same origin), and clients that send no Origin.
    let own = format!("http://127.0.0.1:{}", s.port);
    for origin in [Some(own.as_str()), None] {
        let mut req = s
            .http
            .post(format!("{}/v1/search", s.base))
            .json(&json!({"query": "x"}));
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "Origin: {origin:?}");
    }
    // Reading with a foreign Origin is the browser's same-origin policy's
    // business (no CORS headers are sent), not a state change.
    let r = s
        .http
        .get(format!("{}/health", s.base))
        .header("origin", "https://attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers().get("access-control-allow-origin").is_none());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_and_every_response_carry_the_security_headers() {
    let s = start(|_| {}).await;
    let r = s
        .http
        .get(format!("{}/review", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let h = r.headers();
    let csp = h["content-security-policy"].to_str().unwrap();
    for part in [
        "default-src 'none'",
        "frame-ancestors 'none'",
        "connect-src 'self'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert_eq!(h["x-frame-options"], "DENY");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "no-referrer");
    // The asker's page runs only its own files: no inline script or style.
    let r = s.http.get(format!("{}/", s.base)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let csp = r.headers()["content-security-policy"].to_str().unwrap();
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    for (file, kind) in [
        ("/assets/ask.js", "text/javascript"),
        ("/assets/ask.css", "text/css"),
    ] {
        let r = s
            .http
            .get(format!("{}{file}", s.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with(kind)
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    }
    // An error from the API too.
    let r = s
        .http
        .get(format!("{}/no/such/route", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    s.stop().await;
}
