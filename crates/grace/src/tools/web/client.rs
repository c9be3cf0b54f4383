//! One guarded GET: every hop's URL checked by the address policy and
//! connected to the address that was checked, redirects followed by hand
//! (at most `max_redirects`), `robots.txt` asked before each hop when
//! given, and the body read up to a limit, then dropped.

use std::collections::HashMap;
use std::time::Instant;

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use reqwest::{Response, StatusCode, Url};

use super::WebError;
use super::guard::{AddressPolicy, Target, check_shape};
use super::robots::{MAX_ROBOTS_BYTES, MAX_ROBOTS_REDIRECTS, Rules};

/// The request side every web tool shares.
#[derive(Debug, Clone)]
pub struct Client {
    /// Which addresses may be requested.
    pub policy: AddressPolicy,
    /// The `User-Agent` sent.
    pub user_agent: String,
    /// Redirects followed at most (`tools.web.fetch.max_redirects`).
    pub max_redirects: usize,
}

/// The final (non-redirect) response of a GET and where it came from.
pub struct Opened {
    /// The URL that answered, after redirects.
    pub url: Url,
    /// Its response, body unread.
    pub response: Response,
}

impl Client {
    /// GETs `url` with `accept`, following redirects, each hop checked by
    /// the address policy and, with `robots`, by the site's `robots.txt`.
    pub async fn open(
        &self,
        url: &Url,
        accept: &str,
        mut robots: Option<&mut Robots>,
        deadline: Instant,
    ) -> Result<Opened, WebError> {
        let mut current = url.clone();
        let mut hops = 0;
        loop {
            let target = self.policy.check(&current, deadline).await?;
            if let Some(r) = robots.as_deref_mut() {
                r.check(self, &target.url, deadline).await?;
            }
            let response = self.send(&target, accept, deadline).await?;
            let status = response.status();
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            match (status.is_redirection(), location) {
                (true, Some(location)) if status != StatusCode::NOT_MODIFIED => {
                    hops += 1;
                    if hops > self.max_redirects {
                        return Err(WebError::Refused(format!(
                            "{} redirected more than {} times; raise \
                             tools.web.fetch.max_redirects to follow more",
                            shown(url),
                            self.max_redirects
                        )));
                    }
                    let next = target.url.join(&location).map_err(|e| {
                        WebError::Refused(format!(
                            "{} redirected to `{}`, which is not a URL: {e}",
                            shown(&target.url),
                            crate::text::ellipsized(&location, 200)
                        ))
                    })?;
                    check_shape(&next, "a redirect").map_err(|e| {
                        WebError::Refused(format!(
                            "{} redirected elsewhere: {e}",
                            shown(&target.url)
                        ))
                    })?;
                    current = next;
                }
                _ => {
                    return Ok(Opened {
                        url: target.url,
                        response,
                    });
                }
            }
        }
    }

    /// One GET of `target.url`, connected to `target.addr` whatever its host
    /// name resolves to now (the address the policy checked), no redirect
    /// followed, no proxy.
    async fn send(
        &self,
        target: &Target,
        accept: &str,
        deadline: Instant,
    ) -> Result<Response, WebError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .referer(false)
            .user_agent(&self.user_agent)
            .resolve(&target.host, target.addr)
            .build()
            .map_err(|e| WebError::Network(format!("cannot build a client: {}", chain(&e))))?;
        let send = client.get(target.url.clone()).header(ACCEPT, accept).send();
        tokio::time::timeout_at(deadline.into(), send)
            .await
            .map_err(|_| WebError::Timeout(format!("waiting for {}", shown(&target.url))))?
            .map_err(|e| WebError::Network(format!("{}: {}", shown(&target.url), chain(&e))))
    }
}

/// The response's `type/subtype`, lowercase, and its `charset`, if any.
pub fn content_type(response: &Response) -> (Option<String>, Option<String>) {
    let Some(value) = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return (None, None);
    };
    let mut parts = value.split(';');
    let mime = parts
        .next()
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty());
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').to_string())
    });
    (mime, charset)
}

/// A body read up to a limit.
pub struct Body {
    /// The bytes read (at most the limit).
    pub bytes: Vec<u8>,
    /// Whether there was more (not read).
    pub cut: bool,
}

