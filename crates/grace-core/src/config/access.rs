//! The words of access control, as the configuration uses them: a
//! reader (`public`, `group:NAME`, `user:NAME`) and a name. The readers,
//! principals and scopes built on them are in `crate::access`.

/// The reader everyone is.
pub const PUBLIC: &str = "public";
/// Longest principal, group or user name.
pub const MAX_NAME_CHARS: usize = 64;
/// Most readers one document may list, and most groups one principal may
/// be in.
pub const MAX_READERS: usize = 64;

/// Whether `name` is a valid principal, user or group name: 1 to
/// [`MAX_NAME_CHARS`] letters, digits, `.`, `_`, `@` or `-`, not starting
/// with `-` (so it never reads as a command-line option).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'))
}

/// Checks one reader (`public`, `group:NAME` or `user:NAME`); the error
/// says what is wrong with it.
pub fn check_reader(reader: &str) -> Result<(), String> {
    if reader == PUBLIC {
        return Ok(());
    }
    let name = reader
        .strip_prefix("group:")
        .or_else(|| reader.strip_prefix("user:"));
    match name {
        Some(n) if valid_name(n) => Ok(()),
        Some(_) => Err(format!(
            "`{reader}`: a name is 1 to {MAX_NAME_CHARS} letters, digits, `.`, `_`, `@` or `-`"
        )),
        None => Err(format!(
            "`{reader}` is not a reader: write `public`, `group:NAME` or `user:NAME`"
        )),
    }
}

/// Checks a list of readers (a document's, `ingest.default_access`): at
/// least one (an empty list would let nobody read), at most
/// [`MAX_READERS`], each valid.
pub fn check_readers<S: AsRef<str>>(list: &[S]) -> Result<(), String> {
    if list.is_empty() {
        return Err(
            "an empty list of readers would let nobody read the documents; name at least one (`public`, `group:NAME`, `user:NAME`)"
                .into(),
        );
    }
    if list.len() > MAX_READERS {
        return Err(format!(
            "{} readers; at most {MAX_READERS} (name a group instead)",
            list.len()
        ));
    }
    list.iter()
        .try_for_each(|r| check_reader(r.as_ref().trim()))
}
