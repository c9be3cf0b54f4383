//! Who may read a document, and who is asking.
//!
//! A document's *readers* are a list of `public`, `group:NAME` and
//! `user:NAME` ([`Readers`]). Ingest works them out per document (the
//! request's `access`, then `access:` in Markdown front matter, then the
//! nearest `.grace-access.yml`, then `ingest.default_access`: see
//! [`mod@file`]) and stores them on every chunk in the indexed payload field
//! [`READERS_FIELD`]. A [`Principal`] (a name and its groups) may read a
//! document when one of its [`Principal::tokens`] is among the readers.
//!
//! A search is scoped by a [`ReadScope`]: the local operator and the
//! service key read everything; a principal reads what its tokens open.
//! The scope becomes a filter inside the store's rankings (never hits
//! dropped after ranking), so a principal who may read 2% of a knowledge
//! base still gets a full top k of what it may read.

pub mod file;

use serde::{Deserialize, Serialize};

pub use crate::config::access::{
    MAX_NAME_CHARS, MAX_READERS, PUBLIC, check_reader, check_readers, valid_name,
};

/// The payload field holding a chunk's readers (a keyword index).
pub const READERS_FIELD: &str = "readers";
/// The readers of one document: sorted, each once, never empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Readers(Vec<String>);

impl Readers {
    /// Everyone.
    pub fn public() -> Self {
        Self(vec![PUBLIC.to_string()])
    }

    /// Checks and normalises a list. An empty list is refused: nobody
    /// could read the document.
    pub fn parse<S: AsRef<str>>(list: &[S]) -> Result<Self, String> {
        check_readers(list)?;
        let mut readers = Vec::with_capacity(list.len());
        for r in list {
            readers.push(r.as_ref().trim().to_string());
        }
        readers.sort();
        readers.dedup();
        // `public` opens the document to everyone: the rest says nothing more.
        if readers.iter().any(|r| r == PUBLIC) {
            return Ok(Self::public());
        }
        Ok(Self(readers))
    }

    /// Readers as stored on chunks: an empty list (a chunk written before
    /// readers existed) is everyone.
    pub fn stored(list: &[String]) -> Self {
        Self::parse(list).unwrap_or_else(|_| {
            if list.is_empty() {
                Self::public()
            } else {
                // Something unreadable is read as narrowly as it can be:
                // by the names it lists that are valid, else by nobody.
                Self(
                    list.iter()
                        .filter(|r| check_reader(r).is_ok())
                        .cloned()
                        .collect(),
                )
            }
        })
    }

    /// The readers, sorted.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// Whether everyone may read.
    pub fn is_public(&self) -> bool {
        self.0.iter().any(|r| r == PUBLIC)
    }

    /// The groups named (`group:NAME` → `NAME`).
    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|r| r.strip_prefix("group:"))
    }
}

impl std::fmt::Display for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join(", "))
    }
}

/// Someone asking: a name and the groups it is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// The principal's name (`user:NAME` among readers).
    pub name: String,
    /// Its groups (`group:NAME` among readers), sorted.
    pub groups: Vec<String>,
}

impl Principal {
    /// A principal; the groups are sorted and each kept once.
    pub fn new(name: &str, groups: &[String]) -> Self {
        let mut groups = groups.to_vec();
        groups.sort();
        groups.dedup();
        Self {
            name: name.to_string(),
            groups,
        }
    }

    /// The readers this principal is: `public`, `user:NAME` and a
    /// `group:G` for each of its groups.
    pub fn tokens(&self) -> Vec<String> {
        let mut tokens = Vec::with_capacity(self.groups.len() + 2);
        tokens.push(PUBLIC.to_string());
        if !self.name.is_empty() {
            tokens.push(format!("user:{}", self.name));
        }
        tokens.extend(self.groups.iter().map(|g| format!("group:{g}")));
        tokens
    }
}

