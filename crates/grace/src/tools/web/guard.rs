//! The address policy of the web tools: which URLs may be requested and
//! which address a request connects to. A URL is checked on its literal
//! host before DNS, on every address its name resolves to after DNS, and
//! again on every redirect; the request then connects to the address that
//! was checked (pinned), so a second DNS answer cannot switch it to
//! another (DNS rebinding). Hosts listed in `tools.web.allow_hosts` are
//! exempt: that is how an intranet page or a local SearXNG is reached.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Instant;

use url::{Host, Url};

use super::WebError;

/// Characters of a URL at most.
pub const MAX_URL_CHARS: usize = 2048;

/// Addresses a resolved name may have at most (more are not looked at,
/// and a name with more is refused).
const MAX_ADDRESSES: usize = 32;

/// Names that are cloud metadata services, whatever they resolve to.
const METADATA_NAMES: &[&str] = &["metadata.google.internal", "metadata.goog", "metadata"];

/// One `tools.web.allow_hosts` entry: a host (any port) or `host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    host: String,
    port: Option<u16>,
}

/// The policy: the allowed hosts; everything else must be a public address.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allow: Vec<Allowed>,
}

/// A URL that passed the policy, with the address to connect to.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL, fragment removed (it is never sent).
    pub url: Url,
    /// The host as the URL names it (what reqwest's DNS override keys on).
    pub host: String,
    /// The checked address; the request connects here and nowhere else.
    pub addr: SocketAddr,
}

impl AddressPolicy {
    /// The policy of `tools.web.allow_hosts`: `host`, `host:port`,
    /// `[v6]:port` or a bare IPv6 address; host names compare
    /// case-insensitively, without a trailing dot.
    pub fn new(allow_hosts: &[String]) -> Self {
        let allow = allow_hosts
            .iter()
            .map(|h| parse_allowed(h.trim()))
            .collect();
        Self { allow }
    }

    /// Whether the URL's host (as written, not what it resolves to) is
    /// listed, with its port or without one.
    fn allows(&self, host: &str, port: u16) -> bool {
        let host = normal_host(host);
        self.allow
            .iter()
            .any(|a| a.host == host && a.port.is_none_or(|p| p == port))
    }

    /// Checks `url` and resolves its host within `deadline`: the address to
    /// connect to, or why not.
    pub async fn check(&self, url: &Url, deadline: Instant) -> Result<Target, WebError> {
        let mut url = url.clone();
        url.set_fragment(None);
        let port = url
            .port_or_known_default()
            .ok_or_else(|| WebError::InvalidUrl(format!("{url}: no port")))?;
        let host = url
            .host()
            .ok_or_else(|| WebError::InvalidUrl(format!("{url}: no host")))?;
        let host_str = match &host {
            Host::Domain(d) => (*d).to_string(),
            Host::Ipv4(ip) => ip.to_string(),
            Host::Ipv6(ip) => format!("[{ip}]"),
        };
        let allowed = self.allows(&host_str, port);
        let literal = match host {
            Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
            Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
            Host::Domain(d) => {
                if !allowed && METADATA_NAMES.contains(&normal_host(d).as_str()) {
                    return Err(refused(&url, &host_str, "is a cloud metadata service"));
                }
                None
            }
        };
        // Before DNS: the literal address.
        if let Some(ip) = literal {
            if !allowed && let Some(why) = refused_ip(ip) {
                return Err(refused(&url, &host_str, &format!("is {why}")));
            }
            let addr = SocketAddr::new(ip, port);
            return Ok(Target {
                url,
                host: host_str,
                addr,
            });
        }
        // After DNS: every address the name has.
        let addrs = resolve(&host_str, port, deadline).await?;
        if !allowed {
            for a in &addrs {
                if let Some(why) = refused_ip(a.ip()) {
                    let why = format!("resolves to {}, {why}", a.ip());
                    return Err(refused(&url, &host_str, &why));
                }
            }
        }
        let addr = addrs
            .first()
            .copied()
            .ok_or_else(|| WebError::Network(format!("{host_str}: no address")))?;
        Ok(Target {
            url,
            host: host_str,
            addr,
        })
    }
}

