//! `grace auth`: principals and their API keys; and `--as NAME`, the scope
//! of a principal for ask, search and chat.

use clap::Subcommand;
use grace::access::ReadScope;
use grace::auth::Principals;
use grace::config::Config;

use crate::output;

/// `grace auth …`.
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Issue an API key for a principal (created if new; its groups become
    /// --groups). The key is printed once: GRACE keeps only its SHA-256
    AddKey {
        /// The principal's name (`user:NAME` among a document's readers)
        name: String,
        /// Its groups, comma-separated (`group:NAME` among readers)
        #[arg(long, value_delimiter = ',', value_name = "GROUPS")]
        groups: Vec<String>,
    },
    /// The principals, their groups and how many keys work (never a key)
    List,
    /// End every key of a principal, at once and for good
    Revoke {
        /// The principal's name
        name: String,
    },
}

/// Runs `grace auth …`.
pub fn run(config: &Config, command: &AuthCommand, json: bool) -> grace::Result<()> {
    match command {
        AuthCommand::AddKey { name, groups } => {
            let issued = Principals::open(config)?.add_key(name, groups)?;
            output::issued_key(&issued, json);
        }
        AuthCommand::List => {
            let list = match Principals::open_existing(config)? {
                Some(store) => store.list()?,
                None => Vec::new(),
            };
            output::principals(&list, json);
        }
        AuthCommand::Revoke { name } => {
            let revoked = Principals::open(config)?.revoke(name)?;
            output::revoked(name, revoked, json);
        }
    }
    Ok(())
}

/// What `--as NAME` may read: that principal's documents; without it, the
/// local operator's (everything). A name no principal has is an error,
/// never everything; so is a knowledge base the principal may not ask
/// (the error of one that does not exist, as the server answers).
pub fn scope(config: &Config, name: Option<&str>) -> grace::Result<ReadScope> {
    let Some(name) = name else {
        return Ok(ReadScope::All);
    };
    let scope = grace::auth::scope_of(config, name)?;
    if let ReadScope::Principal(p) = &scope
        && !config
            .roles(config.kb_name())
            .grants(grace::config::Role::Ask, &p.name, &p.groups)
    {
        return Err(grace::Error::UnknownKb(config.kb_name().to_string()));
    }
    Ok(scope)
}
