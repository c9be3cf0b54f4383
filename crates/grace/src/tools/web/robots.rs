//! `robots.txt` (RFC 9309) for `web_fetch`, the rules: the group for GRACE's product token
//! (the `User-Agent` before its `/`) or else `*` applies, and the longest
//! matching `Allow`/`Disallow` rule decides (`Allow` on a tie). Fetching
//! the file (under the same address policy) is `client::Robots`'s.

/// Bytes of a `robots.txt` read at most (the RFC's minimum is 500 KiB).
pub const MAX_ROBOTS_BYTES: usize = 512 * 1024;
/// Rules kept at most from one file.
const MAX_RULES: usize = 10_000;
/// Redirects followed for a `robots.txt` (the RFC asks for five).
pub const MAX_ROBOTS_REDIRECTS: usize = 5;

/// The rules that apply to GRACE on one site.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    /// `(allow, pattern)`, in file order.
    rules: Vec<(bool, String)>,
}

impl Rules {
    /// Parses `text` for the product token `agent` (lowercase): the groups
    /// naming it, or else those naming `*`.
    pub fn parse(text: &str, agent: &str) -> Self {
        let mut specific = Vec::new();
        let mut any = Vec::new();
        // Whether the current group applies to us / to everyone; a group is
        // user-agent lines followed by rules.
        let (mut mine, mut star, mut in_rules) = (false, false, false);
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let key = key.trim().to_ascii_lowercase();
            let value = value.trim();
            match key.as_str() {
                "user-agent" => {
                    if in_rules {
                        (mine, star, in_rules) = (false, false, false);
                    }
                    let ua = value.to_ascii_lowercase();
                    mine |= ua == agent;
                    star |= ua == "*";
                }
                "allow" | "disallow" => {
                    in_rules = true;
                    if value.is_empty() {
                        continue;
                    }
                    let rule = (key == "allow", value.to_string());
                    if mine && specific.len() < MAX_RULES {
                        specific.push(rule);
                    } else if star && any.len() < MAX_RULES {
                        any.push(rule);
                    }
                }
                _ => {}
            }
        }
        let rules = if specific.is_empty() && !text_names(text, agent) {
            any
        } else {
            specific
        };
        Self { rules }
    }

    /// Whether `path` (path and query) may be fetched.
    pub fn allows(&self, path: &str) -> bool {
        let mut best: Option<(usize, bool)> = None;
        for (allow, pattern) in &self.rules {
            if matches(pattern, path) {
                let len = pattern.len();
                let better = match best {
                    None => true,
                    Some((l, a)) => len > l || (len == l && *allow && !a),
                };
                if better {
                    best = Some((len, *allow));
                }
            }
        }
        best.is_none_or(|(_, allow)| allow)
    }
}

/// Whether some group names `agent` (then `*` does not apply, even when
/// that group has no rules).
fn text_names(text: &str, agent: &str) -> bool {
    text.lines().any(|line| {
        let line = line.split('#').next().unwrap_or("");
        line.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("user-agent") && v.trim().eq_ignore_ascii_case(agent)
        })
    })
}

/// Whether `pattern` (`*` any run, a final `$` the end) matches the start
/// of `path`. Iterative with one backtrack point: O(len × len), no recursion.
fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let p = pattern.as_bytes();
    let s = path.as_bytes();
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if i == p.len() {
            if !anchored || j == s.len() {
                return true;
            }
        } else if p[i] == b'*' {
            star = Some((i, j));
            i += 1;
            continue;
        } else if j < s.len() && p[i] == s[j] {
            i += 1;
            j += 1;
            continue;
        }
        // Mismatch (or an anchored end not reached): let the last `*` eat
        // one more byte.
        match star {
            Some((si, sj)) if sj < s.len() => {
                star = Some((si, sj + 1));
                i = si + 1;
                j = sj + 1;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn longest_match_decides_and_allow_wins_ties() {
        let r = Rules::parse(
            "User-agent: *\nDisallow: /private\nAllow: /private/open\nDisallow: /*.pdf$\n",
            "grace",
        );
        assert!(r.allows("/"));
        assert!(!r.allows("/private/x"));
        assert!(r.allows("/private/open/x"));
        assert!(!r.allows("/docs/a.pdf"));
        assert!(r.allows("/docs/a.pdf?x=1"));
        let tie = Rules::parse("User-agent: *\nDisallow: /a\nAllow: /a\n", "grace");
        assert!(tie.allows("/a"));
    }

    #[test]
    fn our_group_replaces_the_star_group() {
        let text = "User-agent: *\nDisallow: /\n\nUser-agent: other\nUser-agent: Grace\nDisallow: /secret\n";
        let r = Rules::parse(text, "grace");
        assert!(r.allows("/page"));
        assert!(!r.allows("/secret"));
        // A group naming us with no rules allows everything.
        let r = Rules::parse("User-agent: *\nDisallow: /\nUser-agent: grace\n", "grace");
        assert!(r.allows("/page"));
        // Another agent's group does not apply.
        let r = Rules::parse("User-agent: other\nDisallow: /\n", "grace");
        assert!(r.allows("/page"));
    }

    #[test]
    fn hostile_patterns_are_cheap_and_safe() {
        let pattern = format!("/{}x$", "*a".repeat(500));
        let path = format!("/{}", "a".repeat(5000));
        let r = Rules::parse(&format!("User-agent: *\nDisallow: {pattern}\n"), "grace");
        let started = Instant::now();
        assert!(r.allows(&path));
        assert!(started.elapsed().as_secs() < 2);
        let r = Rules::parse(
            "garbage\n:::\nUser-agent\nDisallow\nDisallow: /é*ü$\n",
            "grace",
        );
        assert!(r.allows("/x"));
    }
}