/// Resolves `host` within `deadline` (at most [`MAX_ADDRESSES`]).
async fn resolve(host: &str, port: u16, deadline: Instant) -> Result<Vec<SocketAddr>, WebError> {
    let lookup = tokio::net::lookup_host((host.to_string(), port));
    let found = tokio::time::timeout_at(deadline.into(), lookup)
        .await
        .map_err(|_| WebError::Timeout(format!("resolving {host}")))?
        .map_err(|e| WebError::Network(format!("cannot resolve {host}: {e}")))?;
    let addrs: Vec<SocketAddr> = found.take(MAX_ADDRESSES + 1).collect();
    if addrs.len() > MAX_ADDRESSES {
        return Err(WebError::Refused(format!(
            "{host} has more than {MAX_ADDRESSES} addresses"
        )));
    }
    Ok(addrs)
}

fn refused(url: &Url, host: &str, why: &str) -> WebError {
    WebError::Refused(format!(
        "{} refused: {host} {why}; list the host in tools.web.allow_hosts to allow it",
        crate::text::ellipsized(url.as_str(), 200)
    ))
}

fn normal_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn parse_allowed(entry: &str) -> Allowed {
    // `[v6]` or `[v6]:port`.
    if let Some(rest) = entry.strip_prefix('[')
        && let Some((ip, after)) = rest.split_once(']')
    {
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return Allowed {
            host: format!("[{}]", ip.to_ascii_lowercase()),
            port,
        };
    }
    // A bare IPv6 address (more than one colon).
    if let Ok(ip) = entry.parse::<Ipv6Addr>() {
        return Allowed {
            host: format!("[{ip}]"),
            port: None,
        };
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => Allowed {
            host: normal_host(host),
            port: port.parse().ok(),
        },
        _ => Allowed {
            host: normal_host(entry),
            port: None,
        },
    }
}