/// Reads at most `max` bytes of the body within `deadline`; the rest is
/// never read (the connection is dropped with the response).
pub async fn read_body(
    mut response: Response,
    max: usize,
    deadline: Instant,
) -> Result<Body, WebError> {
    let mut bytes = Vec::new();
    loop {
        let next = tokio::time::timeout_at(deadline.into(), response.chunk())
            .await
            .map_err(|_| WebError::Timeout("reading the body".into()))?
            .map_err(|e| WebError::Network(format!("reading the body: {}", chain(&e))))?;
        let Some(chunk) = next else {
            return Ok(Body { bytes, cut: false });
        };
        let room = max - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Body { bytes, cut: true });
        }
        bytes.extend_from_slice(&chunk);
    }
}

/// A URL as messages show it (bounded).
pub fn shown(url: &Url) -> String {
    crate::text::ellipsized(url.as_str(), 200)
}

/// An error with its causes (reqwest's own message is terse).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    let mut depth = 0;
    while let Some(s) = source
        && depth < 4
    {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
        depth += 1;
    }
    crate::text::ellipsized(&out, 500)
}

/// `robots.txt` for one call: the site's file is fetched under the same
/// address policy, once per site. A missing file (4xx) allows everything;
/// an unreachable one or a server error refuses, as RFC 9309 asks.
#[derive(Debug)]
pub struct Robots {
    agent: String,
    sites: HashMap<String, Rules>,
}

impl Robots {
    /// For the `User-Agent` `user_agent` (its product token is matched).
    pub fn new(user_agent: &str) -> Self {
        let agent = user_agent
            .split(['/', ' '])
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        Self {
            agent,
            sites: HashMap::new(),
        }
    }

    /// Refuses `url` when its site's `robots.txt` disallows it or cannot be
    /// read.
    pub async fn check(
        &mut self,
        client: &Client,
        url: &Url,
        deadline: Instant,
    ) -> Result<(), WebError> {
        if url.path() == "/robots.txt" {
            return Ok(());
        }
        let site = url.origin().ascii_serialization();
        if !self.sites.contains_key(&site) {
            let rules = Box::pin(self.fetch(client, url, deadline)).await?;
            self.sites.insert(site.clone(), rules);
        }
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        match self.sites.get(&site) {
            Some(rules) if !rules.allows(&path) => Err(WebError::Refused(format!(
                "{} is disallowed by {site}/robots.txt for `{}`; set \
                 tools.web.fetch.respect_robots: false only for sites you may read anyway",
                shown(url),
                self.agent
            ))),
            _ => Ok(()),
        }
    }

    async fn fetch(
        &self,
        client: &Client,
        url: &Url,
        deadline: Instant,
    ) -> Result<Rules, WebError> {
        let mut robots_url = url.clone();
        robots_url.set_path("/robots.txt");
        robots_url.set_query(None);
        let client = Client {
            max_redirects: MAX_ROBOTS_REDIRECTS,
            ..client.clone()
        };
        let unreadable = |why: String| {
            WebError::Network(format!(
                "{} cannot be read ({why}), so the page is not fetched (RFC 9309); \
                 tools.web.fetch.respect_robots: false skips robots.txt",
                shown(&robots_url)
            ))
        };
        let opened = match client.open(&robots_url, "text/plain", None, deadline).await {
            Ok(o) => o,
            Err(WebError::Network(why)) => return Err(unreadable(why)),
            Err(e) => return Err(e),
        };
        let status = opened.response.status();
        if status.is_client_error() {
            return Ok(Rules::default());
        }
        if !status.is_success() {
            return Err(unreadable(format!("HTTP {}", status.as_u16())));
        }
        let body = read_body(opened.response, MAX_ROBOTS_BYTES, deadline).await?;
        Ok(Rules::parse(
            &String::from_utf8_lossy(&body.bytes),
            &self.agent,
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::Duration;

    use super::*;

    /// The request goes to the pinned address even though the name does
    /// not resolve at all (`.invalid` never does): no second DNS lookup
    /// can move it (DNS rebinding).
    #[test]
    fn requests_connect_to_the_checked_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap();
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .unwrap();
            head
        });
        let client = Client {
            policy: AddressPolicy::default(),
            user_agent: "grace-test/1".into(),
            max_redirects: 0,
        };
        let url = Url::parse(&format!("http://rebind.invalid:{}/x", addr.port())).unwrap();
        let target = Target {
            url,
            host: "rebind.invalid".into(),
            addr,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let response = rt
            .block_on(client.send(&target, "text/plain", deadline))
            .unwrap();
        assert_eq!(response.status(), 200);
        let head = server.join().unwrap().to_ascii_lowercase();
        assert!(head.contains("host: rebind.invalid"), "{head}");
        assert!(head.contains("user-agent: grace-test/1"), "{head}");
    }
}