/// Checks a list of group names (`--groups`, a token's claim).
pub fn check_groups(groups: &[String]) -> Result<(), String> {
    if groups.len() > MAX_READERS {
        return Err(format!("{} groups; at most {MAX_READERS}", groups.len()));
    }
    match groups.iter().find(|g| !valid_name(g)) {
        Some(g) => Err(format!(
            "group `{g}`: a name is 1 to {MAX_NAME_CHARS} letters, digits, `.`, `_`, `@` or `-`"
        )),
        None => Ok(()),
    }
}

/// What a search may see. Kept with a run waiting for its asker's reply,
/// so the run goes on with the asker's scope.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadScope {
    /// Every document: the local operator, the service key, the
    /// administrator, evaluation and self-calibration.
    #[default]
    All,
    /// The documents this principal may read.
    Principal(Principal),
}

impl ReadScope {
    /// The readers a chunk must have one of; `None` for [`ReadScope::All`].
    pub fn tokens(&self) -> Option<Vec<String>> {
        match self {
            Self::All => None,
            Self::Principal(p) => Some(p.tokens()),
        }
    }

    /// Whether this is [`ReadScope::All`].
    pub fn is_all(&self) -> bool {
        *self == Self::All
    }

    /// Only what everyone may read (what an unauthenticated page may show).
    pub fn public() -> Self {
        Self::Principal(Principal {
            name: String::new(),
            groups: Vec::new(),
        })
    }

    /// Whether this scope may read a document with these stored readers.
    pub fn may_read(&self, readers: &[String]) -> bool {
        match self {
            Self::All => true,
            Self::Principal(p) => {
                let readers = Readers::stored(readers);
                readers.is_public() || p.tokens().iter().any(|t| readers.0.contains(t))
            }
        }
    }

    /// Who this scope is in the audit log: the principal's name, `-` for
    /// [`ReadScope::All`] (the operator, a service, the administrator).
    pub fn label(&self) -> &str {
        self.principal().unwrap_or("-")
    }

    /// The principal's name; `None` for [`ReadScope::All`].
    pub fn principal(&self) -> Option<&str> {
        match self {
            Self::All => None,
            Self::Principal(p) => Some(&p.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_are_checked_sorted_and_public_absorbs_the_rest() {
        let r = Readers::parse(&["user:bo", "group:hr", "group:hr"]).unwrap();
        assert_eq!(r.as_slice(), ["group:hr", "user:bo"]);
        assert_eq!(
            Readers::parse(&["group:hr", "public"]).unwrap(),
            Readers::public()
        );
        for bad in [
            "everyone",
            "group:",
            "user:a b",
            "group:-x",
            "role:admin",
            "",
        ] {
            assert!(Readers::parse(&[bad]).is_err(), "{bad:?}");
        }
        assert!(Readers::parse::<&str>(&[]).is_err());
        let many: Vec<String> = (0..=MAX_READERS).map(|i| format!("user:u{i}")).collect();
        assert!(Readers::parse(&many).is_err());
    }

    #[test]
    fn a_principal_reads_what_one_of_its_tokens_opens() {
        let ann = ReadScope::Principal(Principal::new("ann", &["finance".into()]));
        let bo = ReadScope::Principal(Principal::new("bo", &[]));
        let finance = ["group:finance".to_string()];
        assert!(ann.may_read(&finance));
        assert!(!bo.may_read(&finance));
        assert!(bo.may_read(&["user:bo".to_string()]));
        assert!(bo.may_read(&[])); // written before readers existed: public
        assert!(ReadScope::All.may_read(&finance));
        assert!(!ReadScope::public().may_read(&finance));
        // An unreadable stored list opens nothing it does not name.
        assert!(!bo.may_read(&["nonsense".to_string()]));
    }

    #[test]
    fn names_never_read_as_options_or_paths() {
        assert!(valid_name("ann.lee@corp"));
        for bad in [
            "",
            "-rf",
            "a/b",
            "a b",
            "ä",
            &"x".repeat(MAX_NAME_CHARS + 1),
        ] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}