/// Why `ip` may not be requested, or `None` for a public address.
pub fn refused_ip(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let why = if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(100, 100, 100, 200)
    {
        "a cloud metadata address"
    } else if a == 0 {
        "an unspecified address (0.0.0.0/8)"
    } else if a == 127 {
        "a loopback address"
    } else if a == 10 || (a == 172 && (16..32).contains(&b)) || (a == 192 && b == 168) {
        "a private address (RFC 1918)"
    } else if a == 100 && (64..128).contains(&b) {
        "a shared carrier-grade NAT address (100.64.0.0/10)"
    } else if a == 169 && b == 254 {
        "a link-local address"
    } else if a == 192 && b == 0 && c == 0 {
        "an IETF protocol address (192.0.0.0/24)"
    } else if (a == 192 && b == 0 && c == 2)
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
    {
        "a documentation address"
    } else if a == 198 && (b == 18 || b == 19) {
        "a benchmarking address (198.18.0.0/15)"
    } else if a == 192 && b == 88 && c == 99 {
        "a 6to4 relay address"
    } else if ip.is_broadcast() {
        "the broadcast address"
    } else if (224..240).contains(&a) {
        "a multicast address"
    } else if a >= 240 {
        "a reserved address (240.0.0.0/4)"
    } else {
        return None;
    };
    Some(why)
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    // Forms that carry an IPv4 address: judged by that address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return refused_v4(v4);
    }
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // IPv4-compatible (::a.b.c.d, deprecated) and NAT64 (64:ff9b::/96).
    if s[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_unspecified() && !ip.is_loopback() {
        return refused_v4(embedded(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return refused_v4(embedded(s[6], s[7]));
    }
    // 6to4 (2002:a.b.c.d::/48).
    if s[0] == 0x2002 {
        return refused_v4(embedded(s[1], s[2]));
    }
    let why = if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        "a cloud metadata address"
    } else if ip.is_unspecified() {
        "the unspecified address"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_multicast() {
        "a multicast address"
    } else if (s[0] & 0xffc0) == 0xfe80 {
        "a link-local address (fe80::/10)"
    } else if (s[0] & 0xffc0) == 0xfec0 {
        "a site-local address (fec0::/10)"
    } else if (s[0] & 0xfe00) == 0xfc00 {
        "a unique-local address (fc00::/7)"
    } else if s[0] == 0x2001 && s[1] == 0xdb8 {
        "a documentation address (2001:db8::/32)"
    } else if s[0] == 0x2001 && s[1] == 0 {
        "a Teredo tunnel address (2001::/32)"
    } else if s[..4] == [0x100, 0, 0, 0] {
        "a discard-only address (100::/64)"
    } else {
        return None;
    };
    Some(why)
}

/// Checks what a URL may be before anything is requested: http(s), no
/// credentials, not over-long. `what` says which URL in messages.
pub fn parse_url(text: &str, what: &str) -> Result<Url, WebError> {
    if text.chars().count() > MAX_URL_CHARS {
        return Err(WebError::InvalidUrl(format!(
            "{what} is longer than {MAX_URL_CHARS} characters"
        )));
    }
    let url = Url::parse(text.trim()).map_err(|e| {
        WebError::InvalidUrl(format!(
            "{what} `{}` is not a URL: {e}",
            crate::text::ellipsized(text, 200)
        ))
    })?;
    check_shape(&url, what)?;
    Ok(url)
}

/// The URL rules that need no network: scheme, credentials, length, host.
pub fn check_shape(url: &Url, what: &str) -> Result<(), WebError> {
    let shown = crate::text::ellipsized(url.as_str(), 200);
    if !matches!(url.scheme(), "http" | "https") {
        return Err(WebError::InvalidUrl(format!(
            "{what} `{shown}`: only http and https URLs are fetched"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(WebError::InvalidUrl(format!(
            "{what} `{shown}`: URLs with credentials are refused"
        )));
    }
    if url.as_str().len() > MAX_URL_CHARS {
        return Err(WebError::InvalidUrl(format!(
            "{what} is longer than {MAX_URL_CHARS} characters"
        )));
    }
    if url.host().is_none() {
        return Err(WebError::InvalidUrl(format!(
            "{what} `{shown}` has no host"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> Option<&'static str> {
        refused_ip(s.parse().unwrap())
    }

    #[test]
    fn private_and_special_addresses_are_refused() {
        for a in [
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "169.254.1.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "192.0.2.7",
            "198.51.100.7",
            "203.0.113.7",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd00:ec2::254",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::10.0.0.1",
            "2002:7f00:1::",
        ] {
            assert!(v4(a).is_some(), "{a} was not refused");
        }
        assert_eq!(v4("169.254.169.254"), Some("a cloud metadata address"));
        assert_eq!(v4("fd00:ec2::254"), Some("a cloud metadata address"));
        for a in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "93.184.216.34",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(v4(a), None, "{a} was refused");
        }
    }

    #[test]
    fn allow_entries_match_host_and_port() {
        let p = AddressPolicy::new(&[
            "127.0.0.1:8080".into(),
            "Intranet.Example.".into(),
            "[::1]:9".into(),
            "fd00::5".into(),
        ]);
        assert!(p.allows("127.0.0.1", 8080));
        assert!(!p.allows("127.0.0.1", 8081));
        assert!(p.allows("intranet.example", 1));
        assert!(p.allows("[::1]", 9));
        assert!(!p.allows("[::1]", 10));
        assert!(p.allows("[fd00::5]", 443));
    }

    #[test]
    fn url_shapes_are_checked() {
        for bad in [
            "file:///etc/passwd",
            "gopher://example.com/",
            "ftp://example.com/",
            "http://user:pw@example.com/",
            "http://user@example.com/",
            "javascript:alert(1)",
            "not a url",
            "data:text/html,hi",
        ] {
            assert!(
                matches!(parse_url(bad, "the URL"), Err(WebError::InvalidUrl(_))),
                "{bad}"
            );
        }
        let long = format!("http://example.com/{}", "a".repeat(MAX_URL_CHARS));
        assert!(parse_url(&long, "the URL").is_err());
        // Numeric IPv4 forms are normalised by the parser, so the address
        // check sees 127.0.0.1.
        for odd in ["http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/"] {
            let url = parse_url(odd, "the URL").unwrap();
            assert_eq!(url.host_str(), Some("127.0.0.1"), "{odd}");
        }
    }
}
